"""A class's grades under a late policy: which handin counts, and its penalty as a figure of
its own (grader.grades, on a real key and a real gradebook)."""

from datetime import datetime, timedelta, timezone

import pytest

from formats.deadline import Deadline, LatePolicy
from formats.key_shape import assignment_id, graded_parts, key_students, problem_records, total_points
from grader.gradebook import Gradebook, ResultRow, SubmissionRow
from grader.grades import MISSING, NOT_ACCEPTED, class_grades, with_answers

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
