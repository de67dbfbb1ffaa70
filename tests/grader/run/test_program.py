"""Programs: what the sandbox runs for a submission. The steps are checked as data, and their
meaning by running them here in a throwaway namespace (``run_here``), which is only ever done
with the builder's own notebooks: student code never runs in the test process otherwise.

The notebooks come from the real builder (exercises.course.build.problem_variants and
exercises.render.notebook.student_and_instructor): a student's notebook filled in with the
instructor's solutions must give exactly the answer key's values."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from exercises.render.notebook import LETTERS, SETUP
from formats.serialize import decode_names, encode_names, from_jsonable
from grader.intake.issues import Issue
from grader.intake.reading import read_submission
from grader.intake.records import Cell, Found, Submission
from grader.run.program import GRADING_SETUP, Program, free_answer, job_for, problem_order, strip_magics

SECRET = "grader program test secret, 32 b"
HW = "attention-hw1"
A, B = "s2026001", "s2026002"


@pytest.fixture(scope="module")
def course(example_build):
    """(build folder, key): a real build for two students, the key loaded as the grader does."""
    return example_build(2, SECRET)


@pytest.fixture
def key(course):
    return course[1]


def released(course, student=A) -> dict:
    return json.loads((course[0] / "release" / student / f"{HW}.ipynb").read_text())


def solutions(course, student=A) -> dict[str, str]:
    """grade id → the instructor's answer-cell source."""
    solved = json.loads((course[0] / "instructor" / "notebooks" / student / f"{HW}.ipynb").read_text())
    return {c["id"]: "".join(c["source"]) for c in solved["cells"] if c["metadata"]["nbgrader"]["solution"]}


def filled(course, student=A) -> dict:
    """The student's notebook with every answer cell replaced by the instructor's solution."""
    notebook, answers = released(course, student), solutions(course, student)
    for c in notebook["cells"]:
        if c["id"] in answers:
            c["source"] = answers[c["id"]]
    return notebook


def submit(tmp_path, notebook, key, student=A):
    path = tmp_path / f"{student}.ipynb"
    path.write_text(json.dumps(notebook))
    return read_submission(Found(student, path, path.name, "flat"), key)


def program_of(tmp_path, notebook, key, student=A) -> Program:
    submission = submit(tmp_path, notebook, key, student)
    return job_for(submission, key["students"][student], order=problem_order(key))


def code_cell(source: str, cell_id: str = "added01") -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "outputs": [], "execution_count": None,
            "source": source}


def at(notebook, grade_id) -> int:
    return next(i for i, c in enumerate(notebook["cells"]) if c["id"] == grade_id)


def execs(program) -> list[str]:
    return [s["label"] for s in program.steps if s["op"] == "exec"]


def ops(program) -> list[tuple]:
    """Each step in short: ("exec", label), ("set", problem), ("send"/"call", problem)."""
    return [(s["op"], s["label"] if s["op"] == "exec" else p)
            for s, p in zip(program.steps, program.problem_of_step)]


def run_here(program: Program) -> dict:
    """The steps' meaning, run in this process on trusted fixtures (the sandbox stand-in):
    {"values": pid → name → value, "outputs": pid → [output or exception name], "errors": [(label, type)]}."""
    namespace, values, outputs, errors = {}, {}, {}, []
    for step in program.steps:
        if step["op"] == "exec":
            try:
                exec(compile(step["source"], step["label"], "exec"), namespace)
            except Exception as err:  # noqa: BLE001 — recorded, the run goes on like the sandbox's
                errors.append((step["label"], type(err).__name__))
        elif step["op"] == "set":
            namespace.update(copy.deepcopy(step["values"]))
        elif step["op"] == "send":
            values[step["problem"]] = {n: namespace[n] for n in step["names"] if n in namespace}
        elif step["op"] == "call":
            outs = []
            for case in step["cases"]:
                try:
                    outs.append(namespace[step["function"]](**copy.deepcopy(case)))
                except Exception as err:  # noqa: BLE001
                    outs.append(type(err).__name__)
            outputs[step["problem"]] = outs
    return {"values": values, "outputs": outputs, "errors": errors}


def assert_all_correct(result: dict, entry: dict) -> None:
    """Every numeric and choice value equals the key's answer; every hidden case's output matches."""
    for pid, record in entry["problems"].items():
        if record["kind"] in ("numeric", "choice"):
            expected = decode_names(record["answers"])
            for part, name in record["answer_names"].items():
                got = result["values"][pid][name]
                if record["kind"] == "choice":
                    assert got == LETTERS[expected[part]], (pid, part)
                elif isinstance(expected[part], list):
                    assert all(np.array_equal(g, e) for g, e in zip(got, expected[part])), (pid, part)
                else:
                    assert np.array_equal(got, expected[part]), (pid, part)
        elif record["kind"] == "implement":
            outs = result["outputs"][pid]
            assert len(outs) == len(record["tests"])
            for out, case in zip(outs, record["tests"]):
                want = from_jsonable(case["expected"])
                assert np.allclose(out, want, rtol=record["rtol"], atol=record["atol"]), (pid, case["index"])


# --- the setup ------------------------------------------------------------------------------

def test_the_grading_setup_is_the_kits_own_with_a_heatmap_that_draws_nothing():
    assert GRADING_SETUP.startswith(SETUP[:SETUP.index("def show_heatmap(")])
    assert "matplotlib" not in GRADING_SETUP and GRADING_SETUP.count("def show_heatmap(") == 1
    namespace = {}
    exec(GRADING_SETUP, namespace)
    assert namespace["show_heatmap"](np.eye(3), "A", "query i", "key j") is None
    assert namespace["np"] is np and callable(namespace["answered"]) and callable(namespace["try_example"])


# --- a real notebook ------------------------------------------------------------------------

def test_a_filled_notebook_runs_exactly_its_answer_cells_and_gets_the_keys_values(course, key, tmp_path):
    notebook = filled(course)
    program = program_of(tmp_path, notebook, key)
    kit_runs = [c["id"] for c in notebook["cells"] if c["cell_type"] == "code"
                and (c["metadata"]["nbgrader"]["solution"] or c["id"].endswith("--example"))]
    assert execs(program) == ["setup", *kit_runs]
    by_label = {s["label"]: s["source"] for s in program.steps if s["op"] == "exec"}
    answers = solutions(course)
    assert all(by_label[gid] == answers[gid] for gid in kit_runs if gid in answers)
    assert program.notes == [] and len(program.problem_of_step) == len(program.steps)
    result = run_here(program)
    assert result["errors"] == []
    assert_all_correct(result, key["students"][A])


def test_the_steps_follow_the_problems_with_givens_first_and_values_after(course, key, tmp_path):
    program = program_of(tmp_path, filled(course), key)
    entry = key["students"][A]
    # one set per problem with givens, at its givens cell; one send/call per problem, after its last cell
    sets = [p for (op, p) in ops(program) if op == "set"]
    collects = [(op, p) for (op, p) in ops(program) if op in ("send", "call")]
    assert sets == ["dog_ran_fast", "scaling", "masks", "bahdanau"]
    assert collects == [("send", "dog_ran_fast"), ("send", "scaling"), ("send", "masks"), ("send", "bahdanau"),
                        ("call", "implement"), ("send", "bert_mlm")]
    steps = ops(program)
    assert steps.index(("set", "masks")) < steps.index(("exec", "masks-causal")) < steps.index(("send", "masks"))
    assert steps.index(("send", "masks")) < steps.index(("set", "bahdanau"))
    masks = next(s for s in program.steps if s["op"] == "set" and "lengths" in s["values"])
    givens = decode_names(entry["problems"]["masks"]["givens"])
    assert masks["values"].keys() == givens.keys()
    assert all(np.array_equal(masks["values"][n], givens[n]) for n in givens)
    send = next(s for s in program.steps if s["op"] == "send" and s["problem"] == "masks")
    assert send["names"] == list(entry["problems"]["masks"]["answer_names"].values())


def test_an_implement_problem_gets_its_hidden_cases_in_order_and_no_expected_value(course, key, tmp_path):
    program = program_of(tmp_path, filled(course), key)
    record = key["students"][A]["problems"]["implement"]
    [call] = [s for s in program.steps if s["op"] == "call"]
    assert (call["problem"], call["function"], call["first"]) == ("implement", "masked_attention", 0)
    assert len(call["cases"]) == len(record["tests"])
    for case, test in zip(call["cases"], record["tests"]):
        assert case.keys() == test["args"].keys()
        assert all(np.array_equal(case[n], from_jsonable(test["args"][n])) for n in case)
    assert all(set(s) <= {"op", "label", "source", "values", "problem", "names", "function", "cases", "first"}
               for s in program.steps)


def test_nothing_a_student_only_reads_ever_runs(course, key, tmp_path):
    # the instructor's notebook has every kind of kit cell, worked solutions included
    solved = json.loads((course[0] / "instructor" / "notebooks" / A / f"{HW}.ipynb").read_text())
    program = program_of(tmp_path, solved, key)
    assert not [label for label in execs(program)[1:]
                if label.endswith(("--check", "--heatmap", "--prompt", "--solution", "--givens"))
                or label in ("setup", "header") or label.count("-") == 2 and "--" not in label]
    assert all(label.split("-")[0] in key["students"][A]["problems"] for label in execs(program)[1:])


def test_givens_come_from_the_key_even_when_the_givens_cell_was_edited(course, key, tmp_path):
    notebook = filled(course)
    notebook["cells"][at(notebook, "masks--givens")]["source"] = "Q = np.zeros((5, 4))\nK = Q\nlengths = [0, 0]"
    program = program_of(tmp_path, notebook, key)
    assert "givens-edited" not in [n.code for n in program.notes]      # harmless: not a grading note
    assert "masks--givens" not in execs(program)
    result = run_here(program)
    assert result["errors"] == []
    assert_all_correct(result, key["students"][A])


def test_cells_the_student_added_run_in_order_and_belong_to_the_problem_above(course, key, tmp_path):
    notebook = filled(course)
    i = at(notebook, "masks-causal")
    notebook["cells"].insert(i + 1, code_cell("helper = causal.astype(int)", "mine1"))
    j = at(notebook, "masks-combined--check")           # the problem's last cell
    notebook["cells"].insert(j + 1, code_cell("p4_weights = p4_weights + 0.0", "mine2"))
    notebook["cells"].insert(2, code_cell("import numpy as np\nstarted = True", "mine0"))
    program = program_of(tmp_path, notebook, key)
    labels = execs(program)
    assert labels[:2] == ["setup", "cell 3"]
    assert labels[labels.index("masks-causal") + 1] == f"cell {i + 3}"
    steps = ops(program)
    last = steps.index(("exec", f"cell {j + 3}"))
    assert steps[last + 1] == ("send", "masks")                  # the added cell runs before the values are read
    problems = dict(zip(labels, [p for (op, _), p in zip(steps, program.problem_of_step) if op == "exec"]))
    assert problems["cell 3"] is None and problems[f"cell {i + 3}"] == problems[f"cell {j + 3}"] == "masks"
    result = run_here(program)
    assert result["errors"] == []
    assert_all_correct(result, key["students"][A])


def test_reordered_problems_run_in_the_notebooks_order_with_their_own_givens(course, key, tmp_path):
    notebook = filled(course)
    cells = notebook["cells"]
    masks = [c for c in cells if c["id"].startswith("masks-")]
    rest = [c for c in cells if not c["id"].startswith("masks-")]
    k = next(i for i, c in enumerate(rest) if c["id"] == "dog_ran_fast--prompt")
    notebook["cells"] = rest[:k] + masks + rest[k:]                 # masks moved before problem 2
    program = program_of(tmp_path, notebook, key)
    collects = [p for (op, p) in ops(program) if op in ("send", "call")]
    assert collects == ["masks", "dog_ran_fast", "scaling", "bahdanau", "implement", "bert_mlm"]
    assert_all_correct(run_here(program), key["students"][A])


def test_an_answer_moved_above_its_givens_still_gets_them(course, key, tmp_path):
    notebook = filled(course)
    cells = notebook["cells"]
    answer = cells.pop(at(notebook, "scaling-std"))
    cells.insert(at(notebook, "scaling--givens"), answer)
    program = program_of(tmp_path, notebook, key)
    steps = ops(program)
    assert steps.index(("set", "scaling")) < steps.index(("exec", "scaling-std"))
    assert_all_correct(run_here(program), key["students"][A])


def test_a_deleted_givens_cell_is_set_before_the_problems_first_cell(course, key, tmp_path):
    notebook = filled(course)
    del notebook["cells"][at(notebook, "masks--givens")]
    program = program_of(tmp_path, notebook, key)
    steps = ops(program)
    assert steps[steps.index(("set", "masks")) + 1] == ("exec", "masks-causal")
    assert steps[steps.index(("set", "masks")) - 1] == ("send", "scaling")
    assert [n.code for n in program.notes] == ["kit-cell-missing"]
    assert_all_correct(run_here(program), key["students"][A])


def test_a_problem_whose_cells_are_all_gone_is_still_asked_for_at_the_end(course, key, tmp_path):
    notebook = filled(course)
    notebook["cells"] = [c for c in notebook["cells"] if not c["id"].startswith("bahdanau")]
    notebook["cells"].append(code_cell("pre = 'from memory'"))
    program = program_of(tmp_path, notebook, key)
    assert ops(program)[-2:] == [("set", "bahdanau"), ("send", "bahdanau")]
    assert run_here(program)["values"]["bahdanau"] == {"pre": "from memory"}


def test_a_cell_with_a_grade_id_from_elsewhere_runs_as_the_students_own(course, key, tmp_path):
    notebook = filled(course)
    pasted = code_cell("pasted = 1", "other-hw-q1")
    pasted["metadata"] = {"nbgrader": {"grade_id": "other-hw-q1", "solution": True, "grade": False,
                                       "locked": False, "schema_version": 3}}
    notebook["cells"].insert(at(notebook, "scaling-std") + 1, pasted)
    program = program_of(tmp_path, notebook, key)
    labels = execs(program)
    assert labels[labels.index("scaling-std") + 1] == "other-hw-q1"
    assert program.problem_of_step[[s.get("label") for s in program.steps].index("other-hw-q1")] == "scaling"


def test_copied_answer_cells_both_run_in_notebook_order(course, key, tmp_path):
    notebook = filled(course)
    i = at(notebook, "scaling-std")
    copy_of = copy.deepcopy(notebook["cells"][i])
    copy_of["id"] = "copy1"
    copy_of["source"] = "std = std * 1"
    notebook["cells"].insert(i + 2, copy_of)
    program = program_of(tmp_path, notebook, key)
    assert [s["source"] for s in program.steps if s.get("label") == "scaling-std"] == \
        [solutions(course)["scaling-std"], "std = std * 1"]
    assert [n.code for n in program.notes] == ["duplicate-grade-id"]
    assert_all_correct(run_here(program), key["students"][A])


def test_an_answer_cell_turned_into_markdown_is_not_run_and_says_so(course, key, tmp_path):
    notebook = filled(course)
    notebook["cells"][at(notebook, "scaling-std")].update(cell_type="markdown", outputs=None)
    program = program_of(tmp_path, notebook, key)
    assert "scaling-std" not in execs(program)
    assert program.notes == [Issue("answer-not-code", f"{A}.ipynb: the answer cell scaling-std is a markdown cell, "
                                                      "not code: it was not run", "scaling-std")]


def test_unanswered_cells_raise_in_the_sandbox_and_leave_their_names_undefined(course, key, tmp_path):
    program = program_of(tmp_path, released(course), key)
    result = run_here(program)
    assert ("masks-causal", "NotImplementedError") in result["errors"]
    assert result["values"]["masks"] == {}
    assert set(result["outputs"]["implement"]) == {"NotImplementedError"}


# --- free text ------------------------------------------------------------------------------

def test_free_text_answers_and_the_placeholder_that_means_unanswered(course, key, tmp_path):
    notebook = released(course)
    notebook["cells"][at(notebook, "motivation-static")]["source"] = "The same vector: *static*."
    notebook["cells"][at(notebook, "motivation-bottleneck")]["source"] = "YOUR ANSWER HERE\n\nOnly $h_T$ reaches it."
    program = program_of(tmp_path, notebook, key)
    assert program.free_text == {"motivation": {"static": "The same vector: *static*.",
                                                "bottleneck": "Only $h_T$ reaches it.", "common_cause": ""}}
    assert free_answer("  YOUR ANSWER HERE \n") == ""
    assert not [s for s, p in zip(program.steps, program.problem_of_step) if p == "motivation"]


# --- notebooks that cannot be run ---------------------------------------------------------------

@pytest.mark.parametrize("notebook, code", [
    ({"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1"}]}]}, "not-nbformat-4"),
    (b'{"cells": [', "invalid-json"),
    (b"", "empty-file"),
    ([1, 2], "not-a-notebook"),
])
def test_an_unrunnable_notebook_still_asks_for_every_problem_so_every_part_gets_a_reason(key, tmp_path, notebook, code):
    path = tmp_path / f"{A}.ipynb"
    path.write_bytes(notebook if isinstance(notebook, bytes) else json.dumps(notebook).encode())
    submission = read_submission(Found(A, path, path.name, "flat"), key)
    program = job_for(submission, key["students"][A], order=problem_order(key))
    assert execs(program) == ["setup"]
    assert [(op, p) for op, p in ops(program) if op in ("send", "call")] == [
        ("send", "dog_ran_fast"), ("send", "scaling"), ("send", "masks"), ("send", "bahdanau"),
        ("call", "implement"), ("send", "bert_mlm")]
    assert [n.code for n in program.notes] == [code]
    assert program.free_text == {"motivation": {"static": "", "bottleneck": "", "common_cause": ""}}


def test_with_no_kit_cell_identifiable_every_code_cell_runs_and_values_are_read_at_the_end(course, key, tmp_path):
    notebook = filled(course)
    notebook["cells"][at(notebook, "masks--givens")]["source"] += "\nQ = Q * 0"   # more than givens: runs as is
    for c in notebook["cells"]:
        c["metadata"] = {}
        del c["id"]
    program = program_of(tmp_path, notebook, key)
    steps = ops(program)
    assert steps[0] == ("exec", "setup")
    assert [p for op, p in steps[1:5]] == ["dog_ran_fast", "scaling", "masks", "bahdanau"]   # all givens first
    assert all(op == "set" for op, _ in steps[1:5])
    # each givens cell, recognised by what it assigns, becomes the key's givens at its place
    assert [p for op, p in steps[5:] if op == "set"] == ["dog_ran_fast", "scaling", "bahdanau"]
    assert [op for op, _ in steps[-6:]] == ["send"] * 4 + ["call", "send"]
    assert [n.code for n in program.notes] == ["no-kit-cells"]
    assert len(execs(program)) == 1 + sum(c["cell_type"] == "code" for c in notebook["cells"]) - 3
    result = run_here(program)
    assert_all_correct(result, key["students"][A])


# --- magics ------------------------------------------------------------------------------------

def test_magics_and_shell_lines_are_left_out_and_noted(course, key, tmp_path):
    assert strip_magics("%matplotlib inline\nx = 1") == ("pass\nx = 1", True)
    assert strip_magics("if True:\n    !pip install numpy\ny = 2") == ("if True:\n    pass\ny = 2", True)
    assert strip_magics("s = '%d items' % 3") == ("s = '%d items' % 3", False)
    assert strip_magics("x = (1 +\n") == ("x = (1 +\n", False)           # a real SyntaxError stays one
    notebook = filled(course)
    i = at(notebook, "masks-causal")
    notebook["cells"][i]["source"] = "%matplotlib inline\n" + notebook["cells"][i]["source"]
    program = program_of(tmp_path, notebook, key)
    step = next(s for s in program.steps if s.get("label") == "masks-causal")
    assert step["source"].startswith("pass\n### BEGIN SOLUTION")
    assert program.notes == [Issue("magics-stripped", f"{A}.ipynb: masks-causal: lines starting with % or ! (IPython "
                                                      "magics, shell commands) cannot run at grading and were left "
                                                      "out", "masks-causal")]
    assert_all_correct(run_here(program), key["students"][A])


# --- shared givens, on a small hand-made entry -------------------------------------------------

def _entry() -> dict:
    def numeric(givens, names):
        return {"kind": "numeric", "givens": encode_names(givens), "answer_names": names,
                "grading": [{"id": part} for part in names]}
    return {"problems": {"one": numeric({"Q": np.array([1.0, 2.0])}, {"a": "one_a", "b": "one_b"}),
                         "two": numeric({"Q": np.array([10.0, 20.0])}, {"a": "two_a"})}}


def _submission(*cells: tuple[str | None, str]) -> Submission:
    return Submission(A, Path("x.ipynb"), "x.ipynb", "", tuple(
        Cell(i, "code", source, gid, "nbgrader" if gid else None) for i, (gid, source) in enumerate(cells)), None, ())


def test_a_problem_revisited_after_another_with_the_same_given_names_gets_its_own_back():
    submission = _submission(("one--givens", ""), ("one-a", "one_a = Q.sum()"),
                             ("two--givens", ""), ("two-a", "two_a = Q.sum()"),
                             ("one-b", "one_b = Q.sum()"))              # moved below problem two
    program = job_for(submission, _entry(), order=["one", "two"])
    assert ops(program) == [("exec", "setup"), ("set", "one"), ("exec", "one-a"), ("set", "two"),
                            ("exec", "two-a"), ("send", "two"), ("set", "one"), ("exec", "one-b"),
                            ("send", "one")]
    assert run_here(program)["values"] == {"two": {"two_a": 30.0}, "one": {"one_a": 3.0, "one_b": 3.0}}


def test_the_default_order_is_the_notebooks_record_then_the_keys():
    record = {"problems": [{"id": "two"}, {"id": "gone"}, {"id": ["garbled"]}, "garbled"]}
    submission = Submission(A, Path("x.ipynb"), "x.ipynb", "", (), record, ())
    assert [p for op, p in ops(job_for(submission, _entry())) if op == "send"] == ["two", "one"]


def test_the_same_submission_gives_the_same_program(course, key, tmp_path):
    submission = submit(tmp_path, filled(course), key)
    first, second = (job_for(submission, key["students"][A], order=problem_order(key)) for _ in range(2))
    assert ops(first) == ops(second) and first.free_text == second.free_text
    assert [s.get("source") for s in first.steps] == [s.get("source") for s in second.steps]


def test_the_steps_cross_the_sandbox_boundary(course, key, tmp_path):
    frames = pytest.importorskip("grader.sandbox.frames")
    program = program_of(tmp_path, filled(course), key)
    job = frames.decode(frames.encode({"steps": program.steps, "limits": {}}))
    assert [s["op"] for s in job["steps"]] == [s["op"] for s in program.steps]


def test_a_program_is_made_of_the_protocols_steps(course, key, tmp_path):
    """Every step is one the protocol defines, in its shape, and every kind occurs here."""
    from grader.sandbox import frames, protocol

    program = program_of(tmp_path, filled(course), key)
    shapes = {protocol.EXEC: {"op", "label", "source"}, protocol.SET: {"op", "values"},
              protocol.SEND: {"op", "problem", "names"},
              protocol.CALL: {"op", "problem", "function", "cases", "first"}}
    assert {step["op"] for step in program.steps} == set(protocol.OPS)
    assert all(set(step) == shapes[step["op"]] for step in program.steps)
    job = frames.decode(frames.encode(protocol.job(program.steps, {})))
    assert [s["op"] for s in job["steps"]] == [s["op"] for s in program.steps]
    assert not any("cases" in step for step in job["steps"])


def test_every_note_code_is_documented():
    import re

    from grader.run import program

    source = Path(program.__file__).read_text(encoding="utf-8")
    assert set(re.findall(r'Issue\("([a-z-]+)"', source)) == set(program.NOTE_CODES)
