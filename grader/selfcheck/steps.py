"""The sandbox steps of a self-check: the kit's setup, then the notebook's code cells in
order (magics left out, as at grading), a probe of each function to write, and the values to
send back; and which check cell checks which part."""

from __future__ import annotations

from formats.cells import CHECK, HEATMAP, PROMPT, SETUP_CELL, SOLUTION, parse_grade_id

from grader.run.program import GRADING_SETUP, strip_magics
from grader.sandbox.protocol import exec_step, send_step

# Locked cells the student only reads: never run (the kit's setup runs first instead).
_SKIPPED = (PROMPT, HEATMAP, SOLUTION)


def implemented_flag(problem: str) -> str:
    """The sandbox variable a probe sets: is ``problem``'s function written yet?"""
    return f"_attnkit_{problem}_implemented"


def sandbox_steps(submission, problems: list[dict]) -> tuple[list[dict], dict, list[str]]:
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
        steps += _answer_steps(p)
    return steps, checks, magics


def _answer_steps(p: dict) -> list[dict]:
    """The steps that send back problem ``p``'s answers (for an implement problem: its
    function, and whether it is written yet)."""
    steps = []
    names = list((p.get("answers") or {}).values())
    if p.get("function"):
        # The placeholder body raises NotImplementedError: try the function on the
        # notebook's own visible example to tell a written function from an unwritten one.
        f, flag = p["function"], implemented_flag(p["id"])
        steps.append(exec_step(f"{p['id']}--probe", (
            f"try:\n    {f}(**{f}_example)\n    {flag} = True\n"
            f"except NotImplementedError:\n    {flag} = False\n"
            f"except BaseException:\n    {flag} = True\n")))
        names = [f, flag]
    if names:
        steps.append(send_step(p["id"], names))
    return steps
