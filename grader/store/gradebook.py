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
(one row per student) is migrated in place when it is opened, every grade kept.

This module uses the standard library only: the grader's trusted side imports it next to the
sandbox client, and nothing here needs numpy.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from formats.textfile import printable

from grader.intake.receipts import ReceiptChange, merged

FORMAT = "attnkit-gradebook"
SCHEMA_VERSION = 3     # 3: hand grades (grader.store.marks) and their log
# "ATKG": SQLite's own slot for the file's type, so `file` and other tools can tell it apart
# from any other database; the meta table is what this module checks.
APPLICATION_ID = 0x41544B47
BUSY_TIMEOUT_MS = 30_000
MIGRATED = "schema 1"     # the received_from of a handin migrated from a schema-1 gradebook

RESULT_STATUSES = ("passed", "failed", "partial", "missing", "error", "manual")
# graded: every part has a verdict (an unreadable notebook too: 0 points, the reason per part);
# error: the grader itself failed on some part (see the messages): graded again next run.
# (A student with no handin is "missing" in the reports; the gradebook stores no such row.)
SUBMISSION_STATUSES = ("graded", "error")

# A student's answer is stored so the feedback page can show it, not to re-grade it: a
# 2000×2000 matrix of floats would make the file huge for nothing, so beyond this many bytes
# of JSON only a marker is kept.
ANSWER_LIMIT = 64 * 1024
OMITTED = "omitted"  # the marker's only key: {"omitted": "why"}; encoded values never use it

_SCHEMA = f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE submissions (
    assignment    TEXT NOT NULL,
    student       TEXT NOT NULL,
    handin        TEXT NOT NULL,            -- the notebook's content hash: one row per distinct notebook
    path          TEXT NOT NULL,
    content_hash  TEXT NOT NULL,            -- what was graded: the notebook and the key entry together
    status        TEXT NOT NULL CHECK (status IN {SUBMISSION_STATUSES!r}),
    notes         TEXT NOT NULL,            -- JSON list of strings
    issues        TEXT NOT NULL,            -- JSON list of [code, message]: intake's and the program's
    score         REAL NOT NULL,
    max_score     REAL NOT NULL,
    duration_ms   INTEGER NOT NULL,
    kit_version   TEXT NOT NULL,
    received_at   TEXT,                     -- UTC, ISO 8601, when it was handed in (None: unknown)
    received_from TEXT NOT NULL,            -- where that time comes from
    first_seen    TEXT NOT NULL,            -- UTC, when a run first recorded it (never in a report)
    graded_at     TEXT NOT NULL,            -- UTC, ISO 8601, never in a report
    PRIMARY KEY (assignment, student, handin)
);
CREATE TABLE results (
    assignment    TEXT NOT NULL,
    student       TEXT NOT NULL,
    handin        TEXT NOT NULL,
    problem       TEXT NOT NULL,
    part          TEXT NOT NULL,
    position      INTEGER NOT NULL,         -- order as recorded: the key's problem and part order
    score         REAL NOT NULL,
    max_score     REAL NOT NULL,
    status        TEXT NOT NULL CHECK (status IN {RESULT_STATUSES!r}),
    message       TEXT NOT NULL,
    misconception TEXT,
    answer        TEXT,                     -- JSON (formats.serialize.to_jsonable), capped
    duration_ms   INTEGER NOT NULL,
    content_hash  TEXT NOT NULL,
    PRIMARY KEY (assignment, student, handin, problem, part),
    FOREIGN KEY (assignment, student, handin) REFERENCES submissions (assignment, student, handin)
        ON DELETE CASCADE
);
"""

# One part's history (grader.store.marks.history, the sheet's conflict check) without reading the
# whole log: a class's log grows by an event per save.
_MARK_LOG_INDEX = ("CREATE INDEX IF NOT EXISTS mark_log_part ON mark_log "
                   "(assignment, student, problem, part, seq)")

# An INSERT OR REPLACE over an entry deletes it by conflict resolution, which fires no DELETE
# trigger: an insert may neither name an entry that exists nor land before the last one (its
# number is the log's order). In a BEFORE trigger a number SQLite is to choose reads -1, which
# no entry has (the AFTER trigger refuses a number below 1), so the kit's own inserts pass.
_MARK_LOG_INSERT_GUARDS = ("""
CREATE TRIGGER IF NOT EXISTS mark_log_append_only_replace BEFORE INSERT ON mark_log
WHEN EXISTS (SELECT 1 FROM mark_log WHERE seq = NEW.seq)
BEGIN SELECT RAISE(ABORT, 'mark_log is append-only'); END""", """
CREATE TRIGGER IF NOT EXISTS mark_log_append_only_insert AFTER INSERT ON mark_log
WHEN NEW.seq < 1 OR EXISTS (SELECT 1 FROM mark_log WHERE seq > NEW.seq)
BEGIN SELECT RAISE(ABORT, 'mark_log is append-only'); END""")

# Hand grades (grader.store.marks): the current one per part, and the log of every grading event.
# A student's hand grade belongs to the student's part, not to a handin: a resubmission keeps
# it (flagged when the answer it was applied to is no longer the counted one). The log is
# append-only: triggers refuse an UPDATE, a DELETE and an insert over or before an entry, so
# history cannot be rewritten by mistake.
MARK_KINDS = ("hand", "override")
MARK_EVENTS = ("mark", "override", "clear", "rescore", "import")
_MARKS_SCHEMA = (f"""
CREATE TABLE marks (
    assignment     TEXT NOT NULL,
    student        TEXT NOT NULL,
    problem        TEXT NOT NULL,
    part           TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN {MARK_KINDS!r}),
    active         INTEGER NOT NULL,        -- 0: cleared (the part waits for a human again)
    items          TEXT NOT NULL,           -- JSON {{item id: its points when applied}}
    adjustment     REAL NOT NULL,
    comment        TEXT NOT NULL,           -- shown to the student
    reason         TEXT NOT NULL,           -- an override's reason (graders only)
    score          REAL NOT NULL,
    max_score      REAL NOT NULL,
    base           REAL NOT NULL,           -- the rubric's start, or the auto score overridden
    rubric_version TEXT NOT NULL,
    answer_digest  TEXT NOT NULL,           -- the answer it was applied to
    auto_digest    TEXT NOT NULL,           -- an override: the auto result it replaced ('' for hand)
    flag           TEXT NOT NULL,           -- why it needs another look ('' when it does not)
    grader         TEXT NOT NULL,
    marked_at      TEXT NOT NULL,           -- UTC, ISO 8601
    version        INTEGER NOT NULL,        -- 1, 2, …: one per save (two TAs never overwrite)
    PRIMARY KEY (assignment, student, problem, part)
)""", f"""
CREATE TABLE mark_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    assignment TEXT NOT NULL,
    student    TEXT NOT NULL,
    problem    TEXT NOT NULL,
    part       TEXT NOT NULL,
    version    INTEGER NOT NULL,            -- the mark's version after this event
    event      TEXT NOT NULL CHECK (event IN {MARK_EVENTS!r}),
    grader     TEXT NOT NULL,
    at         TEXT NOT NULL,
    mark       TEXT NOT NULL,               -- JSON: the mark after the event
    note       TEXT NOT NULL                -- what changed, in words (a re-score: old → new)
)""", """
CREATE TRIGGER mark_log_append_only_update BEFORE UPDATE ON mark_log
BEGIN SELECT RAISE(ABORT, 'mark_log is append-only'); END""", """
CREATE TRIGGER mark_log_append_only_delete BEFORE DELETE ON mark_log
BEGIN SELECT RAISE(ABORT, 'mark_log is append-only'); END""", _MARK_LOG_INDEX, *_MARK_LOG_INSERT_GUARDS)

_SUBMISSION_COLUMNS = ("assignment", "student", "handin", "path", "content_hash", "status", "notes",
                       "issues", "score", "max_score", "duration_ms", "kit_version", "received_at",
                       "received_from")
_RESULT_COLUMNS = ("assignment", "student", "problem", "part", "position", "score", "max_score",
                   "status", "message", "misconception", "answer", "duration_ms", "content_hash")
_RESULT_INSERT = ("assignment", "student", "handin", *_RESULT_COLUMNS[2:])
# The handin that counts for a student: the one received last (one whose time is unknown is
# older than any with a time), then the one recorded last. (A late policy may choose another:
# grader.policy reads every handin.)
_LATEST_FIRST = "COALESCE(received_at, '') DESC, first_seen DESC, handin DESC"


class GradebookError(RuntimeError):
    """A file that is not a gradebook this version can read, or a damaged one; the message
    names the file."""


@dataclass(frozen=True)
class SubmissionRow:
    """One notebook a student handed in for one assignment, as graded. ``score``/``max_score``
    are the totals over its parts; ``notes`` say what the instructor should know (wrong
    student id in the notebook, a crashed cell, …). ``handin`` names the notebook (its
    content hash; ``content_hash``, what was graded, when not given); ``received_at`` is when
    it was handed in (UTC, ISO 8601, None when unknown) and ``received_from`` where that time
    comes from (nbgrader's timestamp.txt, an LMS export, the file's modification time)."""

    assignment: str
    student: str
    path: str
    content_hash: str
    status: str
    notes: tuple[str, ...] = ()
    score: float = 0.0
    max_score: float = 0.0
    duration_ms: int = 0
    kit_version: str = ""
    handin: str = ""
    received_at: str | None = None
    received_from: str = ""
    issues: tuple[tuple[str, str], ...] = ()   # (code, message): grader.intake.submissions's ISSUE_CODES, the program's

    def __post_init__(self):
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))
        object.__setattr__(self, "issues", tuple((str(c), str(m)) for c, m in self.issues))
        if not self.handin:
            object.__setattr__(self, "handin", self.content_hash)
        if self.status not in SUBMISSION_STATUSES:
            raise ValueError(f"submission status must be one of {', '.join(SUBMISSION_STATUSES)}, "
                             f"not {self.status!r}")


@dataclass(frozen=True)
class ResultRow:
    """One graded part. ``answer`` is the student's value made JSON-ready
    (``formats.serialize.to_jsonable``) or None; read back, an answer that was too large to
    store is ``{"omitted": reason}`` (see ``omitted_reason``). ``misconception`` is the code of
    the twin the wrong answer matched (``solutions.MISCONCEPTIONS``)."""

    assignment: str
    student: str
    problem: str
    part: str
    score: float
    max_score: float
    status: str
    message: str = ""
    misconception: str | None = None
    answer: object = field(default=None, hash=False)
    duration_ms: int = 0
    content_hash: str = ""

    def __post_init__(self):
        if self.status not in RESULT_STATUSES:
            raise ValueError(f"result status must be one of {', '.join(RESULT_STATUSES)}, "
                             f"not {self.status!r}")


def answer_digest(answer) -> str:
    """A short digest of a stored answer (a ``ResultRow.answer``; None: no answer): what a
    hand grade was applied to (``grader.store.marks``). SQL has it as ``answer_digest(answer)``
    (the column's JSON text), so a class's answers are digested without being read out."""
    text = json.dumps(answer, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _sql_answer_digest(text):
    return answer_digest(_stored_answer(text))


def omitted_reason(answer) -> str | None:
    """Why a stored answer was left out (too large), or None for a real answer."""
    if isinstance(answer, dict) and set(answer) == {OMITTED}:
        return str(answer[OMITTED])
    return None


def _answer_text(row: ResultRow) -> str | None:
    if row.answer is None:
        return None
    try:
        text = json.dumps(row.answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as err:
        raise ValueError(f"{row.student}: {row.problem}/{row.part}: the answer is not JSON-ready "
                         f"({err}); store formats.serialize.to_jsonable(value)") from None
    text = _text(text)
    size = len(text.encode("utf-8"))
    if size > ANSWER_LIMIT:
        reason = f"the answer was too large to keep ({size} bytes as JSON; the limit is {ANSWER_LIMIT})"
        text = json.dumps({OMITTED: reason}, ensure_ascii=False)
    return text


def _number(x, what: str) -> float:
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{what} must be a finite number, not {x}")
    return x


def _text(value) -> str:
    """Text SQLite can store: a lone surrogate (from a file name that is not UTF-8, or a
    student's string) becomes U+FFFD instead of failing the whole transaction."""
    return printable(str(value))


def _submission_values(s: SubmissionRow) -> tuple:
    return (s.assignment, s.student, s.handin, _text(s.path), s.content_hash, s.status,
            _text(json.dumps(list(s.notes), ensure_ascii=False)),
            _text(json.dumps([list(i) for i in s.issues], ensure_ascii=False)),
            _number(s.score, "score"), _number(s.max_score, "max_score"), int(s.duration_ms),
            s.kit_version, None if s.received_at is None else _text(s.received_at),
            _text(s.received_from))


def _result_values(position: int, handin: str, r: ResultRow) -> tuple:
    what = f"{r.student}: {r.problem}/{r.part}"
    return (r.assignment, r.student, handin, r.problem, r.part, position,
            _number(r.score, f"{what}: score"), _number(r.max_score, f"{what}: max_score"),
            r.status, _text(r.message), r.misconception, _answer_text(r), int(r.duration_ms),
            r.content_hash)


def encoded(submission: SubmissionRow, results: list[ResultRow]) -> tuple[tuple, tuple, list]:
    """(who, the submission's column values, the results' column values) as ``record``
    stores them; ValueError or TypeError for what the gradebook refuses (a part twice, a
    result of another student, a value it cannot store), before anything is written."""
    results = list(results)
    for r in results:
        if (r.assignment, r.student) != (submission.assignment, submission.student):
            raise ValueError(f"a result of {r.assignment}/{r.student} recorded with the "
                             f"submission of {submission.assignment}/{submission.student}")
    seen: set[tuple[str, str]] = set()
    for r in results:
        if (r.problem, r.part) in seen:
            raise ValueError(f"{r.student}: part {r.problem}/{r.part} recorded twice")
        seen.add((r.problem, r.part))
    who = (submission.assignment, submission.student, submission.handin)
    return who, _submission_values(submission), [_result_values(i, submission.handin, r)
                                                 for i, r in enumerate(results)]


def _submission_row(values) -> SubmissionRow:
    row = dict(zip(_SUBMISSION_COLUMNS, values))
    row["notes"] = tuple(json.loads(row["notes"]))
    row["issues"] = tuple(tuple(i) for i in json.loads(row["issues"]))
    return SubmissionRow(**row)


def _result_row(values) -> ResultRow:
    row = dict(zip(_RESULT_COLUMNS, values))
    del row["position"]
    row["answer"] = _stored_answer(row["answer"])
    return ResultRow(**row)


def _stored_answer(text: str | None):
    """A stored answer decoded; one the file holds damaged (edited by hand, a disk error) is
    read as left out, with why, so a report or forensics goes on with the rest of the class."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return {OMITTED: "the stored answer is damaged (not JSON)"}


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
            self._conn.create_function("answer_digest", 1, _sql_answer_digest, deterministic=True)
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
            if not self._tables():
                # one by one: executescript would COMMIT the transaction
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    c.execute(statement)
                for statement in _MARKS_SCHEMA:
                    c.execute(statement)
                c.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                              [("format", FORMAT), ("schema_version", str(SCHEMA_VERSION))])
                c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            elif self._schema_version() == 1:
                self._migrate_from_1()
                self._migrate_from_2()
            elif self._schema_version() == 2:
                self._migrate_from_2()
            elif "mark_log" in self._tables():
                # (a schema-3 file written before the index or the insert guards)
                for statement in (_MARK_LOG_INDEX, *_MARK_LOG_INSERT_GUARDS):
                    c.execute(statement)
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise
        self._check_format()
        problems = [r[0] for r in c.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise GradebookError(f"{self.path}: the gradebook is damaged: " + "; ".join(problems[:5]))

    def _schema_version(self) -> int | None:
        try:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            return int(row[0]) if row else None
        except (sqlite3.DatabaseError, ValueError):
            return None                   # not a gradebook: _check_format says so

    def _migrate_from_1(self) -> None:
        """Schema 1 kept one row per student (and wrote "missing" rows over grades): each
        graded row becomes that student's one handin, every part kept; "missing" rows, which
        hold no grade, are dropped (missing is now a fact of the report)."""
        c = self._conn
        if not {"submissions", "results"} <= self._tables():
            return                         # _check_format says what is wrong
        c.execute("ALTER TABLE results RENAME TO results_v1")
        c.execute("ALTER TABLE submissions RENAME TO submissions_v1")
        for statement in filter(str.strip, _SCHEMA.split(";")):
            if "CREATE TABLE meta" not in statement:
                c.execute(statement)
        c.execute("INSERT INTO submissions (assignment, student, handin, path, content_hash, status, "
                  "notes, issues, score, max_score, duration_ms, kit_version, received_at, received_from, "
                  "first_seen, graded_at) SELECT assignment, student, content_hash, path, content_hash, "
                  "status, notes, '[]', score, max_score, duration_ms, kit_version, NULL, ?, graded_at, "
                  "graded_at FROM submissions_v1 WHERE status != 'missing'", (MIGRATED,))
        c.execute(f"INSERT INTO results ({', '.join(_RESULT_INSERT)}) SELECT r.assignment, r.student, "
                  "s.content_hash, r.problem, r.part, r.position, r.score, r.max_score, r.status, "
                  "r.message, r.misconception, r.answer, r.duration_ms, r.content_hash "
                  "FROM results_v1 r JOIN submissions_v1 s USING (assignment, student) "
                  "WHERE s.status != 'missing'")
        c.execute("DROP TABLE results_v1")
        c.execute("DROP TABLE submissions_v1")
        c.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")

    def _migrate_from_2(self) -> None:
        """Schema 3 adds the hand grades' tables; every grade of schema 2 stays as it is."""
        if not {"submissions", "results"} <= self._tables() or "marks" in self._tables():
            return                         # _check_format says what is wrong
        for statement in _MARKS_SCHEMA:
            self._conn.execute(statement)
        self._conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                           (str(SCHEMA_VERSION),))

    def _tables(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _check_format(self) -> None:
        tables = self._tables()
        if "meta" not in tables:
            raise GradebookError(f"{self.path}: not an attnkit gradebook (a SQLite database with "
                                 f"tables {', '.join(sorted(tables))})")
        meta = dict(self._conn.execute("SELECT key, value FROM meta"))
        if meta.get("format") != FORMAT:
            raise GradebookError(f"{self.path}: not an attnkit gradebook (format "
                                 f"{meta.get('format')!r})")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise GradebookError(f"{self.path}: not a readable gradebook (schema version "
                                 f"{meta.get('schema_version')!r})") from None
        if version > SCHEMA_VERSION:
            raise GradebookError(f"{self.path}: written by a newer attnkit (gradebook schema "
                                 f"{version}; this version reads schema {SCHEMA_VERSION}): upgrade "
                                 "attnkit to read it")
        if version < SCHEMA_VERSION or not {"submissions", "results", "marks", "mark_log"} <= tables:
            raise GradebookError(f"{self.path}: not a readable gradebook (schema {version}, "
                                 f"tables {', '.join(sorted(tables))})")

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
        """``record`` for several handins in one transaction (a cluster's shard: all of its
        results or none). Every handin is checked (``encoded``) before anything is written."""
        rows = [encoded(submission, results) for submission, results in graded]
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
            at, source, change = merged(student, handin, recorded, (received_at, _text(received_from)))
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
        columns = ", ".join(_SUBMISSION_COLUMNS) + ", first_seen, graded_at"
        updates = ", ".join(f"{k} = excluded.{k}" for k in _SUBMISSION_COLUMNS[3:])
        c.execute(f"INSERT INTO submissions ({columns}) VALUES "
                  f"({', '.join('?' * (len(_SUBMISSION_COLUMNS) + 2))}) "
                  f"ON CONFLICT (assignment, student, handin) DO UPDATE SET {updates}, "
                  "graded_at = excluded.graded_at", (*new_submission, now, now))
        c.execute("DELETE FROM results WHERE assignment = ? AND student = ? AND handin = ?", who)
        # A schema-1 row is named by what was graded, not by the notebook: the same
        # notebook graded again replaces it rather than becoming a second handin.
        c.execute("DELETE FROM submissions WHERE assignment = ? AND student = ? AND handin != ? "
                  "AND received_from = ? AND path = ?", (*who, MIGRATED, new_submission[3]))
        c.executemany(f"INSERT INTO results ({', '.join(_RESULT_INSERT)}) VALUES "
                      f"({', '.join('?' * len(_RESULT_INSERT))})", new_results)

    def _stored(self, who: tuple[str, str, str]):
        c = self._conn
        sub = c.execute(f"SELECT {', '.join(_SUBMISSION_COLUMNS)} FROM submissions "
                        "WHERE assignment = ? AND student = ? AND handin = ?", who).fetchone()
        res = c.execute(f"SELECT {', '.join(_RESULT_INSERT)} FROM results "
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
        columns = ", ".join(f"s.{c}" for c in _SUBMISSION_COLUMNS)
        with self._lock, self._errors():
            rows = self._connection().execute(
                f"SELECT {columns} FROM submissions s JOIN ({self._counted()}) c "
                "USING (student, handin) WHERE s.assignment = ? ORDER BY s.student",
                (assignment, assignment)).fetchall()
        return [_submission_row(r) for r in rows]

    def submission(self, assignment: str, student: str) -> SubmissionRow | None:
        """The handin that counts for ``student``, or None (missing)."""
        handins = self.handins(assignment, student)
        return handins[0] if handins else None

    def handins(self, assignment: str, student: str | None = None) -> list[SubmissionRow]:
        """Every handin of ``assignment`` (of ``student``), by student, the counting one first."""
        query = f"SELECT {', '.join(_SUBMISSION_COLUMNS)} FROM submissions WHERE assignment = ?"
        args: tuple = (assignment,)
        if student is not None:
            query += " AND student = ?"
            args += (student,)
        with self._lock, self._errors():
            rows = self._connection().execute(
                query + f" ORDER BY student, {_LATEST_FIRST}", args).fetchall()
        return [_submission_row(r) for r in rows]

    def part_results(self, assignment: str, problem: str, part: str, student: str | None = None,
                     handins: dict[str, str] | None = None) -> list[tuple[str, ResultRow]]:
        """(handin, result) of one part in every handin of ``assignment`` (of ``student``), or
        with ``handins`` (student → handin) only in those: the marking queue's counted ones,
        without reading every earlier handin's answer."""
        query = (f"SELECT handin, {', '.join(_RESULT_COLUMNS)} FROM results WHERE assignment = ? "
                 "AND problem = ? AND part = ?")
        args: tuple = (assignment, problem, part)
        if student is not None:
            query, args = query + " AND student = ?", args + (student,)
        if handins is not None:
            query += " AND (student, handin) IN (SELECT key, value FROM json_each(?))"
            args += (json.dumps(handins),)
        with self._lock, self._errors():
            rows = self._connection().execute(query, args).fetchall()
        return [(r[0], _result_row(r[1:])) for r in rows]

    def part_statuses(self, assignment: str) -> list[tuple[str, str, str, str, str]]:
        """(student, handin, problem, part, status) of every result row of ``assignment``:
        what the marking page's progress needs, without a score, a message or an answer."""
        with self._lock, self._errors():
            return self._connection().execute(
                "SELECT student, handin, problem, part, status FROM results WHERE assignment = ?",
                (assignment,)).fetchall()

    def results(self, assignment: str, student: str | None = None, answers: bool = True,
                handin: str | None = None) -> list[ResultRow]:
        """Result rows of each student's counting handin (or of ``handin``), by student, then
        in the order they were recorded (the key's problem and part order). Without
        ``answers`` every row's answer is None: a class's answers (up to 64 kB a part) are
        read only where they are shown, one student at a time."""
        columns = [f"r.{c}" if answers or c != "answer" else "NULL AS answer" for c in _RESULT_COLUMNS]
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
        return [_result_row(r) for r in rows]
