"""Pairing the notebooks found with the answer key's students (``match``).

A name or folder that is a student id of the key decides; a Canvas or Moodle name is mapped
by its user id or login (the roster's ``lms_id`` / ``lms_login`` columns, else ids that are
student ids of the key); a notebook whose place names no student is paired by the variant
record inside it. When a place and the record disagree the place wins (the record is the
notebook's text, which a copy carries along) and ``wrong-student`` says so. Every file that
is not graded is listed as an issue.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from formats.key_shape import CLASS_STUDENT, is_class_key
from formats.textfile import printable, terminal_safe

from grader.intake.issues import Issue, listed, short
from grader.intake.layouts import LMS_LAYOUTS, natural, original_name, without_copy
from grader.intake.reading import read_submission, record_of
from grader.intake.records import Found, Submission

class Matched(NamedTuple):
    """What ``match`` makes of a folder: a named tuple so it also unpacks as the contract's
    ``(submissions, missing, issues)``.

    ``submissions``: one per student of the key, sorted by student id; ``missing``: key
    students without a notebook; ``issues``: files that are not graded (a copy, another
    notebook or one elsewhere that was not chosen, a name or download nothing pairs)."""
    submissions: list[Submission]
    missing: list[str]
    issues: list[Issue]


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
        chosen, passed_over = _one_graded(group, student, key, assignment_id, class_key)
        submissions.append(chosen)
        issues += passed_over
    missing = [] if class_key else sorted(s for s in students if s not in claims)
    return Matched(submissions, missing, issues)


def _one_graded(group: list[_Claim], student: str, key: dict, assignment_id: str,
                class_key: bool) -> tuple[Submission, list[Issue]]:
    """Of a student's several notebooks, the one graded (read, with a note saying why it was
    chosen), and an issue for each of the others."""
    copies = [(c, read_submission(c.found, key)) for c in group]
    (claim, chosen), why = _choose(copies, student, assignment_id, class_key)
    issues, relations = [], []
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
    return replace(chosen, issues=chosen.issues + (note,)), issues


_RELATIONS = ("ambiguous", "several-notebooks", "duplicate")      # the graver first


def _pair(f: Found, students: Mapping, class_key: bool, lms) -> _Claim | Issue:
    """Whose ``f`` is: a claim, or the issue that says why it is nobody's."""
    if f.layout in LMS_LAYOUTS:
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
        record = record_of(f)
        named = record.get("student") if record is not None else None
        if isinstance(named, str) and named in students and named != CLASS_STUDENT:
            note = Issue("paired-by-record", f"{f.shown}: {place} names no student of the answer key; "
                                             f"the notebook's variant record names {named}: graded "
                                             f"for {named}")
            return _Claim(replace(f, student=named, notes=(note, *f.notes)), "record")
    if f.layout in LMS_LAYOUTS:
        return Issue("unmatched", f"{f.shown}: {place} is no student of the roster or the answer key, "
                                  "and no variant record in the notebook names one: not graded (the "
                                  "roster's lms_id or lms_login column pairs LMS downloads)")
    return Issue("unknown-student", f"{f.shown}: {f.student!r} is not a student of the answer key, and "
                                    "no variant record in the notebook names one (the folder or file "
                                    "name must be a student id of the roster): not graded")


def _place_named(f: Found) -> str:
    """What the file's place says, in words, for a message (its text made terminal-safe)."""
    def safe(text: str) -> str:
        return terminal_safe(short(printable(text)), newlines=False)
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


def _relation(other: _Claim, chosen: _Claim) -> str:
    """How a notebook not graded stands to the one graded: a copy of it, another notebook
    in the same folder, or one elsewhere."""
    def place(c: _Claim):
        return c.by, c.found.path.parent, c.found.layout if c.found.layout in LMS_LAYOUTS else ""
    if place(other) != place(chosen):
        return "ambiguous"
    same = without_copy(Path(original_name(other.found)).stem) == without_copy(Path(original_name(chosen.found)).stem)
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
    named = [c for c in pool if original_name(c[0].found) == f"{assignment_id}.ipynb"]
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
    chosen = max(newest, key=lambda c: (natural(c[1].path.name), c[1].shown))
    if len(newest) > 1:
        return chosen, "as its name sorts last (the newest)"
    when = datetime.fromtimestamp(max(times) / 1e9, timezone.utc)
    return chosen, f"as it was modified last ({when:%Y-%m-%d %H:%M:%S} UTC)"
