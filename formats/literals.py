"""Values as Python source: the givens and answers a notebook shows, readable and exact.

``literal(value)`` is code that evaluates (with NumPy as ``np``) to the same value, bit for
bit: floats use Python's shortest round-trip repr, so a student who copies a given gets the
number the answer key was computed from. 2-D arrays are printed one row per line with the
columns aligned, the way one writes a matrix by hand.
"""

from __future__ import annotations

import math

import numpy as np

_ALL = np.logical_and.reduce      # ndarray.all() without its Python wrapper


def _scalar(x) -> str:
    if isinstance(x, (bool, np.bool_)):
        return repr(bool(x))
    if isinstance(x, (int, np.integer)):
        return repr(int(x))
    x = float(x)
    if math.isnan(x):
        return "np.nan"
    if math.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(x)


def _cells(array: np.ndarray) -> list[str]:
    """Every entry's literal, in order (whole arrays at once where no entry is special)."""
    flat = array.reshape(-1).tolist()
    if array.dtype.kind == "f" and _ALL(np.isfinite(array), axis=None):
        return list(map(float.__repr__, flat))
    if array.dtype.kind in "iu":
        return list(map(int.__repr__, flat))
    return [_scalar(x) for x in flat]


def _rows(array: np.ndarray, indent: int) -> str:
    """Nested brackets for an array of ndim ≥ 1, the last axis on one line, aligned."""
    if array.ndim == 1:
        return "[" + ", ".join(_cells(array)) + "]"
    cells = _cells(array)
    width = max(len(c) for c in cells)
    rows = [cells[i:i + array.shape[-1]] for i in range(0, len(cells), array.shape[-1])]
    lines = ["[" + ", ".join(c.rjust(width) for c in row) + "]" for row in rows]
    return _nest(lines, array.shape[:-1], indent)


def _nest(lines: list[str], shape: tuple, indent: int) -> str:
    """Wrap rows in brackets for the leading axes; a blank line between 2-D slices."""
    if len(shape) == 1:
        pad = " " * (indent + 1)
        return "[" + (",\n" + pad).join(lines) + "]"
    step = len(lines) // shape[0]
    blocks = [_nest(lines[i:i + step], shape[1:], indent + 1) for i in range(0, len(lines), step)]
    return "[" + (",\n\n" + " " * (indent + 1)).join(blocks) + "]"


def _array(value: np.ndarray, indent: int) -> str:
    if value.ndim == 0:
        return f"np.array({_scalar(value.item())})"
    if value.size == 0:
        return f"np.zeros({value.shape!r}, dtype=np.{value.dtype.name})"
    opening = "np.array("
    # float64 (written 1.0), bool and int64 are what NumPy infers from the literals themselves
    dtype = "" if value.dtype.name in ("float64", "bool", "int64") else f", dtype=np.{value.dtype.name}"
    return f"{opening}{_rows(value, indent + len(opening))}{dtype})"


def literal(value, indent: int = 0) -> str:
    """Python source for ``value``; continuation lines are indented to column ``indent``."""
    if isinstance(value, np.ndarray):
        return _array(value, indent)
    if isinstance(value, (list, tuple)):
        items = [literal(v, indent + 1) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        pad = " " * (indent + 1)
        items = [f"{k!r}: {literal(v, indent + 1 + len(repr(k)) + 2)}" for k, v in value.items()]
        return "{" + (",\n" + pad).join(items) + "}"
    if isinstance(value, str) or value is None:
        return repr(value)
    return _scalar(value)


def assignment(name: str, value) -> str:
    """``name = <literal>``, with continuation lines aligned under the opening bracket."""
    return f"{name} = {literal(value, indent=len(name) + 3)}"


MAX_TYPED = 100_000      # characters of one typed answer (a 100 × 100 matrix fits with room)


def read_literal(text: str):
    """A value typed as a NumPy literal — ``0.25``, ``[1, 2]``, ``[[0.1, 0.9], [0.5, 0.5]]``,
    ``np.array([...])``, ``-np.inf`` — or a choice's letter (``B``): numbers as a float64 array
    (a float for one number), a letter as text. Never evaluated as code (``ast.literal_eval``);
    ValueError says what could not be read."""
    import ast

    text = text.strip()
    if len(text) > MAX_TYPED:
        raise ValueError(f"{len(text):,} characters: at most {MAX_TYPED:,}")
    if len(text) == 1 and text.isalpha():
        return text.upper()
    inner = text[len("np.array("):-1] if text.startswith("np.array(") and text.endswith(")") else text
    inner = inner.replace("-np.inf", "-1e999").replace("np.inf", "1e999").replace("np.nan", "None")
    try:
        parsed = ast.literal_eval(inner)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(f"not a number, a list of numbers or a letter: {text[:60]!r}") from None
    try:
        value = np.array(parsed, dtype=float)
    except (ValueError, TypeError):
        raise ValueError(f"not numbers in rows of equal length: {text[:60]!r}") from None
    return float(value) if value.ndim == 0 else value
