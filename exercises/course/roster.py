"""The class roster: a CSV file of students, checked on load.

Columns (a header row; any order; other columns are ignored):

    student_id   required: the kit's id (a folder name, an nbgrader id)
    name         required (may be empty)
    email        optional (also read from "E-mail", "Email address", "Mail")
    lms_id       optional: the LMS's numeric user id (Canvas's "ID" column, Moodle's user id),
                 also read from "ID", "User ID", "Canvas user ID", "Moodle ID"
    lms_login    optional: the LMS login (also read from "SIS Login ID", "Login ID", "Login",
                 "Username", and, when none of those is there, "SIS User ID")

A column's own name wins over its aliases, and the first alias present (in that order) is
the one read; matching ignores case, spaces, '_' and '-'. No alias is ever read as
student_id. Intake uses the LMS columns to pair Canvas and Moodle bulk downloads with
students (grader.intake.pairing.match).

Rosters come out of spreadsheets and learning-management systems, so the reader accepts
what those write: Excel's UTF-8 byte-order mark, ';' as the separator (European Excel),
extra columns in any order, quoted names across line breaks, blank rows. It refuses what
would break a build later: a student id that is not a safe directory name or nbgrader id,
two ids that collide on a case-insensitive file system. Every problem of the file is
reported at once, as 'file:line: message' with the physical line of the row.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from exercises.template.loading import shown_path
from formats.textfile import InputError, read_utf8

COLUMNS = ("student_id", "name", "email")      # the header a roster is shown with
REQUIRED = ("student_id", "name")
# Optional columns → the header names also read as them, in order of preference (after the
# column's own name). Compared without case, spaces, '_' or '-' (see _normal).
OPTIONAL = {
    "email": ("e-mail", "email address", "e-mail address", "mail"),
    "lms_id": ("id", "user id", "canvas user id", "moodle id", "lms user id"),
    "lms_login": ("sis login id", "login id", "login", "username", "user name", "sis user id"),
}
_LMS_ID = re.compile(r"[0-9]{1,20}")
MAX_PROBLEMS = 50
# A student id becomes a directory name and an nbgrader student id.
_STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")     # (fullmatch: "$" would let a final newline in)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
# What LMS exports call the columns, for the "did you mean" hint (difflib finds the rest).
_COLUMN_ALIASES = {"id": "student_id", "sid": "student_id", "student": "student_id",
                   "student_number": "student_id", "username": "student_id",
                   "login": "student_id", "mail": "email", "e-mail": "email",
                   "email_address": "email", "full_name": "name", "student_name": "name"}


@dataclass(frozen=True)
class Student:
    id: str
    name: str
    email: str
    line: int                         # the row's first physical line in the file
    lms_id: str = ""                  # the LMS's numeric user id (Canvas user id, Moodle id)
    lms_login: str = ""               # the LMS login (Canvas / SIS login, Moodle username)


class RosterError(InputError):
    """Problems in a roster file, one 'file:line: message' each; more than MAX_PROBLEMS are
    summarised, since a wrong file (not a roster at all) would otherwise fill the screen."""

    def __init__(self, problems: list[str]):
        if len(problems) > MAX_PROBLEMS:
            problems = [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more"]
        super().__init__(problems)


def load_roster(path: str | Path) -> tuple[Student, ...]:
    """Read and check a roster CSV; RosterError lists every problem."""
    path = Path(path)
    shown = shown_path(path)
    text, _ = read_utf8(path, shown, RosterError)
    delimiter = _delimiter(text)
    records = _records(text, delimiter, shown)
    if not records:
        raise RosterError([f"{shown}: the file is empty (expected a header row: "
                           f"{delimiter.join(COLUMNS)})"])
    (header_line, header), rows = records[0], records[1:]
    columns = _columns(header, header_line, shown)
    if not rows:
        raise RosterError([f"{shown}: no students (the file has only a header row)"])
    named = frozenset(c for c, i in columns.items() if _normal(header[i]) == _normal(c))
    return _students(rows, len(header), columns, delimiter, shown, named)


def _students(rows, width: int, columns: dict[str, int], delimiter: str, shown: str,
              named: frozenset[str] = frozenset()) -> tuple[Student, ...]:
    """The rows as students; RosterError lists the problems of every row."""
    problems: list[str] = []
    students: list[Student] = []
    seen: dict[str, tuple[str, int]] = {}     # lower-case id → (id as written, line)
    lms_seen: dict[tuple[str, str], int] = {}  # (column, value) → its first line
    checked = frozenset(c for c in ("lms_id", "lms_login") if c in columns and c in named)
    for line, fields in rows:
        if len(fields) != width:
            hint = (f" (a {_DELIMITER_NAMES[delimiter]} inside a value needs \"double quotes\")"
                    if len(fields) > width else "")
            problems.append(f"{shown}:{line}: {len(fields)} fields, but the header has {width}{hint}")
            continue
        sid, name, email, lms_id, lms_login = (
            fields[columns[c]].strip() if c in columns else ""
            for c in ("student_id", "name", "email", "lms_id", "lms_login"))
        found = [p for p in (_id_problem(sid, seen), _email_problem(email),
                             *_lms_problems(lms_id, lms_login, line, checked, lms_seen)) if p]
        problems += [f"{shown}:{line}: {problem}" for problem in found]
        if _STUDENT_ID.fullmatch(sid):
            seen.setdefault(sid.lower(), (sid, line))
        if not found:
            # Names show up in notebook headings: a quoted line break becomes a space.
            students.append(Student(sid, " ".join(name.split()), email, line, lms_id, lms_login))
    if problems:
        raise RosterError(problems)
    return tuple(students)


_DELIMITER_NAMES = {",": "comma", ";": "semicolon"}


def _delimiter(text: str) -> str:
    """',' unless the header uses ';' and no ',' (Excel in locales with a decimal comma)."""
    header = next((line for line in text.splitlines() if line.strip()), "")
    return ";" if ";" in header and "," not in header else ","


def _records(text: str, delimiter: str, shown: str) -> list[tuple[int, list[str]]]:
    """The non-blank rows with the physical line each starts on. A quoted value may span
    lines, so the start is one past where the previous row ended (csv's line_num)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records, line = [], 1
    try:
        for fields in reader:
            if any(field.strip() for field in fields):   # spreadsheets write blank rows as ",,"
                records.append((line, fields))
            line = reader.line_num + 1
    except csv.Error as err:
        message = ('a "quoted" value in this row is never closed'
                   if "unexpected end of data" in str(err) else f"cannot read this row: {err}")
        raise RosterError([f"{shown}:{line}: {message}"]) from None
    return records


def _normal(header: str) -> str:
    """How an optional column's header is compared: no case, and spaces, '_' and '-' alike."""
    return " ".join(header.strip().lower().replace("_", " ").replace("-", " ").split())


def _columns(header: list[str], line: int, shown: str) -> dict[str, int]:
    """The position of each column read (the required ones, and the optional ones present);
    RosterError if a required one is missing or a column read is doubled."""
    names = [h.strip().lower() for h in header]
    problems = []
    for column in REQUIRED:
        if names.count(column) > 1:
            problems.append(f"{shown}:{line}: column '{column}' appears {names.count(column)} times")
        elif column not in names:
            others = {n: h.strip() for n, h in zip(names, header) if n not in COLUMNS}
            hint = [n for n in others if _COLUMN_ALIASES.get(n.replace(" ", "_")) == column] \
                or difflib.get_close_matches(column, others, n=1)
            suggestion = (f"; did you mean '{column}' instead of '{others[hint[0]]}'?"
                          if hint else "")
            problems.append(f"{shown}:{line}: missing column '{column}' (the header has: "
                            f"{', '.join(h.strip() for h in header)}){suggestion}")
    columns = {column: names.index(column) for column in REQUIRED if names.count(column) == 1}
    normal = [_normal(h) for h in header]
    for column, aliases in OPTIONAL.items():
        for candidate in (_normal(column), *map(_normal, aliases)):
            where = [i for i, n in enumerate(normal) if n == candidate]
            if len(where) > 1:
                problems.append(f"{shown}:{line}: column '{header[where[0]].strip()}' appears "
                                f"{len(where)} times")
            if where:
                columns[column] = where[0]
                break
    if problems:
        raise RosterError(problems)
    return columns


def _id_problem(sid: str, seen: dict[str, tuple[str, int]]) -> str:
    if not sid:
        return "empty student_id"
    if not _STUDENT_ID.fullmatch(sid):
        return (f"student_id '{sid}' is not valid: use 1 to 64 letters (A-Z, a-z), digits and "
                f". _ @ + -, starting with a letter or digit (it becomes a folder name)")
    if sid.lower() in seen:
        first, first_line = seen[sid.lower()]
        if first == sid:
            return f"duplicate student_id '{sid}' (also on line {first_line})"
        return (f"student_id '{sid}' differs only in case from '{first}' on line {first_line} "
                f"(their folders would collide on macOS and Windows)")
    return ""


def _email_problem(email: str) -> str:
    if email and not _EMAIL.match(email):
        return f"email '{email}' does not look like an email address (name@domain, no spaces)"
    return ""


def _lms_problems(lms_id: str, lms_login: str, line: int, checked: frozenset[str],
                  seen: dict[tuple[str, str], int]) -> list[str]:
    """The checks of the LMS columns. Only a column headed lms_id / lms_login (``checked``)
    is checked: one read from an export's own column ("ID", "Username") is taken as it is,
    since a roster may have had such a column for other uses before the kit read it."""
    problems = []
    if lms_id and "lms_id" in checked and not _LMS_ID.fullmatch(lms_id):
        problems.append(f"lms_id '{lms_id}' is not a number (the LMS's numeric user id: Canvas's "
                        "ID column, Moodle's user id)")
    for column, value in (("lms_id", lms_id), ("lms_login", lms_login)):
        if value and column in checked:             # (logins compare without case)
            first = seen.setdefault((column, value.lower()), line)
            if first != line:
                problems.append(f"duplicate {column} '{value}' (also on line {first})")
    return problems
