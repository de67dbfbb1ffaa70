"""The lines of a notebook's check cells that say what an answer must look like: its kind
and shape in words (``describe``), the visible assertions on its form — never its value —
(``shape_checks``), and the hidden value test of an nbgrader course's source notebook
(``value_test``, which holds the expected value). ``exercises.render.notebook`` puts them in cells.
"""

from __future__ import annotations

import numpy as np

from formats.literals import literal


def describe(value) -> str:
    """What kind of value ``value`` is, in words a student reads ("an array of numbers of
    shape (3, 3)")."""
    if isinstance(value, str):
        return "text (a string)"
    if isinstance(value, (bool, np.bool_)):
        return "True or False"
    if isinstance(value, (int, np.integer)):
        return "a whole number"
    if isinstance(value, (float, np.floating)):
        return "a number"
    if isinstance(value, np.ndarray):
        kind = {"b": "booleans", "i": "whole numbers"}.get(value.dtype.kind, "numbers")
        return f"an array of {kind} of shape {value.shape}"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} items"
    return type(value).__name__


def shape_checks(name: str, value) -> list[str]:
    """Assert lines that reveal the form of the answer, never its value."""
    if isinstance(value, str):
        return [f'assert isinstance({name}, str), "{name} should be text (a string)"']
    if isinstance(value, (list, tuple)):
        return [f'assert len({name}) == {len(value)}, '
                f'f"{name} should have {len(value)} items, not {{len({name})}}"']
    shape = np.shape(value)
    wanted = describe(value)
    # Numbers first: text (or None, or a list of words) would reach the checks below and
    # fail there with NumPy's "ufunc 'isfinite' not supported", not with words.
    lines = [f'assert not isinstance({name}, str), "{name} should be {wanted}, not text (a string)"',
             f'assert np.asarray({name}).dtype.kind in "biuf", '
             f'f"{name} should be {wanted}, not {{type({name}).__name__}}"',
             f'assert np.shape({name}) == {shape!r}, '
             f'f"{name} should have shape {shape}, not {{np.shape({name})}}"']
    kind = np.asarray(value).dtype.kind
    if kind == "f":
        lines.append(f'assert np.all(np.isfinite({name})), "{name} contains NaN or inf"')
    if kind in "iu" and np.ndim(value) == 0:
        lines.append(f'assert float({name}).is_integer(), "{name} should be a whole number"')
    return lines


def value_test(name: str, expected, rtol: float, atol: float) -> list[str]:
    """The hidden check of a value (nbgrader course mode only: it holds the expected value)."""
    if isinstance(expected, str):
        return [f'assert " ".join(str({name}).split()).lower() == '
                f'{" ".join(expected.split()).lower()!r}, "{name} is not right"']
    if isinstance(expected, (list, tuple)) and expected and all(isinstance(e, str) for e in expected):
        wanted = [" ".join(e.split()).lower() for e in expected]
        return [f'assert [" ".join(str(x).split()).lower() for x in {name}] == {wanted!r}, '
                f'"{name} is not right"']
    array = np.asarray(expected)
    if array.dtype.kind in "biu":
        return [f"assert np.array_equal({name}, {literal(expected)}), \"{name} is not right\""]
    return [f"assert np.shape({name}) == {array.shape!r} and np.allclose({name}, "
            f"{literal(expected)}, rtol={rtol!r}, atol={atol!r}), \"{name} is not right\""]
