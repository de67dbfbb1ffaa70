"""Grade files an LMS imports as they are, made from ``grader.reports.summary.class_grades``.

- ``grades_export``: the kit's own ``grades.csv`` (the columns of ``reports.write_csv``, then
  ``pending_points``), UTF-8 without a byte-order mark, for scripts and spreadsheets;
- ``canvas_export``: Canvas's gradebook CSV (Grades › Import): ``Student, ID, SIS User ID,
  SIS Login ID, Section`` and one assignment column, with the "Points Possible" row Canvas's
  own export writes; UTF-8 with a byte-order mark (Canvas's export adds one for Excel, its
  importer finds its header with it);
- ``moodle_export``: Moodle's grade import CSV (Grader report › Import › CSV file): one
  identifier column (email address, ID number or username), the grade, and a feedback text;
  UTF-8 with a byte-order mark (Moodle's CSV reader removes it; Excel needs it for names);
- ``gradescope_results`` / ``write_gradescope``: Gradescope's ``results.json`` per student,
  with a ``visibility`` on every test and at the top level.

What each file says about a student (``ExportRow``): **graded** (every part has a verdict),
**incomplete** (some part still to grade by hand: its points are *pending*, not 0),
**error** (the grader failed on some part; the next run grades it again) or **missing** (no
submission). A missing student's grade is blank, not 0, unless ``missing_as_zero``; an LMS
gets no grade for an incomplete or errored student unless ``partial`` (the points so far),
and ``Export.notes`` says whose grades were left out, so no one is graded 0 for what no one
has graded yet. Under a late policy every grade is the one after it; Moodle's feedback and
Gradescope's output state the penalty (points, percent, how late) or that a handin was not
accepted in ``grades.late_line``'s words, as the student's feedback page does (Canvas's
import takes no comment).

Every text cell (names, emails, ids, logins, feedback) is written as text a spreadsheet will
not run: one that starts with ``= + - @``, a tab or a carriage return gets a leading ``'``
(OWASP, "CSV Injection"). Rosters and LMS exports come from people, and so do names.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from formats.key_shape import (assignment_id, assignment_title, entry_for, head_problems, problem_record,
                               problem_title, rubric_of, total_points)
from formats.textfile import printable, write_atomic

from grader.run import garbage
from grader.store.grades import NOT_ACCEPTED, StudentGrades, late_line, score_text
from grader.store.marks import student_lines

GRADED, INCOMPLETE, ERROR, MISSING = "graded", "incomplete", "error", "missing"
_MANUAL = "manual"                     # a part's result still to be graded by hand
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
GRADESCOPE_VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
MOODLE_IDENTIFIERS = {            # identify_by → (column, what Moodle's "Map to" calls it)
    "email": ("Email address", "useremail"),
    "idnumber": ("ID number", "useridnumber"),
    "username": ("Username", "username"),
    "userid": ("User ID", "userid"),
}
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# Canvas's importer drops every column whose name matches one of its computed columns
# (GradebookImporter::NON_ASSIGNMENT_COLUMN_HEADERS, matched anywhere in the name), and
# users report any name with "final" in it ignored (canvas-lms#2134): refused, with a way out.
_CANVAS_RESERVED = re.compile(r"final|current\s+(score|points|grade)|override\s+(score|grade|status)",
                              re.IGNORECASE)
# Moodle refuses a grade above this unless the site allows more (unlimitedgrades).
MOODLE_GRADE_LIMIT = 100.0


class ExportError(ValueError):
    """A file that would not import as the instructor means it; the message says why and
    what to do instead."""


@dataclass(frozen=True)
class ExportRow:
    """One student as every export writes them. ``earned`` is None without a submission;
    ``pending`` is what is still to be graded (hand-graded parts, parts without a verdict)."""

    id: str
    name: str
    email: str
    lms_id: str
    lms_login: str
    status: str
    earned: float | None
    pending: float
    max_score: float
    problem_scores: dict | None
    penalty: float = 0.0              # late penalty, already taken off ``earned``
    late: str = ""

    @property
    def complete(self) -> bool:
        """Its grade is final: every part graded, or nothing accepted (the late policy's 0)."""
        return self.status in (GRADED, NOT_ACCEPTED)


@dataclass(frozen=True)
class Export:
    """A file's text, whether it starts with a byte-order mark, and what the instructor
    must know before importing it (one line each, e.g. whose grades were left blank)."""

    name: str
    text: str
    bom: bool
    notes: tuple[str, ...] = field(default=())

    def data(self) -> bytes:
        return ("\ufeff" if self.bom else "").encode() + self.text.encode("utf-8")


# ------------------------------------------------------------------------ what a row says


def safe_cell(text) -> str:
    """A text cell a spreadsheet shows as text: a leading apostrophe stops a formula (OWASP);
    a lone surrogate (a name that was not UTF-8) becomes U+FFFD, so the file can be written."""
    text = printable(str(text))
    return "'" + text if text.startswith(_FORMULA_START) else text


def number(x: float) -> str:
    """A score as an LMS reads it: a dot for the decimals, at most 4 of them, no "-0"."""
    return score_text(x, 4)


def _ungraded(p) -> bool:
    """A part with no score yet: no verdict and no hand grade, or waiting to be graded by hand."""
    return (p.result is None and p.mark is None) or p.status == _MANUAL


def _pending(s: StudentGrades) -> float:
    """The points not in the total yet (a part marked but to look at again is counted);
    none for a student with nothing counted (missing, or no handin the late policy accepts:
    their grade is final, nothing is graded later)."""
    if s.status in (MISSING, NOT_ACCEPTED):
        return 0.0
    return sum(p.points for p in s.parts if _ungraded(p))


def export_status(s: StudentGrades) -> str:
    """graded, incomplete (a part still to grade), error, missing — or a submission status
    this module does not know, as the gradebook says it."""
    if s.status in (MISSING, ERROR, NOT_ACCEPTED):
        return s.status
    if any(_ungraded(p) or p.waiting for p in s.parts):
        return INCOMPLETE
    return s.status


def export_rows(grades: list[StudentGrades], key: dict, roster=None) -> list[ExportRow]:
    """``grades`` as rows; a student the ``roster`` lists (objects with ``id``, ``name``,
    ``email`` and, where the roster has them, ``lms_id`` and ``lms_login``) gets the roster's
    name and email (as the LMS spells them) and LMS ids."""
    by_id = {str(r.id): r for r in (roster or ())}
    rows = []
    for s in grades:
        r = by_id.get(s.id)
        missing = s.status == MISSING
        rows.append(ExportRow(
            id=s.id, name=str(getattr(r, "name", "") or s.name), email=str(getattr(r, "email", "") or s.email),
            lms_id=str(getattr(r, "lms_id", "") or ""), lms_login=str(getattr(r, "lms_login", "") or ""),
            status=export_status(s), earned=None if missing else float(s.total), pending=_pending(s),
            max_score=float(s.max_score) if s.max_score else total_points(key),
            problem_scores=None if missing else dict(s.problem_scores), penalty=s.penalty, late=s.late))
    return rows


def grade_cell(row: ExportRow, missing_as_zero: bool = False, partial: bool = False,
               blank: str = "") -> str:
    """The grade an LMS gets: the total when every part is graded; for an incomplete or
    errored student the points so far only with ``partial``; for a missing one 0 only with
    ``missing_as_zero``; else ``blank`` (what the LMS reads as "no grade")."""
    if row.earned is None:
        return "0" if missing_as_zero else blank
    if row.complete or partial:
        return number(row.earned)
    return blank


def _left_out(rows: list[ExportRow], missing_as_zero: bool, partial: bool, lms: str) -> list[str]:
    notes = []
    waiting = [r.id for r in rows if r.earned is not None and not r.complete]
    if waiting and not partial:
        notes.append(f"{lms}: no grade for {_list(waiting)} (not every part is graded yet: "
                     "pending hand-graded points or a grader error); --partial exports the points so far")
    missing = [r.id for r in rows if r.earned is None]
    if missing and not missing_as_zero:
        notes.append(f"{lms}: no grade for {_list(missing)} (no submission); --missing-as-zero gives them 0")
    return notes


def _list(ids: list[str], limit: int = 10) -> str:
    shown = ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
    return f"{len(ids)} student{'s' if len(ids) != 1 else ''} ({shown})"


def csv_text(rows: list[list[str]]) -> str:
    """Rows as the kit writes a CSV: RFC 4180, CRLF, quotes where needed."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)   # RFC 4180: CRLF, quotes where needed
    return out.getvalue()


# ------------------------------------------------------------------------- grades.csv


def grades_export(grades: list[StudentGrades], key: dict, roster=None,
                  missing_as_zero: bool = False) -> Export:
    """``student_id, name, email, total, max, <problem ids…>, status, pending_points,
    late_penalty, late``: the
    columns of ``reports.write_csv`` with ``pending_points`` after them. ``total`` is the
    points so far; a missing student's cells are blank (0 with ``missing_as_zero``); status
    is graded, incomplete, error or missing. UTF-8 without a byte-order mark."""
    pids = [p["id"] for p in head_problems(key)]
    table = [["student_id", "name", "email", "total", "max", *pids, "status", "pending_points",
              "late_penalty", "late"]]
    for r in export_rows(grades, key, roster):
        if r.earned is None:
            empty = "0" if missing_as_zero else ""
            scores, total, pending = [empty] * len(pids), empty, empty
        else:
            scores = [number(r.problem_scores.get(pid, 0.0)) for pid in pids]
            total, pending = number(r.earned), number(r.pending)
        table.append([safe_cell(r.id), safe_cell(r.name), safe_cell(r.email), total, number(r.max_score),
                      *scores, safe_cell(r.status), pending, number(r.penalty) if r.penalty else "",
                      safe_cell(r.late)])
    return Export("csv", csv_text(table), bom=False)


# ------------------------------------------------------------------------------- Canvas


def canvas_column(key: dict, title: str | None = None, canvas_assignment_id: str | int | None = None) -> str:
    """The assignment column's name: ``<title> (<id>)``. Canvas reads a number in the
    brackets as its own assignment id (``Assignment.title_and_id``) and matches that
    assignment; anything else names an assignment by its whole title (created by the first
    import, matched by every later one). ExportError for a name Canvas would silently drop."""
    title = assignment_title(key, assignment_id(key)) if title is None else str(title)
    aid = assignment_id(key) if canvas_assignment_id is None else str(canvas_assignment_id).strip()
    if canvas_assignment_id is not None and not aid.isdigit():
        raise ExportError(f"Canvas assignment id {aid!r}: Canvas's assignment ids are numbers "
                          "(the last part of the assignment's address, …/assignments/12345)")
    if canvas_assignment_id is None and aid.isdigit():
        raise ExportError(f"assignment id {aid!r} is a number: Canvas would read "
                          f"\"{title} ({aid})\" as its own assignment {aid}. Give the Canvas "
                          "assignment's id (--canvas-id) or rename the assignment")
    column = f"{title} ({aid})"
    found = _CANVAS_RESERVED.search(column)
    if found:
        raise ExportError(f"Canvas column {column!r} contains {found.group(0)!r}: Canvas's import "
                          "silently ignores a column named like its own computed ones (\"Final "
                          "Score\", \"Current Points\"…; any \"final\", canvas-lms#2134). Give it "
                          "another title for Canvas (--canvas-title); if the assignment id holds "
                          "the word, match the Canvas assignment by its number (--canvas-id)")
    return column


def canvas_export(grades: list[StudentGrades], key: dict, roster=None, *, missing_as_zero: bool = False,
                  partial: bool = False, title: str | None = None,
                  canvas_assignment_id: str | int | None = None) -> Export:
    """Canvas's gradebook import CSV. ``ID`` is the roster's ``lms_id`` (Canvas's user id),
    ``SIS User ID`` the student id, ``SIS Login ID`` the roster's ``lms_login``, ``Section``
    blank (Canvas does not import it); Canvas matches a row by ID, then SIS User ID, then SIS
    Login ID, then name. The second row is "    Points Possible", as Canvas exports it."""
    column = canvas_column(key, title, canvas_assignment_id)
    rows = export_rows(grades, key, roster)
    notes = _left_out(rows, missing_as_zero, partial, "canvas")
    table = [[*CANVAS_COLUMNS, safe_cell(column)],
             ["    Points Possible", "", "", "", "", number(total_points(key))]]
    renamed = []
    for r in rows:
        name = r.name
        if "Points Possible" in name:      # Canvas would read the row as the points row
            name = ""
            renamed.append(r.id)
        table.append([safe_cell(name), safe_cell(r.lms_id), safe_cell(r.id), safe_cell(r.lms_login), "",
                      grade_cell(r, missing_as_zero, partial)])
    if renamed:
        notes.append(f"canvas: the Student cell of {_list(renamed)} is blank: a name holding "
                     "\"Points Possible\" would make Canvas read the row as the points row")
    if not any(r.lms_id or r.lms_login for r in rows):
        notes.append("canvas: no LMS ids (ID, SIS Login ID) in the file: Canvas matches each row by "
                     "SIS User ID (the student id), else by name; --roster with lms_id/lms_login "
                     "columns matches exactly")
    return Export("canvas", csv_text(table), bom=True, notes=tuple(notes))


# ------------------------------------------------------------------------------- Moodle


def moodle_feedback(row: ExportRow, key: dict) -> str:
    """What the student reads in Moodle: the points per problem, what the late policy did
    (``grades.late_line``, as their feedback page and Gradescope say it) and what is still to
    come. Never the instructor's notes (a copied notebook is the instructor's to raise)."""
    head = assignment_title(key, assignment_id(key))
    if row.earned is None:
        return f"{head}: no submission was received."
    text = f"{head}: {number(row.earned)} of {number(row.max_score)} points"
    if row.status == NOT_ACCEPTED:          # nothing was graded: no part to list
        return f"{text}. {late_line(row)}"
    entry = entry_for(key, row.id) or {}
    parts = [f"{problem_title(p, problem_record(entry, p['id'], {}))} "
             f"{number(row.problem_scores.get(p['id'], 0.0))}/{number(p['points'])}"
             for p in head_problems(key)]
    if row.penalty:                         # the parts add up to the points before it
        text += " after the late penalty"
    if row.status == INCOMPLETE:
        text += f" so far; {number(row.pending)} more are graded by hand later"
    elif row.status == ERROR:
        text += " so far; part of your notebook could not be graded yet, your instructor will look into it"
    return text + ". " + "; ".join(parts) + "." + (f" {late_line(row)}" if row.penalty else "")


def moodle_export(grades: list[StudentGrades], key: dict, roster=None, *, identify_by: str = "email",
                  missing_as_zero: bool = False, partial: bool = False) -> Export:
    """Moodle's grade import CSV: ``<identifier>, <title> (<id>), Feedback``. The identifier
    is the email (as the roster spells it: Moodle compares emails case-sensitively,
    MDL-29315), the ID number (the student id), the username (the roster's lms_login) or
    Moodle's user id (the roster's lms_id). "No
    grade" is written ``-``, as Moodle's own export does: a blank in a column imported as a
    new grade item would not be read as "no grade". A student without the identifier is left
    out (Moodle would give their grade to the row above) and named in the notes."""
    if identify_by not in MOODLE_IDENTIFIERS:
        raise ExportError(f"Moodle identifies students by {', '.join(MOODLE_IDENTIFIERS)}, not {identify_by!r}")
    header, _ = MOODLE_IDENTIFIERS[identify_by]
    column = f"{assignment_title(key, assignment_id(key))} ({assignment_id(key)})"
    rows = export_rows(grades, key, roster)
    notes = _left_out(rows, missing_as_zero, partial, "moodle")
    table = [[header, safe_cell(column), "Feedback"]]
    without, high = [], []
    for r in rows:
        ident = {"email": r.email, "idnumber": r.id, "username": r.lms_login,
                 "userid": r.lms_id}[identify_by].strip()
        if not ident:
            without.append(r.id)
            continue
        grade = grade_cell(r, missing_as_zero, partial, blank="-")
        if grade != "-" and float(grade) > MOODLE_GRADE_LIMIT:
            high.append(r.id)
        table.append([safe_cell(ident), grade, safe_cell(moodle_feedback(r, key))])
    if without:
        notes.append(f"moodle: left out {_list(without)}: no {header.lower()} to identify them by")
    if high:
        notes.append(f"moodle: {_list(high)} have more than {number(MOODLE_GRADE_LIMIT)} points: Moodle "
                     "refuses the import unless the site allows it (Site administration › Grades › "
                     "General settings: unlimitedgrades, gradepointmax)")
    return Export("moodle", csv_text(table), bom=True, notes=tuple(notes))


# --------------------------------------------------------------------------- Gradescope


def gradescope_results(s: StudentGrades, key: dict, visibility: str = "visible") -> dict:
    """Gradescope's results.json for one student: a test per part, each with ``visibility``,
    and the same at the top level. A part to be graded by hand is a test with no status and
    "pending" in its name and output; ``extra_data`` holds the export status and the
    pending points."""
    if visibility not in GRADESCOPE_VISIBILITIES:
        raise ExportError(f"Gradescope visibility is one of {', '.join(GRADESCOPE_VISIBILITIES)}, "
                          f"not {visibility!r}")
    entry = entry_for(key, s.id) or {}
    titles = {p["id"]: (n, problem_title(p, problem_record(entry, p["id"], {})))
              for n, p in enumerate(head_problems(key), 1)}
    status, pending = export_status(s), _pending(s)
    tests, counter = [], {}
    for part in s.parts:
        n, title = titles.get(part.problem, (len(titles) + 1, part.problem))
        counter[part.problem] = counter.get(part.problem, 0) + 1
        result = part.result
        test = {"name": f"{title}: {part.part}", "number": f"{n}.{counter[part.problem]}",
                "score": round(part.score, 6), "max_score": part.points, "visibility": visibility}
        if part.mark is not None:
            test["output"] = "\n".join(student_lines(part.mark, _rubric(key, s.id, part)))
            if part.recheck:
                test["name"] += " (pending)"
        elif result is None:
            test["output"] = {MISSING: "No submission.", NOT_ACCEPTED: "Not graded: not accepted."}.get(
                s.status, "Not graded yet (pending).")
            if s.status in (MISSING, NOT_ACCEPTED):
                test["status"] = "failed"
        elif result.status == _MANUAL:
            test["name"] += " (pending)"
            test["output"] = ("Pending: graded by hand; these points are added after the instructor "
                              "reads your answer.")
        else:
            test["output"] = result.message
            test["status"] = "passed" if result.status == "passed" else "failed"
        tests.append(test)
    if s.penalty:                           # the late penalty: a row of its own
        tests.append({"name": "Late penalty", "number": str(len(titles) + 1), "score": -round(s.penalty, 6),
                      "max_score": 0.0, "output": late_line(s), "visibility": visibility})
    summary = f"{assignment_title(key, assignment_id(key))}: {number(s.total)} of {number(s.max_score)} points"
    if status == MISSING:
        summary += ". No submission was received."
    elif status == INCOMPLETE:
        summary += f" so far; {number(pending)} points are pending (graded by hand)."
    elif status == ERROR:
        summary += ". Part of your notebook could not be graded yet."
    elif status == NOT_ACCEPTED:
        summary += ". " + late_line(s)
    else:
        summary += "."
    if s.penalty and status != NOT_ACCEPTED:
        summary += " " + late_line(s)
    # the notes the student may read (grader.store.look): their own notebook's, never another's
    return {"score": round(s.total, 6), "output": "\n".join([summary, *s.shown_notes]), "visibility": visibility,
            "stdout_visibility": "hidden", "extra_data": {"status": status, "pending_points": pending},
            "tests": tests}


def _rubric(key: dict, student: str, part):
    """The part's rubric as this student's key entry holds it (their item texts)."""
    return rubric_of(problem_record(entry_for(key, student), part.problem, {}), part.part, part.points)


def write_gradescope(grades: list[StudentGrades], key: dict, out_dir: str | Path,
                     visibility: str = "visible") -> list[Path]:
    """``out_dir/<student>/results.json`` for every student in ``grades``."""
    written = []
    for s in grades:
        path = Path(out_dir) / s.id / "results.json"
        data = json.dumps(gradescope_results(s, key, visibility), indent=2, sort_keys=True,
                          ensure_ascii=False, allow_nan=False)
        write_atomic(path, (printable(data) + "\n").encode("utf-8"))
        written.append(path)
        garbage.student_done()                  # (json's indented encoder makes a cycle a call)
    return written


# ------------------------------------------------------------------------------ writing


def write_export(export: Export, path: str | Path) -> Path:
    """``export`` to ``path``, atomically (a half-written import file is never left behind)."""
    path = Path(path)
    write_atomic(path, export.data())
    return path


def write_grades_csv(grades, key, path, roster=None, missing_as_zero: bool = False) -> Export:
    export = grades_export(grades, key, roster, missing_as_zero)
    write_export(export, path)
    return export


def write_canvas_csv(grades, key, path, roster=None, **options) -> Export:
    export = canvas_export(grades, key, roster, **options)
    write_export(export, path)
    return export


def write_moodle_csv(grades, key, path, roster=None, **options) -> Export:
    export = moodle_export(grades, key, roster, **options)
    write_export(export, path)
    return export


