"""The gradebook's rows as Python holds them: a handin (``SubmissionRow``) and a graded part
(``ResultRow``), checked and turned into the column values SQLite stores (``encoded``), and
read back (``submission_row``, ``result_row``). A student's answer is stored capped
(``ANSWER_LIMIT``): one too large is kept as a marker saying why (``omitted_reason``).

Standard library only, like the gradebook (``grader.store.gradebook``) that stores them.
"""

from __future__ import annotations

import hashlib
import json
import math
import reprlib
from dataclasses import dataclass, field

from formats.textfile import printable

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

SUBMISSION_COLUMNS = ("assignment", "student", "handin", "path", "content_hash", "status", "notes",
                      "issues", "score", "max_score", "duration_ms", "kit_version", "received_at",
                      "received_from")
RESULT_COLUMNS = ("assignment", "student", "problem", "part", "position", "score", "max_score",
                  "status", "message", "misconception", "answer", "duration_ms", "content_hash")
RESULT_INSERT = ("assignment", "student", "handin", *RESULT_COLUMNS[2:])


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
    issues: tuple[tuple[str, str], ...] = ()   # (code, message): grader.intake.issues's ISSUE_CODES, the program's

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
    the twin the wrong answer matched (``solutions.TWINS``)."""

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


def sql_answer_digest(text):
    """``answer_digest`` of an answer column's JSON text: the SQL function of that name."""
    return answer_digest(_stored_answer(text))


def omitted_reason(answer) -> str | None:
    """Why a stored answer was left out (too large), or None for a real answer."""
    if isinstance(answer, dict) and set(answer) == {OMITTED}:
        return str(answer[OMITTED])
    return None


# json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":")), its encoder made
# once rather than once an answer (a submission has dozens).
_ANSWER_TEXT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _answer_text(row: ResultRow) -> str | None:
    if row.answer is None:
        return None
    try:
        text = _ANSWER_TEXT.encode(row.answer)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{row.student}: {row.problem}/{row.part}: the answer is not JSON-ready "
                         f"({err}); store formats.serialize.to_jsonable(value)") from None
    text = storable_text(text)
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


def storable_text(value) -> str:
    """Text SQLite can store: a lone surrogate (from a file name that is not UTF-8, or a
    student's string) becomes U+FFFD instead of failing the whole transaction."""
    return printable(str(value))


def _submission_values(s: SubmissionRow) -> tuple:
    return (s.assignment, s.student, s.handin, storable_text(s.path), s.content_hash, s.status,
            storable_text(json.dumps(list(s.notes), ensure_ascii=False)),
            storable_text(json.dumps([list(i) for i in s.issues], ensure_ascii=False)),
            _number(s.score, "score"), _number(s.max_score, "max_score"), int(s.duration_ms),
            s.kit_version, None if s.received_at is None else storable_text(s.received_at),
            storable_text(s.received_from))


def _result_values(position: int, handin: str, r: ResultRow) -> tuple:
    what = f"{r.student}: {r.problem}/{r.part}"
    return (r.assignment, r.student, handin, r.problem, r.part, position,
            _number(r.score, f"{what}: score"), _number(r.max_score, f"{what}: max_score"),
            r.status, storable_text(r.message), r.misconception, _answer_text(r), int(r.duration_ms),
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


_STORED_TYPES = (str, int, float, type(None))


def well_formed(row) -> tuple[tuple, tuple, list]:
    """An ``encoded`` handin that comes from elsewhere (a cluster worker, which made it with
    ``encoded`` and so checked it), checked again in shape: (who, the submission's values,
    each result's values), each of its columns' length and holding only what SQLite is given
    (text, numbers, NULL), every result of that handin. What a worker of another shape sent
    is refused here, naming the handin (ValueError), before anything is written."""
    try:
        who, submission, results = row
        ok = (type(who) is tuple and len(who) == 3 and tuple(submission[:3]) == who
              and len(submission) == len(SUBMISSION_COLUMNS)
              and all(type(v) in _STORED_TYPES for v in submission))
        for r in results if ok else ():
            if not (len(r) == len(RESULT_INSERT) and tuple(r[:3]) == who
                    and all(type(v) in _STORED_TYPES for v in r)):
                ok = False
                break
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"rows in another shape than the gradebook's: {storable_text(reprlib.repr(row))}")
    return who, tuple(submission), [tuple(r) for r in results]


def submission_row(values) -> SubmissionRow:
    """A ``SubmissionRow`` from its columns' values (``SUBMISSION_COLUMNS``' order)."""
    row = dict(zip(SUBMISSION_COLUMNS, values))
    row["notes"] = tuple(json.loads(row["notes"]))
    row["issues"] = tuple(tuple(i) for i in json.loads(row["issues"]))
    return SubmissionRow(**row)


def result_row(values) -> ResultRow:
    """A ``ResultRow`` from its columns' values (``RESULT_COLUMNS``' order)."""
    row = dict(zip(RESULT_COLUMNS, values))
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

