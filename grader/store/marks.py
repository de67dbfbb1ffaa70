"""Hand grades ("marks"): what a grader decided about one student's part, kept in the
gradebook's own tables beside the automatic results, with the log of every grading event.

A part's score is one of three things, each recorded as such:

- the **auto** score (``results``, written by ``attnkit grade``), when no mark is active;
- a **hand** score: a free-response part, graded with its rubric (``kind == "hand"``);
- an **override** of an auto score (``kind == "override"``), with a reason.

    score = clamp(base + Σ points of the applied rubric items + adjustment, floor, ceiling)

``base`` is the rubric's ``start`` for a hand score and the automatic score it replaced for
an override (``formats.rubric``). Re-autograding rewrites ``results`` and never touches a
mark; when what a mark was applied to changes — the student's counted answer, or an
overridden part's automatic result — the mark keeps its score and ``look`` says it needs
another look. Changing a rubric item's points re-scores every mark that applied it
(``rescore``), and the log says so.

Every save names the version it was made from (0 for a part never marked): two graders
saving the same part from the same version never overwrite each other — the second gets a
``Conflict`` with the grade as it now stands. Each save is one transaction, committed before
it returns: what a caller was told is saved survives a kill. Inside ``together(gb)`` the saves
are one transaction instead (a grading sheet is imported whole or not at all).
"""

from __future__ import annotations

import hashlib
import json
import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from formats.key_shape import (assignment_id, entry_for, graded_parts, is_free_response, problem_record,
                              rubric_of)
from formats.rubric import Rubric
from formats.textfile import printable

from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, answer_digest

HAND, OVERRIDE = "hand", "override"
COMMENT_LIMIT = 10_000            # characters: a comment is a paragraph, not an essay
_COLUMNS = ("assignment", "student", "problem", "part", "kind", "active", "items", "adjustment",
            "comment", "reason", "score", "max_score", "base", "rubric_version", "answer_digest",
            "auto_digest", "flag", "grader", "marked_at", "version")


class MarkError(ValueError):
    """A grade that cannot be saved as given (an unknown item, an adjustment out of range,
    an override without a reason, a part the key does not have)."""


class Conflict(RuntimeError):
    """The part was saved by someone else since the version this save started from."""

    def __init__(self, student: str, problem: str, part: str, expected: int, current: "Mark | None"):
        self.student, self.problem, self.part = student, problem, part
        self.expected, self.current = expected, current
        now = current.version if current else 0
        super().__init__(f"{student}: {problem}/{part}: saved by {current.grader if current else 'nobody'} "
                         f"since (version {now}, this edit started from version {expected})")


class AnswerChanged(RuntimeError):
    """The answer a grader read is no longer the student's counted answer (a later handin
    counts, or it was graded again): a grade is saved only onto the answer its grader read."""

    def __init__(self, problem: str, part: str, students: list[str]):
        self.problem, self.part, self.students = problem, part, students
        super().__init__(f"{problem}/{part}: the answer changed since it was read ({', '.join(students)}): "
                         "not saved; read the answer that counts now and grade it")


@dataclass(frozen=True)
class Mark:
    assignment: str
    student: str
    problem: str
    part: str
    kind: str                     # HAND or OVERRIDE
    active: bool                  # False: cleared (the part waits for a human again)
    items: dict                   # applied item id → its points when applied (or re-scored)
    adjustment: float
    comment: str                  # the student sees it
    reason: str                   # an override's reason: graders only
    score: float
    max_score: float
    base: float
    rubric_version: str
    answer_digest: str
    auto_digest: str
    flag: str                     # stored reason for another look ('' when none)
    grader: str
    marked_at: str
    version: int

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class LogEntry:
    seq: int
    assignment: str
    student: str
    problem: str
    part: str
    version: int
    event: str
    grader: str
    at: str
    mark: dict = field(hash=False)
    note: str = ""


@dataclass(frozen=True)
class Edit:
    """What a grader sets on a part: the applied item ids, an adjustment, a comment, and
    for an override its reason."""

    items: tuple[str, ...] = ()
    adjustment: float = 0.0
    comment: str = ""
    reason: str = ""


# --- digests of what a mark was applied to -------------------------------------------------

def auto_digest(result: ResultRow | None) -> str:
    """What an override replaced: the automatic result's score, status and message."""
    if result is None:
        return "none"
    return _auto_digest(result.score, result.max_score, result.status, result.message)


def _auto_digest(score, max_score, status, message) -> str:
    text = json.dumps([score, max_score, status, message])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def look(mark: Mark | None, result: ResultRow | None) -> str:
    """Why an active mark needs another look ('' when it does not): its stored flag, the
    counted answer no longer the one it was applied to (``result`` None: the counted handin
    has no row for the part), or an overridden auto result that changed since."""
    return _look(mark, answer_digest(result.answer if result is not None else None), auto_digest(result),
                 result is not None)


def _look(mark: Mark | None, answer_now: str, auto_now: str, has_row: bool) -> str:
    if mark is None or not mark.active:
        return ""
    reasons = [mark.flag] if mark.flag else []
    if answer_now != mark.answer_digest:
        reasons.append("the answer changed since it was graded (a later handin counts)" if has_row
                       else "the counted handin has no answer for this part")
    if mark.kind == OVERRIDE and auto_now != mark.auto_digest:
        reasons.append("the automatic result changed since it was overridden")
    return "; ".join(reasons)


def rechecks(gb: Gradebook, assignment: str, handins: dict[str, str]) -> dict[tuple[str, str, str], str]:
    """(student, problem, part) → why its active mark needs another look, for every mark
    of a student with a counted handin (``handins``: student → handin id) that does: what
    ``look`` says of it with that handin's result. One query, one row per mark (the counted
    handin's result joined in SQL), each answer digested by SQLite: a class's answers are
    never read out. A student without a counted handin (missing, not accepted) has none."""
    if not handins:
        return {}
    sql = (f"SELECT {', '.join('m.' + c for c in _COLUMNS)}, r.handin, r.score, r.max_score, r.status, "
           "r.message, answer_digest(r.answer) FROM marks m JOIN json_each(?) c ON c.key = m.student "
           "LEFT JOIN results r ON r.assignment = m.assignment AND r.student = m.student "
           "AND r.handin = c.value AND r.problem = m.problem AND r.part = m.part "
           "WHERE m.assignment = ? AND m.active = 1")
    out = {}
    for row in gb.query(sql, (json.dumps(handins), assignment)):
        mark, (handin, score, max_score, status, message, digest) = _mark(row[:len(_COLUMNS)]), row[len(_COLUMNS):]
        if handin is None:
            reason = _look(mark, answer_digest(None), auto_digest(None), False)
        else:
            reason = _look(mark, digest, _auto_digest(score, max_score, status, message), True)
        if reason:
            out[(mark.student, mark.problem, mark.part)] = reason
    return out


# --- reading ----------------------------------------------------------------------------------

def _mark(row) -> Mark:
    values = dict(zip(_COLUMNS, row))
    values["active"] = bool(values["active"])
    values["items"] = json.loads(values["items"])
    return Mark(**values)


def marks(gb: Gradebook, assignment: str, student: str | None = None,
          active_only: bool = True, problem: str | None = None,
          part: str | None = None, students: list[str] | None = None) -> dict[tuple[str, str, str], Mark]:
    """(student, problem, part) → its mark, for ``assignment`` (``student``, ``problem``,
    ``part``; ``students``: of those students only)."""
    sql = f"SELECT {', '.join(_COLUMNS)} FROM marks WHERE assignment = ?"
    args: tuple = (assignment,)
    if students is not None:
        sql, args = sql + " AND student IN (SELECT value FROM json_each(?))", args + (json.dumps(students),)
    for name, value in (("student", student), ("problem", problem), ("part", part)):
        if value is not None:
            sql, args = sql + f" AND {name} = ?", args + (value,)
    if active_only:
        sql += " AND active = 1"
    return {(m.student, m.problem, m.part): m for m in map(_mark, gb.query(sql, args))}


def mark_of(gb: Gradebook, assignment: str, student: str, problem: str, part: str) -> Mark | None:
    rows = gb.query(f"SELECT {', '.join(_COLUMNS)} FROM marks WHERE assignment = ? AND student = ? "
                    "AND problem = ? AND part = ?", (assignment, student, problem, part))
    return _mark(rows[0]) if rows else None


def history(gb: Gradebook, assignment: str, student: str | None = None, problem: str | None = None,
            part: str | None = None) -> list[LogEntry]:
    """The log of grading events, oldest first (optionally for one student, problem, part)."""
    sql = ("SELECT seq, assignment, student, problem, part, version, event, grader, at, mark, note "
           "FROM mark_log WHERE assignment = ?")
    args: tuple = (assignment,)
    for name, value in (("student", student), ("problem", problem), ("part", part)):
        if value is not None:
            sql, args = sql + f" AND {name} = ?", args + (value,)
    return [LogEntry(*row[:9], json.loads(row[9]), row[10]) for row in gb.query(sql + " ORDER BY seq", args)]


# --- the part a mark applies to ----------------------------------------------------------------

def part_rubric(key: dict, student: str, problem: str, part: str) -> tuple[Rubric, float, bool]:
    """(the part's rubric for this student, its points, whether it is free response)."""
    record = problem_record(entry_for(key, student), problem, {})
    points = dict(graded_parts(record)).get(part)
    if points is None:
        raise MarkError(f"{student}: the key has no part {problem}/{part}")
    return rubric_of(record, part, points), points, is_free_response(record)


def _checked(edit: Edit, rubric: Rubric, kind: str, where: str) -> Edit:
    unknown = [i for i in edit.items if rubric.item(i) is None]
    if unknown:
        known = ", ".join(i.id for i in rubric.items) or "none"
        raise MarkError(f"{where}: unknown rubric item {', '.join(map(repr, unknown))} (the items: {known})")
    if len(set(edit.items)) != len(edit.items):
        raise MarkError(f"{where}: an item is applied twice")
    try:
        adjustment = float(edit.adjustment)
    except (TypeError, ValueError):
        raise MarkError(f"{where}: the adjustment must be a number, not {edit.adjustment!r}") from None
    span = max(rubric.ceiling - rubric.floor, 0.0)
    if not math.isfinite(adjustment) or abs(adjustment) > span:
        raise MarkError(f"{where}: the adjustment {edit.adjustment!r} is outside ±{span:g} "
                        f"(the part's range, {rubric.floor:g} to {rubric.ceiling:g})")
    comment, reason = printable(str(edit.comment)), printable(str(edit.reason)).strip()
    for name, text in (("comment", comment), ("reason", reason)):
        if len(text) > COMMENT_LIMIT:     # refused, never cut: what was saved is what was written
            raise MarkError(f"{where}: the {name} is {len(text)} characters (at most {COMMENT_LIMIT})")
    if kind == OVERRIDE and not reason:
        raise MarkError(f"{where}: an override of an automatic score needs a reason")
    return Edit(tuple(edit.items), adjustment, comment, reason)


# --- writing -----------------------------------------------------------------------------------

def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# (gradebook, its connection) while ``together`` holds its transaction, in this thread only
_TOGETHER: ContextVar = ContextVar("marks_together", default=None)


@contextmanager
def together(gb: Gradebook):
    """``with together(gb): save(…); save(…)``: every save and clear made inside on ``gb`` is
    one transaction, committed when the block ends; none is if it raises or the process dies
    first. A save that raises inside (a ``Conflict``) is undone alone: the others stand."""
    if _TOGETHER.get() is not None:
        raise RuntimeError("together() is not re-entrant")
    with gb.transaction() as c:
        token = _TOGETHER.set((gb, c))
        try:
            yield
        finally:
            _TOGETHER.reset(token)


@contextmanager
def _transaction(gb: Gradebook):
    """A save's own transaction, or a savepoint in the ``together`` block open on ``gb``."""
    open_ = _TOGETHER.get()
    if open_ is None or open_[0] is not gb:
        with gb.transaction() as c:
            yield c
        return
    c = open_[1]
    c.execute("SAVEPOINT mark_save")
    try:
        yield c
    except BaseException:
        c.execute("ROLLBACK TO mark_save")
        c.execute("RELEASE mark_save")
        raise
    c.execute("RELEASE mark_save")


def _current(c, who: tuple) -> Mark | None:
    row = c.execute(f"SELECT {', '.join(_COLUMNS)} FROM marks WHERE assignment = ? AND student = ? "
                    "AND problem = ? AND part = ?", who).fetchone()
    return _mark(row) if row else None


def _write(c, mark: Mark, event: str, note: str) -> None:
    values = [mark.as_json()[k] for k in _COLUMNS]
    values[_COLUMNS.index("items")] = json.dumps(mark.items, sort_keys=True)
    values[_COLUMNS.index("active")] = int(mark.active)
    updates = ", ".join(f"{k} = excluded.{k}" for k in _COLUMNS[4:])
    c.execute(f"INSERT INTO marks ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
              f"ON CONFLICT (assignment, student, problem, part) DO UPDATE SET {updates}", values)
    c.execute("INSERT INTO mark_log (assignment, student, problem, part, version, event, grader, at, "
              "mark, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
              (mark.assignment, mark.student, mark.problem, mark.part, mark.version, event,
               mark.grader, mark.marked_at, json.dumps(mark.as_json(), sort_keys=True), note))


@dataclass(frozen=True)
class Target:
    """One student's part to mark, with the automatic result of their counted handin (None:
    no handin, or no row for the part), the version the grader's edit started from, and the
    digest of the answer the grader read (``answer_digest``; None: ``result``'s own answer,
    for a caller that read it there)."""

    student: str
    expected_version: int
    result: ResultRow | None = None
    answer_seen: str | None = None

    @property
    def answer_now(self) -> str:
        return answer_digest(self.result.answer if self.result else None)


class Saved(list):
    """The marks of a ``save``, one per target; ``kept`` names the targets whose part already
    held this very grade (another grader saved the same since): left as they stood."""

    def __init__(self):
        super().__init__()
        self.kept: list[str] = []


def _same_grade(current: Mark | None, checked: Edit, target: Target) -> bool:
    """``current`` is already this grade of this answer (another grader saved the same)."""
    return (current is not None and current.active and current.answer_digest == target.answer_now
            and (current.kind == HAND or current.auto_digest == auto_digest(target.result))
            and set(current.items) == set(checked.items) and current.adjustment == checked.adjustment
            and current.comment == checked.comment and current.reason == checked.reason)


def save(gb: Gradebook, key: dict, problem: str, part: str, targets: list[Target], edit: Edit,
         grader: str, event: str = "mark") -> Saved:
    """Apply ``edit`` to ``problem``/``part`` of every target (an answer group: one grade for
    all), in one transaction: all saved, or — when any target changed since its expected
    version — none, and a ``Conflict`` for the first that did; an ``AnswerChanged`` naming
    every target whose counted answer is not the one its grader read. A target saved since
    with this very grade is no conflict: its mark is returned as it stands (not rewritten)."""
    assignment = assignment_id(key)
    changed = [t.student for t in targets if t.answer_seen is not None and t.answer_seen != t.answer_now]
    if changed:
        raise AnswerChanged(problem, part, changed)
    prepared = []
    for t in targets:
        rubric, points, free = part_rubric(key, t.student, problem, part)
        kind = HAND if free else OVERRIDE
        checked = _checked(edit, rubric, kind, f"{t.student}: {problem}/{part}")
        # (an override: of the automatic score as it is now; one edited again after a regrade
        # changed it starts from the new score, never from a stale one)
        base = rubric.start if kind == HAND else (t.result.score if t.result else 0.0)
        prepared.append((t, rubric, points, kind, checked, base))
    saved = Saved()
    with _transaction(gb) as c:
        at = _now()
        for t, rubric, points, kind, checked, base in prepared:
            who = (assignment, t.student, problem, part)
            current = _current(c, who)
            if (current.version if current else 0) != t.expected_version:
                if _same_grade(current, checked, t):
                    saved.append(current)
                    saved.kept.append(t.student)
                    continue
                raise Conflict(t.student, problem, part, t.expected_version, current)
            mark = Mark(assignment, t.student, problem, part, kind, True,
                        rubric.points_of(checked.items), checked.adjustment, checked.comment,
                        checked.reason, rubric.score(checked.items, checked.adjustment, base),
                        float(points), float(base), rubric.version,
                        t.answer_now, auto_digest(t.result) if kind == OVERRIDE else "", "", printable(grader),
                        at, t.expected_version + 1)
            _write(c, mark, event if kind == HAND or event == "import" else OVERRIDE,
                   f"{len(targets)} answers graded together" if len(targets) > 1 else "")
            saved.append(mark)
    return saved


def clear(gb: Gradebook, key: dict, problem: str, part: str, target: Target, grader: str) -> Mark:
    """Withdraw a mark: the part goes back to its auto score, or to waiting for a human."""
    assignment = assignment_id(key)
    with _transaction(gb) as c:
        who = (assignment, target.student, problem, part)
        current = _current(c, who)
        if current is None or current.version != target.expected_version:
            raise Conflict(target.student, problem, part, target.expected_version, current)
        mark = Mark(**{**current.as_json(), "active": False, "grader": printable(grader),
                       "marked_at": _now(), "version": current.version + 1})
        _write(c, mark, "clear", "")
    return mark


def rescore(gb: Gradebook, key: dict, grader: str = "attnkit") -> list[LogEntry]:
    """Re-score every active mark made under another version of its part's rubric (an item's
    points changed, an item removed, the part's points changed): the score follows the
    rubric the key holds now, an item the rubric no longer has counts 0 and flags the mark
    for another look, and the log records old → new. Returns the log entries written."""
    assignment = assignment_id(key)
    written = []
    with gb.transaction() as c:
        rows = c.execute(f"SELECT {', '.join(_COLUMNS)} FROM marks WHERE assignment = ? AND active = 1",
                         (assignment,)).fetchall()
        at = _now()
        for current in map(_mark, rows):
            try:
                rubric, points, _ = part_rubric(key, current.student, current.problem, current.part)
            except (KeyError, MarkError):
                continue                     # a student or part the key no longer has: kept as is
            if rubric.version == current.rubric_version and current.max_score == points:
                continue
            mark, note = _rescored(current, rubric, points, at, grader)
            _write(c, mark, "rescore", note)
            written.append(LogEntry(0, *[getattr(mark, k) for k in ("assignment", "student", "problem",
                                    "part", "version")], "rescore", mark.grader, at, mark.as_json(), note))
    return written


def _rescored(current: Mark, rubric: Rubric, points: float, at: str, grader: str) -> tuple[Mark, str]:
    items = rubric.points_of(current.items)
    removed = sorted(set(current.items) - set(items))
    base = rubric.start if current.kind == HAND else current.base
    score = rubric.score(items, current.adjustment, base)
    changes = [f"{i} {current.items[i]:g} → {items[i]:g} pts" for i in items if items[i] != current.items[i]]
    changes += [f"{i} no longer in the rubric (counts 0)" for i in removed]
    note = (f"rubric {current.rubric_version} → {rubric.version}: "
            + ("; ".join(changes) if changes else "range or start changed")
            + f"; score {current.score:g} → {score:g}")
    flag = current.flag
    if removed:
        flag = "; ".join(filter(None, [flag, f"rubric items removed: {', '.join(removed)}"]))
    mark = Mark(**{**current.as_json(), "items": items, "score": score, "max_score": float(points),
                   "base": float(base), "rubric_version": rubric.version, "flag": flag,
                   "grader": printable(grader), "marked_at": at, "version": current.version + 1})
    return mark, note


# --- what the student reads ---------------------------------------------------------------------

def student_lines(mark: Mark, rubric: Rubric) -> list[str]:
    """The mark as the student reads it: each applied item's points and text (rendered
    with their own values; never a grader's note), the adjustment, the comment. An
    override's reason is for graders and is not among them."""
    lines = []
    order = [i.id for i in rubric.items if i.id in mark.items] + sorted(set(mark.items) - {i.id for i in rubric.items})
    for item_id in order:
        item, points = rubric.item(item_id), mark.items[item_id]
        text = item.text.strip() if item else item_id
        lines.append(f"{'+' if points > 0 else '−'}{abs(points):g}  {text}")
    if mark.adjustment:
        lines.append(f"{'+' if mark.adjustment > 0 else '−'}{abs(mark.adjustment):g}  (adjustment)")
    if mark.kind == OVERRIDE:
        lines.insert(0, f"The automatic score ({mark.base:g}) was changed by a grader to {mark.score:g}.")
    if mark.comment.strip():
        lines.append(f"Comment: {mark.comment.strip()}")
    return lines
