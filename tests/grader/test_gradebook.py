"""The gradebook: idempotent upserts, re-grading that leaves no stale part, WAL readers that a
writer does not block, a writer killed mid-transaction that leaves the old grading whole, and
clear errors for files that are not gradebooks."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grader.gradebook import (ANSWER_LIMIT, SCHEMA_VERSION, Gradebook, GradebookError, ResultRow,
                              SubmissionRow, omitted_reason)

ROOT = Path(__file__).resolve().parents[2]
A = "hw1"


def submission(student="s1", content_hash="h1", status="graded", score=1.5, **kw):
    return SubmissionRow(A, student, f"submitted/{student}/hw1.ipynb", content_hash, status,
                         notes=kw.pop("notes", ("cell 3 raised NameError",)), score=score,
                         max_score=3.0, duration_ms=kw.pop("duration_ms", 120),
                         kit_version=kw.pop("kit_version", "0.1.0"))


def result(problem, part, score=1.0, status="passed", student="s1", content_hash="h1", **kw):
    return ResultRow(A, student, problem, part, score, kw.pop("max_score", 1.0), status,
                     kw.pop("message", ""), kw.pop("misconception", None), kw.pop("answer", None),
                     kw.pop("duration_ms", 7), content_hash)


ROWS = [result("p2", "weights", 0.0, "failed", message="outside tolerance",
               misconception="sdpa_no_scale",
               answer={"array": [[0.5, 0.5]], "dtype": "float64", "shape": [1, 2]}),
        result("p1", "b", 0.5, "partial"),
        result("p1", "a", 1.0, "passed", answer=3)]


def dump(path: Path) -> list[str]:
    """Every row of every table, graded_at included: the whole content of the file."""
    with sqlite3.connect(path) as c:
        return list(c.iterdump())


def test_recording_the_same_rows_twice_leaves_the_same_content(tmp_path):
    path = tmp_path / "grades.sqlite"
    with Gradebook(path) as gb:
        gb.record(submission(), ROWS)
    with sqlite3.connect(path) as c:   # an earlier run: a second record must not even touch it
        c.execute("UPDATE submissions SET graded_at = '2001-01-01T00:00:00+00:00'")
    first = dump(path)
    with Gradebook(path) as gb:
        gb.record(submission(), ROWS)
        assert gb.results(A) == ROWS          # read back exactly, in the order recorded
        assert gb.submissions(A) == [submission()]
    assert dump(path) == first
    assert sum("INSERT INTO \"results\"" in line for line in first) == 3


def test_regrading_replaces_the_students_rows_and_leaves_no_stale_part(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission(), ROWS)
        gb.record(submission("s2", "x"), [result("p1", "a", student="s2", content_hash="x")])
        regraded = [result("p1", "a", 0.0, "failed", content_hash="h2", message="wrong shape"),
                    result("p3", "new", 1.0, content_hash="h2")]
        gb.record(submission(content_hash="h2", score=1.0), regraded)
        assert gb.results(A, "s1") == regraded
        assert [r.student for r in gb.results(A)] == ["s1", "s1", "s2"]   # s2 untouched
        assert gb.submission(A, "s1").content_hash == "h2"


def test_results_come_in_recorded_order_by_student(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission("s2", "x"), [result("z", "b", student="s2", content_hash="x"),
                                          result("a", "a", student="s2", content_hash="x")])
        gb.record(submission(), ROWS)
        got = [(r.student, r.problem, r.part) for r in gb.results(A)]
    assert got == [("s1", "p2", "weights"), ("s1", "p1", "b"), ("s1", "p1", "a"),
                   ("s2", "z", "b"), ("s2", "a", "a")]


def test_is_current_only_for_the_same_graded_notebook(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        assert not gb.is_current(A, "s1", "h1")
        gb.record(submission(), ROWS)
        assert gb.is_current(A, "s1", "h1")
        assert gb.is_current(A, "s1", "h1", kit_version="0.1.0")
        assert not gb.is_current(A, "s1", "h1", kit_version="0.2.0")   # a newer kit re-grades
        assert not gb.is_current(A, "s1", "other")
        assert not gb.is_current("hw2", "s1", "h1")
        gb.record(submission("s2", "e", status="error", score=0), [])
        assert not gb.is_current(A, "s2", "e")                          # errors are retried


def test_mark_missing_records_zero_and_drops_earlier_results(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission(), ROWS)
        gb.mark_missing(A, "s1", 3.0)
        (row,) = gb.submissions(A)
        assert (row.status, row.score, row.max_score, row.content_hash) == ("missing", 0.0, 3.0, "")
        assert gb.results(A) == []
        assert not gb.is_current(A, "s1", "")


def test_wal_mode_and_schema_version(tmp_path):
    path = tmp_path / "g.sqlite"
    with Gradebook(path):
        pass
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert dict(c.execute("SELECT key, value FROM meta"))["schema_version"] == str(SCHEMA_VERSION)
        columns = [r[1] for r in c.execute("PRAGMA table_info(submissions)")]
    assert "graded_at" in columns


def test_answers_are_json_and_capped(tmp_path):
    big = {"array": [[0.123456789] * 100] * 100, "dtype": "float64", "shape": [100, 100]}
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission(), [result("p", "big", answer=big), result("p", "text", answer="ok")])
        stored = {r.part: r.answer for r in gb.results(A)}
        assert "too large" in omitted_reason(stored["big"]) and str(ANSWER_LIMIT) in omitted_reason(stored["big"])
        assert stored["text"] == "ok" and omitted_reason("ok") is None
        with pytest.raises(ValueError, match="not JSON-ready"):
            gb.record(submission(), [result("p", "x", answer=float("nan"))])
        with pytest.raises(ValueError, match="not JSON-ready"):
            gb.record(submission(), [result("p", "x", answer={1, 2})])
        assert len(gb.results(A)) == 2   # a refused record changes nothing


def test_rows_that_do_not_belong_together_are_refused(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        with pytest.raises(ValueError, match="recorded with the submission"):
            gb.record(submission(), [result("p", "a", student="s2")])
        with pytest.raises(ValueError, match="recorded twice"):
            gb.record(submission(), [result("p", "a"), result("p", "a")])
        assert gb.submissions(A) == []
    with pytest.raises(ValueError, match="status"):
        result("p", "a", status="ok")
    with pytest.raises(ValueError, match="status"):
        submission(status="done")


def _pause_inside_record(gb: Gradebook, inside: threading.Event, resume: threading.Event):
    """Stop ``gb.record`` after it has replaced the submission row and deleted the old
    results, before the new ones are in: the middle of its transaction."""
    def trace(sql):
        if sql.startswith("INSERT INTO results") and not inside.is_set():
            inside.set()
            resume.wait()
    gb._conn.set_trace_callback(trace)


def test_readers_see_the_old_rows_while_a_writer_is_mid_transaction(tmp_path):
    path = tmp_path / "g.sqlite"
    new = [result("p9", "only", content_hash="h2")]
    with Gradebook(path) as writer, Gradebook(path) as reader:
        writer.record(submission(), ROWS)
        inside, resume = threading.Event(), threading.Event()
        _pause_inside_record(writer, inside, resume)
        thread = threading.Thread(target=writer.record, args=(submission(content_hash="h2"), new))
        thread.start()
        try:
            inside.wait()
            assert reader.results(A) == ROWS            # not blocked, and not half-written
            assert reader.is_current(A, "s1", "h1")
        finally:
            resume.set()
            thread.join()
        assert reader.results(A) == new
        assert reader.is_current(A, "s1", "h2")


KILLED_WRITER = """
import sys
from grader.gradebook import Gradebook, ResultRow, SubmissionRow
gb = Gradebook(sys.argv[1])
def trace(sql):
    if sql.startswith("INSERT INTO results"):
        print("inside", flush=True)
        sys.stdin.read()          # wait here, mid-transaction, until killed
gb._conn.set_trace_callback(trace)
gb.record(SubmissionRow("hw1", "s1", "p", "h2", "graded", (), 9.0, 9.0, 1, "0.1.0"),
          [ResultRow("hw1", "s1", "p9", "only", 9.0, 9.0, "passed")])
"""


def test_a_writer_killed_mid_transaction_leaves_the_old_rows(tmp_path):
    path = tmp_path / "g.sqlite"
    with Gradebook(path) as gb:
        gb.record(submission(), ROWS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], cwd=ROOT, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "inside\n"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    with Gradebook(path) as gb:                      # opens with an integrity check
        assert gb.results(A) == ROWS
        assert gb.submissions(A) == [submission()]
        gb.record(submission(content_hash="h3"), [])  # and the dead writer's lock is gone
        assert gb.results(A) == []


def test_a_file_that_is_not_a_gradebook_is_named_in_the_error(tmp_path):
    garbage = tmp_path / "notes.txt"
    garbage.write_bytes(b"not a database at all\n" * 100)
    with pytest.raises(GradebookError, match="notes.txt: not a readable gradebook"):
        Gradebook(garbage)
    assert garbage.read_bytes() == b"not a database at all\n" * 100   # left as it was

    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE things (x)")
    with pytest.raises(GradebookError, match=r"other.sqlite: not an attnkit gradebook .*things"):
        Gradebook(other)


def test_a_newer_schema_asks_for_a_newer_attnkit(tmp_path):
    path = tmp_path / "g.sqlite"
    with Gradebook(path):
        pass
    with sqlite3.connect(path) as c:
        c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(GradebookError, match=r"g.sqlite: written by a newer attnkit"):
        Gradebook(path)


def test_a_damaged_gradebook_is_named_in_the_error(tmp_path):
    path = tmp_path / "g.sqlite"
    with Gradebook(path) as gb:
        for k in range(30):
            gb.record(submission(f"s{k:02}", f"h{k}"),
                      [result(f"p{i}", "a", student=f"s{k:02}", content_hash=f"h{k}",
                              message="x" * 200) for i in range(10)])
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[page:len(data) - page] = b"\xa5" * (len(data) - 2 * page)   # all but the first and last page
    path.write_bytes(bytes(data))
    with pytest.raises(GradebookError, match="g.sqlite: "):
        with Gradebook(path) as gb:
            gb.results(A)


def test_text_that_is_not_utf8_is_stored_with_replacement_characters(tmp_path):
    """A file name that was not UTF-8, or a student's string with a lone surrogate, must not
    fail the transaction (it would stop the batch on every run)."""
    from dataclasses import replace
    with Gradebook(tmp_path / "gb.sqlite") as gb:
        gb.record(replace(submission(notes=("note \ud800",)), path="submitted/s1/hw/h\udcff.ipynb"),
                  [result("p", "a", message="got '\ud800'", answer="\ud800 text")])
        row, = gb.submissions(A)
        part, = gb.results(A)
    assert row.path == "submitted/s1/hw/h\ufffd.ipynb" and row.notes == ("note \ufffd",)
    assert part.message == "got '\ufffd'" and part.answer == "\ufffd text"
