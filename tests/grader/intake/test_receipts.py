"""Submission times from an LMS export: read with file:line errors, and they win over the
file's own times when a folder is graded."""

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from formats.key_shape import key_students
from grader.store.gradebook import Gradebook
from grader.store.rows import SubmissionRow
from grader.run.pipeline import grade_folder
from grader.intake.receipts import ReceiptsError, merged, read_receipts
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
    assert caught.value.errors[0].endswith(problem) or problem in caught.value.errors[0]


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


LMS, STAMP, MTIME = "LMS export (times.csv)", "nbgrader timestamp.txt", "file modification time"
T1, T2 = "2026-12-05T22:10:00+00:00", "2026-12-10T07:00:00+00:00"


@pytest.mark.parametrize("recorded, given, kept, change", [
    ((T1, LMS), (T2, MTIME), (T1, LMS), "kept"),            # a worse source never replaces a better one
    ((T1, STAMP), (T2, MTIME), (T1, STAMP), "kept"),
    ((T1, LMS), (None, ""), (T1, LMS), "kept"),
    ((T1, MTIME), (T2, LMS), (T2, LMS), "changed"),         # a better one does, and says so
    ((T1, LMS), (T2, "LMS export (fixed.csv)"), (T2, "LMS export (fixed.csv)"), "changed"),
    ((T1, MTIME), (T1, LMS), (T1, LMS), None),              # the same time, better said: no change
    ((T1, LMS), (T1, MTIME), (T1, LMS), None),
    ((None, ""), (T2, MTIME), (T2, MTIME), None),           # a time learnt where none was known
    (None, (T2, MTIME), (T2, MTIME), None),                 # nothing recorded yet
])
def test_a_recorded_receipt_time_stays_against_a_worse_source(recorded, given, kept, change):
    at, source, what = merged("s1", "h1", recorded, given)
    assert (at, source) == kept
    assert (None if what is None else "kept" if what.kept else "changed") == change
    if what is not None:
        assert (what.recorded_at, what.recorded_from, what.given_at, what.given_from) == (*recorded, *given)


def test_the_gradebook_keeps_the_better_receipt_when_a_handin_is_recorded_again(tmp_path):
    row = SubmissionRow("hw", "s1", "s1.ipynb", "h1", "graded", received_at=T1, received_from=LMS)
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(row, [])
        gb.record(replace(row, received_at=T2, received_from=MTIME), [])
        assert (gb.submission("hw", "s1").received_at, gb.submission("hw", "s1").received_from) == (T1, LMS)
        gb.set_receipt("hw", "s1", "h1", T2, "LMS export (fixed.csv)")
        assert gb.submission("hw", "s1").received_at == T2
        assert [(c.student, c.kept) for c in gb.receipt_changes] == [("s1", True), ("s1", False)]
