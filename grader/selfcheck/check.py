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
else), the report says so in a note (``grader.selfcheck.report.NOTE_CODES``), in words for
the student.

``CheckReport.exit_code`` is what ``attnkit check`` exits with: ``READY`` (0) when every part
is answered and passes its form checks (a part graded by hand counts once it is written),
``NOT_READY`` (1) otherwise; ``CANNOT_CHECK`` (2) is the command's code for a notebook that
cannot be checked at all (``CheckError``) and for usage errors.

This module holds the run itself; the steps it sends the sandbox are ``steps``'s, the rows
``rows``'s, the notes on differences ``differences``'s, the report ``report``'s.
"""

from __future__ import annotations

from pathlib import Path

from grader.intake.issues import NOT_READ
from grader.intake.reading import read_submission
from grader.intake.records import Found

from .differences import difference_notes
from .kit_cells import KitCells
from .report import CheckReport, Note
from .rows import part_rows
from .steps import sandbox_steps


class CheckError(ValueError):
    """A notebook that cannot be checked at all (it is not a readable kit notebook)."""


def _identifier(name) -> bool:
    return isinstance(name, str) and name.isidentifier()


def self_check(path: Path, timeout: float = 10.0, sandbox=None, student: str | None = None) -> CheckReport:
    """Check the notebook at ``path`` (``sandbox``: a running grader.sandbox.client.Sandbox to
    reuse; ``student``: the student's own id, when known, to tell a notebook issued to
    someone else)."""
    path = Path(path)
    submission, record, problems = _read(path)
    steps, checks, magics = sandbox_steps(submission, problems)
    result = _run(steps, timeout, sandbox)
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
    cells = KitCells(submission, problems)
    parts, missing_checks = part_rows(submission, problems, result, errors, checks, cells)
    report.parts += parts
    report.notes += difference_notes(submission, problems, cells, errors, magics, missing_checks)
    report.notes += _run_notes(result)
    return report


def _read(path: Path) -> tuple:
    """(submission, its attnkit record, its problems that can be checked) of the notebook at
    ``path``; CheckError when it is not a readable kit notebook."""
    if not path.is_file():
        raise CheckError(f"{path}: no such file")
    submission = read_submission(Found("", path, str(path), "flat"))
    fatal = [i for i in submission.issues if i.code in NOT_READ]
    if fatal:
        raise CheckError(fatal[0].message)
    record = submission.record or {}
    # Names from the notebook's metadata go into the sandbox's code: only plain identifiers.
    problems = [p for p in record.get("problems", []) if isinstance(p, dict) and _identifier(p.get("id"))
                and (p.get("kind") != "implement" or _identifier(p.get("function")))]
    if not problems:
        raise CheckError(f"{path}: not an Attention Kit notebook (no attnkit record in its metadata)")
    return submission, record, problems


def _run(steps: list[dict], timeout: float, sandbox):
    """The sandbox's result of ``steps``: in ``sandbox`` when given, else in one started here."""
    from grader.sandbox.client import Limits, Sandbox

    if sandbox is not None:
        return sandbox.run(steps)
    with Sandbox(1, Limits(wall_seconds=timeout)) as own:
        return own.run(steps)


def _run_notes(result) -> list[Note]:
    """Cells that stopped the sandbox's run, and a run that stopped before the end."""
    notes = [Note("cell-crashed", f"{c.label}: stopped the run ({c.reason}) and was skipped", c.label)
             for c in result.crashes]
    if result.stopped:          # (e.g. a second timeout: the cells after it never ran)
        notes.append(Note("run-stopped", f"the run stopped: {result.stopped}; cells not run: "
                          f"{', '.join(result.not_run[:8])}{' …' if len(result.not_run) > 8 else ''}"))
    return notes
