"""The grading sheet's file format (``grader.marking.sheet`` decides what the cells mean):
how a text cell is written and read back, numbers, the answer as a grader reads it, the
file read as a spreadsheet re-saves it, and the rubric legend written beside the sheet.

**Text cells** (submission, answer, comment, reason) are written so a spreadsheet shows every
character and runs nothing, and read back to exactly the text written:

- every control or format character (the ones ``formats.textfile`` will not print raw: C0,
  DEL, C1, bidi overrides and isolates, zero-width ones, line and paragraph separators, lone
  surrogates) except a tab, a line feed and a carriage return is written ``⟨U+XXXX⟩``
  (``⟨U+0000⟩`` for NUL, ``⟨U+202E⟩`` for a right-to-left override); a ``⟨`` followed by
  ``U+`` is written ``⟨U+27E8⟩``, so a text that spells an escape itself comes back as it was
  (``formats.textfile.visible``, as the marking page shows an answer). (Not ``\\x00``: answers are full of backslashes, LaTeX's ``\\sqrt`` say, that would then
  need escaping too; ``⟨q, k⟩`` stays as it is.)
- a text that starts with ``= + - @``, a tab or a carriage return gets a leading ``'``
  (``grader.reports.exports.safe_cell``: OWASP's CSV-injection guard), and so does one that starts
  with ``'`` itself: the reader removes one leading ``'`` exactly when what follows starts
  with one of those, so ``'+' joins`` and ``'=1+1`` come back unchanged.

A TA may type any text in a cell: it is read as typed (only an escape ``⟨U+XXXX⟩`` with
upper-case hex digits, or a ``'`` before a formula-like text, is read as above).

**The answer** is for reading: free text as written, an auto-graded part's answer as the
student's value (``grader.reports.feedback_page.decoded_answer``: numbers and arrays as Python
literals in full precision, a matrix a row per line), never read back — the
``answer_digest`` column says which answer the row graded.

**The legend**, ``<sheet>-rubric.csv`` beside the sheet, explains each of the sheet's columns
in order, one row per column (``column, problem, part, points, text, note``): an item column
with its points, its text (as the first student's variant words it: numbers differ per
student) and the graders' note. A separate file because spreadsheets import a CSV's first
row as its header and sort and filter every row below it: a second header row or a block of
legend rows would be sorted in with the grades.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np

from formats.textfile import InputError, read_utf8, visible, write_atomic

from grader.reports.exports import csv_text, safe_cell
from grader.reports.feedback_page import decoded_answer
from grader.store.rows import answer_digest, omitted_reason
from .queue import NO_ANSWER

MAX_BYTES = 128 * 1024 * 1024     # a class of thousands with long answers fits; a stray dump does not
MAX_ROWS = 100_000
SHOWN = 40                        # characters of a cell quoted in a message
SPREADSHEET_CELL = 32_000         # Excel keeps 32,767 characters of a cell and drops the rest unsaid
LEGEND = ("column", "problem", "part", "points", "text", "note")
_ESCAPE = re.compile(r"⟨U\+([0-9A-F]{4,6})⟩")
_DIGEST = re.compile(r"a[0-9a-f]{16}")
_VERSION = re.compile(r"\d{1,9}(?:\.0*)?")


class SheetError(InputError):
    """A sheet that cannot be read at all (not UTF-8, not CSV, empty, no header), or a plan
    with problems given to ``apply_import``; each line reads 'SHEET[:line]: message'."""


# --- text cells ---------------------------------------------------------------------------------

def text_cell(text) -> str:
    """A text as the sheet writes it (see the module's docstring); ``text_of`` reads it back."""
    text = visible(text)
    return "'" + text if text.startswith("'") else safe_cell(text)


def text_of(value: str) -> str:
    """The text a cell holds: ``text_cell``'s inverse, and a TA's typing as typed."""
    if value.startswith("'") and (value[1:2] == "'" or safe_cell(value[1:]) != value[1:]):
        value = value[1:]
    return _ESCAPE.sub(_character, value)


def _character(match: re.Match) -> str:
    code = int(match.group(1), 16)
    return chr(code) if code <= 0x10FFFF else match.group()


def newlines(text: str) -> str:
    """Line endings as the gradebook keeps them: a spreadsheet writes CRLF inside a cell."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def shown(value: str) -> str:
    """A cell quoted in a message: short, its control characters escaped (repr)."""
    return repr(value if len(value) <= SHOWN else value[:SHOWN] + "…")


# --- numbers ----------------------------------------------------------------------------------

def number_text(x: float) -> str:
    """A number as the sheet writes it: the shortest text that reads back as the same float,
    integers without '.0' (so an unedited cell compares equal after a round trip)."""
    text = repr(float(x) + 0.0)
    return text[:-2] if text.endswith(".0") else text


def read_number(value: str) -> float | None:
    """A number as a person or a spreadsheet writes it ('-0.5', '-0,5', '+1'); None if not."""
    value = text_of(value).strip().replace("\u2212", "-")
    if re.fullmatch(r"[+-]?\d+,\d+", value):
        value = value.replace(",", ".")
    try:
        x = float(value)
    except ValueError:
        return None
    return x if np.isfinite(x) else None


def read_version(value: str) -> int | None:
    """The whole number the export wrote ('3'; '3.0' as a spreadsheet may re-save it)."""
    value = value.strip()
    return int(float(value)) if _VERSION.fullmatch(value) else None


# --- the answer ---------------------------------------------------------------------------------

def digest_cell(result) -> str:
    """Which answer a row grades: the digest a hand grade records of it (``marks``), with an
    "a" first so a spreadsheet never reads it as a number (12e45) and rewrites it."""
    return "a" + answer_digest(result.answer if result is not None else None)


def is_digest(value: str) -> bool:
    return _DIGEST.fullmatch(value.strip()) is not None


def answer_cell(result) -> str:
    """The answer a grader reads: as the student wrote it, escaped visibly, cut (and said so)
    where a spreadsheet would cut it without a word."""
    text = text_cell(_answer_text(result))
    if len(text) > SPREADSHEET_CELL:
        more = len(text) - SPREADSHEET_CELL
        text = text[:SPREADSHEET_CELL] + f" … ({more} more characters: the marking page shows all)"
    return text


def _answer_text(result) -> str:
    if result is None or result.answer is None:
        return NO_ANSWER
    value = decoded_answer(result.answer)
    reason = omitted_reason(value)
    if reason is not None:
        return f"(not kept: {reason})"
    return value if isinstance(value, str) else _literal(value)


def _literal(value, depth: int = 0) -> str:
    """A value as Python writes it: exact numbers, lists for arrays, a row per line."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        nested = any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in value)
        separator = ",\n" + " " * (depth + 1) if nested else ", "
        return "[" + separator.join(_literal(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v, depth + 1)}" for k, v in value.items()) + "}"
    return repr(value.item() if isinstance(value, np.generic) else value)


# --- the file ------------------------------------------------------------------------------------

def write_csv(path: Path, rows: list[list[str]]) -> None:
    """The kit's CSV (as ``grader.reports.exports``), atomically: UTF-8 without a byte-order mark,
    RFC 4180 (CRLF, quotes where needed)."""
    write_atomic(Path(path), csv_text(rows).encode("utf-8"))


def _delimiter(text: str) -> str:
    """The separator the header uses: ',' as exported, ';' or a tab as a spreadsheet in
    some locales re-saves it."""
    first = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def _read_bytes_head(path: Path, where: str) -> bytes:
    """The first bytes of the file, after checking its size (a sheet is read whole)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise SheetError([f"{where}: no such file"]) from None
    except OSError as err:
        raise SheetError([f"{where}: cannot read: {err.strerror}"]) from None
    if size > MAX_BYTES:
        raise SheetError([f"{where}: {size} bytes; a sheet is at most {MAX_BYTES // 2**20} MiB "
                          "(export one part at a time)"])
    return head


def _text(path: Path, where: str) -> str:
    """The file's text, or ``SheetError`` for one that is not a sheet's."""
    if _read_bytes_head(path, where).startswith(b"PK\x03\x04"):
        raise SheetError([f"{where}: a spreadsheet workbook (.xlsx/.ods), not CSV: save it as "
                          "\"CSV UTF-8\" and import that"])
    text, _ = read_utf8(path, where, SheetError)
    if not text.strip():
        raise SheetError([f"{where}: the file is empty (export a sheet with `attnkit mark export`)"])
    if "\x00" in text:                           # (the export writes none: a NUL is ⟨U+0000⟩)
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise SheetError([f"{where}:{line}: not a CSV file (it holds NUL bytes: a binary file?)"])
    return text


def read_table(path: Path, where: str, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(the header, [(line, cells)] of every non-blank row) of a CSV sheet; ``SheetError``
    naming the file for one that is not a readable CSV with a header."""
    text = _text(path, where)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text), strict=True)
    records, start = [], 1
    try:
        header = [h.strip() for h in next(reader)]
        start = reader.line_num + 1
        for cells in reader:
            line, start = start, reader.line_num + 1
            if any(c.strip() for c in cells):
                records.append((line, cells))
            if len(records) > MAX_ROWS:
                raise SheetError([f"{where}:{line}: more than {MAX_ROWS} rows (export one part at a time)"])
    except csv.Error as err:
        raise SheetError([f"{where}:{start}: not a CSV file the kit can read: {err}"]) from None
    if header[:len(LEGEND)] == list(LEGEND):
        raise SheetError([f"{where}: the rubric legend `attnkit mark export` writes beside a sheet, not a "
                          "sheet: import the sheet itself"])
    if "submission" not in header:
        raise SheetError([f"{where}:1: no header: the first line must name the columns "
                          f"({', '.join(required)}, …); start from a sheet `attnkit mark export` wrote"])
    return header, records


# --- the legend ------------------------------------------------------------------------------------

FIXED = {
    "submission": "the student (do not edit)",
    "problem": "the problem (do not edit)",
    "part": "the part (do not edit)",
    "version": "the grade's version at the export, 0 when not graded (do not edit)",
    "rubric_version": "the rubric the row was exported with (do not edit)",
    "answer_digest": "which answer the row grades: a row whose answer changed since is refused (do not edit)",
    "answer": "the student's answer, for reading (not read back); control characters written ⟨U+XXXX⟩",
    "adjustment": "points added to the items' (negative: taken off); write 0 for 0 points with no item",
    "comment": "the student reads it",
    "reason": "an override's reason, for graders only (an override needs one)",
    "score": "the score the row gives, for reading (not read back)",
    "max_score": "the part's points, for reading",
}


def legend_path(sheet: Path) -> Path:
    """``sheet.csv`` → ``sheet-rubric.csv``, beside it."""
    sheet = Path(sheet)
    return sheet.with_name(f"{sheet.stem}-rubric{sheet.suffix or '.csv'}")


def write_legend(sheet: Path, header: list[str], parts) -> Path:
    """The legend of a sheet's ``header`` (``parts``: (problem, part, rubric, free) as
    exported), written beside it; returns its path."""
    items = {}
    for problem, part, rubric, _ in parts:
        for item in rubric.items:
            items.setdefault(f"{part}:{item.id}", []).append(
                [problem, part, number_text(item.points), text_cell(item.text.strip()), text_cell(item.note.strip())])
    rows = [list(LEGEND)]
    for column in header:
        rows += [[column, *r] for r in items.get(column, [])] or [[column, "", "", "", FIXED.get(column, ""), ""]]
    path = legend_path(sheet)
    write_csv(path, rows)
    return path
