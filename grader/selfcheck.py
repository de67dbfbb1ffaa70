"""``attnkit check NOTEBOOK``: a student's self-check before handing in.

It runs the notebook the way grading will — in the same sandbox, top to bottom, the kit's
own setup first — but with the student's own givens and the notebook's own visible checks,
and reports per part: answered or not, whether the answer cell raised, whether the visible
check holds. The visible checks test the form of an answer (shape, rows that sum to 1,
masked entries 0, one of the letters) and never its value, and this runs on the student's
machine without the answer key: there is no expected value here to print.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from formats.cells import (CHECK, HEATMAP, MARKDOWN_PLACEHOLDER, PROMPT, SETUP_CELL, SOLUTION, grade_id,
                           parse_grade_id)
from formats.textfile import terminal_safe

from .intake import NOT_READ, Found, read_submission
from .program import GRADING_SETUP, strip_magics
from .sandbox.protocol import exec_step, send_step

OK, NOT_ANSWERED, FAILS, ERROR, BY_HAND, AT_GRADING = (
    "looks right", "not answered", "check fails", "error", "graded by hand", "hidden tests at grading")

# Locked cells the student only reads: never run (the kit's setup runs first instead).
_SKIPPED = (PROMPT, HEATMAP, SOLUTION)


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


@dataclass
class CheckReport:
    notebook: str
    student: str
    parts: list[PartCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ready(self) -> bool:
        return all(p.status in (OK, BY_HAND, AT_GRADING) for p in self.parts)

    def as_json(self) -> dict:
        return {"notebook": self.notebook, "student": self.student, "ready": self.ready,
                "parts": [vars(p) for p in self.parts], "notes": self.notes,
                "seconds": round(self.seconds, 3),
                "hidden_checks": "the values are checked by hidden tests at grading"}

    def table(self) -> str:
        """The report as aligned text for a terminal. Part names and details come from the
        notebook (its metadata, the student's error messages): each is shown terminal-safe,
        and the columns are measured on what is shown."""
        names = [_shown(f"{p.problem}.{p.part}") for p in self.parts]
        width = max([len(name) for name in names] + [4])
        lines = [_shown(self.notebook) + (f" ({_shown(self.student)})" if self.student else ""), ""]
        lines += [f"  {'part':<{width}}  {'status':<23}  detail", f"  {'─' * width}  {'─' * 23}  {'─' * 30}"]
        for name, p in zip(names, self.parts):
            lines.append(f"  {name:<{width}}  {_shown(p.status):<23}  {_shown(p.detail)}".rstrip())
        lines.append("")
        lines += [f"note: {_shown(n)}" for n in self.notes]
        done = sum(p.status in (OK, BY_HAND, AT_GRADING) for p in self.parts)
        lines.append(f"{done} of {len(self.parts)} parts answered with the right form. These checks "
                     "test the form of your answers only (shape, rows that sum to 1, …); their "
                     "values are checked by hidden tests when your notebook is graded.")
        return "\n".join(lines)


def _steps(submission, problems: list[dict]) -> tuple[list[dict], dict]:
    """The sandbox steps and, for each check cell, the part it checks."""
    steps = [exec_step("setup", GRADING_SETUP)]
    checks = {}
    functions = {(p["id"], p["function"]) for p in problems if p.get("kind") == "implement"}
    # Names from the notebook's metadata go into code below: only plain identifiers.
    for cell in submission.cells:
        if cell.cell_type != "code" or cell.grade_id == SETUP_CELL:
            continue
        gid = parse_grade_id(cell.grade_id) if cell.grade_id else None
        if gid is not None and gid.role in _SKIPPED:
            continue
        source, _ = strip_magics(cell.source)
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
    return steps, checks


def _identifier(name) -> bool:
    return isinstance(name, str) and name.isidentifier()


def _implemented_flag(problem: str) -> str:
    return f"_attnkit_{problem}_implemented"


def self_check(path: Path, timeout: float = 10.0, sandbox=None) -> CheckReport:
    """Check the notebook at ``path`` (``sandbox``: a running grader.sandbox.client.Sandbox to reuse)."""
    from .sandbox.client import Limits, Sandbox

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
    steps, checks = _steps(submission, problems)
    if sandbox is None:
        with Sandbox(1, Limits(wall_seconds=timeout)) as own:
            result = own.run(steps)
    else:
        result = sandbox.run(steps)
    report = CheckReport(str(path), str(record.get("student", "")), seconds=result.seconds)
    report.notes += [i.message for i in submission.issues if i.code not in ("no-record",)]
    report.notes += [f"{c.label}: stopped the run ({c.reason}) and was skipped" for c in result.crashes]
    if result.stopped:          # (e.g. a second timeout: the cells after it never ran)
        report.notes.append(f"the run stopped: {result.stopped}; cells not run: "
                            f"{', '.join(result.not_run[:8])}{' …' if len(result.not_run) > 8 else ''}")
    errors = {}
    for e in result.errors:
        errors.setdefault(e.label, e)
    failed_checks = {checks[label]: e for label, e in errors.items() if label in checks}
    position = {c.grade_id: c.index for c in submission.cells if c.grade_id}   # notebook order
    markdown = {c.grade_id: c.source for c in submission.cells if c.grade_id and c.cell_type == "markdown"}
    for p in problems:
        pid, kind = p["id"], p.get("kind")
        if kind == "implement":
            report.parts += _implement_rows(p, result, errors, failed_checks, checks)
            continue
        if kind == "free_response":
            for gid, text in markdown.items():
                cell = parse_grade_id(gid)
                if cell is not None and cell.problem == pid and cell.is_answer:
                    answered = text.strip() and text.strip() != MARKDOWN_PLACEHOLDER
                    report.parts.append(PartCheck(pid, cell.part, BY_HAND if answered else NOT_ANSWERED))
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
            else:
                report.parts.append(PartCheck(pid, part, OK))
    return report


def _check_message(error) -> str:
    text = error.message.strip() or error.type
    return text if error.type == "AssertionError" else f"{error.type}: {text}"


def _implement_rows(p, result, errors, failed_checks, checks) -> list[PartCheck]:
    pid, function = p["id"], p["function"]
    defined = (pid in result.values and function not in set(result.missing.get(pid, ()))
               and result.values[pid].get(_implemented_flag(pid)) is not False)
    answer_error = errors.get(grade_id(pid, function))
    if answer_error is not None and answer_error.type == "NotImplementedError":
        answer_error = None
    families = [part for (problem, part) in checks.values() if problem == pid]
    rows = []
    for i, family in enumerate(families):
        error = failed_checks.get((pid, family))
        if not defined:
            detail = (f"your cell raised {answer_error.type}: {answer_error.message}" if answer_error
                      else f"`{function}` is not defined yet")
            rows.append(PartCheck(pid, family, ERROR if answer_error else NOT_ANSWERED, detail))
        elif error:
            rows.append(PartCheck(pid, family, FAILS, _check_message(error)))
        elif i == 0:
            rows.append(PartCheck(pid, family, OK, "the visible example has the right form"))
        else:
            rows.append(PartCheck(pid, family, AT_GRADING))
    return rows
