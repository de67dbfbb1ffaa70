"""How a variant's values are worked out: the scope its expressions run in, the reference
functions guarded against fully masked rows, a value made plain or copied, and what a draw
raises (``Rejected``: draw again; ``VariantError``: no valid draw). ``variant`` draws with
them, ``twin_values`` and ``mistake_search`` work out the twins' values with them."""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
from solutions.twins.common import BLOCKED_SCORE


from exercises.template import references
from exercises.template.expressions import IllPosed, Scope
from exercises.template.schema import Template


class Rejected(Exception):
    """This draw is not a valid variant; the reason is counted and another draw is made."""


class VariantError(ValueError):
    """No valid variant within ``sampling.max_attempts`` draws."""

    def __init__(self, message: str, rejections: Counter):
        super().__init__(message)
        self.rejections = rejections


@dataclass
class TestCase:
    family: str
    index: int
    args: dict
    expected: object
    # the args as read-only views, made once (``_read_only_args``); False: one is mutable
    _read_only: dict | bool | None = field(default=None, repr=False, compare=False)


def _mask_parameters(function) -> tuple[str, ...]:
    try:
        return tuple(p for p in inspect.signature(function).parameters if "mask" in p)
    except (TypeError, ValueError):
        return ()


def _refusing_fully_masked_rows(name, function):
    signature = inspect.signature(function)
    names = _mask_parameters(function)

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        bound = signature.bind_partial(*args, **kwargs).arguments
        for arg in names:
            mask = bound.get(arg)
            if not isinstance(mask, np.ndarray) or mask.ndim < 1 or mask.shape[-1] == 0:
                continue
            # bool: True = may attend; additive float: blocked at −inf or the −1e9 fill
            allowed = mask if mask.dtype == bool else mask > BLOCKED_SCORE
            if np.any(~allowed.any(axis=-1)):
                raise IllPosed(f"a fully masked row in the {arg} of {name}()")
        return function(*args, **kwargs)
    return guarded


GUARDED = {name: (_refusing_fully_masked_rows(name, f) if _mask_parameters(f) else f)
            for name, f in references.FUNCTIONS.items()}


def scope_for(template: Template, values: dict, rng_seed: int, strict=True, functions=None) -> Scope:
    return Scope(values=values, functions=functions or functions_for(template), strict=strict,
                 tie_gap=template.tie_gap, rng_seed=rng_seed)


def functions_for(template: Template) -> dict:
    return references.FUNCTIONS if template.allow_fully_masked_rows else GUARDED


def per_template(table: dict, template, make):
    """``make(template)``, worked out once per template and process and kept in ``table``
    (by id, with the template itself, so a new template at a reused id is never answered
    with another's entry)."""
    cached = table.get(id(template))
    if cached is None or cached[0] is not template:
        cached = table[id(template)] = (template, make(template))
    return cached[1]


def plain_value(value):
    """NumPy scalars → Python numbers; tuples → lists; arrays stay arrays."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [plain_value(v) for v in value]
    return value


def fresh_copy(value):
    """A copy a called function may change in place without touching the stored case
    (arrays copied, containers rebuilt, immutable values shared): deepcopy, only faster."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: fresh_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [fresh_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(fresh_copy(v) for v in value)
    return value


def output_of(template, evaluator, result, scope):
    if template.output is None:
        return plain_value(result)
    local = replace(scope, values={**scope.values, "result": result})
    return plain_value(evaluator.evaluate(template.output, local, template.line_of("output"), "output"))
