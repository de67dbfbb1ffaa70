"""What the expression language raises, and the size cap it keeps everywhere: shared by the
interpreter (``expressions``) and the functions it offers (``builtin_functions``)."""

from __future__ import annotations

MAX_ITEMS = 100_000      # list items, comprehension steps per evaluation


class ExpressionError(ValueError):
    """An expression that cannot be parsed or uses something outside the language."""


class IllPosed(Exception):
    """The sampled values make the question ill-posed (a near-tie, a fully masked row …)."""
