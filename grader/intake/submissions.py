"""Submissions in: find the notebooks students handed in, read each one without ever raising,
and pair them with the students of the answer key.

What comes out is data, not judgement: which cells are the kit's (by their nbgrader grade id,
or by their cell id when a tool stripped the nbgrader metadata), which were added, and a list
of issues, each with a stable code and a message that names the file, so the instructor and
the student can both see what happened to a submission. Nothing here runs student code; the
only parsing of it is ``ast.parse`` of a givens cell, to tell an edited one from a pristine
one (parsing never executes anything).

Layouts (``find_submissions``), all collected when a folder mixes them:

    ROOT/submitted/<student>/<assignment>/*.ipynb    nbgrader's exchange ("collect")
    ROOT/<student>/<assignment>/*.ipynb              the same, pointed at ``submitted/``
    ROOT/<student>.ipynb                             a flat folder
    ROOT/<student> (1).ipynb                         a browser's second download of it
    ROOT/<student>/<assignment>.ipynb                the build's release/ layout, handed back
    ROOT/<student>/<any name>.ipynb                  a student's folder
    ROOT/<login>[_LATE]_<user id>_<submission id>_<name>.ipynb     a Canvas bulk download
    ROOT/<Full Name>_<id>_assignsubmission_file_/<name>.ipynb      a Moodle bulk download
    ROOT/<Full Name>_<id>_assignsubmission_file_<name>.ipynb       (Moodle, without folders)

Pairing (``match``): a name or folder that is a student id of the key decides; a Canvas or
Moodle name is mapped by its user id or login (the roster's ``lms_id`` / ``lms_login``
columns, else ids that are student ids of the key); a notebook whose place names no student
is paired by the variant record inside it. When a place and the record disagree the place
wins (the record is the notebook's text, which a copy carries along) and ``wrong-student``
says so. Every file that is not graded is listed as an issue.

When a notebook was handed in (``Found.received_at``): nbgrader's ``timestamp.txt`` beside
it, else the file's modification time (``received_from`` says which).

Issue codes (``ISSUE_CODES``) are part of the interface: the gradebook stores them, the
feedback explains them, and tests pin their messages.
"""

from __future__ import annotations

import ast
import codecs
import errno
import functools
import hashlib
import json
import os
import re
import stat
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import NamedTuple

from formats.literals import assignment
from formats.cells import (CHECK, EXAMPLE, GIVENS, HEADER_CELL, HEATMAP, PROMPT, SETUP_CELL, SOLUTION,
                           grade_id)
from formats.cells import cell_id as cell_id_of
from formats.key_shape import (CLASS_STUDENT, IMPLEMENT, entry_for, givens_of, gradings, is_class_key, is_free_response,
                              issued_before, issued_digest, kind, problem_record, problem_records)
from formats.serialize import decode_names
from formats.textfile import printable, quick_json, terminal_safe

from grader.intake.receipts import RECEIVED_FROM_MTIME, RECEIVED_FROM_TIMESTAMP  # noqa: F401 — named here too

# Submissions are read on the grader's sandbox threads, and CPython 3.11's parser is not safe
# to run in two threads at once ("SystemError: AST constructor recursion depth mismatch"):
# every ast.parse of the grader holds this lock.
PARSING = threading.Lock()

MAX_BYTES = 64 * 1024 * 1024      # far above any real notebook; a larger file is not read into memory
MAX_VALUES = 2_000_000            # JSON values in one notebook (a real one has a few thousand)
MAX_CELLS = 5_000                 # cells in one notebook (a real one has a few hundred at most)
_MAX_GIVENS_SOURCE = 256 * 1024   # a givens cell longer than this is "edited" without parsing it
_GIVENS_SLACK = 4_096             # … and one longer than 4× its issued text and this: "much longer"
_LISTED = 8                       # names, cells or positions a message lists before "and N more"
_CHEAP_JSON = 4 * 1024 * 1024     # below this many bytes, parsing cannot cost much memory whatever it holds

ISSUE_CODES = {
    # reading the file
    "unreadable": "the file could not be read (permissions, a folder, it vanished)",
    "symlink": "a symbolic link: never followed (it could point at another student's notebook)",
    "too-large": f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not read",
    "too-complex": f"more than {MAX_VALUES:,} JSON values: not parsed",
    "too-many-cells": f"more than {MAX_CELLS:,} cells: nothing in it is run",
    "empty-file": "0 bytes",
    "not-text": "not UTF-8 text",
    "invalid-json": "not valid JSON (line and column given)",
    "not-a-notebook": "valid JSON, but not an object",
    "not-nbformat-4": "nbformat 3, missing or another version: nothing in it is run",
    "no-cells": "no list of cells, or an empty one",
    "bad-cell": "a cell that is not an object or has an unreadable source: skipped",
    # the kit's cells
    "metadata-stripped": "kit cells without nbgrader metadata, matched by their cell ids",
    "no-kit-cells": "no kit cell identifiable: every code cell runs, values read by name",
    "kit-cell-missing": "an answer, givens or example cell is not in the notebook",
    "check-cell-missing": "a part's check cell is not in the notebook: grading never runs it, but the "
                          "student worked without the part's form check",
    "duplicate-grade-id": "a grade id on two cells (a copied cell): both kept, in order",
    "givens-edited": "a locked givens cell was changed (harmless: givens come from the key)",
    # the notebook's variant record
    "no-record": "no attnkit variant record in the notebook metadata",
    "earlier-variant": "a variant the key issued before a rebuild gave the problem new numbers",
    "wrong-student": "the record names another student",
    "wrong-assignment": "the record names another assignment",
    "wrong-variant": "the record's variant digests differ from the key's",
    # when it was handed in
    "bad-timestamp": "nbgrader's timestamp.txt beside it is not a time: the file's modification time is used",
    "late-by-name": "Canvas marked the submission late (_LATE in its file name)",
    # pairing files with students (``match``)
    "duplicate": "copies of one notebook (name, name (1), …) in one place: the newest by modification "
                 "time is graded, the others are listed",
    "several-notebooks": "one student's folder holds notebooks of unrelated names: one is graded (named "
                         "like the assignment, else whose record names the student, else the newest)",
    "ambiguous": "notebooks in different places (or one only by its variant record) claim one student: "
                 "one is graded, the others are listed",
    "renamed": "the only notebook in a student's folder, not named <assignment>.ipynb: graded",
    "paired-by-record": "its file or folder name names no student; its variant record does: graded for them",
    "unknown-student": "a folder or file name that is not a student of the key, and no variant record "
                       "names one: not graded",
    "unmatched": "a Canvas or Moodle download whose user id and login are no student's (roster or key), "
                 "and no variant record names one: not graded",
}


# The issues that leave a submission without cells: nothing of it is run.
NOT_READ = frozenset({"unreadable", "symlink", "too-large", "too-complex", "too-many-cells",
                      "empty-file", "not-text", "invalid-json", "not-a-notebook", "not-nbformat-4",
                      "no-cells"})


@dataclass(frozen=True)
class Issue:
    """Something about a submission the instructor (and usually the student) should know.

    ``code`` is one of ``ISSUE_CODES``; ``message`` names the file (and the cell, when there
    is one); ``cell`` is that cell's label (a grade id, or "cell N" for a cell the student
    added) so feedback can attach the issue to a part."""
    code: str
    message: str
    cell: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Found:
    """A notebook file on disk and the student its place names (folder name or file stem;
    "" for a Canvas or Moodle name, which ``match`` maps through its ``lms_*`` ids).

    ``shown`` is the path relative to the folder that was searched, terminal-safe: short
    enough for a message, precise enough to find the file. ``received_at`` is when it was
    handed in (timezone-aware; None when unknown) and ``received_from`` where that time
    comes from (``RECEIVED_FROM_TIMESTAMP`` or ``RECEIVED_FROM_MTIME``); ``notes`` are
    issues about the file found before it is read (a bad timestamp, a late mark, how it was
    paired), carried into its ``Submission``."""
    student: str
    path: Path
    shown: str
    layout: str                      # "nbgrader" (<student>/<assignment>/x.ipynb), "release"
                                     # (<student>/<assignment>.ipynb), "folder" (<student>/x.ipynb),
                                     # "flat" (<student>.ipynb, <student> (1).ipynb), "canvas", "moodle"
    lms_id: str = ""                 # the user id a Canvas or Moodle name holds
    lms_login: str = ""              # the login a Canvas name starts with
    lms_name: str = ""               # the full name a Moodle name starts with
    lms_late: bool = False           # Canvas's _LATE mark
    received_at: datetime | None = None
    received_from: str = ""
    notes: tuple[Issue, ...] = ()


@dataclass(frozen=True)
class Sent(Found):
    """A notebook that travelled as bytes (a cluster shard's, read at the client the bounded
    way ``read_submission`` reads): it is read from ``data``, and ``path`` is where the
    client found it, never opened here."""
    data: bytes = b""


@dataclass(frozen=True)
class Cell:
    """One cell of a submission, in notebook order.

    ``grade_id`` is the kit cell this is (None for a cell the student added): the nbgrader
    grade id when the metadata has one, else the cell id when it names a kit cell of the
    student's key entry (``matched_by`` says which)."""
    index: int                       # 0-based position in the notebook
    cell_type: str                   # "code" | "markdown" | "raw" | whatever the file says
    source: str
    grade_id: str | None = None
    matched_by: str | None = None    # "nbgrader" | "cell id" | None
    locked: bool | None = None       # locked as the kit locks it (editable false, nbgrader locked);
                                     # None: the cell has no metadata to say

    @property
    def label(self) -> str:
        """How messages and the sandbox name this cell: its grade id, else its position."""
        return self.grade_id or f"cell {self.index + 1}"


@dataclass(frozen=True)
class Submission:
    """A notebook as read: never an exception, at worst no cells and an issue saying why.

    ``content_hash`` is the SHA-256 of the file's bytes (hex), so an unchanged file is not
    graded twice; ``record`` is the notebook's ``attnkit`` metadata (the variant record the
    build wrote) when it is an object, else None."""
    student: str
    path: Path
    shown: str
    content_hash: str
    cells: tuple[Cell, ...]
    record: dict | None
    issues: tuple[Issue, ...]
    nbformat: int | None = None
    received_at: datetime | None = None      # as on its Found
    received_from: str = ""
    lms_late: bool = False


class Matched(NamedTuple):
    """What ``match`` makes of a folder: a named tuple so it also unpacks as the contract's
    ``(submissions, missing, issues)``.

    ``submissions``: one per student of the key, sorted by student id; ``missing``: key
    students without a notebook; ``issues``: files that are not graded (a copy, another
    notebook or one elsewhere that was not chosen, a name or download nothing pairs)."""
    submissions: list[Submission]
    missing: list[str]
    issues: list[Issue]


@dataclass(frozen=True)
class KitCell:
    """What a grade id of the student's entry is: its problem (None for setup and header),
    its role, and the part (or implement function, or test family) it belongs to.

    Roles: setup, header, prompt, givens, answer, check, heatmap, solution, example, tests."""
    grade_id: str
    problem: str | None
    role: str
    part: str | None = None


# --- finding -------------------------------------------------------------------------------

def _visible(path: Path) -> bool:
    return not path.name.startswith(".")


_DIGITS = re.compile(r"([0-9]+)")     # ASCII digits only: '²'.isdigit() is True, int('²') fails


def _natural(text: str) -> list:
    """'hw (10)' after 'hw (9)': numbers compare as numbers. A run of digits compares by its
    length without leading zeros, then by its digits (no ``int``: a name of 300 digits is text
    a student chose, and needs no arithmetic)."""
    key = []
    for i, t in enumerate(_DIGITS.split(text)):
        if i % 2:
            digits = t.lstrip("0") or "0"
            key.append((0, len(digits), digits, t))
        else:
            key.append((1, 0, t, ""))
    return key


# A browser's second download of a file: "u006 (1).ipynb" (Chrome, Edge, Firefox), "u006(1)".
_COPY = re.compile(r"(?P<base>.*?\S) ?\((?P<n>[0-9]{1,6})\)")
# Canvas: <login>[_LATE]_<user id>_<submission id>_<original name>; Moodle: <Full Name>_<id>_
# assignsubmission_file_ (a folder, or the start of the file name when downloaded without
# folders). Neither can be a roster id, which has no '_'.
_CANVAS = re.compile(r"(?P<login>.+?)(?P<late>_LATE)?_(?P<id>[0-9]{1,20})_(?P<sub>[0-9]{1,20})_"
                     r"(?P<original>.+\.ipynb)")
_MOODLE_FOLDER = re.compile(r"(?P<name>.*)_(?P<id>[0-9]{1,20})_assignsubmission_[a-z]+_?")
_MOODLE_FILE = re.compile(r"(?P<name>.*)_(?P<id>[0-9]{1,20})_assignsubmission_file_(?P<original>.+\.ipynb)")
_MAX_TIMESTAMP = 256                # bytes of a timestamp.txt read (nbgrader writes ~30)


def _is_notebook(path: Path) -> bool:
    return (_visible(path) and path.suffix == ".ipynb" and not path.is_dir()
            and (path.is_file() or path.is_symlink()))


def _without_copy(stem: str) -> str:
    """'u006 (1)' → 'u006': the name a browser's copy was saved from."""
    copy = _COPY.fullmatch(stem)
    return copy.group("base") if copy else stem


def find_submissions(root: Path, assignment_id: str) -> list[Found]:
    """Every notebook of ``assignment_id`` under ``root``, sorted by student then file name.

    ``root`` may be an nbgrader course (``root/submitted/<student>/<assignment>/``), its
    ``submitted`` folder itself, a flat folder of ``<student>.ipynb`` files (and browser
    copies ``<student> (1).ipynb``), student folders (``<student>/<any>.ipynb``, the build's
    ``release/<student>/<assignment>.ipynb``), or a Canvas or Moodle bulk download (see the
    module's layouts); every kind is collected when a folder mixes them. Names are only
    parsed here: ``match`` says whose each notebook is. Hidden files and folders
    (``.ipynb_checkpoints``) are skipped; symbolic links are listed, so that reading them
    refuses them with an issue instead of their vanishing silently. No notebook is read;
    a ``timestamp.txt`` beside one is (at most 256 bytes)."""
    root = Path(root)
    base = root / "submitted" if (root / "submitted").is_dir() else root
    found: list[Found] = []
    if not base.is_dir():
        return found
    stamps: dict[Path, tuple[datetime | None, str]] = {}

    def add(student: str, nb: Path, layout: str, **lms) -> None:
        shown = terminal_safe(printable(str(nb.relative_to(root))), newlines=False)
        at, source, notes = _received(nb, base, shown, stamps)
        if lms.get("lms_late"):
            notes += (Issue("late-by-name", f"{shown}: Canvas marked this submission late (_LATE in "
                                            "its file name)"),)
        found.append(Found(student, nb, shown, layout, received_at=at, received_from=source,
                           notes=notes, **lms))

    for entry in sorted(base.iterdir()):
        if not _visible(entry):
            continue
        if _is_notebook(entry):
            moodle, canvas = _MOODLE_FILE.fullmatch(entry.name), _CANVAS.fullmatch(entry.name)
            if moodle:
                add("", entry, "moodle", lms_id=moodle["id"], lms_name=moodle["name"])
            elif canvas:
                add("", entry, "canvas", lms_id=canvas["id"], lms_login=canvas["login"],
                    lms_late=bool(canvas["late"]))
            else:
                add(_without_copy(entry.stem), entry, "flat")
        elif entry.is_dir() and not entry.is_symlink():
            notebooks = [nb for nb in sorted(entry.iterdir()) if _is_notebook(nb)]
            moodle = _MOODLE_FOLDER.fullmatch(entry.name)
            for nb in notebooks:
                if moodle:
                    add("", nb, "moodle", lms_id=moodle["id"], lms_name=moodle["name"])
                else:
                    add(entry.name, nb, "release" if nb.name == f"{assignment_id}.ipynb" else "folder")
            folder = entry / assignment_id
            if moodle or not folder.is_dir() or folder.is_symlink():
                continue
            for nb in sorted(folder.iterdir()):
                if _is_notebook(nb):
                    add(entry.name, nb, "nbgrader")
    found.sort(key=lambda f: (f.student, _natural(f.path.name), f.shown))
    return found


# --- when it was handed in ------------------------------------------------------------------

def _received(nb: Path, base: Path, shown: str,
              stamps: dict[Path, tuple[datetime | None, str]]) -> tuple[datetime | None, str, tuple[Issue, ...]]:
    """(when, where that time comes from, notes): nbgrader's timestamp.txt in the notebook's
    folder (not the searched folder itself), else the file's modification time."""
    notes: tuple[Issue, ...] = ()
    if nb.parent != base:
        if nb.parent not in stamps:
            stamps[nb.parent] = read_timestamp(nb.parent / "timestamp.txt")
        at, problem = stamps[nb.parent]
        if at is not None:
            return at, RECEIVED_FROM_TIMESTAMP, notes
        if problem:
            notes = (Issue("bad-timestamp", f"{shown}: the timestamp.txt beside it is not a time "
                                            f"({problem}): the file's modification time is used"),)
    try:
        mtime = os.lstat(nb).st_mtime_ns
    except OSError:
        return None, "", notes
    return datetime.fromtimestamp(mtime / 1e9, timezone.utc), RECEIVED_FROM_MTIME, notes


def read_timestamp(path: Path) -> tuple[datetime | None, str]:
    """(the time, '') from an nbgrader ``timestamp.txt``; (None, '') when there is none;
    (None, why) when it is not a time. Never raises; reads at most 256 bytes, never
    follows a symbolic link."""
    if not os.path.lexists(path):
        return None, ""
    if os.path.islink(path):
        return None, "a symbolic link: not followed"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, "not a regular file"
            data = os.read(fd, _MAX_TIMESTAMP + 1)
        finally:
            os.close(fd)
    except OSError as err:
        return None, f"could not be read: {err.strerror or type(err).__name__}"
    if len(data) > _MAX_TIMESTAMP:
        return None, f"longer than {_MAX_TIMESTAMP} bytes"
    try:
        text = data.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    at = parse_timestamp(text)
    if at is None:
        return None, f"{terminal_safe(_short(text, 48), newlines=False)!r}" if text else "empty"
    return at, ""


_TIMESTAMP = re.compile(r"(?P<date>[0-9]{4}-[0-9]{1,2}-[0-9]{1,2})[ T]+(?P<h>[0-9]{1,2}):(?P<m>[0-9]{2})"
                        r"(?::(?P<s>[0-9]{2})(?:[.,](?P<frac>[0-9]{1,9}))?)?\s*(?P<zone>.*)")
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?\s*(?P<sign>[+-])(?P<hh>[0-9]{1,2}):?(?P<mm>[0-9]{2})?")
_ZONE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_+/-]{0,39}")
# What %Z prints for the zones nbgrader courses set that the tz database has no key for;
# the database itself (zoneinfo) knows EST, MST, HST, CET, EET, WET, MET and every Area/City.
_ABBREVIATIONS = {"EDT": -4, "CDT": -5, "CST": -6, "MDT": -6, "PDT": -7, "PST": -8, "AKST": -9,
                  "AKDT": -8, "HDT": -9, "CEST": 2, "EEST": 3, "WEST": 1, "BST": 1, "AEST": 10,
                  "AEDT": 11, "ACST": 9.5, "ACDT": 10.5, "AWST": 8, "NZST": 12, "NZDT": 13, "JST": 9,
                  "KST": 9, "SGT": 8, "HKT": 8}


def parse_timestamp(text: str) -> datetime | None:
    """nbgrader's timestamp ("2026-11-30 23:59:01.123456 UTC", what ``strftime("%Y-%m-%d
    %H:%M:%S.%f %Z")`` writes), leniently: 'T' or a space between date and time, seconds and
    fractions optional, a zone as UTC/GMT/Z, an offset (+01:00, +0100, UTC+1), a tz
    database name (Europe/Berlin, EST) or a common abbreviation (CEST, PDT). No zone at all
    is UTC, as nbgrader reads it. None when it is not a time."""
    m = _TIMESTAMP.fullmatch(text.strip())
    if not m:
        return None
    zone = _zone(m["zone"].strip())
    if zone is None:
        return None
    try:
        year, month, day = (int(x) for x in m["date"].split("-"))
        micro = int((m["frac"] or "0").ljust(6, "0")[:6])
        return datetime(year, month, day, int(m["h"]), int(m["m"]), int(m["s"] or 0), micro, tzinfo=zone)
    except (ValueError, OverflowError):
        return None


def _zone(text: str):
    """The tzinfo a timestamp's zone names, or None."""
    if text in ("", "Z", "UTC", "GMT", "UT", "utc", "z"):
        return timezone.utc
    offset = _OFFSET.fullmatch(text)
    if offset:
        hours, minutes = int(offset["hh"]), int(offset["mm"] or 0)
        if hours > 23 or minutes > 59:
            return None
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if offset["sign"] == "-" else delta)
    if text.upper() in _ABBREVIATIONS:
        return timezone(timedelta(hours=_ABBREVIATIONS[text.upper()]))
    if _ZONE_KEY.fullmatch(text) and ".." not in text:
        try:
            from zoneinfo import ZoneInfo
            return ZoneInfo(text)
        except Exception:  # noqa: BLE001 — not a key the tz database has (or no database)
            return None
    return None


# --- the key's cells ---------------------------------------------------------------------

def kit_cells(entry: dict) -> dict[str, KitCell]:
    """Every grade id a notebook built for ``entry`` may hold, mapped to what it is.

    Heatmap cells are listed for every numeric part (the build adds one only for 2-D float
    answers, which the key does not say); the instructor's worked-solution cells too."""
    cells = {SETUP_CELL: KitCell(SETUP_CELL, None, "setup"),
             HEADER_CELL: KitCell(HEADER_CELL, None, "header")}

    def add(gid, pid, role, part=None):
        cells[gid] = KitCell(gid, pid, role, part)

    for pid, record in problem_records(entry, {}):
        add(grade_id(pid, role=PROMPT), pid, "prompt")
        add(grade_id(pid, role=SOLUTION), pid, "solution")
        if givens_of(record):
            add(grade_id(pid, role=GIVENS), pid, "givens")
        if kind(record) == IMPLEMENT:
            fname = record.get("function", "")
            add(grade_id(pid, fname), pid, "answer", fname)
            add(grade_id(pid, fname, role=PROMPT), pid, "prompt", fname)
            add(grade_id(pid, fname, role=EXAMPLE), pid, "example", fname)
            for family in gradings(record, []):
                add(grade_id(pid, fname, family=str(family.get("family"))), pid, "tests", family.get("family"))
            continue
        for grading in gradings(record, []):
            part = grading.get("id")
            add(grade_id(pid, part), pid, "answer", part)
            add(grade_id(pid, part, role=PROMPT), pid, "prompt", part)
            if not is_free_response(record):
                add(grade_id(pid, part, role=CHECK), pid, "check", part)
                add(grade_id(pid, part, role=HEATMAP), pid, "heatmap", part)
    return cells


def _graded_cells(kit: dict[str, KitCell]) -> list[KitCell]:
    """The kit cells grading reads: answers, givens, examples (in key order)."""
    return [k for k in kit.values() if k.role in ("answer", "givens", "example")]


# --- reading -------------------------------------------------------------------------------

class _Unread(Exception):
    """Why a file's bytes could not be had; carries the issue (and a hash, when one exists)."""

    def __init__(self, issue: Issue, content_hash: str = ""):
        super().__init__(issue.message)
        self.issue, self.content_hash = issue, content_hash


def _read_bytes(found: Found) -> tuple[bytes, str]:
    """(bytes, sha256 hex). Symbolic links are refused (O_NOFOLLOW): a link planted in a
    submissions folder could point at another student's or the instructor's notebook."""
    if isinstance(found, Sent):
        digest = hashlib.sha256(found.data).hexdigest()
        if len(found.data) > MAX_BYTES:      # (the client sends none: it reads the bounded way)
            raise _too_large(found, len(found.data), digest)
        return found.data, digest
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        if found.path.is_symlink():
            raise OSError(errno.ELOOP, "symbolic link")
        fd = os.open(found.path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _Unread(Issue("symlink", f"{found.shown}: a symbolic link, not a file: not read "
                                           "(hand in the notebook itself)")) from None
        raise _Unread(Issue("unreadable", f"{found.shown}: could not be read "
                                          f"({err.strerror or type(err).__name__})")) from None
    digest, chunks, size = hashlib.sha256(), [], 0
    try:
        with os.fdopen(fd, "rb") as f:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):     # a FIFO or device named *.ipynb
                raise _Unread(Issue("unreadable", f"{found.shown}: not a regular file: not read"))
            if status.st_size > MAX_BYTES:           # refused by its size, before a byte is read
                raise _too_large(found, status.st_size, _glimpse(f, status))
            while size <= MAX_BYTES and (chunk := f.read(min(1 << 20, MAX_BYTES + 1 - size))):
                digest.update(chunk)                 # (a file still growing is cut at the limit)
                size += len(chunk)
                chunks.append(chunk)
            if size > MAX_BYTES:
                raise _too_large(found, size, _glimpse(f, os.fstat(fd)))
    except OSError as err:
        raise _Unread(Issue("unreadable", f"{found.shown}: could not be read "
                                          f"({err.strerror or type(err).__name__})")) from None
    return b"".join(chunks), digest.hexdigest()


_GLIMPSE = 64 * 1024


def _glimpse(f, status) -> str:
    """What tells one too-large file from another without reading it: its size, modification
    time and first and last 64 KiB (a 2 GiB file is never read or hashed in full)."""
    digest = hashlib.sha256(f"attnkit-too-large|{status.st_size}|{status.st_mtime_ns}|".encode())
    f.seek(0)
    digest.update(f.read(_GLIMPSE))
    f.seek(max(0, status.st_size - _GLIMPSE))
    digest.update(f.read(_GLIMPSE))
    return digest.hexdigest()


def _too_large(found: Found, size: int, content_hash: str) -> _Unread:
    return _Unread(Issue("too-large", f"{found.shown}: {size / (1024 * 1024):.0f} MiB, more than the "
                                      f"{MAX_BYTES // (1024 * 1024)} MiB a notebook may have: not read"),
                   content_hash)


# Every byte but the four that can make a JSON value (or end a string), to delete; and a
# string once only quotes and structure are left of it.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"[{,')))
_STRING = re.compile(rb'"[^"]*"')


def _json_values(data: bytes) -> int:
    """An upper bound on the values ``json.loads`` would make of ``data``: its brackets and
    commas outside strings. What this bounds is memory: ``[[],[],…]`` is 64 MiB of text but
    22 million lists, 1.3 GB. Linear, in C: escaped backslashes and quotes are dropped first
    (so every quote left opens or closes a string), then every byte but quotes and structure,
    then the strings (only quotes and commas, no escapes: a regex that cannot backtrack far,
    run only once their number is known to be bounded). Each string counts as a value too."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = unescaped.translate(None, _NOT_STRUCTURE)
    strings = structure.count(b'"') // 2
    if strings > MAX_VALUES:
        return strings
    bare = _STRING.sub(b"", structure)
    return strings + len(bare) - bare.count(b'"') + 1


def _parse(found: Found, data: bytes):
    """The JSON document, or _Unread with the issue."""
    if not data:
        raise _Unread(Issue("empty-file", f"{found.shown}: the file is empty (0 bytes): "
                                          "nothing was saved"))
    if len(data) > _CHEAP_JSON and (values := _json_values(data)) > MAX_VALUES:
        raise _Unread(Issue("too-complex", f"{found.shown}: about {values:,} JSON values, more than "
                                           f"the {MAX_VALUES:,} a notebook may have: not read"))
    document = quick_json(data[3:] if data.startswith(codecs.BOM_UTF8) else data)
    if document is not None:
        return document
    try:
        text = data.decode("utf-8-sig")      # a BOM some editors add is not an error
    except UnicodeDecodeError as err:
        offset = err.start + len(data) - len(err.object)      # the codec counts after a BOM
        raise _Unread(Issue("not-text", f"{found.shown}: not a notebook: byte {offset} "
                                        f"(0x{data[offset]:02x}) is not UTF-8 text")) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        # (json says "Unterminated string starting at": not "… at at line 2001")
        said = err.msg.removesuffix(" at")
        raise _Unread(Issue("invalid-json", f"{found.shown}: not valid JSON ({said} at line "
                                            f"{err.lineno}, column {err.colno}): the file was "
                                            "damaged or edited outside Jupyter")) from None
    except (RecursionError, ValueError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise _Unread(Issue("invalid-json", f"{found.shown}: not valid JSON ({reason})")) from None


def _json_type(value) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false",
            type(None): "null"}.get(type(value), type(value).__name__)


def _source(raw) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        try:
            return "".join(raw)          # (TypeError at the first line that is not text)
        except TypeError:
            return None
    return None


def _cells(found: Found, raw_cells: list, kit: dict[str, KitCell] | None,
           issues: list[Issue]) -> tuple[Cell, ...]:
    by_cell_id = {cell_id_of(g): g for g in kit} if kit else {}
    cells, bad = [], []
    for index, raw in enumerate(raw_cells):
        if not isinstance(raw, dict):
            bad.append(index)
            continue
        source = _source(raw.get("source", ""))
        if source is None:
            bad.append(index)
            continue
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        nbgrader = metadata.get("nbgrader") if isinstance(metadata.get("nbgrader"), dict) else {}
        grade_id, matched_by = nbgrader.get("grade_id"), "nbgrader"
        if not isinstance(grade_id, str) or not grade_id:
            raw_id = raw.get("id")
            grade_id = by_cell_id.get(raw_id) if isinstance(raw_id, str) else None
            matched_by = "cell id" if grade_id else None
        cell_type = raw.get("cell_type") if isinstance(raw.get("cell_type"), str) else "unknown"
        locked = (metadata.get("editable") is False and nbgrader.get("locked") is True) \
            if isinstance(raw.get("metadata"), dict) else None
        cells.append(Cell(index, cell_type, source, grade_id, matched_by, locked))
    if bad:
        where = listed([i + 1 for i in bad], ",")
        issues.append(Issue("bad-cell", f"{found.shown}: cell{'s' if len(bad) > 1 else ''} {where} "
                                        f"{'are' if len(bad) > 1 else 'is'} not readable "
                                        "(not a cell object, or its source is not text): skipped"))
    return tuple(cells)


def read_submission(found: Found, key: dict | None = None, entry: dict | None = None) -> Submission:
    """The notebook at ``found``, read as far as it can be; never raises on bad input.

    With the answer key, the notebook is also checked against the student's entry: kit
    cells missing or doubled, givens cells edited, a variant record naming another student,
    assignment or variant. Without it (or for a student the key does not know) only the
    file itself is checked and only nbgrader grade ids identify kit cells. ``entry``: the
    student's key entry when the caller has it already (parsing one is not free). The
    found file's notes come first among the issues; its times and late mark are kept."""
    read = _read(found, key, entry)
    if not (found.notes or found.received_at or found.received_from or found.lms_late):
        return read
    return replace(read, issues=tuple(found.notes) + read.issues, received_at=found.received_at,
                   received_from=found.received_from, lms_late=found.lms_late)


def _record_of(found: Found) -> dict | None:
    """The notebook's variant record (its ``attnkit`` metadata), read the bounded way
    ``read_submission`` reads; None when there is none or the file is not a notebook."""
    try:
        document = _parse(found, _read_bytes(found)[0])
    except _Unread:
        return None
    metadata = document.get("metadata") if isinstance(document, dict) else None
    record = metadata.get("attnkit") if isinstance(metadata, dict) else None
    return record if isinstance(record, dict) else None


def _read(found: Found, key: dict | None, entry: dict | None) -> Submission:
    issues: list[Issue] = []
    try:
        data, content_hash = _read_bytes(found)
    except _Unread as err:
        return Submission(found.student, found.path, found.shown, err.content_hash, (), None, (err.issue,))
    try:
        document = _parse(found, data)
    except _Unread as err:
        return Submission(found.student, found.path, found.shown, content_hash, (), None, (err.issue,))
    if not isinstance(document, dict):
        issue = Issue("not-a-notebook", f"{found.shown}: not a notebook: the JSON is "
                                        f"{_json_type(document)}, not an object")
        return Submission(found.student, found.path, found.shown, content_hash, (), None, (issue,))
    version = document.get("nbformat")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    record = metadata.get("attnkit") if isinstance(metadata.get("attnkit"), dict) else None
    if version != 4:
        said = (f"a notebook of format {version}" if version is not None
                else "a file without an nbformat version")
        issues.append(Issue("not-nbformat-4", f"{found.shown}: {said}, not a Jupyter notebook of "
                                              "format 4: nothing in it was run (open it in Jupyter "
                                              "and save it again to convert it)"))
        return Submission(found.student, found.path, found.shown, content_hash, (), record,
                          tuple(issues), version)
    entry = entry if entry is not None else entry_for(key, found.student)
    kit = kit_cells(entry) if entry else None
    raw_cells = document.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        issues.append(Issue("no-cells", f"{found.shown}: the notebook has no cells"))
        cells: tuple[Cell, ...] = ()
    elif len(raw_cells) > MAX_CELLS:
        issues.append(Issue("too-many-cells", f"{found.shown}: {len(raw_cells):,} cells, more than "
                                              f"the {MAX_CELLS:,} a notebook may have: nothing in it "
                                              "was run"))
        return Submission(found.student, found.path, found.shown, content_hash, (), record,
                          tuple(issues), version)
    else:
        cells = _cells(found, raw_cells, kit, issues)
    if entry is not None:
        variants = _variants(record, entry) if record is not None else None     # (once: it hashes)
        issues += _record_issues(found, record, key, entry, variants)
        if cells:
            issues += _kit_issues(found, cells, kit, entry, _other_variants(variants))
    return Submission(found.student, found.path, found.shown, content_hash, cells, record,
                      tuple(issues), version)


# --- checks against the key --------------------------------------------------------------

def _record_issues(found: Found, record: dict | None, key: dict, entry: dict,
                   variants: tuple[list[str], list[str], dict] | None) -> list[Issue]:
    """What the notebook's variant record says against the key; ``variants``: its
    ``_variants`` (None without a record)."""
    if record is None:
        return [Issue("no-record", f"{found.shown}: the notebook has no variant record (attnkit "
                                   "metadata), so it cannot be confirmed to be the one issued to "
                                   f"{found.student}; it is graded against {found.student}'s key entry")]
    issues = []
    named = record.get("student")
    wanted = "" if is_class_key(key) else found.student
    if named != wanted:
        who = f"student {_short(named)}" if isinstance(named, str) and named else "no student"
        issues.append(Issue("wrong-student", f"{found.shown}: this notebook was issued to {who}, not "
                                             f"{found.student}: it is graded with {found.student}'s "
                                             "givens and answers"))
    assignment_id = (key.get("assignment") or {}).get("id")
    named_assignment = (record.get("assignment") or {}).get("id") \
        if isinstance(record.get("assignment"), dict) else None
    if assignment_id is not None and named_assignment != assignment_id:
        issues.append(Issue("wrong-assignment", f"{found.shown}: this notebook is for assignment "
                                                f"{_short(repr(named_assignment))}, not {assignment_id!r}"))
    differ, earlier, digests = variants
    differ = list(differ)               # (a copy: _kit_issues reads the same variants after this)
    problems = entry.get("problems", {})
    if earlier:
        issues.append(Issue("earlier-variant", f"{found.shown}: the notebook has an earlier variant of "
                                               f"{', '.join(earlier)} (the key was rebuilt with new numbers "
                                               "after it was issued): it is graded with the key's givens"))
    extra = sum(pid not in problems for pid in digests)     # their ids are the notebook's text: counted only
    if extra:
        differ.append(f"{extra} problem{'s' if extra > 1 else ''} the key does not have")
    if differ:
        issues.append(Issue("wrong-variant", f"{found.shown}: the notebook's variant of "
                                             f"{', '.join(differ)} is not the one in the answer key "
                                             "(another student's notebook, or one built with another "
                                             "secret or version): it is graded with the key's givens"))
    return issues


def _variants(record: dict, entry: dict) -> tuple[list[str], list[str], dict]:
    """(problems whose variant in the notebook is not the key's, those of them that are a
    variant the key issued before a rebuild, the notebook's variant digests by problem).

    What the student was issued (givens, options) decides: a rebuild that changed only how a
    part is graded (tolerance, points, checks, twins) changes a record's full digest, not its
    issued one. A notebook from before issued digests existed is compared by its full digest."""
    digests, issued = {}, {}
    for p in record.get("problems") if isinstance(record.get("problems"), list) else []:
        if isinstance(p, dict) and isinstance(p.get("id"), str):
            digests[p["id"]] = p.get("variant_digest")
            issued[p["id"]] = p.get("issued_digest")
    differ, earlier = [], []
    for pid, problem in entry.get("problems", {}).items():
        mine = issued.get(pid)
        if mine is None and digests.get(pid) == problem.get("digest"):
            continue
        if mine is not None and mine == issued_digest(problem):
            continue
        (earlier if mine is not None and mine in issued_before(problem) else differ).append(pid)
    return differ, earlier, digests


def _other_variants(variants) -> set[str]:
    """Problems whose notebook variant is not the key's (their givens differ for that reason),
    from ``_variants`` (None: no record)."""
    if variants is None:
        return set()
    differ, earlier, _ = variants
    return set(differ) | set(earlier)


def _kit_issues(found: Found, cells: tuple[Cell, ...], kit: dict[str, KitCell],
                entry: dict, other_variants: set[str] = frozenset()) -> list[Issue]:
    known = [c for c in cells if c.grade_id in kit]
    if not known:
        return [Issue("no-kit-cells", f"{found.shown}: none of the notebook's cells is a cell of the "
                                      "assignment (no nbgrader grade ids or cell ids it was issued "
                                      "with): every code cell is run in order and answers are read "
                                      "by variable name only")]
    issues = []
    stripped = [c for c in known if c.matched_by == "cell id"]
    if stripped:
        issues.append(Issue("metadata-stripped", f"{found.shown}: {len(stripped)} cell"
                                                 f"{'s have' if len(stripped) > 1 else ' has'} no "
                                                 "nbgrader metadata (removed by a tool or a copy into "
                                                 "a new notebook); matched by cell id instead"))
    present = {c.grade_id for c in known}
    for k in _graded_cells(kit):
        if k.grade_id not in present:
            issues.append(Issue("kit-cell-missing", f"{found.shown}: the cell {k.grade_id} is missing "
                                                    f"(deleted, or its id was lost): {_MISSING_EFFECT[k.role]}",
                                k.grade_id))
    checks = [k.grade_id for k in kit.values() if k.role == "check" and k.grade_id not in present]
    if checks:
        issues.append(Issue("check-cell-missing", f"{found.shown}: the check cell{'s' if len(checks) > 1 else ''} "
                                                  f"{listed(checks)} {'are' if len(checks) > 1 else 'is'} missing "
                                                  "(deleted, or the id was lost): grading does not run check "
                                                  "cells, so the score is unaffected, but the part's form was "
                                                  "not checked in the notebook", checks[0]))
    positions: dict[str, list[int]] = {}
    for c in known:
        positions.setdefault(c.grade_id, []).append(c.index + 1)
    for gid, where in positions.items():
        if len(where) > 1:
            issues.append(Issue("duplicate-grade-id", f"{found.shown}: cells {listed(where)} all carry "
                                                      f"the grade id {gid} (a copied cell): all of "
                                                      "them are kept, in notebook order", gid))
    issued: dict[str, tuple[dict, str]] = {}      # problem → its givens and their text, made once
    for c in known:
        k = kit[c.grade_id]
        if k.role == "givens" and k.problem not in other_variants:   # (those are reported as such)
            if k.problem not in issued:
                givens = decode_names(givens_of(problem_record(entry, k.problem)))
                issued[k.problem] = givens, _blocks(givens)
            givens, blocks = issued[k.problem]
            changed = givens_edits(c.source, givens, blocks=blocks)
            if changed:
                issues.append(Issue("givens-edited", f"{found.shown}: the locked givens cell {c.grade_id} "
                                                     f"was edited ({changed}); harmless: grading always "
                                                     "uses the givens as issued", c.grade_id))
    return issues


_MISSING_EFFECT = {
    "answer": "the answer is read from its variable wherever the notebook defines it",
    "givens": "the givens are set from the answer key before the problem's first cell",
    "example": "its example is not defined unless another cell defines it",
}


def _short(text: str, limit: int = 64) -> str:
    """Text from the notebook, cut to fit in a message."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _and(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def listed(items, joiner: str = "and") -> str:
    """Like ``_and``, but a long list (its length is the student's choice) names its first
    few, each cut short, and counts the rest: a message stays a line, whatever the notebook
    holds. ``joiner`` "," lists them with commas only."""
    shown = items if len(items) <= _LISTED + 1 else items[:_LISTED]
    words = [_short(str(i)) for i in shown] + ([f"{len(items) - _LISTED:,} more"] if shown is not items else [])
    return _and(words) if joiner == "and" else ", ".join(words)


# --- givens edited? ------------------------------------------------------------------------

class _TuplesAsLists(ast.NodeTransformer):
    """The key stores tuples as lists: a tuple given and its list copy are the same given."""

    def visit_Tuple(self, node):
        self.generic_visit(node)
        return ast.List(elts=node.elts, ctx=node.ctx)


def _assignments(source: str) -> tuple[dict[str, str], bool] | None:
    """name → the normalised AST of its value, and whether anything else is in the cell
    (None if it does not parse). Layout, comments and float spellings do not matter."""
    values, other = {}, False
    try:        # (a deeply nested expression can overflow the parser or the walk after it)
        with PARSING:
            module = ast.parse(source)
        for statement in module.body:
            if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id not in values):
                values[statement.targets[0].id] = ast.dump(_TuplesAsLists().visit(statement.value))
            else:
                other = True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return values, other


def assigns_exactly(source: str, names, issued: int | None = None) -> bool:
    """True when the cell only assigns these names, once each (whatever the values): how a
    givens cell is recognised by its content when no id says what it is. ``issued``: the
    length of the givens cell as built, when known; a cell much longer than that is not
    parsed (parsing is what a long cell would make expensive)."""
    limit = _MAX_GIVENS_SOURCE if issued is None else _longest_givens(issued)
    found = _assignments(source) if len(source) <= limit else None
    return found is not None and not found[1] and set(found[0]) == set(names)


def _longest_givens(issued: int) -> int:
    """How long a givens cell may be and still be parsed: re-spelling the numbers or adding
    comments may make it longer, but not many times longer."""
    return min(_MAX_GIVENS_SOURCE, 4 * issued + _GIVENS_SLACK)


def _blocks(givens: dict) -> dict[str, str]:
    """name → the assignment line(s) the build wrote for that given (decoded)."""
    return {name: assignment(name, value) for name, value in givens.items()}


def expected_givens_source(givens: dict) -> str:
    """The assignment lines a givens cell holds for these (decoded) givens."""
    return "\n".join(_blocks(givens).values())


def _as_issued(source: str, blocks: dict[str, str]) -> bool:
    """The quick answer for the usual case: the cell is, comment lines aside, exactly the
    text the build wrote for these givens (``blocks``: one ``assignment`` per name, in any
    order). Anything else goes to the parser, which tells a harmless re-spelling from an edit."""
    code = "\n".join(line for line in source.split("\n") if not line.startswith("#"))
    order = sorted(blocks, key=lambda name: code.find(blocks[name]))
    return code == "\n".join(blocks[name] for name in order)


def givens_edits(source: str, givens: dict, issued: str | None = None,
                 blocks: dict[str, str] | None = None) -> str:
    """'' when the cell still assigns exactly ``givens`` (the key's, decoded); else what
    changed, in words ("Q and lengths changed", "other code added", …). ``issued``: the
    givens cell's text as built (``expected_givens_source(givens)``), or ``blocks``: its
    lines by name (``_blocks``), when the caller has them."""
    blocks = _blocks(givens) if blocks is None else blocks
    issued = "\n".join(blocks.values()) if issued is None else issued
    if len(source) > _longest_givens(len(issued)):
        return "it was replaced by something much longer"
    if _as_issued(source, blocks):
        return ""
    found = _assignments(source)
    if found is None:
        return "it no longer parses as Python"
    expected, _ = _assignments(issued)
    values, other = found
    said = []
    changed = [n for n in expected if n in values and values[n] != expected[n]]
    removed = [n for n in expected if n not in values]
    added = [n for n in values if n not in expected]
    if changed:
        said.append(f"{listed(changed)} changed")
    if removed:
        said.append(f"{listed(removed)} removed")
    if added:
        said.append(f"{listed(added)} added")
    if other:
        said.append("other code added")
    return "; ".join(said)


# --- matching files and students -----------------------------------------------------------

def notebook_bytes(found: Found) -> tuple[bytes, str] | None:
    """(bytes, SHA-256) of the file read the way ``read_submission`` reads it (bounded,
    symbolic links refused), or None when it cannot be read so: ``read_submission`` says why."""
    try:
        return _read_bytes(found)
    except _Unread:
        return None


def file_hash(found: Found) -> str:
    """SHA-256 of the file's bytes, read the way ``read_submission`` reads them ('' when the
    file cannot be read at all): what tells a submission graded before from a changed one."""
    try:
        return _read_bytes(found)[1]
    except _Unread as err:
        return err.content_hash


class _Claim(NamedTuple):
    """A file paired with a student (``found.student``), and by what: "place" (its file or
    folder name, or the LMS ids in it) or "record" (only its variant record)."""
    found: Found
    by: str


def match(found: list[Found], key: dict, read: bool = True, roster: Iterable | None = None) -> Matched:
    """Pair files with the key's students.

    Each file is paired by its place when the place names a student: a folder or file stem
    that is a student id of the key (with an nbgrader course's class key every name is a
    student), or for a Canvas or Moodle name its user id or login, mapped by ``roster``
    (students with ``id``, ``lms_id`` and ``lms_login``, such as ``exercises.course.roster.Student``,
    or mappings with those keys; the key's entries may carry ``lms_id``/``lms_login`` too),
    else taken as a student id of the key when it is one. Only a file whose place names no
    student is read to be paired, by its variant record (``paired-by-record``); a file
    nothing pairs is an ``unknown-student`` (or, for an LMS name, ``unmatched``) issue and
    is not graded. A notebook of another name in a student's folder is noted ``renamed``.

    A student with several notebooks gets one graded: one paired by place before one paired
    only by its record, then ``<assignment>.ipynb`` if there is one, else the one whose
    record names them, else the newest by modification time (by name when times tie). The
    others are listed as issues: ``duplicate`` (a browser's copies of one name),
    ``several-notebooks`` (unrelated names in one folder) or ``ambiguous`` (in different
    places), and the graded one says why it was chosen. ``missing``: key students without
    any notebook."""
    assignment_id = (key.get("assignment") or {}).get("id", "")
    class_key = is_class_key(key)
    students = key.get("students", {}) if isinstance(key.get("students"), Mapping) else {}
    # The LMS ids are read from every entry's head: only when an LMS download needs them
    # (a batch of folders named by student id never does, and on a large key they are slow to read).
    lms = functools.cache(lambda: _lms_ids(students, roster, class_key))
    claims: dict[str, list[_Claim]] = {}
    issues: list[Issue] = []
    for f in found:
        claim = _pair(f, students, class_key, lms)
        if isinstance(claim, Issue):
            issues.append(claim)
        else:
            claims.setdefault(claim.found.student, []).append(claim)
    submissions = []
    for student in sorted(claims):
        group = claims[student]
        if len(group) == 1:
            f = _renamed(group[0], assignment_id)
            submissions.append(read_submission(f, key) if read else f)
            continue
        copies = [(c, read_submission(c.found, key)) for c in group]
        (claim, chosen), why = _choose(copies, student, assignment_id, class_key)
        relations = []
        for other, s in copies:
            if s is chosen:
                continue
            relation = _relation(other, claim)
            relations.append(relation)
            if other.by == "record" and claim.by == "place":
                said = (f"its variant record names {student}, and {chosen.shown} (whose file or folder "
                        f"name is {student}'s) was graded")
            elif relation == "ambiguous":
                said = f"{student} handed in {len(copies)} notebooks in different places and {chosen.shown} was graded"
            else:
                said = f"{student} handed in {len(copies)} notebooks and {chosen.shown} was graded"
            issues.append(Issue(relation, f"{s.shown}: not graded: {said}"))
        code = min(relations, key=_RELATIONS.index)
        others = [s.shown for _, s in copies if s is not chosen]
        note = Issue(code, f"{chosen.shown}: graded, {why}; {student} handed in {len(copies)} "
                           f"notebooks (also {listed(others)})")
        submissions.append(replace(chosen, issues=chosen.issues + (note,)))
    missing = [] if class_key else sorted(s for s in students if s not in claims)
    return Matched(submissions, missing, issues)


_RELATIONS = ("ambiguous", "several-notebooks", "duplicate")      # the graver first


def _pair(f: Found, students: Mapping, class_key: bool, lms) -> _Claim | Issue:
    """Whose ``f`` is: a claim, or the issue that says why it is nobody's."""
    if f.layout in _LMS_LAYOUTS:
        student = _lms_student(f, students, class_key, *lms())
        if student is None and class_key and _good_name(f.lms_login or f.lms_id):
            student = f.lms_login or f.lms_id
        if student is not None:
            return _Claim(replace(f, student=student), "place")
    elif not _printable(f.student):
        return Issue("unknown-student", f"{printable(f.shown)}: a folder or file name that is not "
                                        "UTF-8 text names no student: not graded")
    elif terminal_safe(f.student) != f.student:      # (only a class key takes any name)
        return Issue("unknown-student", f"{terminal_safe(f.shown)}: a folder or file name with "
                                        "control or invisible characters names no student: not graded")
    elif f.student in students or (class_key and f.student != CLASS_STUDENT):
        return _Claim(f, "place")
    place = _place_named(f)
    if not class_key:
        record = _record_of(f)
        named = record.get("student") if record is not None else None
        if isinstance(named, str) and named in students and named != CLASS_STUDENT:
            note = Issue("paired-by-record", f"{f.shown}: {place} names no student of the answer key; "
                                             f"the notebook's variant record names {named}: graded "
                                             f"for {named}")
            return _Claim(replace(f, student=named, notes=(note, *f.notes)), "record")
    if f.layout in _LMS_LAYOUTS:
        return Issue("unmatched", f"{f.shown}: {place} is no student of the roster or the answer key, "
                                  "and no variant record in the notebook names one: not graded (the "
                                  "roster's lms_id or lms_login column pairs LMS downloads)")
    return Issue("unknown-student", f"{f.shown}: {f.student!r} is not a student of the answer key, and "
                                    "no variant record in the notebook names one (the folder or file "
                                    "name must be a student id of the roster): not graded")


_LMS_LAYOUTS = ("canvas", "moodle")


def _place_named(f: Found) -> str:
    """What the file's place says, in words, for a message (its text made terminal-safe)."""
    def safe(text: str) -> str:
        return terminal_safe(_short(printable(text)), newlines=False)
    if f.layout == "canvas":
        return f"a Canvas download of user id {f.lms_id} (login {safe(f.lms_login)!r})"
    if f.layout == "moodle":
        return f"a Moodle download of user id {f.lms_id} ({safe(f.lms_name)!r})"
    return f"its {'file' if f.layout == 'flat' else 'folder'} name {safe(f.student)!r}"


def _good_name(name: str) -> bool:
    """A name a class key may take as a student: text a terminal shows as it is."""
    return bool(name) and _printable(name) and terminal_safe(name, newlines=False) == name \
        and name != CLASS_STUDENT


def _lms_ids(students: Mapping, roster: Iterable | None,
             class_key: bool) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(LMS user id → students, lower-case login → students), from the key's entries and the
    roster; only students of the key (any good name for a class key) are mapped."""
    by_id: dict[str, set[str]] = {}
    by_login: dict[str, set[str]] = {}

    def add(student, lms_id, lms_login) -> None:
        if not isinstance(student, str) or not (student in students if not class_key else _good_name(student)) \
                or student == CLASS_STUDENT:
            return
        for table, value in ((by_id, lms_id), (by_login, lms_login)):
            if isinstance(value, str) and value.strip():
                table.setdefault(value.strip().lower(), set()).add(student)

    for sid, entry in students.items():
        if isinstance(entry, Mapping):
            add(sid, entry.get("lms_id"), entry.get("lms_login"))
    for s in roster or ():
        if isinstance(s, Mapping):
            add(s.get("student_id", s.get("id")), s.get("lms_id"), s.get("lms_login"))
        else:
            add(getattr(s, "id", None), getattr(s, "lms_id", ""), getattr(s, "lms_login", ""))
    return by_id, by_login


def _lms_student(f: Found, students: Mapping, class_key: bool, by_id: dict[str, set[str]],
                 by_login: dict[str, set[str]]) -> str | None:
    """The student an LMS name's user id or login is: mapped by the roster (an id two
    students share maps to neither), else a student id of the key it equals (any case)."""
    for table, value in ((by_id, f.lms_id), (by_login, f.lms_login.strip().lower())):
        owners = table.get(value) if value else None
        if owners and len(owners) == 1:
            return next(iter(owners))
    if not class_key:
        ids = {s.lower(): s for s in students if isinstance(s, str) and s != CLASS_STUDENT}
        for value in (f.lms_id, f.lms_login):
            if value and value.lower() in ids:
                return ids[value.lower()]
    return None


def _renamed(claim: _Claim, assignment_id: str) -> Found:
    """The only notebook of a student, in their folder under another name: noted."""
    f = claim.found
    if claim.by != "place" or f.layout not in ("folder", "nbgrader") or f.path.name == f"{assignment_id}.ipynb":
        return f
    note = Issue("renamed", f"{f.shown}: not named {assignment_id}.ipynb, but the only notebook of "
                            f"{f.student}: graded for {f.student}")
    return replace(f, notes=(*f.notes, note))


def _original_name(f: Found) -> str:
    """The notebook's own name: for an LMS download, the name the student uploaded."""
    if f.layout in _LMS_LAYOUTS:
        named = _MOODLE_FILE.fullmatch(f.path.name) or _CANVAS.fullmatch(f.path.name)
        if named:
            return named["original"]
    return f.path.name


def _relation(other: _Claim, chosen: _Claim) -> str:
    """How a notebook not graded stands to the one graded: a copy of it, another notebook
    in the same folder, or one elsewhere."""
    def place(c: _Claim):
        return c.by, c.found.path.parent, c.found.layout if c.found.layout in _LMS_LAYOUTS else ""
    if place(other) != place(chosen):
        return "ambiguous"
    same = _without_copy(Path(_original_name(other.found)).stem) == _without_copy(Path(_original_name(chosen.found)).stem)
    return "duplicate" if same else "several-notebooks"


def _mtime_ns(path: Path) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def _printable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:           # a file name that was not UTF-8 (surrogate-escaped)
        return False
    return True


def _choose(copies: list[tuple[_Claim, Submission]], student: str, assignment_id: str,
            class_key: bool) -> tuple[tuple[_Claim, Submission], str]:
    by_place = [c for c in copies if c[0].by == "place"]
    if len(by_place) == 1:
        return by_place[0], (f"as its file or folder name is {student}'s (the others name {student} only "
                             "in their variant record)")
    pool = by_place or copies
    named = [c for c in pool if _original_name(c[0].found) == f"{assignment_id}.ipynb"]
    if len(named) == 1:
        return named[0], f"as it is named {assignment_id}.ipynb"
    owner = "" if class_key else student
    pool = named or pool
    theirs = [c for c in pool if c[1].record is not None and c[1].record.get("student") == owner]
    if len(theirs) == 1 and not class_key:
        return theirs[0], f"as its record names {student}"
    pool = theirs or pool
    times = [_mtime_ns(c[0].found.path) for c in pool]
    newest = [c for c, t in zip(pool, times) if t == max(times)]
    chosen = max(newest, key=lambda c: (_natural(c[1].path.name), c[1].shown))
    if len(newest) > 1:
        return chosen, "as its name sorts last (the newest)"
    when = datetime.fromtimestamp(max(times) / 1e9, timezone.utc)
    return chosen, f"as it was modified last ({when:%Y-%m-%d %H:%M:%S} UTC)"
