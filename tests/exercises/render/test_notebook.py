"""Notebooks: valid for nbformat and nbgrader, the student's version gives nothing away,
and in a real kernel the instructor's passes every visible check while the student's only
raises NotImplementedError in its answer cells.

One notebook holds every family of the bank (22 problems), so each test covers every kind
and every template."""

import re

import nbformat
import numpy as np
import pytest
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

from formats.literals import literal

from exercises.render.notebook import (VERSIONS, build_notebook, clear_solutions, markdown_text,
                                       notebook_bytes, student_and_instructor)


@pytest.fixture(scope="module")
def notebooks(bank_problems, kernel):
    student, instructor = student_and_instructor(kernel.header, bank_problems)
    source = build_notebook(kernel.header, bank_problems, "source")
    return {"student": student, "instructor": instructor, "source": source}


def nbgrader_meta(cell):
    return cell["metadata"]["nbgrader"]


def text(notebook) -> str:
    return "\n".join(c["source"] for c in notebook["cells"])


# --- format ------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_valid_for_nbformat_and_nbgrader(notebooks, version):
    data = notebook_bytes(notebooks[version])
    node = nbformat.reads(data.decode("utf-8"), as_version=4)
    nbformat.validate(node)
    MetadataValidatorV3().validate_nb(node)
    # byte for byte what nbformat itself writes: a notebook saved by Jupyter diffs cleanly
    assert nbformat.writes(node).encode("utf-8") + b"\n" == data


@pytest.mark.parametrize("version", VERSIONS)
def test_grade_ids_and_cell_ids_are_unique_and_every_cell_is_the_kits(notebooks, version):
    cells = notebooks[version]["cells"]
    grade_ids = [nbgrader_meta(c)["grade_id"] for c in cells]
    assert len(set(grade_ids)) == len(grade_ids)
    assert len({c["id"] for c in cells}) == len(cells)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", c["id"]) for c in cells)
    assert all(nbgrader_meta(c)["schema_version"] == 3 for c in cells)


def test_points_of_the_graded_cells_add_up_to_the_assignment(notebooks, bank_problems):
    total = sum(p.variant.template.points for p in bank_problems)
    for version in VERSIONS:
        graded = [nbgrader_meta(c)["points"] for c in notebooks[version]["cells"]
                  if nbgrader_meta(c)["grade"]]
        assert sum(graded) == pytest.approx(total)


def test_the_variant_record_is_in_the_metadata_and_the_seed_is_not(notebooks, bank_problems, kernel):
    for version in VERSIONS:
        record = notebooks[version]["metadata"]["attnkit"]
        assert record["version"] == version
        assert record["assignment"]["id"] == "hw-all"
        assert [p["id"] for p in record["problems"]] == [p.id for p in bank_problems]
        assert [p["variant_digest"] for p in record["problems"]] == [p.variant.digest for p in bank_problems]
        assert all(p["template_digest"] for p in record["problems"])
    data = notebook_bytes(notebooks["student"]).decode()
    for p in bank_problems:   # with the seed and the open-source kit the answers follow
        assert str(p.variant.seed) not in data


# --- nothing given away ------------------------------------------------------------------

def squeezed(text: str) -> str:
    return "".join(text.split())


def test_the_student_version_holds_no_expected_value(notebooks, bank_problems):
    """No answer written out (any type: float, integer and boolean arrays, numbers with
    many digits, lists), unless the same literal is one of the student's givens."""
    student = squeezed(text(notebooks["student"]))
    instructor = squeezed(text(notebooks["instructor"]))
    searched = 0
    for p in bank_problems:
        givens = squeezed(" ".join(literal(g) for g in p.variant.givens.values()))
        for part_id, expected in p.variant.answers.items():
            if p.variant.template.kind == "choice":
                continue          # an option index: see the letters test
            pieces = [squeezed(literal(expected))] if np.size(expected) >= 4 or \
                isinstance(expected, (list, tuple)) else []
            if isinstance(expected, np.ndarray) and expected.dtype.kind == "f":
                # and the exact digits of every entry with enough of them not to turn up by chance
                pieces += [repr(float(x)) for x in expected.ravel() if len(repr(float(x))) >= 8]
            for piece in pieces:
                if piece in givens:
                    continue
                assert piece in instructor     # so the search below would find it
                assert piece not in student, f"{p.id}.{part_id} leaks {piece} into the student notebook"
                searched += 1
    assert searched > 200


def test_student_answer_cells_hold_nbgraders_placeholder(notebooks):
    for cell in notebooks["student"]["cells"]:
        if nbgrader_meta(cell)["solution"]:
            placeholder = ("raise NotImplementedError()" if cell["cell_type"] == "code"
                           else "YOUR ANSWER HERE")
            assert placeholder in cell["source"], cell["id"]


def test_the_choice_answers_are_letters_and_only_the_instructor_has_them(notebooks, bank_problems):
    instructor = text(notebooks["instructor"])
    for p in bank_problems:
        if p.variant.template.kind == "choice":
            for part_id, index in p.variant.answers.items():
                letter = "ABCDEFGH"[index]
                assert re.search(rf"\b\w*{part_id} = '{letter}'", instructor)


def test_every_graded_code_cell_of_the_source_version_has_hidden_value_checks(notebooks):
    graded = [c for c in notebooks["source"]["cells"]
              if nbgrader_meta(c)["grade"] and c["cell_type"] == "code"]
    assert len(graded) > 100
    for cell in graded:
        hidden = cell["source"].split("### BEGIN HIDDEN TESTS\n", 1)
        assert len(hidden) == 2 and "### END HIDDEN TESTS" in hidden[1], cell["id"]
        assert "assert " in hidden[1].split("### END HIDDEN TESTS")[0], cell["id"]


def test_clear_solutions_keeps_the_indentation_of_the_marker():
    code = "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
    assert clear_solutions(code, "code") == ("def f(x):\n    # YOUR CODE HERE\n"
                                             "    raise NotImplementedError()\n")
    assert clear_solutions("### BEGIN SOLUTION\nA rubric\n### END SOLUTION", "markdown") == \
        "YOUR ANSWER HERE"


def test_every_implement_template_has_reference_code_for_its_function(bank_problems):
    for p in bank_problems:
        t = p.variant.template
        if t.kind == "implement":
            header, body = t.reference_code()
            assert header.startswith(f"def {t.function.name}(") and header.endswith(":")
            assert body.startswith("    ")


def test_answer_names_clash_gets_a_problem_prefix(notebooks):
    # several families ask for `weights`: each gets its own variable
    record = notebooks["student"]["metadata"]["attnkit"]["problems"]
    names = [n for p in record if "answers" in p for n in p["answers"].values()]
    assert len(names) == len(set(names))
    assert any(re.fullmatch(r"p\d+_weights", n) for n in names)


# --- in a real kernel --------------------------------------------------------------------

def test_instructor_notebook_runs_top_to_bottom_with_every_visible_check_passing(notebooks, kernel):
    node = kernel.execute(notebooks["instructor"])
    assert kernel.errors(node) == []
    checks = [c for c in node.cells if c.cell_type == "code" and c.metadata["nbgrader"]["grade"]]
    assert checks
    for cell in checks:
        assert "passed" in kernel.printed(cell) or "an option was chosen" in kernel.printed(cell) \
            or "Hidden tests" in cell.source, cell.metadata["nbgrader"]["grade_id"]
    heatmaps = [c for c in node.cells if c.id.endswith("--heatmap")]
    assert heatmaps and all(any("image/png" in o.get("data", {}) for o in c.outputs) for c in heatmaps)


def test_student_notebook_raises_only_not_implemented_in_answer_cells(notebooks, kernel):
    node = kernel.execute(notebooks["student"])
    found = kernel.errors(node)
    answer_cells = {c.metadata["nbgrader"]["grade_id"] for c in node.cells
                    if c.cell_type == "code" and c.metadata["nbgrader"]["solution"]
                    and not c.source.startswith("def ")}
    assert {gid for gid, name, _ in found} == answer_cells
    assert all(name == "NotImplementedError" for _, name, _ in found)
    waiting = [c for c in node.cells if c.id.endswith("--check")]
    assert all("not answered yet" in kernel.printed(c) for c in waiting)
    examples = [c for c in node.cells if "out = try_example(" in c.source]
    assert examples and all("not implemented yet" in kernel.printed(c) for c in examples)


def test_the_source_notebook_passes_its_own_hidden_tests(notebooks, kernel):
    """The hidden value checks (for nbgrader) accept the reference answers of every family."""
    assert kernel.errors(kernel.execute(notebooks["source"])) == []


def test_a_wrong_answer_fails_the_visible_and_the_hidden_checks(bank_problems, kernel):
    problem = next(p for p in bank_problems if p.id == "sdpa_four_tokens")
    notebook = build_notebook(kernel.header, [problem], "source")
    for cell in notebook["cells"]:
        if cell["id"] == "sdpa_four_tokens-weights":       # rows that do not sum to 1
            cell["source"] = "weights = np.full((4, 4), 0.5)"
        if cell["id"] == "sdpa_four_tokens-output":        # the right shape, wrong values
            cell["source"] = f"output = np.zeros({problem.variant.answers['output'].shape})"
    found = {gid: message for gid, _, message in kernel.errors(kernel.execute(notebook))}
    assert found["sdpa_four_tokens-weights--check"] == "each row of weights must sum to 1"
    assert found["sdpa_four_tokens-output--check"] == "output is not right"
    assert set(found) == {"sdpa_four_tokens-weights--check", "sdpa_four_tokens-output--check"}


def test_the_visible_example_shows_the_reference_output_and_catches_wrong_values(bank_problems, kernel):
    """An implement problem's example comes with the reference's output on exactly the shown
    (rounded) inputs; a function with the right shape and the wrong scale fails on it before
    the student hands in."""
    from exercises.variant.hidden_tests import example_case
    from solutions import scaled_dot_product_attention
    problem = next(p for p in bank_problems if p.id == "implement_masked_attention")
    example = example_case(problem.variant)
    assert np.allclose(scaled_dot_product_attention(**example.args), example.expected, rtol=0, atol=1e-12)
    assert all(np.array_equal(np.round(v, 3), v) for v in example.args.values()
               if isinstance(v, np.ndarray) and v.dtype.kind == "f")
    notebook = build_notebook(kernel.header, [problem], "source")
    function = problem.variant.template.function.name
    answer = next(c for c in notebook["cells"] if c["id"] == f"implement_masked_attention-{function}")
    assert "/ np.sqrt(d_k)" in answer["source"]
    answer["source"] = answer["source"].replace("/ np.sqrt(d_k)", "/ d_k")
    found = {gid: message for gid, _, message in kernel.errors(kernel.execute(notebook))}
    assert any("differs from" in message and "_example_expected" in message for message in found.values()), found


# --- odd but valid inputs ------------------------------------------------------------------

ODD_TEMPLATE = """\
id: odd_names
title: "Parts called prompt | solution"
objective: scaling
kind: numeric
parameters:
  d_k: {dist: choice, values: [4, 16]}
prompt: "Take $d_k = {{ d_k }}$."
parts:
  - {id: prompt, answer: sqrt(d_k), points: 1}
  - {id: solution, answer: d_k * 2, points: 1}
solution: "$\\\\sqrt{d_k}$ and $2 d_k$."
"""


def test_odd_part_ids_long_problem_ids_and_markup_in_names_stay_apart(tmp_path, kernel):
    from exercises.template.schema import load_template
    from exercises.variant.draw import make_variant
    from exercises.render.notebook import Header, ProblemVariant
    path = tmp_path / "odd.yaml"
    path.write_text(ODD_TEMPLATE)
    template = load_template(path)
    long_id = "a_problem_id_long_enough_that_its_cell_ids_must_be_shortened_x"
    problems = [ProblemVariant(long_id, "Odd | names", make_variant(template, 1)),
                ProblemVariant("short", "Odd again", make_variant(template, 2))]
    head = Header("hw", "HW <b>bold</b> $x$", "0" * 64, "", "s1", 'Bob "Bobby" <b>Tables</b> **x** | y $z$')
    student, instructor = student_and_instructor(head, problems)
    for notebook in (student, instructor):
        node = nbformat.reads(notebook_bytes(notebook).decode(), as_version=4)
        nbformat.validate(node)
        MetadataValidatorV3().validate_nb(node)
        assert len({c.id for c in node.cells}) == len(node.cells)
    assert "Worked solution" in text(instructor) and "Worked solution" not in text(student)
    assert len(student["cells"]) == len(instructor["cells"]) - 2       # the two worked solutions
    header = student["cells"][0]["source"]
    assert "<b>" not in header and "**x**" not in header and "$z$" not in header
    assert markdown_text("a|b") == "a\\|b"
    names = student["metadata"]["attnkit"]["problems"][0]["answers"]
    assert names == {"prompt": "p1_prompt", "solution": "p1_solution"}     # both problems ask them
    assert kernel.errors(kernel.execute(instructor)) == []


def test_a_check_argument_that_is_an_answer_is_not_written_out(bank_problems, kernel):
    """causal_mask_by_hand checks its masked weights against the causal mask, which is the
    answer to its part (a): the visible check is dropped rather than give it away."""
    problem = next(p for p in bank_problems if p.id == "causal_mask_by_hand")
    student, _ = student_and_instructor(kernel.header, [problem])
    checks = {c["id"]: c["source"] for c in student["cells"] if c["id"].endswith("--check")}
    assert "blocked positions" not in checks["causal_mask_by_hand-weights--check"]
    assert "sum to 1" in checks["causal_mask_by_hand-weights--check"]
    assert squeezed(literal(problem.variant.answers["causal"])) not in squeezed(text(student))


def test_a_text_answer_to_a_numeric_part_fails_its_visible_check_with_words(notebooks, bank_problems,
                                                                            kernel):
    """Text where a number belongs once failed inside NumPy ("ufunc 'isfinite' not supported
    for the input types"): every numeric part now says what it wanted instead."""
    numeric = {p.id: p.variant for p in bank_problems if p.variant.template.kind == "numeric"}
    notebook = {**notebooks["instructor"], "cells": [dict(c) for c in notebooks["instructor"]["cells"]]}
    names = {p["id"]: p.get("answers", {}) for p in notebook["metadata"]["attnkit"]["problems"]}
    wanted = {}
    for cell in notebook["cells"]:
        problem, _, part = cell["id"].partition("-")
        if problem in numeric and part in names[problem] and not isinstance(
                numeric[problem].answers[part], (str, list, tuple)):
            name = names[problem][part]
            cell["source"] = f'{name} = "0.5"'
            wanted[f"{problem}-{part}--check"] = name
    assert len(wanted) >= 20
    found = {gid: (ename, message) for gid, ename, message in kernel.errors(kernel.execute(notebook))}
    assert set(found) == set(wanted)
    for gid, name in wanted.items():
        ename, message = found[gid]
        assert ename == "AssertionError", (gid, message)
        assert re.fullmatch(rf"{name} should be (a number|a whole number|True or False|an array of "
                            rf"[a-z ]+ of shape \([0-9, ]*\)), not text \(a string\)", message), message


THIRDS = """\
id: thirds
title: Three parts
objective: scaling
kind: numeric
parameters:
  d_k: {dist: choice, values: [4, 16]}
prompt: "Take $d_k = {{ d_k }}$."
parts:
  - {id: root, answer: sqrt(d_k), points: 1}
  - {id: twice, answer: 2 * d_k, points: 1}
  - {id: half, answer: d_k / 2, points: 1}
"""


def test_points_that_do_not_divide_evenly_are_shown_as_fractions(tmp_path, monkeypatch):
    """`points: 5` over three equal parts gives each 5/3: headers, part labels and printed
    pages say 5/3, never 1.66667."""
    from exercises.course.assignment import load_assignment
    from exercises.course.build import header, problem_variants
    from exercises.render.preview import preview
    from exercises.render.printable import answer_key_page, problem_set_page
    (tmp_path / "thirds.yaml").write_text(THIRDS)
    (tmp_path / "hw.yaml").write_text("id: hw\ntitle: HW\nsecret: {env: THIRDS_SECRET}\n"
                                      "problems:\n  - {template: thirds.yaml, points: 5}\n"
                                      "  - {template: thirds.yaml, id: again, points: 2}\n")
    monkeypatch.setenv("THIRDS_SECRET", "a secret of at least sixteen bytes")
    assignment = load_assignment(tmp_path / "hw.yaml")
    problems = problem_variants(assignment, assignment.secret(), "s1")
    student, instructor = student_and_instructor(header(assignment), problems)
    shown = text(student)
    assert "(5/3 points)" in shown and "(2/3 points)" in shown
    assert "| 1 | Three parts | 5 |" in shown and "| | **total** | **7** |" in shown
    pages = problem_set_page(header(assignment), problems) + answer_key_page(header(assignment), problems)
    assert "(5/3 points)" in pages and "7 points in total" in pages
    terminal = preview(problems[0].variant)
    assert "[5/3 pt]" in terminal
    for output in (shown, text(instructor), pages, terminal):
        assert "1.66667" not in output and "0.666667" not in output


DUE_SPEC = """id: hw
title: HW
secret: {env: THIRDS_SECRET}
due: 2026-12-05 23:59
timezone: Europe/Berlin
late: {policy: penalty, percent: 10, per: day, floor: 50, cutoff: 2026-12-08 23:59}
extensions: extensions.csv
problems:
  - {template: thirds.yaml, points: 3}
"""


def test_the_due_date_and_late_policy_open_the_notebook_and_the_printed_page(tmp_path, monkeypatch):
    """In the first cell, where a student looks: their own due date (an extension's, when
    they have one), its time zone spelled out, and the late policy in one line."""
    from types import SimpleNamespace

    from exercises.course.assignment import load_assignment
    from exercises.course.build import header, problem_variants
    from exercises.render.printable import problem_set_page
    (tmp_path / "thirds.yaml").write_text(THIRDS)
    (tmp_path / "hw.yaml").write_text(DUE_SPEC)
    (tmp_path / "extensions.csv").write_text("student_id,due\ns2,2026-12-10 12:00\n")
    monkeypatch.setenv("THIRDS_SECRET", "a secret of at least sixteen bytes")
    assignment = load_assignment(tmp_path / "hw.yaml")
    first = {}
    for sid in ("s1", "s2"):
        head = header(assignment, SimpleNamespace(id=sid, name=f"Student {sid}"))
        problems = problem_variants(assignment, assignment.secret(), sid)
        student, instructor = student_and_instructor(head, problems)
        first[sid] = student["cells"][0]["source"]
        assert instructor["cells"][0]["source"] == first[sid]
        assert head.due in problem_set_page(head, problems) and head.late_policy in problem_set_page(head, problems)
        assert student_and_instructor(head, problems)[0] == student          # the same notebook every build
    assert ("**Due Saturday 2026-12-05, 23:59:00 Europe/Berlin time (UTC+01:00).** Late work loses 10 % of its "
            "points per day started, at most 50 %; nothing is accepted after Tuesday 2026-12-08, 23:59:00 "
            "Europe/Berlin time (UTC+01:00).") in first["s1"]
    # s2's extension runs past the cutoff, which moves with it
    assert ("**Due Thursday 2026-12-10, 12:00:00 Europe/Berlin time (UTC+01:00), your extension.** Nothing "
            "handed in after it is accepted.") in first["s2"]
    # a class-wide notebook (nbgrader) says the class's date; a spec without one says none
    assert header(assignment).due == "Due Saturday 2026-12-05, 23:59:00 Europe/Berlin time (UTC+01:00)"
    (tmp_path / "plain.yaml").write_text("id: hw\ntitle: HW\nsecret: {env: THIRDS_SECRET}\n"
                                         "problems:\n  - {template: thirds.yaml, points: 3}\n")
    plain = load_assignment(tmp_path / "plain.yaml")
    assert header(plain).due == "" and "Due" not in student_and_instructor(
        header(plain), problem_variants(plain, plain.secret(), "s1"))[0]["cells"][0]["source"]


def test_a_due_date_shows_its_offset_from_utc_however_it_was_given():
    from datetime import datetime, timedelta, timezone

    from exercises.render.due_text import when_text
    assert when_text(datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)) == "Monday 2026-03-02, 09:30:00 UTC"
    assert when_text(datetime(2026, 3, 2, 23, 59, 59, tzinfo=timezone(timedelta(hours=-5)))) == \
        "Monday 2026-03-02, 23:59:59 UTC-05:00"
    assert when_text(datetime(2026, 3, 2, 12, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))) == \
        "Monday 2026-03-02, 12:00:00 UTC+05:30"
