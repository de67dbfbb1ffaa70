"""How a variant's values are worked out: the scope its expressions run in, the reference
functions guarded against fully masked rows, the ``Evaluator`` that works out a template's
expressions and says a template bug with file:line, a value made plain, copied or checked
finite, and what a draw raises (``Rejected``: draw again; ``VariantError``: no valid draw).
``draw`` and ``hidden_tests`` draw with them, ``twin_values`` and ``mistake_search`` work out
the twins' values with them."""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np
from solutions.twins.common import BLOCKED_SCORE

from exercises.template import references, trained_models
from exercises.template.distributions import DISTRIBUTIONS
from exercises.template.expression_errors import ExpressionError, IllPosed
from exercises.template.expressions import Expression, Scope
from exercises.template.model import Parameter, Template, TemplateError
from exercises.template.texts import RenderError

UNSET = object()      # a value a constant table (``twin_values.constant_table``) does not hold yet


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
                 tie_gap=template.tie_gap, rng_seed=rng_seed, model=trained_model(template))


def trained_model(template: Template):
    """The trained model the template reads (loaded once per process), or None."""
    return trained_models.load(template.model_file, template.model_digest) if template.model else None


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


# --- the evaluator: a template's expressions worked out, its bugs said with file:line ----------

class Evaluator:
    """Evaluates a template's expressions, reporting template bugs with file:line."""

    def __init__(self, template: Template):
        self.template = template

    def fail(self, line: int, key: str, err: Exception):
        if isinstance(err, TemplateError):
            raise err
        kind = "" if isinstance(err, (ExpressionError, RenderError)) else f"{type(err).__name__}: "
        raise TemplateError([f"{self.template.path}:{line}: {key}: {kind}{err}"]) from None

    def evaluate(self, expression: Expression, scope: Scope, line: int, key: str):
        try:
            return expression.evaluate(scope)
        except (IllPosed, Rejected):
            raise
        except Exception as err:  # noqa: BLE001 — any failure is the template's; say where
            if not scope.strict:
                raise  # a twin failing is information, handled by the caller
            self.fail(line, key, err)

    def truth(self, expression: Expression, scope: Scope, line: int, key: str) -> bool:
        """A condition's value: one True/False (a template bug otherwise)."""
        value = self.evaluate(expression, scope, line, key)
        if np.ndim(value) != 0:
            self.fail(line, key, ValueError(f"{expression.source!r} gives {np.shape(value)} values, "
                                            f"not one True/False: wrap it in all(…) or any(…)"))
        return bool(value)

    def sample(self, parameters, rng, scope: Scope, key: str) -> None:
        for p in parameters:
            scope.values[p.name] = self.sample_one(p, rng, scope, f"{key}.{p.name}")

    def sample_one(self, p: Parameter, rng, scope: Scope, key: str):
        if p.distribution is None:
            return np.asarray(p.constant, dtype=float) if _is_matrix(p.constant) else p.constant
        options = {}
        for name, option in p.options.items():
            if isinstance(option, Expression):
                options[name] = self.evaluate(option, scope, p.line, f"{key}.{name}")
            elif isinstance(option, list) and option and isinstance(option[0], Expression):
                options[name] = [self.evaluate(e, scope, p.line, f"{key}.{name}") for e in option]
            else:
                options[name] = option
        try:
            return DISTRIBUTIONS[p.distribution].sample(rng, **options)
        except Exception as err:  # noqa: BLE001 — bad options are the template's
            self.fail(p.line, key, ValueError(f"{p.distribution}: {err}"))

    def derive(self, derived, scope: Scope, key: str, cached=None) -> None:
        """Evaluate ``derived`` in order. ``cached``: a per-template table (``constant_table``)
        of the values that are the same on every draw, reused instead of recomputed."""
        for d in derived:
            if cached is not None and d.name in cached.names:
                hit = cached.values.get(d.name, UNSET)
                if hit is not UNSET:
                    scope.values[d.name] = hit
                    continue
                value = scope.values[d.name] = self.evaluate(d.expression, scope, d.line, f"{key}.{d.name}")
                cached.values[d.name] = value
                continue
            scope.values[d.name] = self.evaluate(d.expression, scope, d.line, f"{key}.{d.name}")


def _is_matrix(value) -> bool:
    """A list of lists of numbers (a constant matrix, stored as float64)."""
    return (isinstance(value, list) and bool(value) and all(isinstance(r, list) for r in value)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for r in value for x in r))


_ANY = np.logical_or.reduce       # np.any's reduction, without its Python wrappers


def finite_problem(value) -> str | None:
    """NaN or +inf anywhere (−inf is allowed: it is how masked scores are written)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        if isinstance(value, (list, tuple)):
            return next((p for p in map(finite_problem, value) if p), None)
        return None
    if _ANY(np.isnan(array), axis=None):
        return "NaN"
    if _ANY(array == np.inf, axis=None):
        return "+inf"
    return None
