"""What a template may name: the public reference functions of ``solutions`` and their twins."""

from __future__ import annotations

import functools
import inspect
import types

import solutions

_NOT_FOR_TEMPLATES = {"get_twin", "twins_for", "Twin"}

def _requiring_rng(name, function):
    """A reference that would fall back to OS entropy without ``rng`` must be given one, or
    the same seed would not give the same variant."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def seeded(*args, **kwargs):
        if signature.bind_partial(*args, **kwargs).arguments.get("rng") is None:
            raise ValueError(f"{name}() draws random numbers: pass the variant's generator, "
                             f"e.g. {name}(..., rng=rng)")
        return function(*args, **kwargs)
    return seeded


def _takes_optional_rng(function) -> bool:
    try:
        parameter = inspect.signature(function).parameters.get("rng")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is None


FUNCTIONS: dict = {
    name: (_requiring_rng(name, obj) if _takes_optional_rng(obj) else obj)
    for name, obj in vars(solutions).items()
    if not name.startswith("_") and callable(obj) and not isinstance(obj, types.ModuleType)
    and name not in _NOT_FOR_TEMPLATES
}
CONSTANTS: dict = {"ALIGNMENT_SCORES": solutions.ALIGNMENT_SCORES}
TWINS = solutions.TWINS


def signature_error(name: str, kwargs: set[str]) -> str | None:
    """Why keyword arguments ``kwargs`` cannot be passed to reference function ``name``."""
    try:
        params = inspect.signature(FUNCTIONS[name]).parameters
    except (TypeError, ValueError):
        return None
    unknown = sorted(kwargs - set(params))
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return (f"{name}() has no parameter {unknown[0]!r} "
                f"(it takes: {', '.join(params)})")
    return None
