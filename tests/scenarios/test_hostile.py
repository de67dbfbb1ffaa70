"""The hostile corpus: submissions written to cheat, crash, leak or sabotage, each with the
outcome a correct grader must give it, graded in ONE batch through the real pipeline
(grader.run.pipeline.grade_folder: intake → GradingRun → plugin.run_pytest, with the real Sandbox and
a real SQLite gradebook).

Every hostile notebook starts from its student's own correct synthetic notebook
(synthetic, profile ``correct``) and changes a few cells, so what the attack must cost
is exactly known: the synthetic manifest of the correct notebooks is the honest baseline
(computed from the key by synthetic, never by the grader's code). For every case:

- the grader survives: the batch ends, every student has a submission row (status
  ``graded``: never the grader's own ``error``) and a result row for every part;
- every part that did not pass has a non-empty reason;
- no part scores more than the honest answer scores, nor does the whole;
- each part has exactly the status the case expects (the sabotaged part missing or failed,
  every other part as honest), and the total is exactly what those statuses are worth.

Two correct control students are graded in the same batch (first and last in order) and
must come out exactly as the manifest says: hostile neighbours cost nobody else anything.

What a case does that the sandbox should stop (read a file, write one, connect, signal) is
written back through the answer channel: the cell assigns a report of each attempt to an
answer variable, so the gradebook row shows what happened inside (and the part fails, since
text is not a number). A hole found here is a case with ``hole=`` (its test is then an
``xfail(strict=True)`` asserting the correct behaviour) until it is fixed; the two found
while writing this file are fixed (the deeply nested cells, here and at the end).
"""

from __future__ import annotations

import json
import math
import socket
import uuid
from pathlib import Path

import pytest

from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.render.notebook import notebook_bytes
from exercises.course.roster import load_roster
from grader.store.gradebook import Gradebook
from grader.store.rows import RESULT_STATUSES
from grader.run.pipeline import grade_folder
from grader.sandbox.client import Limits, Sandbox
from synthetic import load_manifest, submission_path, synthesize

from tests.scenarios.hostile_budget import (make_boolean_answers, make_choice_hedge,
                                            make_empty_giant_array, make_givens_bomb,
                                            make_heatmap_overflow, make_json_bomb,
                                            make_magics_everywhere, make_newline_cell,
                                            make_too_many_cells, notes_stay_small)
from tests.scenarios.hostile_cheats import (FORK_BOMB, HUGE_PRINTS, MEMORY_BOMB, SWALLOW_INTERRUPTS,
                                            expect_nan_payloads, make_broadcast_view,
                                            make_builtins_patch, make_huge_arrays,
                                            make_nan_payloads, make_numpy_patch, make_object_dtype,
                                            make_subclasses, sabotage, std_lost)
from tests.scenarios.hostile_escapes import (DEEP_EXPRESSION, expect_every_family,
                                             expect_exit_while_sending,
                                             expect_other_students_notebook, expect_pasted,
                                             gradebook_texts, key_texts, make_changed_grade_ids,
                                             make_code_to_markdown, make_deleted_cells,
                                             make_duplicated_cells, make_edited_givens,
                                             make_exit_in_function, make_exit_while_sending,
                                             make_huge_output, make_huge_source,
                                             make_import_solutions, make_invalid_json,
                                             make_markdown_to_code, make_other_students_notebook,
                                             make_pasted, make_read, make_signals, make_sockets,
                                             make_writes, no_connection, no_signal_sent, nothing,
                                             nothing_written, other_submission_texts, refused_read,
                                             solutions_not_importable)
from tests.scenarios.hostile_kit import (COUNTS, Case, Corpus, Ctx, EXAMPLE, EXP_SCORES, Expect,
                                         FAILED, MISSING, PASSED, SECRET, STD, TIMEOUT, VARIANCE,
                                         WEIGHTS, WORKERS, Z_THE, read_notebook, set_source)


CASES = [
    Case("numpy_patch_wrong_answers", make_numpy_patch,
         lambda ctx: Expect(parts=dict.fromkeys(ctx.numeric_parts("bahdanau"), FAILED)),
         "np.allclose/isclose/array_equal/abs/max patched in the child; the grader compares "
         "in its own process"),
    Case("builtins_patch_wrong_answers", make_builtins_patch,
         lambda ctx: Expect(parts=dict.fromkeys(ctx.numeric_parts("scaling"), FAILED)),
         "builtins.abs/isinstance/float/len/… replaced: this breaks the child's own frame "
         "encoder, whose crash is charged to the patching cell (an added one)"),
    Case("os_exit", sabotage("import os\nos._exit(0)"), std_lost(says="stopped the run"),
         "the child ends; the run goes on in a fresh child without that cell"),
    Case("sys_exit", sabotage("import sys\nsys.exit()"), std_lost(says="SystemExit")),
    Case("raise_system_exit", sabotage("raise SystemExit(0)"), std_lost(says="SystemExit")),
    Case("swallow_keyboard_interrupt", sabotage(SWALLOW_INTERRUPTS),
         std_lost(says="timeout"), "ignores every catchable signal; SIGKILL at the deadline"),
    Case("infinite_loop", sabotage("while True:\n    pass"), std_lost(says="timeout")),
    Case("sleep_1000", sabotage("import time\ntime.sleep(1000)"), std_lost(says="timeout")),
    Case("fork_bomb", sabotage(FORK_BOMB), std_lost(says="PermissionError"),
         "fork(2) is EPERM under seccomp (and nproc 1)"),
    Case("memory_bomb", sabotage(MEMORY_BOMB), std_lost(says="MemoryError"),
         "the address-space limit turns it into a MemoryError in the cell"),
    Case("huge_prints", sabotage(HUGE_PRINTS), nothing,
         "stdout/stderr are /dev/null in the child: harmless, the answer still counts"),
    Case("huge_result_arrays", make_huge_arrays,
         lambda ctx: Expect(parts={STD: MISSING, WEIGHTS: FAILED},
                            says={STD: "MemoryError", WEIGHTS: "too large to send"}),
         "3.2 GB: MemoryError in the cell; 35 MB: fits the child, not a 32 MB frame"),
    Case("broadcast_view_answer", make_broadcast_view,
         lambda ctx: Expect(parts={WEIGHTS: FAILED}, says={WEIGHTS: "numpy.ndarray"}),
         "10^9 entries in a zero-stride view: copying it for a frame runs out of memory"),
    Case("object_dtype_answers", make_object_dtype,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, Z_THE: FAILED},
                            says={WEIGHTS: "numpy.ndarray of object", Z_THE: "numpy.ndarray of object"})),
    Case("lying_subclasses", make_subclasses,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, Z_THE: FAILED, STD: FAILED, VARIANCE: FAILED},
                            says={Z_THE: "_LyingFloat", VARIANCE: "_LyingInt"}),
         "an ndarray subclass crosses as its plain data (zeros); float/int subclasses do not cross"),
    Case("nan_inf_payloads", make_nan_payloads, expect_nan_payloads),
    Case("read_answer_key", make_read("key_path"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("key_path", key_texts))),
    Case("read_gradebook", make_read("gradebook"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("gradebook", gradebook_texts))),
    Case("read_other_submission", make_read("other_path"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("other_path", other_submission_texts))),
    Case("write_files", make_writes, lambda ctx: Expect(parts={STD: FAILED}, check=nothing_written)),
    Case("open_sockets", make_sockets, lambda ctx: Expect(parts={STD: FAILED}, check=no_connection)),
    Case("import_solutions", make_import_solutions,
         lambda ctx: Expect(parts={STD: FAILED}, check=solutions_not_importable)),
    Case("signal_parent", make_signals, lambda ctx: Expect(parts={STD: FAILED}, check=no_signal_sent)),
    Case("edited_givens", make_edited_givens,
         lambda ctx: Expect(parts={VARIANCE: FAILED, STD: FAILED}, notes=("scaling--givens was edited",)),
         "givens come from the key: answers computed for easier numbers are wrong"),
    Case("deleted_cells", make_deleted_cells,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("the cell scaling-std is missing",
                                                         "the cell masks--givens is missing")),
         "a deleted answer is missing; a deleted givens cell changes nothing (givens from the key)"),
    Case("duplicated_cells", make_duplicated_cells,
         lambda ctx: Expect(notes=("grade id scaling-std",)),
         "copies of an answer and a check cell: each part still counts once"),
    Case("code_to_markdown", make_code_to_markdown,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("scaling-std is a markdown cell",))),
    Case("markdown_to_code", make_markdown_to_code, nothing,
         "prompts never run; a free response re-typed as code is still read as text"),
    Case("changed_grade_ids", make_changed_grade_ids,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("the cell scaling-variance is missing",))),
    Case("other_students_notebook", make_other_students_notebook, expect_other_students_notebook),
    Case("invalid_json", make_invalid_json,
         lambda ctx: Expect(every=MISSING, notes=("not valid JSON",))),
    Case("empty_file", lambda ctx: b"", lambda ctx: Expect(every=MISSING, notes=("0 bytes",))),
    Case("huge_output_50mb", make_huge_output, nothing, "outputs are never read"),
    Case("huge_source_50mb", make_huge_source, nothing,
         "a 50 MB cell the student added: over a frame's text limit, it reaches the sandbox as "
         "an unsupported value and that cell alone fails; nothing else lost"),
    Case("exit_in_function", make_exit_in_function,
         expect_every_family(FAILED, "not run: an earlier hidden case crashed the sandbox (exit 0)"),
         "os._exit inside the implement function: its first hidden case crashes, the rest are not run"),
    Case("exit_while_sending", make_exit_while_sending, expect_exit_while_sending,
         "an answer object that ends the process when the sandbox encodes it"),
    Case("pasted_into_new_notebook", make_pasted(), expect_pasted,
         "no kit cell identifiable: graded by variable name (the baseline of the next case)"),
    Case("deep_expression_in_pasted_notebook", make_pasted(DEEP_EXPRESSION), expect_pasted,
         "the same notebook with a first cell `_deep = 1 + 1 + … + 1` (600 terms): its analysis "
         "overflows the parser's walk, which must cost nothing (it once made every part the "
         "grader's own error)"),
    Case("empty_giant_array", make_empty_giant_array,
         lambda ctx: Expect(parts={WEIGHTS: FAILED}, says={WEIGHTS: "2147483647"})),
    Case("newline_cell_400k", make_newline_cell, lambda ctx: Expect(notes=("lines starting with % or !",))),
    Case("heatmap_overflow", make_heatmap_overflow, lambda ctx: Expect(parts={WEIGHTS: FAILED}),
         "graded; its feedback page is written (test_every_report_is_written_for_the_corpus)"),
    Case("givens_bomb", make_givens_bomb,
         lambda ctx: Expect(notes=("replaced by something much longer",), check=notes_stay_small),
         "givens come from the key: nothing lost, and the notes stay a few lines"),
    Case("boolean_answers_30m", make_boolean_answers,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, EXP_SCORES: FAILED},
                            says={WEIGHTS: "wrong shape", EXP_SCORES: "wrong shape"})),
    Case("choice_hedge", make_choice_hedge,
         lambda ctx: Expect(parts={COUNTS: FAILED}, says={COUNTS: "should be one of the letters"})),
    Case("magics_in_4000_cells", make_magics_everywhere,
         lambda ctx: Expect(notes=("and 3,992 more",), check=notes_stay_small)),
    Case("too_many_cells", make_too_many_cells,
         lambda ctx: Expect(every=MISSING, notes=("more than the 5,000 a notebook may have",))),
    Case("json_bomb", make_json_bomb,
         lambda ctx: Expect(every=MISSING, notes=("JSON values, more than the 2,000,000",))),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The example assignment built for the corpus's students and two controls."""
    folder = tmp_path_factory.mktemp("hostile-build")
    roster = folder / "roster.csv"
    ids = [f"h{i:02d}" for i in range(1, len(CASES) + 3)]
    roster.write_text("student_id,name,email\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu\n" for sid in ids), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build")
    assert result.ok, result.failures
    return folder / "build", load_key(result.key_path, SECRET.encode()), result.key_path


@pytest.fixture(scope="module")
def corpus(built, tmp_path_factory):
    build_dir, key, key_path = built
    root = tmp_path_factory.mktemp("hostile")
    honest_dir, folder = root / "honest", root / "submissions"
    synthesize(build_dir, key, honest_dir, profiles=["correct"])
    manifest = load_manifest(honest_dir)
    assignment_id = key["assignment"]["id"]
    students = sorted(key["students"])
    controls = [students[0], students[-1]]
    student_of = dict(zip([c.name for c in CASES], students[1:-1], strict=True))
    gradebook_path = root / "gradebook.sqlite"
    canary = Path("/tmp") / f"attnkit-hostile-canary-{uuid.uuid4().hex}"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)

    def honest_notebook(student):
        return read_notebook(submission_path(honest_dir, "nbgrader", assignment_id, student))

    for student in controls:
        path = submission_path(folder, "nbgrader", assignment_id, student)
        path.parent.mkdir(parents=True)
        path.write_bytes(submission_path(honest_dir, "nbgrader", assignment_id, student).read_bytes())
    expected = {}
    for case in CASES:
        student = student_of[case.name]
        path = submission_path(folder, "nbgrader", assignment_id, student)
        ctx = Ctx(student, honest_notebook(student), key["students"][student], key, key_path,
                  gradebook_path, path, controls[0],
                  submission_path(folder, "nbgrader", assignment_id, controls[0]),
                  honest_notebook(controls[0]), canary, listener.getsockname()[1])
        made = case.make(ctx)
        path.parent.mkdir(parents=True)
        path.write_bytes(made if isinstance(made, bytes) else notebook_bytes(made))
        expected[case.name] = case.expect(ctx)
    before = {p: p.read_bytes() for p in [key_path, *sorted(folder.rglob("*.ipynb"))]}

    with pytest.MonkeyPatch.context() as patch, Gradebook(gradebook_path) as gradebook, \
            Sandbox(WORKERS, Limits(wall_seconds=TIMEOUT)) as sandbox:
        patch.setenv("ATTNKIT_SECRET", SECRET)          # as in a real run: the grader holds it
        run = grade_folder(key, folder, gradebook, sandbox, servers=WORKERS, read_ahead=True,
                           kit_version="")
        assert not run.missing and not run.issues, (run.missing, run.issues)
        code = run.code
        rows = {s.student: s for s in gradebook.submissions(assignment_id)}
        results = {}
        for r in gradebook.results(assignment_id):
            results.setdefault(r.student, []).append(r)
    yield Corpus(code, key, key_path, gradebook_path, canary, listener, manifest, student_of,
                 expected, controls, rows, results, list(run.recorded), before, folder)
    listener.close()
    for leftover in (canary, Path(str(canary) + ".d")):    # only if a case got through
        if leftover.is_dir():
            leftover.rmdir()
        elif leftover.exists():
            leftover.unlink()
    for path in folder.rglob("*.ipynb"):                   # pytest keeps old temp folders:
        if path.stat().st_size > 10 * 2**20:               # not the 50 MB notebooks
            path.unlink()


# --- the tests ----------------------------------------------------------------------------------

def test_the_corpus_has_at_least_25_hostile_submissions():
    assert len(CASES) >= 25
    assert len({c.name for c in CASES}) == len(CASES)


def test_the_batch_survives_and_records_every_student(corpus):
    every = sorted(corpus.key["students"])
    assert sorted(corpus.recorded) == every
    assert sorted(corpus.submissions) == every
    assert corpus.code == 1                     # parts failed, nothing crashed (2/3 would be pytest errors)
    for student in every:
        parts = {(pid, part) for pid, parts in corpus.manifest["students"][student]["expected"].items()
                 for part in parts}
        assert set(corpus.rows(student)) == parts, student


def test_the_controls_graded_in_the_same_batch_lose_nothing(corpus):
    for student in corpus.controls:
        honest = corpus.honest(student)
        rows = corpus.rows(student)
        got = {k: (r.status, r.score) for k, r in rows.items()}
        assert got == {k: (v["status"], v["score"]) for k, v in honest.items()}
        assert corpus.submissions[student].score == corpus.manifest["students"][student]["score"] > 0


def test_no_secret_and_no_key_in_the_gradebook(corpus):
    everything = corpus.gradebook_bytes()
    assert len(everything) > 10_000
    assert SECRET.encode() not in everything
    key = json.loads(corpus.key_path.read_text(encoding="utf-8"))
    assert key["signature"].encode() not in everything


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=case.hole)] if case.hole else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_submission(corpus, case):
    student = corpus.student_of[case.name]
    expect: Expect = corpus.expected[case.name]
    honest = corpus.honest(student)
    submission = corpus.submissions.get(student)
    # the grader survived it and recorded it, as graded (not as its own error)
    assert submission is not None, f"{case.name}: no submission row"
    assert submission.status == "graded", submission.notes
    rows = corpus.rows(student)
    assert set(rows) == set(honest)
    # every part has a status, a reason where it did not pass, and never more than honest
    for k, row in rows.items():
        assert row.status in RESULT_STATUSES
        if row.status != PASSED:
            assert row.message.strip(), k
        assert row.score <= honest[k]["score"] + 1e-9, (k, row.score, honest[k])
    honest_total = corpus.manifest["students"][student]["score"]
    assert submission.score <= honest_total + 1e-9
    # exactly the expected statuses, and exactly their worth
    want = {k: expect.every or expect.parts.get(k, v["status"]) for k, v in honest.items()}
    wrong = {k: (rows[k].status, "expected " + want[k], rows[k].message[:300])
             for k in want if rows[k].status != want[k]}
    assert not wrong, wrong
    worth = sum(rows[k].max_score for k in want if want[k] == PASSED)
    assert math.isclose(submission.score, worth, abs_tol=1e-9)
    assert all(rows[k].score == 0.0 for k in want if want[k] != PASSED)
    for k, text in expect.says.items():
        assert text in rows[k].message, (k, rows[k].message)
    for text in expect.notes:
        assert any(text in note for note in submission.notes), (text, submission.notes)
    if expect.check is not None:
        expect.check(corpus, student)


def test_every_report_is_written_for_the_corpus(corpus, tmp_path):
    """Whatever the corpus handed in, every student's feedback page and results.json are
    written (a ±1e308 answer once stopped `attnkit report` after the CSV)."""
    from grader.reports.summary import write_csv, write_gradescope
    from grader.reports.feedback_page import write_feedback

    with Gradebook(corpus.gradebook) as gradebook:
        write_csv(gradebook, corpus.key, tmp_path / "grades.csv")
        write_gradescope(gradebook, corpus.key, tmp_path / "gradescope")
        write_feedback(gradebook, corpus.key, tmp_path / "feedback")
    for student in corpus.key["students"]:
        page = (tmp_path / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and len(page) < 2_000_000, (student, len(page))
        results = json.loads((tmp_path / "gradescope" / student / "results.json").read_text(encoding="utf-8"))
        assert len(results["tests"]) == len(corpus.rows(student))
    overflow = corpus.student_of["heatmap_overflow"]
    assert "<svg" in (tmp_path / "feedback" / f"{overflow}.html").read_text(encoding="utf-8")


# --- a hole that could not be in the batch: it stopped the batch (fixed) ------------------------

NESTED_GIVENS = "# Your givens for problem 3, made 'easier'.\nd_k = " + "1 + " * 600 + "1\n"


# match() reads every notebook up front by default; `attnkit grade` leaves the reading to the
# sandbox threads (read=False). Both once died on this cell: the first took the whole batch
# down (RecursionError out of match), the second recorded the student as the grader's error.
READ_MODES = [True, False]


@pytest.mark.parametrize("read", READ_MODES, ids=[f"read={r}" for r in READ_MODES])
def test_a_deeply_nested_givens_cell_costs_nobody_anything(built, tmp_path, read):
    build_dir, key, _ = built
    assignment_id = key["assignment"]["id"]
    synthesize(build_dir, key, tmp_path / "honest", profiles=["correct"])
    manifest = load_manifest(tmp_path / "honest")
    control, victim = sorted(key["students"])[:2]
    folder = tmp_path / "submissions"
    for student in (control, victim):
        path = submission_path(folder, "nbgrader", assignment_id, student)
        path.parent.mkdir(parents=True)
        notebook = read_notebook(submission_path(tmp_path / "honest", "nbgrader", assignment_id, student))
        if student == victim:
            set_source(notebook, "scaling--givens", NESTED_GIVENS)
        path.write_bytes(notebook_bytes(notebook))
    with Gradebook(tmp_path / "gradebook.sqlite") as gradebook, \
            Sandbox(1, Limits(wall_seconds=TIMEOUT)) as sandbox:
        run = grade_folder(key, folder, gradebook, sandbox, read_ahead=read,
                           kit_version="")
        assert sorted(run.recorded) == [control, victim] and not run.issues
        rows = {s.student: s for s in gradebook.submissions(assignment_id)}
    for student in (control, victim):          # givens come from the key: both fully right
        assert rows[student].status == "graded"
        assert rows[student].score == manifest["students"][student]["score"] > 0
    assert any("scaling--givens was edited" in note for note in rows[victim].notes), rows[victim].notes
