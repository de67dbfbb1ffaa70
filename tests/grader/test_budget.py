"""The trusted side's budget: what one submission may cost the grader (grader.budget), how it
is enforced in a real grading run, and the caps that keep each stage linear (notes, stored
answers judged by shape)."""

import numpy as np
import pytest

from grader.budget import UNLIMITED, Budget, OverBudget
from grader.store.gradebook import Gradebook
from grader.store.rows import ANSWER_LIMIT, omitted_reason
from grader.run.grading import GradingRun
from grader.run.graded import MAX_NOTES, _jsonable_answer, capped_notes
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match
from grader.run.plugin import run_pytest
from grader.sandbox.client import Limits, Sandbox
from synthetic import load_manifest, synthesize

SECRET = "budget test secret: 32 bytes or more"


def _burn(seconds: float) -> None:
    import time
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(1000))


def test_a_budget_counts_this_threads_cpu_and_says_where_it_ran_out():
    budget = Budget(cpu_seconds=0.05).start()
    budget.check("the start")                     # nothing spent yet
    _burn(0.06)
    with pytest.raises(OverBudget, match=r"more than its budget of 0.05 s of CPU \(0.\d s, during "
                                         r"decoding\)"):
        budget.check("decoding")
    UNLIMITED.check("anything")                   # never raises


def test_time_spent_waiting_is_not_charged():
    import time
    budget = Budget(cpu_seconds=0.05).start()
    time.sleep(0.2)                               # a sandbox child running, a busy neighbour
    budget.check("waiting for the sandbox")


def test_the_thread_clock_is_read_only_once_the_budget_could_be_spent(monkeypatch):
    """Checked for every frame and part: while less than the budget has passed on the clock
    no thread can have spent it, and the thread's CPU clock (a system call) is not read."""
    import time
    budget = Budget(cpu_seconds=0.2).start()
    reads = []
    monkeypatch.setattr(time, "thread_time", lambda real=time.thread_time: reads.append(1) or real())
    for _ in range(1000):
        budget.check("a frame")
    assert reads == []
    time.sleep(0.25)
    budget.check("after the budget's time")       # read now, and not spent: no error
    assert reads == [1]


def test_notes_are_kept_once_each_short_and_few():
    notes = [f"cell {i}: note" for i in range(1000)] + ["again"] * 50 + ["x" * 100_000]
    kept = capped_notes(notes)
    assert kept[:MAX_NOTES] == [f"cell {i}: note" for i in range(MAX_NOTES)]
    assert kept[-1] == f"… and {1002 - MAX_NOTES:,} more notes like these, not shown"
    assert capped_notes(["a", "b", "a", "y" * 5000]) == ["a", "b", "y" * 999 + "…"]


@pytest.mark.parametrize("shape", [(2**31 - 1, 0, 4), (3, 2**30, 0), (100_000, 1)])
def test_answers_are_judged_by_shape_before_they_are_converted(shape):
    """np.zeros((2**31 - 1, 0, 4)) has size 0, yet to_jsonable's .tolist() made 2**31 empty
    lists: the grader grew to 24 GB. Judged by shape, it is too large to keep, at once."""
    value = np.broadcast_to(np.zeros((), dtype=bool), shape) if 0 not in shape else np.zeros(shape)
    answer = _jsonable_answer(value)
    assert omitted_reason(answer) == f"an array of shape {shape} is too large to keep"
    nested = [[np.zeros(ANSWER_LIMIT)], 1.0]            # inside lists too
    assert omitted_reason(_jsonable_answer(nested)) == "an answer is too large to keep"
    assert _jsonable_answer([np.zeros(3), "x"]) == [{"array": [0.0, 0.0, 0.0], "dtype": "float64",
                                                     "shape": [3]}, "x"]


def test_a_submission_over_its_budget_is_recorded_as_an_error_and_the_batch_goes_on(example_build, tmp_path):
    build_dir, key = example_build(3, SECRET)
    synthesize(build_dir, key, tmp_path / "subs", profiles=["correct"])
    manifest = load_manifest(tmp_path / "subs")
    assignment = key["assignment"]["id"]
    found = find_submissions(tmp_path / "subs" / "submitted", assignment)
    submissions, _, _ = match(found, key, read=False)
    with Gradebook(tmp_path / "gradebook.sqlite") as gradebook, Sandbox(1, Limits(wall_seconds=5)) as sandbox:
        run = GradingRun(key, submissions, gradebook, sandbox, cpu_seconds=0.0)     # nothing is affordable
        run_pytest(run, assignment)
        rows = {s.student: s for s in gradebook.submissions(assignment)}
        assert sorted(rows) == sorted(key["students"]) == sorted(run.recorded)
        for row in rows.values():
            assert row.status == "error" and row.score == 0
            assert "more than its budget of 0 s of CPU" in row.notes[0]
            assert "during reading the notebook" in row.notes[0]
        results = gradebook.results(assignment)
        assert results and all(r.status == "error" and "budget" in r.message for r in results)
        # an error is graded again on the next run; with the default budget, all is well
        run = GradingRun(key, submissions, gradebook, sandbox)
        run_pytest(run, assignment)
        rows = {s.student: s for s in gradebook.submissions(assignment)}
    assert all(rows[s].status == "graded" and rows[s].score == manifest["students"][s]["score"]
               for s in rows)
