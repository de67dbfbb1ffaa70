"""The gradebook: every submission a student handed in, each with every graded part, in one
SQLite file. It only ever adds knowledge.

A **handin** is one distinct notebook a student handed in (its content hash): the main
folder's, a late one, a resubmission. Each is kept with its own grade; grading it again (a
rebuilt key, a newer kit) replaces that handin's grade and nothing else. Which handin
*counts* is decided when the gradebook is read (``submissions``, ``results``: the one
received last; under a deadline, its ``counts:`` rule, ``grader.store.grades``), and a student with
none is missing — a fact of the report, never a row that overwrites a grade. So runs over any
sequence of folders (the main one, a late one, a single resubmission, an empty one)
accumulate. A handin's receipt time is knowledge too: grading it again keeps the time
recorded from a better source (an LMS export over a file's modification time,
``grader.intake.receipts.merged``) and ``receipt_changes`` says what was kept or replaced.

Why SQLite in WAL mode: a batch of hundreds of notebooks is graded by several threads and may
be interrupted at any moment (Ctrl-C, a laptop lid, a killed job). Each handin is recorded in
one transaction that replaces that handin's rows, so after a crash the file holds, for every
handin, either the old grading or the new one, never half of each; re-running the batch skips
what is current (``is_current``) and grades the rest. WAL lets ``attnkit report`` read while a
batch is writing, and ``synchronous=NORMAL`` is durable enough for that (a power cut can lose the
last commits, never corrupt the file), and much faster than FULL.

Primary keys make every write an upsert: recording the same submission twice leaves the same
rows. ``graded_at`` and ``first_seen`` are kept for the instructor's own queries (and
``first_seen`` to order handins whose receipt time is unknown) but are part of no dataclass and
no report, so reports are byte-for-byte the same for the same grading. A gradebook of schema 1
(one row per student) is migrated in place when it is opened, every grade kept
(``grader.store.schema``).

This module uses the standard library only: the grader's trusted side imports it next to the
sandbox client, and nothing here needs numpy.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from grader.intake.receipts import ReceiptChange, merged
from grader.store.rows import (RESULT_COLUMNS, RESULT_INSERT, SUBMISSION_COLUMNS, ResultRow, SubmissionRow, encoded,
                               result_row, sql_answer_digest, storable_text, submission_row, well_formed)
from grader.store.schema import MIGRATED, create_or_upgrade, format_problem

BUSY_TIMEOUT_MS = 30_000
# The handin that counts for a student: the one received last (one whose time is unknown is
# older than any with a time), then the one recorded last. (A late policy may choose another:
# grader.policy reads every handin.)
_LATEST_FIRST = "COALESCE(received_at, '') DESC, first_seen DESC, handin DESC"


class GradebookError(RuntimeError):
    """A file that is not a gradebook this version can read, or a damaged one; the message
    names the file."""


class Gradebook:
    """``with Gradebook(path) as gb: …``. Created if the file does not exist; safe to share
    between threads (calls are serialised) and between processes (SQLite's locks, waiting up
    to ``BUSY_TIMEOUT_MS`` for a writer)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        # Receipt times this connection's writes kept against a worse source, or replaced
        # (grader.intake.receipts.merged), in the order written: what a grading run reports.
        self.receipt_changes: list[ReceiptChange] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: transactions are begun and ended here, explicitly.
            self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                         isolation_level=None, check_same_thread=False)
            self._conn.create_function("answer_digest", 1, sql_answer_digest, deterministic=True)
            with self._errors():
                self._prepare()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    @contextmanager
    def _errors(self):
        try:
            yield
        except sqlite3.DatabaseError as err:
            raise GradebookError(f"{self.path}: not a readable gradebook ({err})") from None

    def _prepare(self) -> None:
        c = self._conn
        c.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = c.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise GradebookError(f"{self.path}: SQLite cannot use WAL mode here (it says "
                                 f"{mode!r}); put the gradebook on a local disk")
        c.execute("PRAGMA synchronous = NORMAL")
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("BEGIN IMMEDIATE")  # two processes opening a new file: one creates it
        try:
            create_or_upgrade(c)
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise
        problem = format_problem(c)
        if problem is not None:
            raise GradebookError(f"{self.path}: {problem}")
        problems = [r[0] for r in c.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise GradebookError(f"{self.path}: the gradebook is damaged: " + "; ".join(problems[:5]))

    # ---------------------------------------------------------------- lifecycle

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "Gradebook":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise GradebookError(f"{self.path}: the gradebook is closed")
        return self._conn

    # --------------------------------------------- for modules that keep their own tables

    @contextmanager
    def transaction(self):
        """``with gb.transaction() as c:`` one write transaction (BEGIN IMMEDIATE: a second
        writer waits), committed when the block ends, rolled back when it raises. What
        ``grader.store.marks`` writes its hand grades with."""
        with self._lock, self._errors():
            c = self._connection()
            c.execute("BEGIN IMMEDIATE")
            try:
                yield c
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        """Rows of one read-only statement (a consistent snapshot: WAL)."""
        with self._lock, self._errors():
            return self._connection().execute(sql, args).fetchall()

    # ------------------------------------------------------------------ writing

    def is_current(self, assignment: str, student: str, content_hash: str,
                   kit_version: str | None = None) -> bool:
        """True when this exact notebook graded against this exact key entry (``content_hash``,
        and if given this kit version) has already been graded: a resumed batch skips it.
        Handins that could not be graded (``error``) are never current, so a re-run retries them."""
        with self._lock, self._errors():
            rows = self._connection().execute(
                "SELECT status, kit_version FROM submissions "
                "WHERE assignment = ? AND student = ? AND content_hash = ?",
                (assignment, student, content_hash)).fetchall()
        return any(status == "graded" and (kit_version is None or version == kit_version)
                   for status, version in rows)

    def graded_students(self, assignment: str) -> set[str]:
        """The students of ``assignment`` with a handin graded (not ``error``): the only ones
        ``is_current`` can say yes for, so a batch need not hash the others' notebooks first."""
        with self._lock, self._errors():
            rows = self._connection().execute(
                "SELECT DISTINCT student FROM submissions WHERE assignment = ? AND status = 'graded'",
                (assignment,)).fetchall()
        return {student for (student,) in rows}

    def record(self, submission: SubmissionRow, results: list[ResultRow]) -> None:
        """Store one graded handin with all its parts, in one transaction that replaces that
        handin's previous rows (a part no longer graded leaves no stale row; a crash mid-way
        leaves the previous grading whole) and touches no other handin and no other student.
        Recording exactly what is stored already changes nothing, not even ``graded_at``."""
        self.record_many([(submission, results)])

    def record_many(self, graded: list[tuple[SubmissionRow, list[ResultRow]]]) -> None:
        """``record`` for several handins in one transaction (all of them or none). Every
        handin is checked (``encoded``) before anything is written."""
        self._write([encoded(submission, results) for submission, results in graded])

    def record_encoded(self, rows: list) -> None:
        """``record_many`` of handins ``encoded`` elsewhere (a cluster's shard, encoded and so
        checked on its worker: all of its handins or none), each checked again in shape here
        (``well_formed``) before anything is written."""
        self._write([well_formed(row) for row in rows])

    def _write(self, rows: list[tuple[tuple, tuple, list]]) -> None:
        with self._lock, self._errors():
            c = self._connection()
            c.execute("BEGIN IMMEDIATE")
            changes: list[ReceiptChange] = []
            try:
                for who, new_submission, new_results in rows:
                    self._replace(c, who, new_submission, new_results, changes)
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    c.execute("ROLLBACK")
                raise
            self.receipt_changes += changes

    def set_receipt(self, assignment: str, student: str, handin: str, received_at: str | None,
                    received_from: str) -> None:
        """Give a recorded handin a receipt time from ``received_from`` (an LMS export for a
        handin not graded again), as ``record`` would: a worse source keeps the recorded one."""
        who = (assignment, student, handin)
        with self.transaction() as c:
            recorded = c.execute("SELECT received_at, received_from FROM submissions WHERE "
                                 "assignment = ? AND student = ? AND handin = ?", who).fetchone()
            at, source, change = merged(student, handin, recorded,
                                        (received_at, storable_text(received_from)))
            if recorded is not None and (at, source) != tuple(recorded):
                c.execute("UPDATE submissions SET received_at = ?, received_from = ? WHERE "
                          "assignment = ? AND student = ? AND handin = ?", (at, source, *who))
        if recorded is not None and change is not None:
            self.receipt_changes.append(change)

    def _replace(self, c, who: tuple, new_submission: tuple, new_results: list, changes: list) -> None:
        stored = self._stored(who)
        if stored[0] is not None:        # the receipt time recorded from a better source stays
            at, source, change = merged(who[1], who[2], stored[0][-2:], new_submission[-2:])
            new_submission = (*new_submission[:-2], at, source)
            if change is not None:
                changes.append(change)
        if stored == (new_submission, new_results):
            return
        # (to the microsecond: the order of two handins with no receipt time)
        now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        columns = ", ".join(SUBMISSION_COLUMNS) + ", first_seen, graded_at"
        updates = ", ".join(f"{k} = excluded.{k}" for k in SUBMISSION_COLUMNS[3:])
        c.execute(f"INSERT INTO submissions ({columns}) VALUES "
                  f"({', '.join('?' * (len(SUBMISSION_COLUMNS) + 2))}) "
                  f"ON CONFLICT (assignment, student, handin) DO UPDATE SET {updates}, "
                  "graded_at = excluded.graded_at", (*new_submission, now, now))
        c.execute("DELETE FROM results WHERE assignment = ? AND student = ? AND handin = ?", who)
        # A schema-1 row is named by what was graded, not by the notebook: the same
        # notebook graded again replaces it rather than becoming a second handin.
        c.execute("DELETE FROM submissions WHERE assignment = ? AND student = ? AND handin != ? "
                  "AND received_from = ? AND path = ?", (*who, MIGRATED, new_submission[3]))
        c.executemany(f"INSERT INTO results ({', '.join(RESULT_INSERT)}) VALUES "
                      f"({', '.join('?' * len(RESULT_INSERT))})", new_results)

    def _stored(self, who: tuple[str, str, str]):
        c = self._conn
        sub = c.execute(f"SELECT {', '.join(SUBMISSION_COLUMNS)} FROM submissions "
                        "WHERE assignment = ? AND student = ? AND handin = ?", who).fetchone()
        res = c.execute(f"SELECT {', '.join(RESULT_INSERT)} FROM results "
                        "WHERE assignment = ? AND student = ? AND handin = ? ORDER BY position", who).fetchall()
        return sub, res

    # ------------------------------------------------------------------ reading

    def _counted(self) -> str:
        """SQL for (student, handin) of each student's counting handin, for one assignment (?)."""
        return ("SELECT student, handin FROM (SELECT student, handin, ROW_NUMBER() OVER "
                f"(PARTITION BY student ORDER BY {_LATEST_FIRST}) AS n FROM submissions "
                "WHERE assignment = ?) WHERE n = 1")

    def submissions(self, assignment: str) -> list[SubmissionRow]:
        """The handin that counts for each student of ``assignment`` (the one received last),
        by student id. A student with none is missing."""
        columns = ", ".join(f"s.{c}" for c in SUBMISSION_COLUMNS)
        with self._lock, self._errors():
            rows = self._connection().execute(
                f"SELECT {columns} FROM submissions s JOIN ({self._counted()}) c "
                "USING (student, handin) WHERE s.assignment = ? ORDER BY s.student",
                (assignment, assignment)).fetchall()
        return [submission_row(r) for r in rows]

    def submission(self, assignment: str, student: str) -> SubmissionRow | None:
        """The handin that counts for ``student``, or None (missing)."""
        handins = self.handins(assignment, student)
        return handins[0] if handins else None

    def students(self, assignment: str) -> list[str]:
        """Every student with a handin of ``assignment``, sorted."""
        with self._lock, self._errors():
            return [r[0] for r in self._connection().execute(
                "SELECT DISTINCT student FROM submissions WHERE assignment = ? ORDER BY student",
                (assignment,)).fetchall()]

    def handins(self, assignment: str, student: str | None = None,
                students: list[str] | None = None) -> list[SubmissionRow]:
        """Every handin of ``assignment`` (of ``student``, or of ``students``), by student, the
        counting one first."""
        query = f"SELECT {', '.join(SUBMISSION_COLUMNS)} FROM submissions WHERE assignment = ?"
        args: tuple = (assignment,)
        if student is not None:
            query += " AND student = ?"
            args += (student,)
        if students is not None:
            query += " AND student IN (SELECT value FROM json_each(?))"
            args += (json.dumps(students),)
        with self._lock, self._errors():
            rows = self._connection().execute(
                query + f" ORDER BY student, {_LATEST_FIRST}", args).fetchall()
        return [submission_row(r) for r in rows]

    def part_results(self, assignment: str, problem: str, part: str, student: str | None = None,
                     handins: dict[str, str] | None = None) -> list[tuple[str, ResultRow]]:
        """(handin, result) of one part in every handin of ``assignment`` (of ``student``), or
        with ``handins`` (student → handin) only in those: the marking queue's counted ones,
        without reading every earlier handin's answer."""
        query = (f"SELECT handin, {', '.join(RESULT_COLUMNS)} FROM results WHERE assignment = ? "
                 "AND problem = ? AND part = ?")
        args: tuple = (assignment, problem, part)
        if student is not None:
            query, args = query + " AND student = ?", args + (student,)
        if handins is not None:
            query += " AND (student, handin) IN (SELECT key, value FROM json_each(?))"
            args += (json.dumps(handins),)
        with self._lock, self._errors():
            rows = self._connection().execute(query, args).fetchall()
        return [(r[0], result_row(r[1:])) for r in rows]

    def has_result(self, assignment: str, statuses: tuple[str, ...], message_start: str) -> bool:
        """Does any result row of ``assignment`` (any handin) have one of ``statuses`` and a
        message starting with ``message_start``? One pass over the rows, nothing made of them."""
        marks = ", ".join("?" * len(statuses))
        with self._lock, self._errors():
            return self._connection().execute(
                f"SELECT 1 FROM results WHERE assignment = ? AND status IN ({marks}) AND "
                "substr(message, 1, ?) = ? LIMIT 1",
                (assignment, *statuses, len(message_start), message_start)).fetchone() is not None

    def part_statuses(self, assignment: str) -> list[tuple[str, str, str, str, str]]:
        """(student, handin, problem, part, status) of every result row of ``assignment``:
        what the marking page's progress needs, without a score, a message or an answer."""
        with self._lock, self._errors():
            return self._connection().execute(
                "SELECT student, handin, problem, part, status FROM results WHERE assignment = ?",
                (assignment,)).fetchall()

    def handin_results(self, assignment: str, handins: dict[str, str],
                       answers: bool = True) -> list[ResultRow]:
        """Result rows of ``handins`` (student → handin), by student, then in the order they
        were recorded: a slice of the class at a time (``results`` reads all of it)."""
        columns = [f"r.{c}" if answers or c != "answer" else "NULL AS answer" for c in RESULT_COLUMNS]
        query = (f"SELECT {', '.join(columns)} FROM results r JOIN json_each(?) c "
                 "ON r.student = c.key AND r.handin = c.value WHERE r.assignment = ? "
                 "ORDER BY r.student, r.position, r.problem, r.part")
        with self._lock, self._errors():
            rows = self._connection().execute(query, (json.dumps(handins), assignment)).fetchall()
        return [result_row(r) for r in rows]

    def results(self, assignment: str, student: str | None = None, answers: bool = True,
                handin: str | None = None) -> list[ResultRow]:
        """Result rows of each student's counting handin (or of ``handin``), by student, then
        in the order they were recorded (the key's problem and part order). Without
        ``answers`` every row's answer is None: a class's answers (up to 64 kB a part) are
        read only where they are shown, one student at a time."""
        columns = [f"r.{c}" if answers or c != "answer" else "NULL AS answer" for c in RESULT_COLUMNS]
        if handin is None:
            query = (f"SELECT {', '.join(columns)} FROM results r JOIN ({self._counted()}) c "
                     "USING (student, handin) WHERE r.assignment = ?")
            args: tuple = (assignment, assignment)
        else:
            query = f"SELECT {', '.join(columns)} FROM results r WHERE r.assignment = ? AND r.handin = ?"
            args = (assignment, handin)
        if student is not None:
            query += " AND r.student = ?"
            args += (student,)
        with self._lock, self._errors():
            rows = self._connection().execute(
                query + " ORDER BY r.student, r.position, r.problem, r.part", args).fetchall()
        return [result_row(r) for r in rows]
