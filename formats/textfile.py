"""The kit's files: instructors' text files read with errors that say where, outputs
written atomically, and text made safe to print on a terminal."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson

_BOM = b"\xef\xbb\xbf"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate (what a file name that is not UTF-8, or a string
    escaped into JSON, leaves in a Python string) as U+FFFD, so it can be written as UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", text)


# What a terminal would act on or hide rather than show: control characters (C0, DEL, C1 —
# ESC and CSI start sequences that retitle the window, clear the screen or rewrite a line),
# format characters (bidi overrides and isolates, marks, zero-width ones), line and paragraph
# separators, lone surrogates. Names, notes and messages come from rosters and from students.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_PLAIN = re.compile(r"[\x20-\x7e\n]*")      # the common case, checked in one pass
_NAMED = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}


def _hidden(c: str) -> bool:
    return not c.isprintable() and unicodedata.category(c) in _HIDDEN


def _escaped(c: str) -> str:
    code = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text, newlines: bool = True) -> str:
    """``text`` as a terminal should show it: every character it would act on or hide (see
    ``_HIDDEN``) written out visibly, as ``\\x1b`` or ``\\u202e``, never interpreted. Newlines
    are kept where they structure the output (``newlines``), shown as ``\\n`` where they would
    break a table's line. Linear in ``text``."""
    text = str(text)
    if _PLAIN.fullmatch(text) and (newlines or "\n" not in text):
        return text
    return "".join(_shown(c, newlines) for c in text)


def _shown(c: str, newlines: bool) -> str:
    if c == "\n":
        return c if newlines else _escaped(c)
    return _escaped(c) if _hidden(c) else c


# ``visible``: a ⟨ that starts an escape's spelling, and every character outside printable ASCII
# and a text's own layout (tab, line feed, carriage return); plain ASCII is never looked at.
_TO_SHOW = re.compile(r"(⟨(?=U\+))|[^\x20-\x7e\t\n\r]")


def _visible(match: re.Match) -> str:
    c = match.group()
    return f"⟨U+{ord(c):04X}⟩" if match.group(1) or _hidden(c) else c


def visible(text) -> str:
    """``text`` with every character a page or a spreadsheet would act on or hide (see
    ``_HIDDEN``; a tab, a line feed and a carriage return excepted) written ``⟨U+XXXX⟩``
    (``⟨U+202E⟩`` for a right-to-left override, ``⟨U+0000⟩`` for NUL), and a ``⟨`` before
    ``U+`` written ``⟨U+27E8⟩``, so a text that spells an escape itself is told apart and
    comes back as it was (``grader.marking.sheet_format.text_of`` reads it back). Not
    ``\\x00``: answers are full of backslashes (LaTeX's ``\\sqrt``); ``⟨q, k⟩`` stays as it is.
    Linear in ``text``."""
    return _TO_SHOW.sub(_visible, str(text))


def _json_escaped(c: str) -> str:
    code = ord(c)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000                               # JSON spells these as a surrogate pair
    return f"\\u{0xd800 + (code >> 10):04x}\\u{0xdc00 + (code & 0x3ff):04x}"


def terminal_json(data) -> str:
    """``data`` as indented JSON for a terminal: the same data (``json.loads`` gives it back),
    with every character ``terminal_safe`` would show escaped written as ``\\uXXXX``. json
    escapes C0 itself; DEL, C1 and the format characters it leaves raw. Outside strings JSON
    is ASCII, so escaping character by character keeps it valid. A sequence that is not a
    list (a class's spilled records) is written as a list."""
    return "".join(terminal_json_chunks(data))


def terminal_json_chunks(data) -> Iterator[str]:
    """``terminal_json(data)`` piece by piece: a class's records are written as they are read,
    never held as one text."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=_as_list)
    pending: list[str] = []
    size = 0
    for chunk in encoder.iterencode(data):
        pending.append(chunk if _PLAIN.fullmatch(chunk)
                       else "".join(_json_escaped(c) if c != "\n" and _hidden(c) else c for c in chunk))
        size += len(chunk)
        if size > 1 << 16:
            yield "".join(pending)
            pending, size = [], 0
    yield "".join(pending)


class _Streamed(list):
    """A sequence as the JSON encoder sees a list, read as it is written (the encoder asks
    only ``len`` and iterates)."""

    def __init__(self, items: Sequence):
        super().__init__()
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return len(self.items) > 0

    def __iter__(self):
        return iter(self.items)


def _as_list(o):
    if isinstance(o, Sequence) and not isinstance(o, (str, bytes, bytearray)):
        return _Streamed(o)
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


class InputError(ValueError):
    """One or more errors in an input file; each line reads 'file:line: message'."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


def describe_bad_utf8(data: bytes, err: UnicodeDecodeError) -> tuple[int, str]:
    """(line, message) for text that is not UTF-8: where the first bad byte is, so the
    instructor can find the character (usually a Latin-1 accent) and re-save the file."""
    start = err.start
    line = data.count(b"\n", 0, start) + 1
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
    return line, (f"not valid UTF-8 (byte 0x{data[start]:02x} at column {column}); "
                  f"save the file as UTF-8")


def quick_json(data: bytes):
    """The JSON document in ``data`` (UTF-8, no BOM) as orjson reads it, faster than ``json``
    (the grader reads every notebook of a class); None where orjson refuses the text (invalid
    UTF-8, NaN, a lone surrogate, nesting over 1,024): ``json.loads`` then decides, with its
    values and its error messages. The one difference in what is read: an integer beyond 64
    bits comes back as a float (orjson's rule), where nothing the kit reads from a notebook is
    such a number."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def read_utf8(path: Path, shown: str, error: type[InputError]) -> tuple[str, bytes]:
    """(text, the file's bytes) of ``path``, shown as ``shown`` in messages; a byte-order
    mark, as Excel and Windows editors write it, is dropped. ``error`` says what is wrong
    and where."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise error([f"{shown}: no such file"]) from None
    except OSError as err:
        raise error([f"{shown}: cannot read: {err.strerror}"]) from None
    body = data.removeprefix(_BOM)
    try:
        return body.decode("utf-8"), data
    except UnicodeDecodeError as err:
        line, message = describe_bad_utf8(body, err)
        raise error([f"{shown}:{line}: {message}"]) from None


def write_atomic(path: Path, data: bytes, private: bool = False) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it: an interrupted
    build never leaves half a file behind. ``private`` files are readable by their owner only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(temporary, path)
