"""The functions and constants expressions may call: NumPy's, with the constructors capped in
size, a few of the language's own, and the tie-aware ``argmax``/``argmin``/``rank`` that refuse
near-ties while a variant is made, so a question that asks "which word wins" has one winner."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from exercises.template.expression_errors import MAX_ITEMS, ExpressionError, IllPosed

_MAX_ELEMENTS = 1_000_000  # elements of an array built in an expression (8 MB of float64)


# --- tie-aware choices --------------------------------------------------------------------

def _gaps(lower, upper) -> np.ndarray:
    """upper − lower, where equal values (±inf too) and NaN count as a tie: 0."""
    with np.errstate(invalid="ignore"):
        gaps = np.where(lower == upper, 0.0, upper - lower)
    return np.where(np.isnan(gaps), 0.0, gaps)


def _top_two_gap(x, axis, largest: bool) -> float:
    """The smallest gap between the best and the runner-up value (per row along ``axis``)."""
    x = np.asarray(x, dtype=float)
    rows = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    if rows.shape[-1] < 2:
        return math.inf
    ordered = np.sort(rows, axis=-1)
    gaps = (_gaps(ordered[..., -2], ordered[..., -1]) if largest
            else _gaps(ordered[..., 0], ordered[..., 1]))
    return float(gaps.min())


def _argbest(scope, name: str, largest: bool):
    def choose(x, axis=None):
        x = np.asarray(x)
        if scope.strict and x.size and not _top_two_gap(x, axis, largest) >= scope.tie_gap:
            raise IllPosed(f"near-tie in {name}(): the two best values are closer than "
                           f"{scope.tie_gap:g}")
        index = np.argmax(x, axis=axis) if largest else np.argmin(x, axis=axis)
        return int(index) if np.ndim(index) == 0 else index
    return choose


def _rank(scope):
    def rank(x):
        """Positions ordered from the largest value to the smallest; refuses near-ties."""
        x = np.asarray(x, dtype=float).reshape(-1)
        ordered = np.sort(x)
        if scope.strict and x.size > 1 and not _gaps(ordered[:-1], ordered[1:]).min() >= scope.tie_gap:
            raise IllPosed(f"near-tie in rank(): two values are closer than {scope.tie_gap:g}")
        return [int(i) for i in np.argsort(-x, kind="stable")]
    return rank


def tie_aware(name: str, scope) -> Callable:
    """argmax, argmin or rank for an evaluation in ``scope`` (an ``expressions.Scope``): while a
    variant is made (``scope.strict``) they refuse values closer than ``scope.tie_gap``."""
    return _rank(scope) if name == "rank" else _argbest(scope, name, name == "argmax")


def _check_elements(count) -> None:
    if count > _MAX_ELEMENTS:
        raise ExpressionError(f"an array of {count} elements (at most {_MAX_ELEMENTS})")


def _sized(constructor):
    """np.zeros/ones/full, refusing shapes beyond the size cap before allocating."""
    def build(shape, *args, **kwargs):
        dims = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
        _check_elements(math.prod(max(d, 0) for d in dims))
        return constructor(shape, *args, **kwargs)
    return build


def _sized_eye(n, m=None, *args, **kwargs):
    _check_elements(int(n) * int(n if m is None else m))
    return np.eye(n, m, *args, **kwargs)


def _sized_arange(*args, **kwargs):
    """np.arange(stop) / (start, stop[, step]), refusing more elements than the cap."""
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    if all(isinstance(a, (int, float)) for a in (start, stop, step)) and step:
        _check_elements(max(0, math.ceil((stop - start) / step)))
    return np.arange(*args, **kwargs)


def _range(*args) -> list:
    r = range(*args)
    if len(r) > MAX_ITEMS:
        raise ExpressionError(f"range of {len(r)} items (at most {MAX_ITEMS})")
    return list(r)


def _index(sequence, item) -> int:
    return list(sequence).index(item)


def _join(items, separator=" ") -> str:
    return separator.join(str(i) for i in items)


def _top_gap(x) -> float:
    """The gap between the largest and second-largest entry (for constraints)."""
    return _top_two_gap(x, None, True)


def _fmt(x, decimals=2) -> str:
    return f"{float(x):.{int(decimals)}f}"


BUILTINS: dict[str, Callable] = {
    "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "tanh": np.tanh,
    "round": lambda x, n=0: (round(float(x), int(n)) if np.ndim(x) == 0 else np.round(x, int(n))),
    "int": int, "float": float, "bool": bool, "str": str, "len": len, "list": list,
    "min": lambda *a, **k: a[0].min(**k) if len(a) == 1 and isinstance(a[0], np.ndarray) else min(*a, **k),
    "max": lambda *a, **k: a[0].max(**k) if len(a) == 1 and isinstance(a[0], np.ndarray) else max(*a, **k),
    "sum": np.sum, "mean": np.mean, "var": np.var, "std": np.std, "prod": np.prod,
    "sort": np.sort, "cumsum": np.cumsum, "diff": np.diff, "norm": np.linalg.norm,
    "transpose": np.transpose, "reshape": np.reshape, "shape": np.shape, "ndim": np.ndim,
    "zeros": _sized(np.zeros), "ones": _sized(np.ones), "eye": _sized_eye, "full": _sized(np.full),
    "arange": _sized_arange,
    "array": np.array, "stack": np.stack, "concatenate": np.concatenate, "where": np.where,
    "tril": np.tril, "triu": np.triu, "diag": np.diag, "outer": np.outer, "dot": np.dot,
    "matmul": np.matmul, "maximum": np.maximum, "minimum": np.minimum, "clip": np.clip,
    "all": np.all, "any": np.any, "isfinite": np.isfinite, "count_nonzero": np.count_nonzero,
    "logical_not": np.logical_not, "logical_and": np.logical_and, "unique": np.unique,
    "swapaxes": np.swapaxes, "as_bool": lambda x: np.asarray(x, dtype=bool),
    "as_int": lambda x: np.asarray(x, dtype=np.int64), "as_float": lambda x: np.asarray(x, dtype=float),
    "range": _range, "dict": dict, "index": _index, "join": _join, "top_gap": _top_gap,
    "fmt": _fmt, "pi": math.pi, "inf": math.inf,
}
TIE_AWARE = {"argmax", "argmin", "rank"}
KNOWN_FUNCTIONS = frozenset(BUILTINS) | TIE_AWARE
