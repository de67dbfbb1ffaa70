"""Notebooks: one student's variants as a Jupyter notebook (nbformat 4.5, nbgrader schema v3).

One builder, three versions of the same cells:

- ``student``: the givens and prompts, answer cells holding nbgrader's standard placeholder,
  visible check cells that test properties (shape, rows sum to 1, masked weights 0) and
  never an expected value;
- ``instructor``: the same with the answers filled in between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` and the worked solution of every problem;
- ``source``: an nbgrader course's source notebook: the instructor's cells without the worked
  solutions, and with the value checks between ``### BEGIN HIDDEN TESTS`` /
  ``### END HIDDEN TESTS`` so that nbgrader's own autograde can score it.

Every kit cell carries nbgrader metadata with a unique grade id; the notebook's metadata
carries the variant record (assignment, student, templates, digests, kit version), which is
how the grader matches a submission to its answer-key entry. The seed is never written here:
with it and the open-source kit a student could recompute the answers.
"""

from __future__ import annotations

import builtins
import keyword
from dataclasses import dataclass

import numpy as np

from formats.cells import (CHECK, CODE_PLACEHOLDER, EXAMPLE, GIVENS, HEADER_CELL, HEATMAP, LETTERS,
                           MARKDOWN_PLACEHOLDER, PROMPT, SETUP, SETUP_CELL, SOLUTION, grade_id)
from formats.cells import cell_id as _cell_id
from exercises.render.answer_checks import describe, shape_checks, value_test
from exercises.template.checks import CHECKS
from exercises.template.texts import format_points
from formats import indented_json
from formats.key_shape import issued_digest
from formats.literals import assignment, literal
from exercises.template.names import NOTEBOOK_NAMES
from exercises.variant.draw import Variant
from exercises.variant.hidden_tests import example_case

VERSIONS = ("student", "instructor", "source")
FORMAT = 1

@dataclass(frozen=True)
class ProblemVariant:
    """One problem of an assignment, as drawn for one student."""
    id: str                 # the problem's id in the assignment (unique; grade ids start with it)
    title: str
    variant: Variant


@dataclass(frozen=True)
class Header:
    """What the notebook says about where it comes from."""
    assignment_id: str
    assignment_title: str
    assignment_digest: str
    instructions: str = ""
    student_id: str = ""
    student_name: str = ""
    kit_version: str = ""
    due: str = ""           # when it is due, time zone spelled out (exercises.render.due_text); "" if never
    late_policy: str = ""   # what happens to late work, in one line


# --- cells -------------------------------------------------------------------------------
#
# Grade ids: ``<problem>-<part>`` is a part's answer cell (``<problem>-<function>`` an
# implement problem's, ``<problem>-<function>-<family>`` a test family's check); every other
# cell has a role after a double hyphen: ``<problem>--prompt``, ``<problem>-<part>--check`` …
# Problem, part, function and family ids never contain a hyphen, so no id can collide.

def _cell(cell_type: str, grade_id: str, source: str, *, grade=False, solution=False,
          locked=False, points=None) -> dict:
    nbgrader = {"schema_version": 3, "grade": grade, "solution": solution, "locked": locked,
                "grade_id": grade_id}
    if grade:
        nbgrader["points"] = points
    metadata = {"nbgrader": nbgrader, "deletable": False}
    if locked:
        metadata["editable"] = False
    cell = {"cell_type": cell_type, "id": _cell_id(grade_id), "metadata": metadata,
            "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _solution_region(code: str, indent: str = "") -> str:
    """The answer between nbgrader's markers; the student's version clears it."""
    return f"{indent}### BEGIN SOLUTION\n{code}\n{indent}### END SOLUTION"


def _hidden(lines: list[str], version: str) -> list[str]:
    if version != "source" or not lines:
        return []
    return ["### BEGIN HIDDEN TESTS", *lines, "### END HIDDEN TESTS"]


def points_text(x: float) -> str:
    """'1 point', '2.5 points', '5/3 points' (``format_points``)."""
    text = format_points(x)
    return f"{text} point" if text == "1" else f"{text} points"


# --- answer names ------------------------------------------------------------------------

def answer_names(problems: list[ProblemVariant]) -> dict[str, dict[str, str]]:
    """problem id → part id → the variable the student assigns. A part keeps its own id
    unless that name is taken elsewhere in the notebook (a given, a helper, another
    problem's part, a builtin); then it becomes ``p<n>_<part>``."""
    taken = set(NOTEBOOK_NAMES) | set(keyword.kwlist) | set(dir(builtins))
    counts: dict[str, int] = {}
    for p in problems:
        t = p.variant.template
        taken |= set(t.givens)
        if t.kind == "implement":
            taken |= {t.function.name, f"{t.function.name}_example", f"{t.function.name}_example_expected"}
        for part in t.parts:
            counts[part.id] = counts.get(part.id, 0) + 1
    names = {}
    for n, p in enumerate(problems, 1):
        t = p.variant.template
        names[p.id] = {part.id: (part.id if counts[part.id] == 1 and part.id not in taken
                                 else f"p{n}_{part.id}")
                       for part in t.parts if t.kind in ("numeric", "choice")}
    return names


def shared_givens(problems: list[ProblemVariant]) -> set[str]:
    """Names of givens that more than one problem defines (Q, K, V …)."""
    seen: dict[str, int] = {}
    for p in problems:
        for name in p.variant.givens:
            seen[name] = seen.get(name, 0) + 1
    return {name for name, n in seen.items() if n > 1}


# --- problem cells -----------------------------------------------------------------------

def _prompt_cell(n: int, problem: ProblemVariant) -> dict:
    v = problem.variant
    text = (f"## Problem {n}. {markdown_text(problem.title)} ({points_text(v.template.points)})\n\n"
            f"{v.prompt().strip()}")
    return _cell("markdown", grade_id(problem.id, role=PROMPT), text, locked=True)


def _givens_cell(n: int, problem: ProblemVariant, shared: set[str]) -> dict | None:
    givens = problem.variant.givens
    if not givens:
        return None
    lines = [f"# Your givens for problem {n}: run this cell before answering its parts."]
    again = sorted(set(givens) & shared)
    if again:
        lines.append(f"# Other problems use {', '.join(again)} too: run this cell again "
                     "whenever you come back to this problem.")
    lines += [assignment(name, value) for name, value in givens.items()]
    return _cell("code", grade_id(problem.id, role=GIVENS), "\n".join(lines), locked=True)


def _part_cells(problem: ProblemVariant, names: dict, version: str) -> list[dict]:
    v, cells = problem.variant, []
    for i, part in enumerate(v.template.parts):
        label, name = f"({LETTERS[i].lower()})", names.get(part.id)
        gid = grade_id(problem.id, part.id)
        if v.template.kind == "free_response":
            cells.append(_cell("markdown", grade_id(problem.id, part.id, role=PROMPT),
                               f"**{label}** {v.part_prompt(part).strip()} ({points_text(part.points)}; "
                               "graded by hand: write your answer in the cell below)", locked=True))
            rubric = f"**Rubric.**\n\n{v.rubric_text(part).strip()}"
            source = f"### BEGIN SOLUTION\n{rubric}\n### END SOLUTION"
            cells.append(_cell("markdown", gid, source, grade=True, solution=True, points=part.points))
            continue
        expected = v.answers[part.id]
        if v.template.kind == "choice":
            cells += _choice_cells(problem, part, label, name, version)
            continue
        cells.append(_cell("markdown", grade_id(problem.id, part.id, role=PROMPT),
                           f"**{label}** {v.part_prompt(part).strip()} ({points_text(part.points)})\n\n"
                           f"Store your answer in `{name}`: {describe(expected)}.", locked=True))
        cells.append(_cell("code", gid, _solution_region(assignment(name, expected)),
                           solution=True))
        cells.append(_cell("code", grade_id(problem.id, part.id, role=CHECK), _numeric_check(part, name, expected, v, version),
                           grade=True, locked=True, points=part.points))
        if isinstance(expected, np.ndarray) and expected.ndim == 2 and min(expected.shape) > 1 \
                and expected.dtype.kind == "f":
            cells.append(_cell("code", grade_id(problem.id, part.id, role=HEATMAP), _heatmap(part, name), locked=True))
    return cells


def _heatmap(part, name: str) -> str:
    axes = ('"query i", "key j"' if any(c == "rows_sum_to_one" for c, _ in part.checks)
            else '"row", "column"')
    return (f"# Look at your answer: a heatmap of {name}.\n"
            f"if answered({name!r}):\n    show_heatmap({name}, {name!r}, {axes})")


def _check_argument(argument, variant: Variant) -> str | None:
    """A check's argument (the mask of ``masked_zero``) as notebook code: a given by its name,
    another value written out, None (no visible check) when that value is the answer to a
    part. Never the student's own answer either: one wrong answer would then fail the
    checks of every later part."""
    if argument.names <= set(variant.template.givens):
        return argument.source.strip()
    value = variant.evaluate(argument)
    if any(_same(value, answer) for answer in variant.answers.values()):
        return None
    return literal(value)


def _same(a, b) -> bool:
    try:
        return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))
    except (TypeError, ValueError):
        return False


def _numeric_check(part, name: str, expected, variant: Variant, version: str) -> str:
    lines = shape_checks(name, expected)
    n_cols = np.shape(expected)[-1] if np.ndim(expected) else 1
    for check_name, argument in part.checks:
        arg = None if argument is None else _check_argument(argument, variant)
        if argument is not None and arg is None:
            continue      # it would give an answer away; the grader still checks the value
        lines.append(CHECKS[check_name].code(name, arg, part.atol, part.rtol, n_cols))
    body = "\n".join("    " + line for line in lines)
    source = (f"# Visible checks for `{name}`: properties only; the values are checked at grading.\n"
              f"if answered({name!r}):\n{body}\n"
              f'    print("{name}: visible checks passed (hidden checks run at grading)")')
    hidden = _hidden(value_test(name, expected, part.rtol, part.atol), version)
    return "\n".join([source, *hidden])


def _choice_cells(problem: ProblemVariant, part, label: str, name: str, version: str) -> list[dict]:
    v = problem.variant
    gid = grade_id(problem.id, part.id)
    options = v.options[part.id]
    letters = LETTERS[:len(options)]
    listing = "\n".join(f"- **{letter}.** {option['text']}" for letter, option in zip(letters, options))
    prompt = (f"**{label}** {v.part_prompt(part).strip()} ({points_text(part.points)})\n\n{listing}\n\n"
              f"Set `{name}` to the letter of your choice, as a string (one of "
              f"{', '.join(letters)}).")
    correct = letters[v.answers[part.id]]
    check = (f"# Visible check for `{name}`: is it one of the letters?\n"
             f"if answered({name!r}):\n"
             f"    assert str({name}).strip().upper() in {tuple(letters)!r}, "
             f'"{name} should be one of {", ".join(letters)}"\n'
             f'    print("{name}: an option was chosen (it is checked at grading)")')
    hidden = _hidden([f"assert str({name}).strip().upper() == {correct!r}, \"{name} is not right\""],
                     version)
    return [_cell("markdown", grade_id(problem.id, part.id, role=PROMPT), prompt, locked=True),
            _cell("code", gid, _solution_region(f"{name} = {correct!r}"), solution=True),
            _cell("code", grade_id(problem.id, part.id, role=CHECK), "\n".join([check, *hidden]), grade=True, locked=True,
                  points=part.points)]


# --- implement ---------------------------------------------------------------------------

def _implement_cells(problem: ProblemVariant, version: str) -> list[dict]:
    v = problem.variant
    t = v.template
    f = t.function
    gid = grade_id(problem.id, f.name)
    header, body = t.reference_code()
    docstring = f'    """Returns {f.returns}."""' if f.returns else ""
    answer = "\n".join(x for x in [header, docstring, _solution_region(body, "    ")] if x)
    example = example_case(v)
    example_name = f"{f.name}_example"
    families = "\n".join(f"- `{family.family}` ({points_text(family.points)}, {family.cases} "
                         f"case{'s' if family.cases != 1 else ''})" for family in t.tests)
    cells = [
        _cell("markdown", grade_id(problem.id, f.name, role=PROMPT),
              f"Write `{f.name}{f.signature}` in the cell below. Hidden tests, by family:\n\n"
              f"{families}", locked=True),
        _cell("code", gid, answer, solution=True),
        _cell("code", grade_id(problem.id, f.name, role=EXAMPLE),
              "# A small visible example (the hidden tests use other inputs), and what the\n"
              f"# reference gives on it: {f.name}(**{example_name}) should give {example_name}_expected.\n"
              + assignment(example_name, example.args) + "\n"
              + assignment(f"{example_name}_expected", _shown(example.expected)), locked=True),
    ]
    for i, family in enumerate(t.tests):
        lines = [f"# Hidden tests `{family.family}` ({points_text(family.points)}): they run at grading."]
        if i == 0:
            lines = [f"# Visible check on {example_name}; hidden tests `{family.family}` "
                     f"({points_text(family.points)}) run at grading.",
                     *_example_check(f.name, example_name, example.expected)]
        cases = [c for c in v.tests if c.family == family.family]
        hidden = _hidden(_implement_tests(f.name, cases, t.rtol, t.atol), version)
        cells.append(_cell("code", grade_id(problem.id, f.name, family=family.family), "\n".join([*lines, *hidden]),
                           grade=True, locked=True, points=family.points))
    return cells


def _shown(expected):
    """The example's expected output to 6 decimals: exact enough to compare with (the check
    allows 1e-5), short enough to read."""
    if isinstance(expected, (list, tuple)):
        return [_shown(e) for e in expected]
    array = np.asarray(expected)
    return np.round(array, 6) if array.dtype.kind == "f" else expected


EXAMPLE_TOLERANCE = 1e-5   # the shown expected output is rounded to 6 decimals


def _example_check(function: str, example: str, expected) -> list[str]:
    """Shape, finiteness and the values of the student's output on the visible example."""
    lines = [f"out = try_example({function}, {example})", "if out is not None:"]
    if isinstance(expected, (list, tuple)):
        lines.append(f'    assert len(out) == {len(expected)}, "{function} should return '
                     f'{len(expected)} values"')
        outputs = [(f"out[{k}]", e, f"{example}_expected[{k}]") for k, e in enumerate(expected)]
    else:
        outputs = [("out", expected, f"{example}_expected")]
    for name, value, want in outputs:
        shape = np.shape(value)
        lines.append(f'    assert np.shape({name}) == {shape!r}, '
                     f'f"{name} should have shape {shape} here, not {{np.shape({name})}}"')
        lines.append(f'    assert np.all(np.isfinite({name})), "NaN or inf in {name}"')
        lines.append(f'    assert np.allclose({name}, {want}, rtol=0, atol={EXAMPLE_TOLERANCE!r}), '
                     f'"{name} differs from {want}: compare them entry by entry"')
    lines.append(f'    print("{function}: visible checks passed on the example (shape and values)")')
    return lines


def _implement_tests(function: str, cases, rtol: float, atol: float) -> list[str]:
    lines = []
    for case in cases:
        expected = case.expected if isinstance(case.expected, (list, tuple)) else [case.expected]
        lines += [f"out = {function}(**{literal(case.args)})",
                  "outs = out if isinstance(out, (list, tuple)) else [out]",
                  f"expected = {literal(list(expected))}",
                  f"assert len(outs) == len(expected) and all(np.shape(o) == np.shape(e) and "
                  f"np.allclose(o, e, rtol={rtol!r}, atol={atol!r}) for o, e in zip(outs, expected)), "
                  f'"{function} gives a wrong result on a hidden {case.family} case"']
    return lines


# --- the notebook ------------------------------------------------------------------------

def markdown_text(text: str) -> str:
    """Plain text (a name, a title) that Markdown shows as written: no emphasis, math, HTML
    or table cells made of it."""
    return "".join("\\" + ch if ch in "\\`*_[]<>#|$~&" else ch for ch in " ".join(text.split()))


def _header_cell(header: Header, problems: list[ProblemVariant]) -> dict:
    total = sum(p.variant.template.points for p in problems)
    lines = [f"# {markdown_text(header.assignment_title)}", ""]
    if header.student_name or header.student_id:
        who = (f"{header.student_name} ({header.student_id})" if header.student_name
               else header.student_id)
        lines += [f"Prepared for **{markdown_text(who)}**: the numbers in this notebook are "
                  "yours alone.", ""]
    if header.due:
        lines += [f"**{markdown_text(header.due)}.** {markdown_text(header.late_policy)}".rstrip(), ""]
    if header.instructions.strip():
        lines += [header.instructions.strip(), ""]
    lines += ["Answer in the cells marked `YOUR CODE HERE` (or `YOUR ANSWER HERE`) and run the check "
              "cell under each answer: it tests the form of your answer (shape, rows that sum to 1, "
              "…), never its value; the values are checked at grading. Do not edit the locked cells: "
              "grading always uses your givens as issued.", "",
              "| # | problem | points |", "|---|---|---|"]
    lines += [f"| {n} | {markdown_text(p.title)} | {format_points(p.variant.template.points)} |"
              for n, p in enumerate(problems, 1)]
    lines.append(f"| | **total** | **{format_points(total)}** |")
    return _cell("markdown", HEADER_CELL, "\n".join(lines), locked=True)


def _record(header: Header, problems, names, version: str) -> dict:
    return {"format": FORMAT, "kit_version": header.kit_version, "version": version,
            "assignment": {"id": header.assignment_id, "title": header.assignment_title,
                           "digest": header.assignment_digest},
            "student": header.student_id,
            "problems": [{"id": p.id, "template": p.variant.template.id, "kind": p.variant.template.kind,
                          "template_digest": p.variant.template.source_digest,
                          "variant_digest": p.variant.digest, "issued_digest": issued_digest(p.variant.record()),
                          "points": p.variant.template.points,
                          **({"function": p.variant.template.function.name}
                             if p.variant.template.kind == "implement" else {"answers": names[p.id]})}
                         for p in problems]}


def build_notebook(header: Header, problems: list[ProblemVariant], version: str) -> dict:
    """The notebook (a plain JSON-ready dict) for one student's variants."""
    if version not in VERSIONS:
        raise ValueError(f"version must be one of {VERSIONS}, not {version!r}")
    if version == "student":
        return student_and_instructor(header, problems)[0]
    return _notebook(header, problems, version)[0]


def student_and_instructor(header: Header, problems: list[ProblemVariant]) -> tuple[dict, dict]:
    """Both versions at once: the student's is the instructor's with the solutions cleared
    (as nbgrader's generate_assignment clears them) and without the worked solutions."""
    instructor, worked = _notebook(header, problems, "instructor")
    worked_ids = {id(c) for c in worked}
    cells = [{**c, "source": clear_solutions(c["source"], c["cell_type"])}
             if c["metadata"]["nbgrader"]["solution"] else c
             for c in instructor["cells"] if id(c) not in worked_ids]
    metadata = {**instructor["metadata"],
                "attnkit": {**instructor["metadata"]["attnkit"], "version": "student"}}
    return {**instructor, "cells": cells, "metadata": metadata}, instructor


def clear_solutions(source: str, cell_type: str) -> str:
    """Each ``### BEGIN SOLUTION`` … ``### END SOLUTION`` region becomes nbgrader's standard
    placeholder, indented like the BEGIN line."""
    out, inside = [], False
    for line in source.split("\n"):
        if "### BEGIN SOLUTION" in line:
            inside = True
            if cell_type == "code":
                indent = line[:len(line) - len(line.lstrip())]
                out += [indent + x for x in CODE_PLACEHOLDER.split("\n")]
            else:
                out.append(MARKDOWN_PLACEHOLDER)
        elif "### END SOLUTION" in line:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _notebook(header: Header, problems: list[ProblemVariant], version: str) -> tuple[dict, list]:
    """(notebook, its worked-solution cells)."""
    names, shared = answer_names(problems), shared_givens(problems)
    cells = [_header_cell(header, problems), _cell("code", SETUP_CELL, SETUP.rstrip("\n"), locked=True)]
    worked = []
    for n, problem in enumerate(problems, 1):
        cells.append(_prompt_cell(n, problem))
        givens = _givens_cell(n, problem, shared)
        if givens:
            cells.append(givens)
        if problem.variant.template.kind == "implement":
            cells += _implement_cells(problem, version)
        else:
            cells += _part_cells(problem, names[problem.id], version)
        if version == "instructor" and problem.variant.template.solution.strip():
            worked.append(_cell("markdown", grade_id(problem.id, role=SOLUTION),
                                f"### Worked solution to problem {n}\n\n"
                                f"{problem.variant.solution().strip()}", locked=True))
            cells.append(worked[-1])
    grade_ids = [c["metadata"]["nbgrader"]["grade_id"] for c in cells]
    if len(set(grade_ids)) != len(grade_ids):    # cannot happen by construction: say so loudly
        raise ValueError(f"duplicate grade ids: {sorted({g for g in grade_ids if grade_ids.count(g) > 1})}")
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)",
                                            "language": "python", "name": "python3"},
                             "language_info": {"name": "python"},
                             "attnkit": _record(header, problems, names, version)}}
    return notebook, worked


def notebook_bytes(notebook: dict) -> bytes:
    """The file, byte for byte as ``nbformat.writes`` would write it (sources as line lists,
    sorted keys, one-space indent), without its schema validation on every write: the
    tests validate what this module builds."""
    cells = [{**c, "source": c["source"].splitlines(True)} for c in notebook["cells"]]
    return indented_json.dumps({**notebook, "cells": cells}) + b"\n"
