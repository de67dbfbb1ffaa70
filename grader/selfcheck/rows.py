"""The self-check's row for each part: answered or not, whether its answer cell raised,
whether its visible check holds — read from the sandbox's run, never from an answer key."""

from __future__ import annotations

from formats.cells import CHECK, PROMPT, grade_id, parse_grade_id

from grader.run.program import free_answer

from .kit_cells import KitCells
from .report import AT_GRADING, BY_HAND, ERROR, FAILS, FORM_OK, NOT_ANSWERED, NOT_CHECKED, PartCheck
from .steps import implemented_flag


def part_rows(submission, problems, result, errors, checks, cells: KitCells) -> tuple[list[PartCheck], list[str]]:
    """A row per part of every problem, and the check cells found missing on the way.
    ``errors``: the first error of each cell label; ``checks``: check cell label → its part."""
    failed_checks = {checks[label]: e for label, e in errors.items() if label in checks}
    position = {c.grade_id: c.index for c in submission.cells if c.grade_id}   # notebook order
    texts: dict[str, list[str]] = {}
    for c in submission.cells:
        if c.grade_id:
            texts.setdefault(c.grade_id, []).append(c.source)
    rows, missing_checks = [], []
    for p in problems:
        kind = p.get("kind")
        if kind == "implement":
            rows += _implement_rows(p, result, errors, failed_checks, checks)
        elif kind == "free_response":
            rows += _free_response_rows(p["id"], texts, cells)
        else:
            rows += _answer_rows(p, result, errors, failed_checks, cells, position, missing_checks)
    return rows, missing_checks


def _answer_rows(p, result, errors, failed_checks, cells: KitCells, position, missing_checks) -> list[PartCheck]:
    """A row per answer of a problem with answer variables, in notebook order (a check cell
    found missing is added to ``missing_checks``)."""
    pid = p["id"]
    missing = set(result.missing.get(pid, ()))
    sent = pid in result.values or pid in result.missing
    answers = p.get("answers") or {}
    rows = []
    for part in sorted(answers, key=lambda part: position.get(grade_id(pid, part), len(position))):
        variable = answers[part]
        answer_error = errors.get(grade_id(pid, part))
        check_error = failed_checks.get((pid, part))
        if answer_error is not None and answer_error.type == "NotImplementedError":
            answer_error = None          # the placeholder: simply not answered yet
        if not sent or variable in missing:
            detail = (f"your cell raised {answer_error.type}: {answer_error.message}"
                      if answer_error else f"`{variable}` is not defined yet")
            rows.append(PartCheck(pid, part, ERROR if answer_error else NOT_ANSWERED, detail))
        elif check_error:
            rows.append(PartCheck(pid, part, FAILS, _check_message(check_error)))
        elif answer_error:
            rows.append(PartCheck(pid, part, ERROR, f"your cell raised {answer_error.type}: {answer_error.message}"))
        elif grade_id(pid, part, role=CHECK) not in cells.present:
            missing_checks.append(grade_id(pid, part, role=CHECK))
            rows.append(PartCheck(pid, part, NOT_CHECKED, "its check cell is missing"))
        else:
            rows.append(PartCheck(pid, part, FORM_OK))
    return rows


def _check_message(error) -> str:
    text = error.message.strip() or error.type
    return text if error.type == "AssertionError" else f"{error.type}: {text}"


def _free_response_rows(pid: str, texts: dict, cells: KitCells) -> list[PartCheck]:
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


def _implement_rows(p, result, errors, failed_checks, checks) -> list[PartCheck]:
    pid, function = p["id"], p["function"]
    defined = (pid in result.values and function not in set(result.missing.get(pid, ()))
               and result.values[pid].get(implemented_flag(pid)) is not False)
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
