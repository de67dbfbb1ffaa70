"""formats/textfile.py's terminal_safe and terminal_json: everything the command line prints
that a student or a roster wrote is shown, never run by the terminal."""

import json
import unicodedata

import pytest

from formats.textfile import terminal_json, terminal_safe

# What a terminal acts on or hides: retitle the window (OSC … BEL), clear the screen (CSI), the
# 8-bit CSI, DEL, NUL, a carriage return that rewrites the line, bidi overrides and isolates,
# marks, zero-width and other format characters, line and paragraph separators.
HOSTILE = {"\x1b]0;pwned\x07": "\\x1b]0;pwned\\x07", "\x1b[2J": "\\x1b[2J", "\x9b31m": "\\x9b31m",
           "\x7f": "\\x7f", "\x00": "\\x00", "\r": "\\r", "\t": "\\t", "\u202e": "\\u202e",
           "\u202a": "\\u202a", "\u2066": "\\u2066", "\u2069": "\\u2069", "\u200e": "\\u200e",
           "\u200f": "\\u200f", "\u061c": "\\u061c", "\u200b": "\\u200b", "\ufeff": "\\ufeff",
           "\u2028": "\\u2028", "\u2029": "\\u2029", "\U000e0041": "\\U000e0041", "\ud800": "\\ud800"}


def acted_on(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on or hide (newlines structure output)."""
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


@pytest.mark.parametrize("raw, shown", HOSTILE.items())
def test_every_control_and_format_character_is_shown_escaped(raw, shown):
    out = terminal_safe(f"Eve {raw} Mallory")
    assert out == f"Eve {shown} Mallory"
    assert acted_on(out) == []


def test_plain_text_and_newlines_are_left_as_they_are():
    text = "Søren Ørsted — 中文 naïve e\u0301\nsecond line"
    assert terminal_safe(text) == text
    assert terminal_safe(text, newlines=False) == text.replace("\n", "\\n")


def test_a_long_hostile_text_costs_linear_time():
    # 2 MB: at a quadratic cost this would take hours.
    text = "".join(HOSTILE) * 50_000
    out = terminal_safe(text)
    assert acted_on(out) == [] and out.count("\\u202e") == 50_000


def test_terminal_json_is_the_same_data_with_nothing_a_terminal_acts_on():
    data = {"name": "".join(HOSTILE), "notes": ["\x1b[2J", "fine"], "n": 1.5}
    text = terminal_json(data)
    assert json.loads(text) == data
    assert acted_on(text) == []
    assert "\\u202e" in text and "\\u009b" in text and "\\udb40\\udc41" in text   # U+E0041 as a pair
    assert terminal_json({"a": "b"}) == json.dumps({"a": "b"}, indent=2)


NOTEBOOK = {"cells": [{"cell_type": "code", "source": "x = 0.15161077839333922  # “quoted” ✓\n",
                       "metadata": {"nbgrader": {"grade_id": "p-x", "points": 2.5}}, "outputs": []}],
            "metadata": {"attnkit": {"student": "s1", "problems": [{"id": "p", "issued_digest": "ab"}]}},
            "nbformat": 4, "nbformat_minor": 5}


def test_quick_json_reads_a_notebook_as_json_does():
    from formats.textfile import quick_json

    data = json.dumps(NOTEBOOK, ensure_ascii=False, indent=1).encode()
    assert quick_json(data) == json.loads(data) == NOTEBOOK


@pytest.mark.parametrize("text", [b'{"x": NaN}', b'"\\ud800"', b'{"x": "\xff"}', b"[" * 1100 + b"]" * 1100,
                                  b'{"x": 1e400}', b"", b"{"])
def test_quick_json_leaves_to_json_what_orjson_refuses(text):
    from formats.textfile import quick_json

    assert quick_json(text) is None


def test_quick_json_reads_an_integer_beyond_64_bits_as_a_float():
    from formats.textfile import quick_json

    assert quick_json(b'{"nbformat": 4, "n": 123456789012345678901234567890}') == {"nbformat": 4, "n": 1.2345678901234568e+29}
