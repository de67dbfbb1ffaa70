"""``json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)``, fast: the text of a
notebook file as nbformat writes it.

With an indent, the json module falls back to its pure-Python encoder, and a build writes
two notebooks a student with it: a share of the build's time worth taking back. orjson, in
C, writes the same document with two differences, both handled here:

- its indent is two spaces a level: every line's leading spaces are halved (a line of
  orjson's output starts with its indent and then a non-space; a string never holds a raw
  line break, so no line starts inside one);
- it writes some floats otherwise than Python's ``repr``: 1e-05 as 0.00001, 2.5e-07 as
  2.5e-7, NaN and ±inf as null. Zero and every finite float with 1e-4 ≤ |x| < 1e16 it writes
  the same (the tests compare them on floats of every magnitude, the edges included); a
  document holding any other float is written by ``indented`` itself, as is anything orjson
  refuses (a non-text key, an integer beyond 64 bits, a lone surrogate, NumPy scalars).

Strings are escaped alike by both (``"``, ``\\``, control characters; nothing else with
ensure_ascii off), and keys sort alike (code point order is UTF-8's byte order).
"""

from __future__ import annotations

import json

import orjson

_STRING = json.encoder.encode_basestring      # C; what ensure_ascii=False uses
_CONSTANTS = {True: "true", False: "false", None: "null"}
_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def dumps(value) -> bytes:
    """The UTF-8 bytes of ``json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False)``."""
    if _floats_written_alike(value):
        try:
            text = orjson.dumps(value, option=_OPTIONS)
        except (orjson.JSONEncodeError, TypeError):
            pass
        else:
            return _halved_indent(text)
    return indented(value).encode("utf-8")


def _floats_written_alike(value) -> bool:
    """Every float in ``value`` is one that orjson writes as ``repr`` does. (Loops, not
    ``all(…)``: a notebook has thousands of source lines to pass over.)"""
    kind = type(value)
    if kind is float:
        return value == 0.0 or 1e-4 <= abs(value) < 1e16       # False for NaN and ±inf
    if kind is dict:
        value = value.values()
    elif kind is not list and kind is not tuple:
        return True     # text, whole numbers, True/False/None; anything else orjson refuses
    for item in value:
        if type(item) is not str and not _floats_written_alike(item):
            return False
    return True


def _halved_indent(text: bytes) -> bytes:
    lines = text.split(b"\n")
    return b"\n".join([line[(len(line) - len(line.lstrip(b" "))) // 2:] for line in lines])


def indented(value, pad: str = "") -> str:
    """The same text, written out in Python: json's own encoder with an indent is slower
    still. The reference for ``dumps`` and its path for what orjson writes otherwise."""
    if isinstance(value, str):
        return _STRING(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = pad + " "
        items = [f"{inner}{_STRING(k)}: {indented(value[k], inner)}"
                 for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = pad + " "
        if all(isinstance(v, str) for v in value) and ", " not in value:    # a cell's source lines
            # One C call; '", "' occurs only between items (a quote inside a string is \\"),
            # or as the whole of an item that is ", " itself (written item by item below).
            items = json.dumps(value, ensure_ascii=False)[1:-1]
            return "[\n" + inner + items.replace('", "', '",\n' + inner + '"') + "\n" + pad + "]"
        return "[\n" + ",\n".join(inner + indented(v, inner) for v in value) + "\n" + pad + "]"
    if value is True or value is False or value is None:
        return _CONSTANTS[value]
    if isinstance(value, int):
        return int.__repr__(value)
    return json.dumps(value, ensure_ascii=False)
