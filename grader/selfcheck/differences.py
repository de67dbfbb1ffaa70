"""Where this self-check and grading part ways, as notes for the student: a kit cell
deleted, a givens cell missing or changed, a locked cell unlocked, a copied cell, IPython
magics left out, an answer cell that is no longer code."""

from __future__ import annotations

import re

from formats.cells import CHECK, EXAMPLE, GIVENS, PROMPT, SETUP_CELL, grade_id, parse_grade_id

from grader.intake.issues import listed

from .givens import givens_change
from .kit_cells import KitCells
from .report import Note

_RESTORE = "copy it back from the notebook as it was issued to you"
_RESTORE_ALL = "copy them back from the notebook as it was issued to you"
_NAME_ERROR = re.compile(r"name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


def difference_notes(submission, problems, cells: KitCells, errors, magics, missing_checks) -> list[Note]:
    """Every note on where this check and grading differ, in the report's order."""
    kit = [c for c in submission.cells if c.grade_id and parse_grade_id(c.grade_id) is not None]
    if not kit:
        return [Note("no-kit-cells", (
            "none of this notebook's cells carries the kit's metadata (removed by a tool, or the "
            "cells were copied into a new notebook): this check cannot tell which cell is which, so "
            "no form check is matched to its part (\"not checked\"). Grading matches cells by their "
            "cell ids or reads your answers by variable name; to check the form, work in the "
            "notebook as it was issued to you."))] + _magic_notes(magics)
    notes: list[Note] = []
    if SETUP_CELL not in cells.present:
        notes.append(Note("kit-cell-missing", (
            f"the setup cell is missing: this check and grading run the kit's own setup first, so "
            f"nothing changes here, but in Jupyter your notebook needs it ({_RESTORE})."), SETUP_CELL))
    answer_names = {name for p in problems for name in (p.get("answers") or {}).values()}
    for p in problems:
        notes += _problem_notes(p, cells, errors, answer_names)
    if missing_checks:
        notes.append(_missing_checks_note(missing_checks))
    notes += _locked_cell_notes(submission, problems)
    notes += _duplicate_notes(submission)
    notes += _magic_notes(magics)
    notes += _answer_not_code_notes(submission, problems)
    return notes


def _problem_notes(p, cells: KitCells, errors, answer_names) -> list[Note]:
    """The kit cells of one problem that are missing (and its givens, when its cells raised
    NameError)."""
    pid = p["id"]
    if p.get("kind") == "implement":
        return _implement_notes(pid, p["function"], cells.present)
    notes = []
    for part, variable in (p.get("answers") or {}).items():
        gid = grade_id(pid, part)
        if gid not in cells.present:
            notes.append(Note("kit-cell-missing", (
                f"the answer cell {gid} is missing (deleted, or its kit metadata was lost): grading "
                f"reads `{variable}` wherever your notebook defines it, as this check does."), gid))
    if p.get("kind") == "free_response":
        return notes + _free_response_notes(pid, cells)
    if grade_id(pid, role=GIVENS) not in cells.present:
        unknown = _missing_names(pid, cells, errors, answer_names)
        if unknown:
            notes.append(Note("givens-missing", (
                f"problem {pid} has no givens cell, and its cells raised NameError (name "
                f"{listed([repr(n) for n in unknown])} not defined): if its givens cell was deleted, "
                f"{_RESTORE}. Grading sets the givens issued to you before the problem's first cell, "
                "so a missing given does not fail there: this check cannot run the problem the same "
                "way."), grade_id(pid, role=GIVENS)))
    return notes


def _implement_notes(pid: str, f: str, present: set) -> list[Note]:
    """An implement problem's missing cells: where the function is written, its example, its tests."""
    notes = []
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
    return notes


def _free_response_notes(pid: str, cells: KitCells) -> list[Note]:
    """A free-response part whose prompt is there but whose answer cell is gone."""
    notes = []
    for gid in cells.order:
        cell = parse_grade_id(gid)
        if (cell is not None and cell.problem == pid and cell.role == PROMPT and cell.part
                and grade_id(pid, cell.part) not in cells.present):
            notes.append(Note("kit-cell-missing", (
                f"the answer cell {grade_id(pid, cell.part)} is missing: this part is graded "
                f"by hand from that cell, so it has no answer ({_RESTORE} and write your "
                "answer in it)."), grade_id(pid, cell.part)))
    return notes


def _missing_checks_note(missing_checks: list[str]) -> Note:
    many = len(missing_checks) > 1
    return Note("kit-cell-missing", (
        f"the check cell{'s' if many else ''} {listed(missing_checks)} {'are' if many else 'is'} "
        f"missing, so {'those parts are' if many else 'that part is'} \"not checked\" here: to "
        f"check the form, {_RESTORE_ALL if many else _RESTORE}. Grading does "
        "not run check cells (hidden tests grade your values)."))


def _answer_not_code_notes(submission, problems) -> list[Note]:
    """Answer cells (not free-response ones) turned into Markdown or raw: they do not run."""
    free = {p["id"] for p in problems if p.get("kind") == "free_response"}
    ids = {p["id"] for p in problems}
    notes = []
    for c in submission.cells:
        gid = parse_grade_id(c.grade_id) if c.grade_id else None
        if gid is not None and gid.is_answer and gid.problem not in free and c.cell_type != "code" \
                and gid.problem in ids:
            notes.append(Note("answer-not-code", (
                f"the answer cell {c.grade_id} is a {c.cell_type} cell, not code: it does not run, "
                "here or at grading (turn it back into a code cell)."), c.grade_id))
    return notes


def _missing_names(pid: str, cells: KitCells, errors, answer_names) -> list[str]:
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
