"""Hidden inputs stay hidden: no message or text answer carries them onto a feedback page.

An ``implement`` problem is graded on hidden test inputs, which the student's function receives
one case at a time in the sandbox (``grader/sandbox/child.py``). Nothing stops that function from
writing what it received into an exception message (``raise ValueError(repr(Q))``) or into a
global that a later cell assigns to a text answer; both come back, and both would be printed
on the student's feedback page. With the hidden inputs in hand, next term's student could
hard-code outputs instead of writing the function. So before a verdict or an answer is
recorded, every number written in its text is looked up among the student's hidden inputs,
and when a text holds several of them, those numbers are masked (a message) or the text is
not kept (an answer).

Only numbers written in decimal are recognised (repr, str, f-strings, any rounding down to 3
significant digits): an encoding chosen to hide them (hex of the bytes, base64) is not, and
such a student has learned only inputs, never the expected outputs. Linear in the text: one
regex pass that cannot backtrack, and a binary search per number.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

import numpy as np

from formats.serialize import decode_names

# A decimal number as Python, NumPy and printf write one (its sign is ignored: -x is x's echo too)
_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d{1,4})?")
MIN_DIGITS = 3           # significant digits a number needs to count: "4" or "(2, 3)" never do
MIN_ECHOED = 3           # numbers of the hidden inputs a text must hold to be an echo of them
MASK = "…"
_LONGEST = 40            # characters: repr of a float64 needs at most 24 (longer runs of digits are no float)


def _floats(value, out: list) -> None:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            out.append(np.abs(value[np.isfinite(value)]).ravel())
    elif isinstance(value, float):
        out.append(np.array([abs(value)]))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _floats(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _floats(item, out)


def may_hold_numbers(text: str) -> bool:
    """Could ``text`` echo hidden inputs at all (``MIN_ECHOED`` numbers of ``MIN_DIGITS``
    digits)? Cheap, so the hidden inputs are gathered only for the texts that need it."""
    count = 0
    for m in _NUMBER.finditer(text):
        count += sum(c.isdigit() for c in m.group()[:_LONGEST]) >= MIN_DIGITS
        if count >= MIN_ECHOED:
            return True
    return False


class HiddenInputs:
    """The magnitudes of every float among one student's hidden test inputs (all their
    ``implement`` problems), sorted, for looking numbers up."""

    def __init__(self, entry: dict):
        found: list = []
        for record in entry.get("problems", {}).values():
            if record.get("kind") == "implement":
                for test in record.get("tests", []):
                    _floats(decode_names(test.get("args", {})), found)
        values = np.concatenate(found) if found else np.zeros(0)
        self.values = np.unique(values[values != np.round(values)])    # whole numbers are no secret

    def __bool__(self) -> bool:
        return bool(self.values.size)

    def _is_hidden(self, token: str) -> bool:
        if len(token) > _LONGEST:
            return False
        try:
            number = Decimal(token)
        except InvalidOperation:
            return False
        digits = number.as_tuple()
        significant = len(digits.digits) - next((i for i, d in enumerate(digits.digits) if d), len(digits.digits))
        if significant < MIN_DIGITS or not isinstance(digits.exponent, int):
            return False
        x, tolerance = float(number), float(Decimal(1).scaleb(digits.exponent))   # rounded or cut off
        at = int(np.searchsorted(self.values, x - tolerance))
        return at < self.values.size and self.values[at] <= x + tolerance

    def echoed(self, text: str) -> list[tuple[int, int]]:
        """The spans of ``text`` that are numbers of the hidden inputs, when there are at least
        ``MIN_ECHOED`` of them (fewer can be chance); else []."""
        if not self or not text:
            return []
        spans = [m.span() for m in _NUMBER.finditer(text) if self._is_hidden(m.group())]
        return spans if len(spans) >= MIN_ECHOED else []

    def mask(self, text: str) -> str:
        """``text`` with every number of the hidden inputs replaced by ``MASK``."""
        spans = self.echoed(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out += [text[last:start], MASK]
            last = end
        out.append(text[last:])
        return "".join(out) + " (numbers of the hidden test inputs are not shown)"

    def holds(self, text: str) -> bool:
        return bool(self.echoed(text))

    def holds_values(self, array: np.ndarray) -> bool:
        """Does a float answer hold ``MIN_ECHOED`` of the hidden inputs, exactly? (An answer
        array is drawn on the feedback page.)"""
        if not self or array.size == 0:
            return False
        found = np.isin(np.abs(array[np.isfinite(array)]), self.values)
        return int(np.count_nonzero(found)) >= MIN_ECHOED
