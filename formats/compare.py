"""Is a value within tolerance of the expected one? The one comparison used everywhere:
variant validation (reference passes, twins fail) and, later, the grader's checks.

A value passes when every entry satisfies |actual − expected| ≤ atol + rtol·|expected|
(NumPy's isclose rule), with equal shapes, no NaN/inf where a finite number is expected,
exact equality for integer answers (counts, indices, token ids), booleans and text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# ndarray.all(), .any() and .max(), without the Python functions NumPy calls them through
# (a submission's checks make hundreds of these calls on small arrays)
_ALL = np.logical_and.reduce
_ANY = np.logical_or.reduce
_MAX = np.maximum.reduce


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str = ""           # why it failed, for feedback ("" when ok)
    max_error: float = 0.0     # largest absolute difference where comparable


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


def _numeric(value):
    """``value`` as a real-valued array, or None (text, complex, objects, huge integers)."""
    try:
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
    except Exception:  # noqa: BLE001 — anything unconvertible is simply not numeric
        return None
    return array if array.dtype.kind in "biuf" else None


def compare(actual, expected, rtol: float = 1e-5, atol: float = 1e-8) -> Comparison:
    """Compare ``actual`` (a student's or a twin's value) with ``expected``."""
    if type(actual) is float and type(expected) is float:
        # A number within tolerance, without the arrays of the path below (the same float64
        # arithmetic; many parts are single numbers). NaN and ±inf, an error too large for a
        # float and a failure (which needs its message) take the full path.
        error = abs(actual - expected)
        if error <= atol + rtol * abs(expected) and error < _INF:
            return Comparison(True, "", error)
    close = _close_float_arrays(actual, expected, rtol, atol)
    if close is not None:
        return close
    if isinstance(expected, dict):
        return _compare_mappings(actual, expected, rtol, atol)
    if isinstance(expected, str):
        return _compare_texts(actual, expected)
    if isinstance(expected, (list, tuple)) and not is_numeric(expected):
        return _compare_items(actual, expected, rtol, atol)
    want = np.asarray(expected)
    got = _numeric(actual)
    if got is None:
        kind = type(actual).__name__ if not isinstance(actual, np.ndarray) else f"an array of {actual.dtype}"
        return Comparison(False, f"expected a number or an array, got {kind}")
    if got.shape != want.shape:
        return Comparison(False, f"wrong shape: expected {want.shape}, got {got.shape}")
    if want.dtype.kind == "b":
        return _compare_booleans(got, want)
    if want.dtype.kind in "iu":  # counts, indices, token ids: exactly, whatever the tolerance
        return _compare_whole_numbers(got, want)
    return _compare_reals(got.astype(float), want.astype(float), rtol, atol)


def _close_float_arrays(actual, expected, rtol, atol) -> Comparison | None:
    """The common case, without building a message: two finite float arrays of one shape
    within tolerance; None for anything else (NaN or inf fall through to the full path)."""
    if (isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
            and actual.dtype.kind == expected.dtype.kind == "f" and actual.shape == expected.shape
            and _ALL(np.isfinite(expected), axis=None)):
        with np.errstate(invalid="ignore"):
            error = np.abs(actual - expected)
            if _ALL(error <= atol + rtol * np.abs(expected), axis=None):
                return Comparison(True, "", float(_MAX(error, axis=None)) if error.size else 0.0)
    return None


def _compare_mappings(actual, expected: dict, rtol, atol) -> Comparison:
    if not isinstance(actual, dict) or set(actual) != set(expected):
        return Comparison(False, f"expected a mapping with keys {sorted(expected)}")
    for key in expected:
        result = compare(actual[key], expected[key], rtol, atol)
        if not result.ok:
            return Comparison(False, f"{key}: {result.reason}", result.max_error)
    return Comparison(True)


def _compare_texts(actual, expected: str) -> Comparison:
    # Words are compared as words: case and surrounding/multiple spaces do not matter.
    if isinstance(actual, str) and _words(actual) == _words(expected):
        return Comparison(True)
    shown = actual if not isinstance(actual, str) or len(actual) < 80 else actual[:77] + "…"
    return Comparison(False, f"got {shown!r}, which is not the expected text")


def _compare_items(actual, expected, rtol, atol) -> Comparison:
    """A list or tuple that is not numeric (text, mixed items): item by item."""
    if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
        return Comparison(False, f"expected a list of {len(expected)} items")
    for i, (a, e) in enumerate(zip(actual, expected)):
        result = compare(a, e, rtol, atol)
        if not result.ok:
            return Comparison(False, f"item {i}: {result.reason}", result.max_error)
    return Comparison(True)


def _compare_booleans(got: np.ndarray, want: np.ndarray) -> Comparison:
    if got.dtype.kind not in "biuf" or (got.dtype.kind != "b" and not ((got == 0) | (got == 1)).all()):
        return Comparison(False, "expected True/False (or 1/0) entries")
    wrong = int(np.count_nonzero(got.astype(bool) != want))
    return Comparison(wrong == 0, f"{wrong} of {want.size} entries differ" if wrong else "")


def _compare_whole_numbers(got: np.ndarray, want: np.ndarray) -> Comparison:
    if got.dtype.kind == "b":
        return Comparison(False, "expected whole numbers, got True/False")
    if got.dtype.kind == "f" and not np.all(np.isfinite(got)):
        return Comparison(False, "expected whole numbers, got NaN or inf", np.inf)
    wrong = int(np.count_nonzero(got != want))
    if wrong:
        where = "" if want.ndim == 0 else f"{wrong} of {want.size} entries "
        return Comparison(False, f"{where}not equal (whole numbers are compared exactly)",
                          float(np.max(np.abs(got.astype(float) - want.astype(float)))))
    return Comparison(True)


def _compare_reals(got: np.ndarray, want: np.ndarray, rtol, atol) -> Comparison:
    """Float arrays of one shape: NaN and ±inf only where expected, the rest within tolerance."""
    if _ANY(np.isnan(got) & ~np.isnan(want), axis=None):
        return Comparison(False, f"{int(np.count_nonzero(np.isnan(got)))} entries are NaN", np.inf)
    bad_inf = np.isinf(got) & (got != want)
    if _ANY(bad_inf, axis=None):
        return Comparison(False, f"{int(np.count_nonzero(bad_inf))} entries are ±inf", np.inf)
    finite = np.isfinite(want) & np.isfinite(got)
    with np.errstate(invalid="ignore"):     # inf − inf, and 0 · inf where rtol is 0
        error = np.abs(got - want)
        allowed = atol + rtol * np.abs(want)    # (NaN only where want is not finite: unread)
    max_error = float(_MAX(error[finite], axis=None)) if _ANY(finite, axis=None) else 0.0
    outside = finite & (error > allowed)
    mismatch = ~np.isfinite(want) & (got != want)
    if _ANY(mismatch, axis=None) and not _ANY(outside, axis=None):
        count = int(np.count_nonzero(mismatch))
        return Comparison(False, f"{count} entr{'y' if count == 1 else 'ies'} should be ±inf "
                                 f"(e.g. a blocked score) but {'is' if count == 1 else 'are'} "
                                 f"finite", np.inf)
    if _ANY(outside, axis=None) or _ANY(mismatch, axis=None):
        count = int(np.count_nonzero(outside | mismatch))
        where = "" if want.ndim == 0 else f"{count} of {want.size} entries "
        return Comparison(False, f"{where}outside tolerance (largest error {max_error:.3g}; "
                                 f"allowed {atol:g} + {rtol:g}·|expected|)", max_error)
    return Comparison(True, "", max_error)


def is_numeric(value) -> bool:
    """A number, an array or a (nested) list of numbers — not text, not ragged lists."""
    try:
        return np.asarray(value).dtype.kind in "biuf"
    except (ValueError, TypeError):
        return False


def within(actual, expected, rtol: float, atol: float) -> bool:
    """compare(...).ok without building a message: for validation, which asks it over and
    over for every student of a build and only needs yes or no."""
    if (isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)
            and actual.dtype.kind == expected.dtype.kind == "f" and actual.shape == expected.shape):
        if not (_ALL(np.isfinite(expected), axis=None) and _ALL(np.isfinite(actual), axis=None)):
            return compare(actual, expected, rtol, atol).ok
        return bool(_ALL(np.abs(actual - expected) <= atol + rtol * np.abs(expected), axis=None))
    return compare(actual, expected, rtol, atol).ok


def telling(value) -> bool:
    """Can a match on a part with this answer name a mistake the template does not list?
    An array of at least four real numbers, or of whole numbers that take at least five
    different values (a score matrix), yes: two different mistakes rarely give the same such
    arrays. A single number, a count, an index or an argmax row, a shape, a token list or a
    boolean mask, no: many mistakes (and slips) give 3, [0, 0, 1, 2] or one value several
    formulas reach (a name given on such a part alone is too often another mistake's, and
    ``bench.diagnosis`` wants none named wrongly). Both sides read it: the build stores the
    searched mistakes of every part, the grader names one alone only on a telling part, and
    elsewhere uses them only to doubt a listed twin's name ("either … or …")."""
    if isinstance(value, (str, bool, np.bool_)) or value is None:
        return False
    try:
        raw = np.asarray(value)
        if raw.dtype.kind not in "iuf":
            return False
        array = raw.astype(float)
    except (TypeError, ValueError):
        return False
    finite = array[np.isfinite(array)]
    if finite.size < 4:
        return False
    whole = bool(np.all(finite == np.round(finite)))
    return not whole or len(np.unique(finite)) >= 5


_INF = float("inf")


def _same_number(value: float, wrong: float, rtol: float, atol: float) -> bool:
    """``matches_twin`` for two Python floats, as its array path decides it, without arrays:
    NaN matches NaN only (both then count as 0.0, as there), a twin's ±inf only itself, the
    rest within tolerance."""
    if value != value or wrong != wrong:
        if not (value != value and wrong != wrong):
            return False
        value = wrong = 0.0
    if wrong == _INF or wrong == -_INF:
        return value == wrong
    return abs(value - wrong) <= atol + rtol * abs(wrong)


def matches_twin(value, wrong, rtol: float, atol: float) -> bool:
    """Does the student's value equal a twin's (a mistake's value on the same numbers)? NaN
    matches NaN here: a softmax that overflows gives NaN for the student exactly where it does
    for the twin."""
    try:
        if type(value) is float and type(wrong) is float:
            return _same_number(value, wrong, rtol, atol)
        if (type(value) is np.ndarray and type(wrong) is np.ndarray and value.dtype == wrong.dtype == np.float64
                and value.shape == wrong.shape and not (_ANY(np.isnan(value), axis=None)
                                                        or _ANY(np.isnan(wrong), axis=None))):
            return within(value, wrong, rtol, atol)       # (the common case: no NaN to set aside)
        if is_numeric(value) and is_numeric(wrong) and not isinstance(value, str):
            if np.shape(value) != np.shape(wrong):    # before any copy: the student's may be huge
                return False
            a, b = np.asarray(value, dtype=float), np.asarray(wrong, dtype=float)
            if (np.isnan(a) != np.isnan(b)).any():
                return False
            return within(np.where(np.isnan(a), 0.0, a), np.where(np.isnan(b), 0.0, b), rtol, atol)
        return within(value, wrong, rtol, atol)
    except Exception:  # noqa: BLE001 — a value that cannot be compared matches nothing
        return False
