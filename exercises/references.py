"""What a template may name: the public reference functions of ``solutions`` and their twins."""

from __future__ import annotations

import inspect
import types

import solutions

_NOT_FOR_TEMPLATES = {"get_misconception", "misconceptions_for", "Misconception"}

FUNCTIONS: dict = {
    name: obj for name, obj in vars(solutions).items()
    if not name.startswith("_") and callable(obj) and not isinstance(obj, types.ModuleType)
    and name not in _NOT_FOR_TEMPLATES
}
CONSTANTS: dict = {"ALIGNMENT_SCORES": solutions.ALIGNMENT_SCORES}
MISCONCEPTIONS = solutions.MISCONCEPTIONS


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
