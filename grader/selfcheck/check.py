"""``attnkit check NOTEBOOK``: a student's self-check before handing in.

It runs the notebook the way grading will — in the same sandbox, top to bottom, the kit's
own setup first — but with the givens cells as they stand in the notebook and the
notebook's own visible checks, and reports per part: answered or not, whether the answer
cell raised, whether the visible check holds. The visible checks test the form of an answer
(shape, rows that sum to 1, masked entries 0, one of the letters) and never its value, and
this runs on the student's machine without the answer key: there is no expected value here
to print, and a part whose form is right says so — "form OK", never "right".

Where this run and grading part ways (a givens cell deleted or changed: grading sets the
givens as issued; a kit cell deleted; cells with IPython magics; a notebook issued to someone
else), the report says so in a note (``NOTE_CODES``), in words for the student.

``CheckReport.exit_code`` is what ``attnkit check`` exits with: ``READY`` (0) when every part
is answered and passes its form checks (a part graded by hand counts once it is written),
``NOT_READY`` (1) otherwise; ``CANNOT_CHECK`` (2) is the command's code for a notebook that
cannot be checked at all (``CheckError``) and for usage errors.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from formats.cells import (CHECK, EXAMPLE, GIVENS, HEATMAP, PROMPT, SETUP_CELL, SOLUTION, grade_id,
                           parse_grade_id)
from formats.textfile import terminal_safe

from grader.intake.submissions import NOT_READ, PARSING, Found, listed, read_submission
from grader.run.program import GRADING_SETUP, free_answer, strip_magics
from grader.sandbox.protocol import exec_step, send_step

# The status of a part, as the table shows it.
FORM_OK = "form OK — the value is graded later"
NOT_ANSWERED = "not answered"
FAILS = "form check fails"
ERROR = "error"
NOT_CHECKED = "not checked"            # answered, but its check cell is not in the notebook
BY_HAND = "written — graded by hand"
AT_GRADING = "written — hidden tests at grading"
OK = FORM_OK                           # (the name the tests and callers import)

# Each status's stable code, for --json and scripts (the words above may be reworded).
STATUS_CODES = {FORM_OK: "form-ok", NOT_ANSWERED: "not-answered", FAILS: "check-fails", ERROR: "error",
                NOT_CHECKED: "not-checked", BY_HAND: "by-hand", AT_GRADING: "at-grading"}
# The statuses of a part that is done, as far as a check without the key can tell.
DONE = frozenset({FORM_OK, BY_HAND, AT_GRADING})

# Exit codes of ``attnkit check``.
READY, NOT_READY, CANNOT_CHECK = 0, 1, 2

# Why this check and grading can differ, or what else a student should know (``Note.code``).
NOTE_CODES = {
    "bad-cell": "a cell that is not readable: skipped, here and at grading",
    "wrong-student": "the notebook's record names another student than --student (blocks exit 0)",
    "no-kit-cells": "no cell carries the kit's metadata: no check is matched to its part",
    "kit-cell-missing": "a kit cell (setup, answer, check, example, tests) is not in the notebook",
    "givens-missing": "no givens cell, and the problem's cells raised NameError",
    "givens-edited": "a givens cell that holds more than assignments, or does not parse",
    "cell-unlocked": "a locked givens, check or tests cell whose lock was removed",
    "duplicate-grade-id": "two cells with one kit id (a copied cell): both run, in order",
    "magics-stripped": "lines starting with % or ! left out, here and at grading",
    "answer-not-code": "an answer cell turned into Markdown or raw: not run, here or at grading",
    "cell-crashed": "a cell that stopped the sandbox's run: skipped",
    "run-stopped": "the run stopped (e.g. a second timeout): later cells did not run",
}

# What a blocking note (``Note.blocking``) makes the reason say.
_BLOCKING = {"wrong-student": "the notebook was not issued to you"}

# Locked cells the student only reads: never run (the kit's setup runs first instead).
_SKIPPED = (PROMPT, HEATMAP, SOLUTION)
_RESTORE = "copy it back from the notebook as it was issued to you"
_RESTORE_ALL = "copy them back from the notebook as it was issued to you"
_GIVENS_AT_MOST = 256 * 1024      # a givens cell longer than this is not parsed: it was replaced


def _shown(text) -> str:
    return terminal_safe(text, newlines=False)    # one line per part, whatever the message


class CheckError(ValueError):
    """A notebook that cannot be checked at all (it is not a readable kit notebook)."""


@dataclass(frozen=True)
class PartCheck:
    problem: str
    part: str
    status: str
    detail: str = ""

    def as_json(self) -> dict:
        return {"problem": self.problem, "part": self.part, "status": self.status,
                "code": STATUS_CODES.get(self.status, "other"), "detail": self.detail}


@dataclass(frozen=True)
class Note:
    """Something the student should know: ``code`` one of ``NOTE_CODES``; ``cell`` the kit
    cell (or "cell N") it is about, when there is one; ``blocking``: it keeps the notebook
    from being ready (exit code 1) whatever its parts say."""
    code: str
    message: str
    cell: str | None = None
    blocking: bool = False

    def __str__(self) -> str:
        return self.message


def _note_json(note) -> dict:
    if isinstance(note, Note):
        return {"code": note.code, "cell": note.cell, "message": note.message, "blocking": note.blocking}
    return {"code": "note", "cell": None, "message": str(note), "blocking": False}


@dataclass
class CheckReport:
    notebook: str
    student: str
    parts: list[PartCheck] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every part done (answered, and passing its form check where it has one) and no
        note that blocks: what exit code 0 says."""
        return (bool(self.parts) and all(p.status in DONE for p in self.parts)
                and not any(getattr(n, "blocking", False) for n in self.notes))

    ready = ok

    @property
    def exit_code(self) -> int:
        return READY if self.ok else NOT_READY

    def counts(self) -> dict[str, int]:
        """Parts per status code (every code, 0s included: the keys never change)."""
        counts = dict.fromkeys(STATUS_CODES.values(), 0)
        for p in self.parts:
            code = STATUS_CODES.get(p.status, "other")
            counts[code] = counts.get(code, 0) + 1
        return counts

    def reason(self) -> str:
        """Why the exit code is what it is, in one sentence."""
        done = sum(p.status in DONE for p in self.parts)
        if not self.parts:
            return "not ready: no part of the assignment was found in the notebook"
        if self.ok:
            return (f"ready: all {len(self.parts)} parts are answered and pass their form checks "
                    "(parts graded by hand are written)")
        left = [f"{status}: {n}" for status in (NOT_ANSWERED, FAILS, ERROR, NOT_CHECKED)
                if (n := sum(p.status == status for p in self.parts))]
        left += list(dict.fromkeys(_BLOCKING.get(n.code, "see the notes") for n in self.notes
                                   if getattr(n, "blocking", False)))
        return f"not ready: {done} of {len(self.parts)} parts done; {'; '.join(left)}"

    def as_json(self) -> dict:
        return {"notebook": self.notebook, "student": self.student, "ok": self.ok,
                "exit_code": self.exit_code, "reason": self.reason(), "counts": self.counts(),
                "parts": [p.as_json() for p in self.parts], "notes": [_note_json(n) for n in self.notes],
                "seconds": round(self.seconds, 3),
                "hidden_checks": "these checks test the form of each answer, never its value: the "
                                 "values are checked by hidden tests at grading"}

    def table(self) -> str:
        """The report as aligned text for a terminal. Part names and details come from the
        notebook (its metadata, the student's error messages): each is shown terminal-safe,
        and the columns are measured on what is shown."""
        names = [_shown(f"{p.problem}.{p.part}") for p in self.parts]
        statuses = [_shown(p.status) for p in self.parts]
        width = max([len(name) for name in names] + [4])
        swidth = max([len(s) for s in statuses] + [6])
        lines = [_shown(self.notebook) + (f" ({_shown(self.student)})" if self.student else ""), ""]
        lines += [f"  {'part':<{width}}  {'status':<{swidth}}  detail",
                  f"  {'─' * width}  {'─' * swidth}  {'─' * 30}"]
        for name, status, p in zip(names, statuses, self.parts):
            lines.append(f"  {name:<{width}}  {status:<{swidth}}  {_shown(p.detail)}".rstrip())
        lines.append("")
        lines += [f"note: {terminal_safe(n)}" for n in self.notes]
        if self.notes:
            lines.append("")
        lines.append(f"{'Ready' if self.ok else 'Not ready'} (exit code {self.exit_code}): "
                     f"{_shown(self.reason()).partition(': ')[2]}.")
        lines.append("These checks test the form of your answers only (shape, rows that sum to 1, "
                     "…), never their values: \"form OK\" does not mean the value is right. The values "
                     "are checked by hidden tests when your notebook is graded, with the givens issued "
                     "to you.")
        return "\n".join(lines)


# --- the run --------------------------------------------------------------------------------

def _steps(submission, problems: list[dict]) -> tuple[list[dict], dict, list[str]]:
    """The sandbox steps, for each check cell the part it checks, and the cells whose magics
    were left out."""
    steps = [exec_step("setup", GRADING_SETUP)]
    checks, magics = {}, []
    functions = {(p["id"], p["function"]) for p in problems if p.get("kind") == "implement"}
    # Names from the notebook's metadata go into code below: only plain identifiers.
    for cell in submission.cells:
        if cell.cell_type != "code" or cell.grade_id == SETUP_CELL:
            continue
        gid = parse_grade_id(cell.grade_id) if cell.grade_id else None
        if gid is not None and gid.role in _SKIPPED:
            continue
        source, stripped = strip_magics(cell.source)
        if stripped:
            magics.append(cell.label)
        steps.append(exec_step(cell.label, source))
        if gid is None:
            continue
        if gid.role == CHECK and gid.part is not None and gid.family is None:
            checks[cell.label] = (gid.problem, gid.part)
        elif gid.family is not None and gid.role is None and (gid.problem, gid.part) in functions:
            checks[cell.label] = (gid.problem, gid.family)       # an implement problem's tests
    for p in problems:
        names = list((p.get("answers") or {}).values())
        if p.get("function"):
            # The placeholder body raises NotImplementedError: try the function on the
            # notebook's own visible example to tell a written function from an unwritten one.
            f, flag = p["function"], _implemented_flag(p["id"])
            steps.append(exec_step(f"{p['id']}--probe", (
                f"try:\n    {f}(**{f}_example)\n    {flag} = True\n"
                f"except NotImplementedError:\n    {flag} = False\n"
                f"except BaseException:\n    {flag} = True\n")))
            names = [f, flag]
        if names:
            steps.append(send_step(p["id"], names))
    return steps, checks, magics


def _identifier(name) -> bool:
    return isinstance(name, str) and name.isidentifier()


def _implemented_flag(problem: str) -> str:
    return f"_attnkit_{problem}_implemented"


def self_check(path: Path, timeout: float = 10.0, sandbox=None, student: str | None = None) -> CheckReport:
    """Check the notebook at ``path`` (``sandbox``: a running grader.sandbox.client.Sandbox to
    reuse; ``student``: the student's own id, when known, to tell a notebook issued to
    someone else)."""
    from grader.sandbox.client import Limits, Sandbox

    path = Path(path)
    if not path.is_file():
        raise CheckError(f"{path}: no such file")
    submission = read_submission(Found("", path, str(path), "flat"))
    fatal = [i for i in submission.issues if i.code in NOT_READ]
    if fatal:
        raise CheckError(fatal[0].message)
    record = submission.record or {}
    problems = [p for p in record.get("problems", []) if isinstance(p, dict) and _identifier(p.get("id"))
                and (p.get("kind") != "implement" or _identifier(p.get("function")))]
    if not problems:
        raise CheckError(f"{path}: not an Attention Kit notebook (no attnkit record in its metadata)")
    steps, checks, magics = _steps(submission, problems)
    if sandbox is None:
        with Sandbox(1, Limits(wall_seconds=timeout)) as own:
            result = own.run(steps)
    else:
        result = sandbox.run(steps)
    issued_to = str(record.get("student", ""))
    # A class-wide notebook (nbgrader's source: student "") is everyone's: nothing to compare.
    foreign = bool(student) and bool(issued_to) and issued_to != student
    # Never name the student a notebook was issued to, when it is not the one checking it.
    report = CheckReport(str(path), student if foreign else issued_to, seconds=result.seconds)
    report.notes += [Note(i.code, f"{i.message} (here and at grading)", i.cell)
                     for i in submission.issues if i.code == "bad-cell"]
    if foreign:
        report.notes.append(Note("wrong-student", (
            f"this notebook's numbers are not the ones issued to you ({student}): its record says "
            "it was prepared for someone else. Grading uses the givens issued to you, so answers "
            "worked out here will not match them: hand in the notebook issued to you."), blocking=True))
    errors = {}
    for e in result.errors:
        errors.setdefault(e.label, e)
    failed_checks = {checks[label]: e for label, e in errors.items() if label in checks}
    cells = _Cells(submission, problems)
    position = {c.grade_id: c.index for c in submission.cells if c.grade_id}   # notebook order
    texts: dict[str, list[str]] = {}
    for c in submission.cells:
        if c.grade_id:
            texts.setdefault(c.grade_id, []).append(c.source)
    missing_checks = []
    for p in problems:
        pid, kind = p["id"], p.get("kind")
        if kind == "implement":
            report.parts += _implement_rows(p, result, errors, failed_checks, checks, cells)
            continue
        if kind == "free_response":
            report.parts += _free_response_rows(pid, texts, cells)
            continue
        missing = set(result.missing.get(pid, ()))
        sent = pid in result.values or pid in result.missing
        answers = p.get("answers") or {}
        for part in sorted(answers, key=lambda part: position.get(grade_id(pid, part), len(position))):
            variable = answers[part]
            answer_error = errors.get(grade_id(pid, part))
            check_error = failed_checks.get((pid, part))
            if answer_error is not None and answer_error.type == "NotImplementedError":
                answer_error = None          # the placeholder: simply not answered yet
            if not sent or variable in missing:
                detail = (f"your cell raised {answer_error.type}: {answer_error.message}"
                          if answer_error else f"`{variable}` is not defined yet")
                report.parts.append(PartCheck(pid, part, ERROR if answer_error else NOT_ANSWERED, detail))
            elif check_error:
                report.parts.append(PartCheck(pid, part, FAILS, _check_message(check_error)))
            elif answer_error:
                report.parts.append(PartCheck(pid, part, ERROR,
                                              f"your cell raised {answer_error.type}: {answer_error.message}"))
            elif grade_id(pid, part, role=CHECK) not in cells.present:
                missing_checks.append(grade_id(pid, part, role=CHECK))
                report.parts.append(PartCheck(pid, part, NOT_CHECKED, "its check cell is missing"))
            else:
                report.parts.append(PartCheck(pid, part, FORM_OK))
    report.notes += _difference_notes(submission, problems, cells, errors, magics, missing_checks)
    report.notes += [Note("cell-crashed", f"{c.label}: stopped the run ({c.reason}) and was skipped", c.label)
                     for c in result.crashes]
    if result.stopped:          # (e.g. a second timeout: the cells after it never ran)
        report.notes.append(Note("run-stopped", f"the run stopped: {result.stopped}; cells not run: "
                                 f"{', '.join(result.not_run[:8])}{' …' if len(result.not_run) > 8 else ''}"))
    return report


def _check_message(error) -> str:
    text = error.message.strip() or error.type
    return text if error.type == "AssertionError" else f"{error.type}: {text}"


def _free_response_rows(pid: str, texts: dict, cells: _Cells) -> list[PartCheck]:
    """A row per part, in notebook order: its answer cell, or the part's prompt when the
    answer cell is gone. Written = text besides nbgrader's placeholder, whatever the cell's
    type (grading reads it so)."""
    rows, seen = [], set()
    for gid in cells.order:                   # answer cells, and part prompts whose answer cell is gone
        cell = parse_grade_id(gid)
        if cell is None or cell.problem != pid or cell.part is None or cell.family is not None \
                or cell.role not in (None, PROMPT) or cell.part in seen:
            continue
        answer = grade_id(pid, cell.part)
        if answer not in cells.present:
            seen.add(cell.part)
            rows.append(PartCheck(pid, cell.part, NOT_ANSWERED, "its answer cell is missing"))
        elif cell.role is None:
            seen.add(cell.part)
            answered = any(free_answer(text) for text in texts.get(answer, ()))
            rows.append(PartCheck(pid, cell.part, BY_HAND if answered else NOT_ANSWERED))
    if not rows:
        rows.append(PartCheck(pid, "(answers)", NOT_ANSWERED, "no answer cell of this problem is in the notebook"))
    return rows


def _implement_rows(p, result, errors, failed_checks, checks, cells) -> list[PartCheck]:
    pid, function = p["id"], p["function"]
    defined = (pid in result.values and function not in set(result.missing.get(pid, ()))
               and result.values[pid].get(_implemented_flag(pid)) is not False)
    answer_error = errors.get(grade_id(pid, function))
    if answer_error is not None and answer_error.type == "NotImplementedError":
        answer_error = None
    families = list(dict.fromkeys(part for (problem, part) in checks.values() if problem == pid))
    rows = []
    not_yet = (f"your cell raised {answer_error.type}: {answer_error.message}" if answer_error
               else f"`{function}` is not defined yet")
    for i, family in enumerate(families):
        error = failed_checks.get((pid, family))
        if not defined:
            rows.append(PartCheck(pid, family, ERROR if answer_error else NOT_ANSWERED, not_yet))
        elif error:
            rows.append(PartCheck(pid, family, FAILS, _check_message(error)))
        elif i == 0:
            rows.append(PartCheck(pid, family, FORM_OK, "the visible example has the right form"))
        else:
            rows.append(PartCheck(pid, family, AT_GRADING))
    if not families:          # its tests cells are gone: nothing is checked, the function is graded all the same
        rows.append(PartCheck(pid, function, AT_GRADING if defined else
                              (ERROR if answer_error else NOT_ANSWERED),
                              "its test cells are missing: nothing is checked here" if defined else not_yet))
    return rows


# --- where this check and grading differ ------------------------------------------------------

class _Cells:
    """The notebook's kit cells as this check sees them: which grade ids are present, in what
    order, and the problem each cell belongs to (that of the last kit cell at or before it,
    as grading reads it)."""

    def __init__(self, submission, problems):
        ids = {p["id"] for p in problems}
        self.order = [c.grade_id for c in submission.cells if c.grade_id]
        self.present = set(self.order)
        self.problem_of: dict[str, str] = {}
        current = None
        for c in submission.cells:
            gid = parse_grade_id(c.grade_id) if c.grade_id else None
            if gid is not None and gid.problem in ids:
                current = gid.problem
            if current is not None:
                self.problem_of.setdefault(c.label, current)


_NAME_ERROR = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")
_GIVENS_CALLS = frozenset({"array", "zeros"})      # what formats.literals writes for arrays
_LITERAL_NODES = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd,
                  ast.Load, ast.Call, ast.keyword, ast.Attribute, ast.Name)


def givens_change(source: str) -> str:
    """'' when a givens cell still holds only what the kit writes there (comments, and one
    ``name = <literal>`` per given); else what changed, in words. Without the answer key this
    cannot see a number changed in place: only what the cell holds besides its givens."""
    if len(source) > _GIVENS_AT_MOST:
        return "it was replaced by something much longer"
    try:        # (parsing never runs anything; a deeply nested expression can overflow it)
        with PARSING:
            module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "it no longer parses as Python"
    names = set()
    for statement in module.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id not in names
                and _is_literal(statement.value)):
            return "other code added"
        names.add(statement.targets[0].id)
    return "" if names else "its assignments were removed"


def _is_literal(node) -> bool:
    """A value as ``formats.literals`` writes it: numbers, strings, lists, tuples, dicts,
    ``np.array(…)``, ``np.zeros(…, dtype=np.…)``, ``np.nan``, ``np.inf``."""
    for n in ast.walk(node):
        if not isinstance(n, _LITERAL_NODES):
            return False
        if isinstance(n, ast.Name) and n.id != "np":
            return False
        if isinstance(n, ast.Attribute) and not (isinstance(n.value, ast.Name) and n.value.id == "np"):
            return False
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Attribute) and n.func.attr in _GIVENS_CALLS):
            return False
    return True


def _difference_notes(submission, problems, cells: _Cells, errors, magics, missing_checks) -> list[Note]:
    notes: list[Note] = []
    kit = [c for c in submission.cells if c.grade_id and parse_grade_id(c.grade_id) is not None]
    if not kit:
        notes.append(Note("no-kit-cells", (
            "none of this notebook's cells carries the kit's metadata (removed by a tool, or the "
            "cells were copied into a new notebook): this check cannot tell which cell is which, so "
            "no form check is matched to its part (\"not checked\"). Grading matches cells by their "
            "cell ids or reads your answers by variable name; to check the form, work in the "
            "notebook as it was issued to you.")))
        return notes + _magic_notes(magics)
    present = cells.present
    if SETUP_CELL not in present:
        notes.append(Note("kit-cell-missing", (
            f"the setup cell is missing: this check and grading run the kit's own setup first, so "
            f"nothing changes here, but in Jupyter your notebook needs it ({_RESTORE})."), SETUP_CELL))
    answer_names = {name for p in problems for name in (p.get("answers") or {}).values()}
    for p in problems:
        pid = p["id"]
        if p.get("kind") == "implement":
            f = p["function"]
            if grade_id(pid, f) not in present:
                notes.append(Note("kit-cell-missing", (
                    f"the cell {grade_id(pid, f)} where you write `{f}` is missing (deleted, or its "
                    f"kit metadata was lost): grading uses `{f}` wherever your notebook defines it, "
                    "as this check does."), grade_id(pid, f)))
            if grade_id(pid, f, role=EXAMPLE) not in present:
                notes.append(Note("kit-cell-missing", (
                    f"the example cell {grade_id(pid, f, role=EXAMPLE)} is missing: `{f}_example` is "
                    f"not defined unless another cell defines it, so the visible check of `{f}` cannot "
                    f"run here ({_RESTORE}); the hidden tests at grading do not use it."),
                    grade_id(pid, f, role=EXAMPLE)))
            if not any(parse_grade_id(g).problem == pid and parse_grade_id(g).family is not None
                       for g in present if parse_grade_id(g) is not None):
                notes.append(Note("kit-cell-missing", (
                    f"the test cells of problem {pid} are missing: nothing of `{f}` is checked here "
                    f"({_RESTORE}); its hidden tests run at grading all the same.")))
            continue
        for part, variable in (p.get("answers") or {}).items():
            gid = grade_id(pid, part)
            if gid not in present:
                notes.append(Note("kit-cell-missing", (
                    f"the answer cell {gid} is missing (deleted, or its kit metadata was lost): grading "
                    f"reads `{variable}` wherever your notebook defines it, as this check does."), gid))
        if p.get("kind") == "free_response":
            for gid in cells.order:
                cell = parse_grade_id(gid)
                if (cell is not None and cell.problem == pid and cell.role == PROMPT and cell.part
                        and grade_id(pid, cell.part) not in present):
                    notes.append(Note("kit-cell-missing", (
                        f"the answer cell {grade_id(pid, cell.part)} is missing: this part is graded "
                        f"by hand from that cell, so it has no answer ({_RESTORE} and write your "
                        "answer in it)."), grade_id(pid, cell.part)))
            continue
        if grade_id(pid, role=GIVENS) not in present:
            unknown = _missing_names(pid, cells, errors, answer_names)
            if unknown:
                notes.append(Note("givens-missing", (
                    f"problem {pid} has no givens cell, and its cells raised NameError (name "
                    f"{listed([repr(n) for n in unknown])} not defined): if its givens cell was deleted, "
                    f"{_RESTORE}. Grading sets the givens issued to you before the problem's first cell, "
                    "so a missing given does not fail there: this check cannot run the problem the same "
                    "way."), grade_id(pid, role=GIVENS)))
    if missing_checks:
        many = len(missing_checks) > 1
        notes.append(Note("kit-cell-missing", (
            f"the check cell{'s' if many else ''} {listed(missing_checks)} {'are' if many else 'is'} "
            f"missing, so {'those parts are' if many else 'that part is'} \"not checked\" here: to "
            f"check the form, {_RESTORE_ALL if many else _RESTORE}. Grading does "
            "not run check cells (hidden tests grade your values).")))
    notes += _locked_cell_notes(submission, problems)
    notes += _duplicate_notes(submission)
    notes += _magic_notes(magics)
    free = {p["id"] for p in problems if p.get("kind") == "free_response"}
    for c in submission.cells:
        gid = parse_grade_id(c.grade_id) if c.grade_id else None
        if gid is not None and gid.is_answer and gid.problem not in free and c.cell_type != "code" \
                and gid.problem in {p["id"] for p in problems}:
            notes.append(Note("answer-not-code", (
                f"the answer cell {c.grade_id} is a {c.cell_type} cell, not code: it does not run, "
                "here or at grading (turn it back into a code cell)."), c.grade_id))
    return notes


def _missing_names(pid: str, cells: _Cells, errors, answer_names) -> list[str]:
    """The names a NameError of ``pid``'s cells says are not defined, answers left out (a
    part not answered yet is the row's to say)."""
    names = []
    for label, error in errors.items():
        if cells.problem_of.get(label) != pid or error.type != "NameError":
            continue
        m = _NAME_ERROR.search(error.message)
        if m and m.group(1) not in answer_names and m.group(1) not in names:
            names.append(m.group(1))
    return names


def _locked_cell_notes(submission, problems) -> list[Note]:
    """Givens cells changed beyond what the kit writes, and the locked cells that run here
    (givens, checks, tests) whose lock was taken off."""
    ids = {p["id"] for p in problems}
    notes = []
    for c in submission.cells:
        gid = parse_grade_id(c.grade_id) if c.grade_id else None
        if gid is None or gid.problem not in ids or c.cell_type != "code":
            continue
        givens = gid.role == GIVENS and gid.part is None
        check = (gid.role == CHECK and gid.part is not None) or (gid.family is not None and gid.role is None)
        if not (givens or check):
            continue
        changed = givens_change(c.source) if givens else ""
        if changed:
            notes.append(Note("givens-edited", (
                f"the givens cell {c.grade_id} was changed ({changed}): here your cells ran with the "
                "cell as it stands; grading sets the givens issued to you in its place and runs "
                "nothing else of it, so results can differ there "
                f"({_RESTORE})."), c.grade_id))
            continue
        if c.locked is None or c.locked:      # (no metadata to say: nothing to note)
            continue
        if givens:
            notes.append(Note("cell-unlocked", (
                f"the givens cell {c.grade_id} is no longer locked (its metadata was changed), so its "
                "numbers may have been edited, which this check cannot see: here your cells ran with "
                "the cell as it stands; grading uses the givens issued to you, so anything worked out "
                f"from other numbers will not match ({_RESTORE})."), c.grade_id))
        else:
            notes.append(Note("cell-unlocked", (
                f"the check cell {c.grade_id} is no longer locked (its metadata was changed), so it "
                "may have been edited: here it ran as it stands; grading does not run it at all "
                "(hidden tests grade your values), so a check loosened here says nothing and code "
                f"added to it does not run there ({_RESTORE})."), c.grade_id))
    return notes


def _duplicate_notes(submission) -> list[Note]:
    where: dict[str, list[int]] = {}
    for c in submission.cells:
        if c.grade_id and parse_grade_id(c.grade_id) is not None:
            where.setdefault(c.grade_id, []).append(c.index + 1)
    return [Note("duplicate-grade-id", (
        f"cells {listed(at)} all carry the kit id {gid} (a copied cell): all of them run, in "
        "notebook order, here and at grading; delete the copies you do not mean."), gid)
        for gid, at in where.items() if len(at) > 1]


def _magic_notes(magics) -> list[Note]:
    if not magics:
        return []
    return [Note("magics-stripped", (
        f"{listed(magics)}: lines starting with % or ! (IPython magics, shell commands) cannot run "
        "at grading and were left out, here too."), magics[0] if len(magics) == 1 else None)]
