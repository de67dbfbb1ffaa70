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
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.store.gradebook import Gradebook, GradebookError
from grader.store.rows import ANSWER_LIMIT, ResultRow, SubmissionRow, omitted_reason
from grader.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[3]
A = "hw1"


def submission(student="s1", content_hash="h1", status="graded", score=1.5, **kw):
    return SubmissionRow(A, student, f"submitted/{student}/hw1.ipynb", content_hash, status,
                         notes=kw.pop("notes", ("cell 3 raised NameError",)), score=score,
                         max_score=3.0, duration_ms=kw.pop("duration_ms", 120),
                         kit_version=kw.pop("kit_version", "0.1.0"), **kw)


def result(problem, part, score=1.0, status="passed", student="s1", content_hash="h1", **kw):
    return ResultRow(A, student, problem, part, score, kw.pop("max_score", 1.0), status,
                     kw.pop("message", ""), kw.pop("misconception", None), kw.pop("answer", None),
                     kw.pop("duration_ms", 7), content_hash)


# The schema 1 of an earlier kit (one row per student; "missing" rows written over grades).
SCHEMA_1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE submissions (
    assignment   TEXT NOT NULL,
    student      TEXT NOT NULL,
    path         TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('graded', 'error', 'missing')),
    notes        TEXT NOT NULL,             -- JSON list of strings
    score        REAL NOT NULL,
    max_score    REAL NOT NULL,
    duration_ms  INTEGER NOT NULL,
    graded_at    TEXT NOT NULL,             -- UTC, ISO 8601, never in a report
    kit_version  TEXT NOT NULL,
    PRIMARY KEY (assignment, student)
);
CREATE TABLE results (
    assignment    TEXT NOT NULL,
    student       TEXT NOT NULL,
    problem       TEXT NOT NULL,
    part          TEXT NOT NULL,
    position      INTEGER NOT NULL,         -- order as recorded: the key's problem and part order
    score         REAL NOT NULL,
    max_score     REAL NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'partial', 'missing', 'error', 'manual')),
    message       TEXT NOT NULL,
    misconception TEXT,
    answer        TEXT,                     -- JSON (exercises.serialize.to_jsonable), capped
    duration_ms   INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    PRIMARY KEY (assignment, student, problem, part),
    FOREIGN KEY (assignment, student) REFERENCES submissions (assignment, student)
        ON DELETE CASCADE
);
"""

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


def test_rows_encoded_elsewhere_are_stored_as_record_stores_them(tmp_path):
    # a cluster worker encodes its shard's rows; the client writes them as they came
    import pickle
    from grader.store.rows import encoded
    with Gradebook(tmp_path / "a.sqlite") as gb:
        gb.record_many([(submission(), ROWS), (submission("s2", "x"), [result("p1", "a", student="s2", content_hash="x")])])
    travelled = pickle.loads(pickle.dumps([encoded(submission(), ROWS),
                                           encoded(submission("s2", "x"), [result("p1", "a", student="s2", content_hash="x")])]))
    with Gradebook(tmp_path / "b.sqlite") as gb:
        gb.record_encoded(travelled)
        assert gb.results(A)[:3] == ROWS and gb.submissions(A)[0] == submission()
    assert untimed(dump(tmp_path / "a.sqlite")) == untimed(dump(tmp_path / "b.sqlite"))


def untimed(lines: list[str]) -> list[str]:
    """The dump without the times of recording (first_seen, graded_at)."""
    import re
    return [re.sub(r"'\d{4}-\d\d-\d\dT[0-9:.]+\+00:00'", "'T'", line) for line in lines]


@pytest.mark.parametrize("bent", [
    lambda who, s, r: (who, s[:-1], r),                                  # a column short
    lambda who, s, r: (who, s, [(*r[0][:5], [1.0], *r[0][6:])]),         # a list where a number goes
    lambda who, s, r: (who, s, [("hw1", "s9", *r[0][2:])]),              # another student's result
    lambda who, s, r: (who, (*s[:6], {"notes": 1}, *s[7:]), r),          # an object as text
    lambda who, s, r: None,
])
def test_rows_encoded_in_another_shape_are_refused_before_anything_is_written(tmp_path, bent):
    from grader.store.rows import encoded
    good = encoded(submission("s2", "x"), [result("p1", "a", student="s2", content_hash="x")])
    with Gradebook(tmp_path / "g.sqlite") as gb:
        with pytest.raises(ValueError, match="another shape"):
            gb.record_encoded([good, bent(*encoded(submission(), ROWS))])
        assert gb.submissions(A) == []


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


def test_handins_accumulate_and_the_one_received_last_counts(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission(received_at="2026-11-30T10:00:00+00:00"), ROWS)
        gb.record(submission("s2", "x"), [result("p1", "a", student="s2", content_hash="x")])
        late = [result("p1", "a", 0.5, "partial", content_hash="h2")]
        gb.record(submission(content_hash="h2", score=0.5, received_at="2026-12-02T10:00:00+00:00"), late)
        assert gb.submission(A, "s1").content_hash == "h2" and gb.results(A, "s1") == late
        assert [h.content_hash for h in gb.handins(A, "s1")] == ["h2", "h1"]     # both kept
        assert gb.results(A, "s1", handin="h1") == ROWS
        # the main folder graded again, after the late one: the late one still counts
        gb.record(submission(received_at="2026-11-30T10:00:00+00:00"), ROWS)
        assert gb.submission(A, "s1").content_hash == "h2"
        assert [s.student for s in gb.submissions(A)] == ["s1", "s2"]
        assert gb.results(A, "s2") == [result("p1", "a", student="s2", content_hash="x")]


def test_a_handin_graded_again_replaces_only_its_own_rows(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(submission(handin="n1"), ROWS)
        gb.record(submission(content_hash="h9", handin="n2"), ROWS[:1])
        # n1 graded against a rebuilt key: a new fingerprint, the same notebook
        regraded = [result("p1", "a", 0.0, "failed", content_hash="h1b")]
        gb.record(submission(content_hash="h1b", handin="n1"), regraded)
        assert {h.handin: h.content_hash for h in gb.handins(A, "s1")} == {"n1": "h1b", "n2": "h9"}
        assert gb.results(A, "s1", handin="n1") == regraded
        assert gb.results(A, "s1", handin="n2") == ROWS[:1]
        assert gb.is_current(A, "s1", "h1b") and not gb.is_current(A, "s1", "h1")


def test_a_schema_1_gradebook_is_migrated_with_every_grade(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as c:
        c.executescript(SCHEMA_1)
        c.execute("INSERT INTO meta VALUES ('format', 'attnkit-gradebook'), ('schema_version', '1')")
        c.execute("INSERT INTO submissions VALUES ('hw1', 's1', 'a.ipynb', 'h1', 'graded', '[\"n\"]', 2, 3, 5, "
                  "'2026-01-01T00:00:00+00:00', '0.1.0')")
        c.execute("INSERT INTO submissions VALUES ('hw1', 's2', '', '', 'missing', '[]', 0, 3, 0, "
                  "'2026-01-01T00:00:00+00:00', '0.1.0')")
        c.execute("INSERT INTO results VALUES ('hw1', 's1', 'p', 'a', 0, 2, 3, 'partial', 'm', NULL, '1.5', 4, 'h1')")
    with Gradebook(path) as gb:
        (row,) = gb.submissions(A)
        assert (row.student, row.content_hash, row.handin, row.score, row.notes) == ("s1", "h1", "h1", 2.0, ("n",))
        (r,) = gb.results(A)
        assert (r.problem, r.part, r.score, r.status, r.answer) == ("p", "a", 2.0, "partial", 1.5)
        assert gb.submission(A, "s2") is None        # missing: a fact of the report now
        assert row.received_from == "schema 1"
        # the same notebook graded again (schema 1 named it by what was graded): replaced, not
        # kept beside as a second handin
        regraded = SubmissionRow(A, "s1", "a.ipynb", "h1-new", "graded", (), 3.0, 3.0, handin="notebook-hash")
        gb.record(regraded, [])
        assert [h.handin for h in gb.handins(A, "s1")] == ["notebook-hash"]
    with sqlite3.connect(path) as c:
        assert dict(c.execute("SELECT key, value FROM meta"))["schema_version"] == str(SCHEMA_VERSION)


STUDENTS, NOTEBOOKS = ("s1", "s2", "s3"), ("n1", "n2", "n3")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STUDENTS), st.sampled_from(NOTEBOOKS), st.integers(0, 3),
                          st.integers(0, 5)), max_size=25))
def test_no_recorded_grade_is_lost_or_changed_except_by_its_own_regrade(tmp_path_factory, runs):
    """Any sequence of records (a handin of a student, graded to some score, received on
    some day): every handin keeps the last grade recorded for it, and the one received last
    counts."""
    path = tmp_path_factory.mktemp("prop") / "g.sqlite"
    want: dict = {}
    with Gradebook(path) as gb:
        for student, notebook, score, day in runs:
            handin = f"{student}-{notebook}"
            when = f"2026-12-0{day + 1}T00:00:00+00:00"
            rows = [result("p", "a", float(score), "partial", student=student, content_hash=f"h{score}")]
            gb.record(submission(student, f"h{score}", score=float(score), handin=handin,
                                 received_at=when), rows)
            want[(student, handin)] = (float(score), when)
            for (s, h), (expected, _) in want.items():
                (got,) = gb.results(A, s, handin=h)
                assert got.score == expected
        for student in STUDENTS:
            mine = {h: w for (s, h), w in want.items() if s == student}
            counted = gb.submission(A, student)
            if not mine:
                assert counted is None
                continue
            latest = max(w[1] for w in mine.values())
            assert counted.received_at == latest and mine[counted.handin][1] == latest


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
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
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


def test_a_parts_history_is_read_by_an_index_not_the_whole_log(tmp_path):
    import sqlite3
    path = tmp_path / "g.sqlite"
    Gradebook(path).close()
    with sqlite3.connect(path) as c:
        plan = c.execute("EXPLAIN QUERY PLAN SELECT seq FROM mark_log WHERE assignment = ? AND student = ? "
                         "AND problem = ? AND part = ? ORDER BY seq", ("a", "s", "p", "q")).fetchall()
        assert "mark_log_part" in str(plan)
        c.execute("DROP INDEX mark_log_part")                # a schema-3 file written before the index
    Gradebook(path).close()
    with sqlite3.connect(path) as c:
        assert c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'mark_log_part'").fetchone()


def test_part_results_can_read_only_the_counted_handins(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        for student, handin in (("s1", "h1"), ("s1", "h2"), ("s2", "h3")):
            gb.record(SubmissionRow("hw", student, f"{handin}.ipynb", handin, "graded"),
                      [ResultRow("hw", student, "p", "q", 1.0, 1.0, "passed", answer=handin)])
        assert sorted(h for h, _ in gb.part_results("hw", "p", "q")) == ["h1", "h2", "h3"]
        chosen = gb.part_results("hw", "p", "q", handins={"s1": "h1", "s2": "h3"})
        assert sorted((h, r.answer) for h, r in chosen) == [("h1", "h1"), ("h3", "h3")]
        assert gb.part_results("hw", "p", "q", handins={}) == []


def _log_entry(c, seq=None, grader="ta1"):
    columns = "assignment, student, problem, part, version, event, grader, at, mark, note"
    values = (A, "s1", "p", "q", 1, "mark", grader, "2026-01-01T00:00:00+00:00", "{}", "")
    if seq is None:
        c.execute(f"INSERT INTO mark_log ({columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
    else:
        c.execute(f"INSERT OR REPLACE INTO mark_log (seq, {columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (seq, *values))


@pytest.mark.parametrize("seq", [1, 2, 0, -1, -5])
def test_the_mark_log_refuses_an_insert_or_replace_over_or_before_its_entries(tmp_path, seq):
    """REPLACE deletes the old row by conflict resolution, which fires no DELETE trigger: an
    entry could be rewritten, or one slipped in before the others, without the insert guard."""
    path = tmp_path / "g.sqlite"
    Gradebook(path).close()
    with sqlite3.connect(path) as c:
        _log_entry(c)
        _log_entry(c)
    with sqlite3.connect(path) as c:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            _log_entry(c, seq, grader="forger")
        c.execute("REPLACE INTO mark_log SELECT * FROM mark_log WHERE 0")      # (nothing to replace: fine)
    with sqlite3.connect(path) as c:
        assert c.execute("SELECT seq, grader FROM mark_log ORDER BY seq").fetchall() == [(1, "ta1"), (2, "ta1")]
        _log_entry(c)                                                          # appending still works
        _log_entry(c, 4)                                                       # (the next number: an append)
        assert [r[0] for r in c.execute("SELECT seq FROM mark_log ORDER BY seq")] == [1, 2, 3, 4]


def test_an_existing_gradebook_gains_the_mark_log_insert_guard_when_opened(tmp_path):
    path = tmp_path / "g.sqlite"
    Gradebook(path).close()
    with sqlite3.connect(path) as c:
        guards = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                          "AND sql LIKE '%INSERT ON mark_log%'")]
        assert guards
        for name in guards:                                   # a gradebook written before the guard
            c.execute(f"DROP TRIGGER {name}")
        _log_entry(c)
        _log_entry(c, 1, grader="forger")                     # (what the guard is for)
    Gradebook(path).close()
    with sqlite3.connect(path) as c:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            _log_entry(c, 1, grader="forger again")
        assert c.execute("SELECT grader FROM mark_log").fetchall() == [("forger",)]
