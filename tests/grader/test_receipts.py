"""Submission times from an LMS export: read with file:line errors, and they win over the
file's own times when a folder is graded."""

from datetime import datetime, timedelta, timezone

import pytest

from formats.key_shape import key_students
from grader.gradebook import Gradebook
from grader.pipeline import grade_folder
from grader.receipts import ReceiptsError, read_receipts
from grader.sandbox.client import Limits, Sandbox
from synthetic import synthesize

SECRET = "receipts test secret: long enough"


def test_an_export_of_times_is_read_with_its_time_zones(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("Student_ID;Submitted_at\ns1;2026-12-05T23:10:00+01:00\ns2;2026-12-06T01:00:00Z\n\n",
                    encoding="utf-8")
    times, source = read_receipts(path)
    assert times == {"s1": datetime(2026, 12, 5, 22, 10, tzinfo=timezone.utc),
                     "s2": datetime(2026, 12, 6, 1, 0, tzinfo=timezone.utc)}
    assert source == "LMS export (times.csv)"


@pytest.mark.parametrize("text, problem", [
    ("student,when\ns1,2026-12-05T23:10:00Z\n", "times.csv:1: needs a student_id column and a time column"),
    ("student_id,received_at\ns1,yesterday\n", "times.csv:2: 'yesterday' is not a time"),
    ("student_id,received_at\ns1,2026-12-05 23:10\n", "times.csv:2: '2026-12-05 23:10' has no time zone"),
    ("student_id,received_at\n,2026-12-05T23:10:00Z\n", "times.csv:2: a row without a student id"),
])
def test_a_bad_export_names_its_line(tmp_path, text, problem):
    (tmp_path / "times.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ReceiptsError) as caught:
        read_receipts(tmp_path / "times.csv")
    assert caught.value.problems[0].endswith(problem) or problem in caught.value.problems[0]


def test_the_lms_time_is_the_one_recorded(example_build, tmp_path):
    build_dir, key = example_build(2, SECRET)
    synthesize(build_dir, key, tmp_path / "subs", profiles=["correct"])
    first, second = key_students(key)
    when = datetime(2026, 12, 5, 23, 10, tzinfo=timezone.utc)
    with Gradebook(tmp_path / "g.sqlite") as gradebook, Sandbox(1, Limits(wall_seconds=5)) as sandbox:
        grade_folder(key, tmp_path / "subs", gradebook, sandbox, kit_version="",
                     receipts=({first: when}, "LMS export (times.csv)"))
        rows = {s.student: s for s in gradebook.submissions(key["assignment"]["id"])}
    assert (rows[first].received_at, rows[first].received_from) == (when.isoformat(), "LMS export (times.csv)")
    assert rows[second].received_from == "file modification time"
    assert abs(datetime.fromisoformat(rows[second].received_at) - datetime.now(timezone.utc)) < timedelta(days=1)
