"""The gradebook's SQLite schema: its tables and the triggers that keep the hand grades' log
append-only, created in a new file (``create_or_upgrade``), an older file migrated in place
with every grade kept, and the check that a file is a gradebook this version reads
(``format_problem``).

A gradebook of schema 1 (one row per student) becomes one of schema 2 (a row per handin), and
schema 3 adds the hand grades (``grader.store.marks``).
"""

from __future__ import annotations

import sqlite3

from grader.store.rows import RESULT_INSERT, RESULT_STATUSES, SUBMISSION_STATUSES

FORMAT = "attnkit-gradebook"
SCHEMA_VERSION = 3     # 3: hand grades (grader.store.marks) and their log
# "ATKG": SQLite's own slot for the file's type, so `file` and other tools can tell it apart
# from any other database; the meta table is what this module checks.
APPLICATION_ID = 0x41544B47
MIGRATED = "schema 1"     # the received_from of a handin migrated from a schema-1 gradebook

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


def tables(c: sqlite3.Connection) -> set[str]:
    """The names of the file's tables."""
    return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def create_or_upgrade(c: sqlite3.Connection) -> None:
    """Inside the caller's write transaction: a new file's tables, or an older file's migrated
    to this schema. A file that is not a gradebook is left as it is (``format_problem`` says
    what it is)."""
    if not tables(c):
        # one by one: executescript would COMMIT the transaction
        for statement in filter(str.strip, _SCHEMA.split(";")):
            c.execute(statement)
        for statement in _MARKS_SCHEMA:
            c.execute(statement)
        c.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                      [("format", FORMAT), ("schema_version", str(SCHEMA_VERSION))])
        c.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    elif _schema_version(c) == 1:
        _migrate_from_1(c)
        _migrate_from_2(c)
    elif _schema_version(c) == 2:
        _migrate_from_2(c)
    elif "mark_log" in tables(c):
        # (a schema-3 file written before the index or the insert guards)
        for statement in (_MARK_LOG_INDEX, *_MARK_LOG_INSERT_GUARDS):
            c.execute(statement)


def _schema_version(c: sqlite3.Connection) -> int | None:
    try:
        row = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else None
    except (sqlite3.DatabaseError, ValueError):
        return None                   # not a gradebook: format_problem says so


def _migrate_from_1(c: sqlite3.Connection) -> None:
    """Schema 1 kept one row per student (and wrote "missing" rows over grades): each
    graded row becomes that student's one handin, every part kept; "missing" rows, which
    hold no grade, are dropped (missing is now a fact of the report)."""
    if not {"submissions", "results"} <= tables(c):
        return                         # format_problem says what is wrong
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
    c.execute(f"INSERT INTO results ({', '.join(RESULT_INSERT)}) SELECT r.assignment, r.student, "
              "s.content_hash, r.problem, r.part, r.position, r.score, r.max_score, r.status, "
              "r.message, r.misconception, r.answer, r.duration_ms, r.content_hash "
              "FROM results_v1 r JOIN submissions_v1 s USING (assignment, student) "
              "WHERE s.status != 'missing'")
    c.execute("DROP TABLE results_v1")
    c.execute("DROP TABLE submissions_v1")
    c.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def _migrate_from_2(c: sqlite3.Connection) -> None:
    """Schema 3 adds the hand grades' tables; every grade of schema 2 stays as it is."""
    if not {"submissions", "results"} <= tables(c) or "marks" in tables(c):
        return                         # format_problem says what is wrong
    for statement in _MARKS_SCHEMA:
        c.execute(statement)
    c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))


def format_problem(c: sqlite3.Connection) -> str | None:
    """What makes the file no gradebook this version reads (to follow its path in a message),
    or None when it is one."""
    names = tables(c)
    if "meta" not in names:
        return f"not an attnkit gradebook (a SQLite database with tables {', '.join(sorted(names))})"
    meta = dict(c.execute("SELECT key, value FROM meta"))
    if meta.get("format") != FORMAT:
        return f"not an attnkit gradebook (format {meta.get('format')!r})"
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        return f"not a readable gradebook (schema version {meta.get('schema_version')!r})"
    if version > SCHEMA_VERSION:
        return (f"written by a newer attnkit (gradebook schema {version}; this version reads schema "
                f"{SCHEMA_VERSION}): upgrade attnkit to read it")
    if version < SCHEMA_VERSION or not {"submissions", "results", "marks", "mark_log"} <= names:
        return f"not a readable gradebook (schema {version}, tables {', '.join(sorted(names))})"
    return None
