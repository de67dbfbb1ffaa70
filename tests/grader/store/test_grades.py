"""A class's grades under a late policy: which handin counts, and its penalty as a figure of
its own (grader.store.grades, on a real key and a real gradebook)."""

from datetime import datetime, timedelta, timezone

import pytest

from formats.deadline import Deadline, LatePolicy
from formats.key_shape import assignment_id, graded_parts, key_students, problem_records, total_points
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.store.grades import MISSING, NOT_ACCEPTED, class_grades, with_answers

SECRET = "grades test secret: long enough, never real"
DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def key(example_build):
    return example_build(3, SECRET)[1]


def hand_in(gradebook, key, student, handin, fraction, received: datetime):
    """Record a handin of ``student`` earning ``fraction`` of every part."""
    a = assignment_id(key)
    rows = [ResultRow(a, student, pid, part, points * fraction, points, "partial")
            for pid, record in problem_records(key["students"][student]) for part, points in graded_parts(record)]
    gradebook.record(SubmissionRow(a, student, f"{handin}.ipynb", handin, "graded", (),
                                   sum(r.score for r in rows), total_points(key),
                                   received_at=received.isoformat(), received_from="test"), rows)


@pytest.fixture
def gradebook(tmp_path, key):
    ada, bo, _ = key_students(key)
    with Gradebook(tmp_path / "g.sqlite") as gb:
        hand_in(gb, key, ada, "ada-main", 0.5, DUE - timedelta(hours=1))
        hand_in(gb, key, ada, "ada-late", 1.0, DUE + timedelta(days=1, hours=2))     # 2 days started
        hand_in(gb, key, bo, "bo-late", 1.0, DUE + timedelta(days=9))
        yield gb


def by_id(grades):
    return {s.id: s for s in grades}


def test_without_a_policy_the_last_handin_counts_in_full(gradebook, key):
    ada, bo, cy = key_students(key)
    grades = by_id(class_grades(gradebook, key))
    assert grades[ada].path == "ada-late.ipynb" and grades[ada].total == total_points(key)
    assert grades[ada].handins == 2 and grades[cy].status == MISSING


def test_a_penalty_comes_off_the_late_handin_as_a_figure_of_its_own(gradebook, key):
    ada, bo, _ = key_students(key)
    grades = by_id(class_grades(gradebook, key, Deadline(DUE, LatePolicy("penalty", 10, "day", 50))))
    full = total_points(key)
    assert grades[ada].path == "ada-late.ipynb" and grades[ada].penalty == pytest.approx(0.2 * full)
    assert grades[ada].total == pytest.approx(0.8 * full) and "1 day 2 hours late" in grades[ada].late
    assert grades[bo].penalty == pytest.approx(0.5 * full)           # 10 days: the floor keeps half
    assert ("late", f"received {grades[ada].late}") in grades[ada].look


def test_a_cutoff_counts_the_last_handin_before_it_and_refuses_the_rest(gradebook, key):
    ada, bo, _ = key_students(key)
    deadline = Deadline(DUE, LatePolicy("cutoff"), {bo: DUE + timedelta(days=10)})
    grades = by_id(class_grades(gradebook, key, deadline))
    assert grades[ada].path == "ada-main.ipynb" and grades[ada].total == pytest.approx(0.5 * total_points(key))
    assert grades[ada].penalty == 0 and grades[ada].late == "on time"
    assert grades[bo].total == total_points(key) and "extended" in grades[bo].late     # their extension
    refused = by_id(class_grades(gradebook, key, Deadline(DUE, LatePolicy("cutoff"))))[bo]
    assert refused.status == NOT_ACCEPTED and refused.total == 0 and refused.look
    # its page shows no part of the refused handin as if it had counted
    assert all(part.result is None for part in with_answers(gradebook, key, refused).parts)


# --- hand grades under a late policy (grader.store.marks) -------------------------------------------

from formats.key_shape import is_free_response, problem_record  # noqa: E402
from grader.store import marks  # noqa: E402
from grader.reports.exports import export_rows, gradescope_results  # noqa: E402
from grader.store.grades import class_look  # noqa: E402
from grader.marking.queue import part_queue, parts_to_mark  # noqa: E402
from grader.reports.summary import summary_json  # noqa: E402


def free_part(key, student):
    return next((pid, part) for pid, record in problem_records(key["students"][student])
                if is_free_response(record) for part, _ in graded_parts(record))


def auto_part(key, student):
    return next((pid, part) for pid, record in problem_records(key["students"][student])
                if not is_free_response(record) for part, _ in graded_parts(record))


def result_of(gradebook, key, student, problem, part):
    return next(r for r in gradebook.results(assignment_id(key), student) if (r.problem, r.part) == (problem, part))


def mark(gradebook, key, student, problem, part, result, reason=""):
    record = problem_record(key["students"][student], problem)
    items = tuple(i["id"] for i in record.get("rubric", {}).get(part, {}).get("items", ())[:1])
    return marks.save(gradebook, key, problem, part, [marks.Target(student, 0, result)],
                      marks.Edit(items, 0.0 if items else 0.5, "", reason), "ta")[0]


def test_a_mark_of_a_student_the_late_policy_refuses_waits_for_nobody(gradebook, key):
    _, bo, _ = key_students(key)
    problem, part = free_part(key, bo)
    mark(gradebook, key, bo, problem, part, result_of(gradebook, key, bo, problem, part))   # (no policy yet)
    refused = by_id(class_grades(gradebook, key, Deadline(DUE, LatePolicy("cutoff"))))[bo]
    assert refused.status == NOT_ACCEPTED and refused.total == 0
    assert refused.waiting == 0 and not any(p.recheck for p in refused.parts)
    review = {sid: look for sid, _, look in class_look(gradebook, key, Deadline(DUE, LatePolicy("cutoff")))}
    assert not any(code == "mark-recheck" for code, _ in review[bo])
    summary = {s["id"]: s for s in summary_json(gradebook, key, Deadline(DUE, LatePolicy("cutoff")))["students"]}
    assert summary[bo]["waiting_parts"] == 0
    # nothing of theirs is graded later: no pending points, no "pending" test on Gradescope
    (row,) = [r for r in export_rows([refused], key)]
    assert row.pending == 0 and row.complete
    results = gradescope_results(refused, key)
    assert results["extra_data"]["pending_points"] == 0
    assert not any("pending" in t["name"].lower() or "pending" in t["output"].lower() for t in results["tests"])


def test_an_override_of_a_part_without_an_auto_result_needs_no_second_look(gradebook, key):
    ada, _, cy = key_students(key)
    problem, part = auto_part(key, cy)
    a = assignment_id(key)
    rows = [ResultRow(a, cy, pid, p, points, points, "passed")
            for pid, record in problem_records(key["students"][cy]) for p, points in graded_parts(record)
            if (pid, p) != (problem, part)]                       # no row for the auto part
    gradebook.record(SubmissionRow(a, cy, "cy.ipynb", "cy", "graded", (), 0.0, total_points(key),
                                   received_at=DUE.isoformat(), received_from="test"), rows)
    m = mark(gradebook, key, cy, problem, part, None, reason="graded by reading the notebook")
    (p,) = [p for p in by_id(class_grades(gradebook, key))[cy].parts if (p.problem, p.part) == (problem, part)]
    assert p.mark == m and p.recheck == "" and not p.waiting
    (answer,) = [x for x in part_queue(gradebook, key, problem, part).answers if x.student == cy]
    assert answer.look == "" and answer.done


def test_a_hand_grade_whose_counted_handin_has_no_answer_waits_in_the_queue_and_the_reports_alike(gradebook, key):
    ada, _, _ = key_students(key)
    problem, part = free_part(key, ada)
    sub = gradebook.submission(assignment_id(key), ada)
    rows = gradebook.results(assignment_id(key), ada, handin=sub.handin)
    gradebook.record(sub, [ResultRow(**{**r.__dict__, "answer": "my answer", "status": "manual"})
                           if (r.problem, r.part) == (problem, part) else r for r in rows])
    mark(gradebook, key, ada, problem, part, result_of(gradebook, key, ada, problem, part))
    gradebook.record(sub, [r for r in rows if (r.problem, r.part) != (problem, part)])   # graded again: no row now
    (p,) = [p for p in by_id(class_grades(gradebook, key))[ada].parts if (p.problem, p.part) == (problem, part)]
    assert "no answer" in p.recheck and p.waiting
    (answer,) = [x for x in part_queue(gradebook, key, problem, part).answers if x.student == ada]
    assert answer.look == p.recheck and not answer.done
    queue = part_queue(gradebook, key, problem, part)
    (summary,) = [s for s in parts_to_mark(gradebook, key) if (s.problem, s.part) == (problem, part)]
    assert summary.graded == queue.graded


def test_the_class_read_a_student_at_a_time_and_spilled_to_disk_is_the_same_class(gradebook, key, monkeypatch):
    """``class_grades`` reads ``CHUNK`` students at a time into a ``Spilled`` sequence: with
    one student a chunk and every record on disk, the same grades, late policy and all."""
    from grader.store import grades as module, spilled
    deadline = Deadline(DUE, LatePolicy("penalty", 10, "day", 50))
    whole = [list(class_grades(gradebook, key, d)) for d in (None, deadline)]
    monkeypatch.setattr(module, "CHUNK", 1)
    monkeypatch.setattr(spilled, "IN_MEMORY", 0)
    monkeypatch.setattr(spilled.Spilled.__init__, "__defaults__", ((), 0))
    read = [class_grades(gradebook, key, d) for d in (None, deadline)]
    assert all(r._file is not None for r in read)             # (on disk)
    assert [list(r) for r in read] == whole and len(whole[0]) == 3
