"""Visible property checks: what a student's answer must satisfy, never what it equals.

They run in the student's notebook with NumPy only (``code``), and here on the reference
answer of every variant, which must pass them all. Each check allows the part's tolerance:
an answer the grader would accept (every entry within atol + rtol·|expected|) must never be
told it is wrong — rows of weights rounded to 3 decimals need not sum to exactly 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def row_sum_tolerance(n: int, atol: float, rtol: float) -> float:
    """How far a row sum may drift from 1 when each of its n entries (|e| ≤ 1, Σe = 1) is
    within atol + rtol·|e| of the truth."""
    return max(1e-6, n * atol + rtol)


@dataclass(frozen=True)
class Check:
    name: str
    takes_argument: bool
    test: Callable          # (value, argument, atol, rtol) → None when it holds, else a message
    template: str           # NumPy code; {x} the answer's name, {arg} the argument, {tol} the slack
    summary: str

    def code(self, variable: str, argument: str | None = None, atol: float = 0.0,
             rtol: float = 0.0, n: int = 1) -> str:
        """The notebook's assert line for an answer named ``variable`` with ``n`` columns."""
        tol = row_sum_tolerance(n, atol, rtol) if self.name == "rows_sum_to_one" else max(atol, 0.0)
        whole = f"np.round({variable})"
        slack = _rounded_up(tol) + (f" + {_rounded_up(rtol)} * np.abs({whole})" if rtol > 0 else "")
        return self.template.format(x=variable, arg=argument, tol=_rounded_up(tol),
                                    upper=_rounded_up(1 + max(atol, 0.0) + rtol, 6), slack=slack)


def _rounded_up(x: float, digits: int = 3) -> str:
    """``x`` to a few significant digits, never below ``x``: the notebook's check must not be
    stricter than the grader (0.02001 is written 0.0201, not 0.02)."""
    if x <= 0:
        return "0"
    text = f"{x:.{digits}g}"
    step = 10 ** (math.floor(math.log10(x)) - digits + 1)
    while float(text) < x:
        text = f"{float(text) + step:.{digits}g}"
    return text


def _floats(x):
    return np.asarray(x, dtype=float)


def _rows_sum_to_one(x, _, atol, rtol):
    x = _floats(x)
    sums = np.sum(x, axis=-1)
    tol = row_sum_tolerance(x.shape[-1] if x.ndim else 1, atol, rtol)
    if not np.all(np.abs(sums - 1.0) <= tol):
        return f"each row must sum to 1 (row sums range {sums.min():.4g} … {sums.max():.4g})"
    return None


def _finite(x, *_):
    return None if np.all(np.isfinite(_floats(x))) else "contains NaN or inf"


def _nonnegative(x, _, atol, rtol):
    return None if np.all(_floats(x) >= -atol) else "has negative entries"


def _probabilities(x, _, atol, rtol):
    x = _floats(x)
    return None if np.all((x >= -atol) & (x <= 1 + atol + rtol)) else "has entries outside [0, 1]"


def _masked_zero(x, mask, atol, rtol):
    x, mask = _floats(x), np.asarray(mask, dtype=bool)
    try:
        blocked = np.broadcast_to(~mask, x.shape)
    except ValueError:
        return f"mask of shape {mask.shape} does not fit an answer of shape {x.shape}"
    return None if np.all(np.abs(x[blocked]) <= atol) else "blocked positions (mask False) must be 0"


def _lower_triangular(x, _, atol, rtol):
    return None if np.all(np.abs(np.triu(_floats(x), 1)) <= atol) else "has non-zero entries above the diagonal"


def _integer_valued(x, _, atol, rtol):
    x = _floats(x)
    whole = np.round(x)
    return None if np.all(np.abs(x - whole) <= atol + rtol * np.abs(whole)) else "must be whole numbers"


CHECKS: dict[str, Check] = {c.name: c for c in (
    Check("finite", False, _finite, "assert np.all(np.isfinite({x})), 'NaN or inf in {x}'",
          "no NaN or inf"),
    Check("rows_sum_to_one", False, _rows_sum_to_one,
          "assert np.allclose(np.sum({x}, axis=-1), 1, rtol=0, atol={tol}), "
          "'each row of {x} must sum to 1'",
          "each row sums to 1"),
    Check("nonnegative", False, _nonnegative,
          "assert np.all(np.asarray({x}) >= -{tol}), '{x} has negative entries'",
          "no negative entries"),
    Check("probabilities", False, _probabilities,
          "assert np.all((np.asarray({x}) >= -{tol}) & (np.asarray({x}) <= {upper})), "
          "'{x} must lie in [0, 1]'",
          "every entry in [0, 1]"),
    Check("masked_zero", True, _masked_zero,
          "assert np.all(np.abs(np.asarray({x})[~np.broadcast_to(np.asarray({arg}, bool), "
          "np.shape({x}))]) <= {tol}), 'blocked positions of {x} must be 0'",
          "entries where the mask is False are 0"),
    Check("lower_triangular", False, _lower_triangular,
          "assert np.all(np.abs(np.triu({x}, 1)) <= {tol}), '{x} must be lower-triangular'",
          "zero above the diagonal"),
    Check("integer_valued", False, _integer_valued,
          "assert np.all(np.abs(np.asarray({x}) - np.round({x})) <= {slack}), "
          "'{x} must be whole numbers'",
          "whole numbers"),
)}
