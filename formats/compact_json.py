"""The canonical text of a value ``serialize.to_jsonable`` made, fast: byte for byte
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)``, what digests are taken of and what the answer key stores.

The json module writes each float with Python's ``repr``, and a student's records are mostly
floats (every twin's and look-alike's arrays), so these texts are a real share of a student's
build. orjson writes the same document faster, with these differences, each handled here:

- floats with |x| < 1e-4 or ≥ 1e16 (other than zero): 1e-05 as 0.00001, 2.5e-07 as 2.5e-7.
  Every such number in orjson's text has an exponent (``e-``, ``e+``) or starts ``0.0000``;
  those numbers are rewritten with ``repr`` (orjson's digits read back as the same float, so
  ``repr`` gives what json writes). Every other finite float both write alike (the tests
  compare them on floats of every magnitude);
- NaN and ±inf, written as null: ``to_jsonable`` writes them as text, so a value it made has
  none — which is why this is only for such values (a null in them is a None);
- escapes: a text that needs one (a quote, a backslash, a control character) makes the
  whole value go to json itself, so that json alone decides how it is escaped; and with no
  backslash in orjson's text, a quote always opens or closes a text, which is how a number
  inside a text is told from a number;
- what orjson refuses (an integer beyond 64 bits, a lone surrogate) also goes to json.

Keys are sorted alike (code point order is UTF-8's byte order). A value that is not
``to_jsonable``'s (an Enum, a UUID, which orjson writes and json refuses) must not come here.

``indented_json`` meets the same floats in notebook files, and walks the document for them
instead: a notebook's texts are full of backslashes (LaTeX), so a scan of its text could
never tell a number from a text.
"""

from __future__ import annotations

import json
import re

try:
    import orjson
except ImportError:       # a practice notebook carries formats/ to a machine with NumPy alone
    orjson = None

# json.dumps with these options builds a new encoder each time, which costs about as much as
# encoding a lone number, and a record has many values: one encoder for every call.
canonical_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                   allow_nan=False).encode

_WRITTEN_OTHERWISE = re.compile(rb"e[-+]|0\.0000")      # inside each number orjson writes otherwise
_NUMBER = frozenset(b"0123456789.-+e")
_BEFORE_A_VALUE = frozenset(b"[,:")


def dumps_jsonable(value) -> str:
    """``canonical_dumps(value)`` for a value ``to_jsonable`` made (floats finite)."""
    if orjson is None:
        return canonical_dumps(value)
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:           # orjson.JSONEncodeError is one
        return canonical_dumps(value)
    if b"\\" in text:
        return canonical_dumps(value)
    if b"e-" not in text and b"e+" not in text and b"0.0000" not in text:
        return text.decode()
    return _floats_as_repr(text)


def _floats_as_repr(text: bytes) -> str:
    """``text`` with each number orjson writes otherwise than ``repr`` rewritten by ``repr``.
    ``text`` has no backslash, so the quotes before a position say whether it is in a text."""
    pieces, done, quotes, counted = [], 0, 0, 0
    for match in _WRITTEN_OTHERWISE.finditer(text):
        start = match.start()
        if start < done:
            continue
        while start > 0 and text[start - 1] in _NUMBER:
            start -= 1
        if start > 0 and text[start - 1] not in _BEFORE_A_VALUE:
            continue            # not a number token: inside a text
        quotes += text.count(b'"', counted, start)
        counted = start
        if quotes % 2:
            continue            # inside a text, after a ',' or ':' of its own
        end = match.end()
        while end < len(text) and text[end] in _NUMBER:
            end += 1
        pieces += [text[done:start].decode(), repr(float(text[start:end]))]
        done = end
    pieces.append(text[done:].decode())
    return "".join(pieces)
