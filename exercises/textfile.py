"""The kit's files: instructors' text files read with errors that say where, and outputs
written atomically."""

from __future__ import annotations

import os
import re
from pathlib import Path

_BOM = b"\xef\xbb\xbf"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each lone surrogate (what a file name that is not UTF-8, or a string
    escaped into JSON, leaves in a Python string) as U+FFFD, so it can be written as UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", text)


class ProblemsError(ValueError):
    """One or more problems in an input file; each line reads 'file:line: message'."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def describe_bad_utf8(data: bytes, err: UnicodeDecodeError) -> tuple[int, str]:
    """(line, message) for text that is not UTF-8: where the first bad byte is, so the
    instructor can find the character (usually a Latin-1 accent) and re-save the file."""
    start = err.start
    line = data.count(b"\n", 0, start) + 1
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
    return line, (f"not valid UTF-8 (byte 0x{data[start]:02x} at column {column}); "
                  f"save the file as UTF-8")


def read_utf8(path: Path, shown: str, error: type[ProblemsError]) -> tuple[str, bytes]:
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
