"""Visible property checks: what a student's answer must satisfy, never what it equals.

They run in the student's notebook with NumPy only (issue "notebooks"), so each has a
``code`` snippet; here they also run on the reference answer of every variant, which must
pass them all. ``{x}`` in ``code`` is the answer's variable name, ``{arg}`` the argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Check:
    name: str
    takes_argument: bool
    test: Callable          # (value, argument) → None when it holds, else a message
    code: str
    summary: str


def _rows_sum_to_one(x, _):
    sums = np.sum(np.asarray(x, dtype=float), axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        return f"each row must sum to 1 (row sums range {sums.min():.4g} … {sums.max():.4g})"
    return None


def _finite(x, _):
    return None if np.all(np.isfinite(np.asarray(x, dtype=float))) else "contains NaN or inf"


def _nonnegative(x, _):
    return None if np.all(np.asarray(x, dtype=float) >= 0) else "has negative entries"


def _probabilities(x, _):
    x = np.asarray(x, dtype=float)
    return None if np.all((x >= 0) & (x <= 1)) else "has entries outside [0, 1]"


def _masked_zero(x, mask):
    x, mask = np.asarray(x, dtype=float), np.asarray(mask, dtype=bool)
    try:
        blocked = np.broadcast_to(~mask, x.shape)
    except ValueError:
        return f"mask of shape {mask.shape} does not fit an answer of shape {x.shape}"
    return None if np.all(x[blocked] == 0) else "blocked positions (mask False) must be exactly 0"


def _lower_triangular(x, _):
    x = np.asarray(x)
    return None if np.all(np.triu(x, 1) == 0) else "has non-zero entries above the diagonal"


def _integer_valued(x, _):
    x = np.asarray(x, dtype=float)
    return None if np.all(x == np.round(x)) else "must be whole numbers"


CHECKS: dict[str, Check] = {c.name: c for c in (
    Check("finite", False, _finite, "assert np.all(np.isfinite({x})), 'NaN or inf in {x}'",
          "no NaN or inf"),
    Check("rows_sum_to_one", False, _rows_sum_to_one,
          "assert np.allclose(np.sum({x}, axis=-1), 1), 'each row of {x} must sum to 1'",
          "each row sums to 1"),
    Check("nonnegative", False, _nonnegative, "assert np.all({x} >= 0), '{x} has negative entries'",
          "no negative entries"),
    Check("probabilities", False, _probabilities,
          "assert np.all(({x} >= 0) & ({x} <= 1)), '{x} must lie in [0, 1]'",
          "every entry in [0, 1]"),
    Check("masked_zero", True, _masked_zero,
          "assert np.all(np.asarray({x})[~np.broadcast_to(np.asarray({arg}, bool), np.shape({x}))] == 0), "
          "'blocked positions of {x} must be exactly 0'",
          "entries where the mask is False are exactly 0"),
    Check("lower_triangular", False, _lower_triangular,
          "assert np.all(np.triu({x}, 1) == 0), '{x} must be lower-triangular'",
          "zero above the diagonal"),
    Check("integer_valued", False, _integer_valued,
          "assert np.all(np.asarray({x}) == np.round({x})), '{x} must be whole numbers'",
          "whole numbers"),
)}
