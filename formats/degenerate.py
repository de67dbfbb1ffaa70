"""Degenerate answers: values that make every later step of a chain trivial.

Follow-through credit pays a step done right on the student's own earlier answer. If that
answer is all zeros, has every row constant, or every row one-hot (a scaled identity), the
later steps do no work on it: a softmax of a constant row is the uniform average, a one-hot
weight row copies one value row, a product with zeros is zeros. Such a chain is "consistent"
whatever the student understood, so it earns nothing carried forward.

One rule for every chain of the bank, with no list per template: a carried value is
**degenerate** when it has one of these forms and the key's own answer for that step does
not (a causal mask's first weight row is one-hot in the answer too, so there it proves
nothing):

* **not finite**: NaN or ±inf where the answer has none;
* **zero**: every entry within the step's tolerance of 0;
* **flat rows** (arrays only, along the last axis, at least two entries): in every row the
  entries that are not zero are all equal, within the step's tolerance. This covers constant
  rows (all equal), one-hot rows (a single non-zero entry: ``100·I``, an identity) and rows
  that are constant on their support (``tril(ones)`` after a causal mask).

Both sides may read it: the grader (``grader.verdicts.follow_through``) withholds the credit and says
why, in the words ``describe`` returns. The work is linear in the value's size, and the
value has the key's own shape before it gets here.
"""

from __future__ import annotations

import numpy as np

NOT_FINITE, ZERO, FLAT = "not finite", "zero", "flat rows"


def forms(value, rtol: float, atol: float) -> tuple[str, ...]:
    """The degenerate forms ``value`` has (in the order above; () for none)."""
    a = np.asarray(value, dtype=float)
    if not np.isfinite(a).all():
        return (NOT_FINITE,)
    found = []
    if a.size and (np.abs(a) <= atol).all():
        found.append(ZERO)
    if a.ndim >= 1 and a.shape[-1] >= 2 and a.size and _flat_rows(a.reshape(-1, a.shape[-1]), rtol, atol):
        found.append(FLAT)
    return tuple(found)


def _flat_rows(rows: np.ndarray, rtol: float, atol: float) -> bool:
    """In every row, are the entries that are not zero all equal (within the tolerance)?"""
    nonzero = np.abs(rows) > atol
    high = np.where(nonzero, rows, -np.inf).max(axis=1)
    low = np.where(nonzero, rows, np.inf).min(axis=1)
    some = nonzero.any(axis=1)
    spread = np.where(some, high - low, 0.0)
    scale = np.where(some, np.maximum(np.abs(high), np.abs(low)), 0.0)
    return bool((spread <= atol + rtol * scale).all())


def degenerate(value, expected, rtol: float, atol: float) -> str | None:
    """The first degenerate form ``value`` has that ``expected`` lacks (None: a real attempt)."""
    have = forms(value, rtol, atol)
    if not have:
        return None
    theirs = forms(expected, rtol, atol)
    return next((form for form in have if form not in theirs), None)


def describe(form: str, value, atol: float) -> str:
    """What the form is, of the student's value, in a student's words ("is all zeros")."""
    if form == NOT_FINITE:
        return "holds NaN or infinity"
    if form == ZERO:
        return "is all zeros"
    a = np.asarray(value, dtype=float)
    rows = a.reshape(-1, a.shape[-1])
    nonzero = (np.abs(rows) > atol).sum(axis=1)
    one = "has" if a.ndim == 1 else "has, in every row,"
    if (nonzero <= 1).all():
        return f"{one} a single entry that is not zero"
    if (nonzero == rows.shape[1]).all():
        return "has all its entries equal" if a.ndim == 1 else "has all the entries of each row equal"
    return f"{one} the same number in every entry that is not zero"
