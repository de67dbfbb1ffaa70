"""A class's grades, read from the gradebook and the answer key: who is in the class (the
key), what each student earned on the handin that counts (the gradebook, under the late policy
when there is one), and what the instructor must know about it.

The key decides who is in the class and what the problems and parts are (in its order); a
student without a counted handin is ``missing`` (or ``not accepted`` under a cutoff), never left
out. Which handin counts is the deadline's ``counts`` rule (``formats.deadline``; without a
deadline, the one received last); every handin is listed beside it (``StudentGrades.history``),
and a late handin counted over an on-time one that scored more needs a look. What reads this:
the reports (``grader.reports.summary``), the LMS exports (``grader.reports.exports``) and the TA's list
(``grader.run.pipeline``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import NamedTuple

from formats.deadline import Deadline, Lateness
from formats.key_shape import (assignment_id, entry_front, entry_outline, graded_parts, head_parts,
                              head_problems, is_class_key, key_students, problem_record, total_points)

from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.store.marks import HAND, Mark, marks as active_marks, rechecks
from grader.store.look import RECHECK, REPLACED_ON_TIME, flagged, student_notes
from grader.store.spilled import Spilled

MISSING, GRADED, ERROR, MANUAL = "missing", "graded", "error", "manual"
MARKED, OVERRIDDEN = "marked", "overridden"      # a part's status once a grader scored it
NOT_ACCEPTED = "not accepted"


@dataclass(frozen=True)
class Part:
    """One gradable part of one student's problem, as the key defines it (implement: a test
    family), with what the gradebook holds for it: the automatic result (None: not graded)
    and the active hand grade (``grader.store.marks``; None: none), which scores the part when
    there is one. ``recheck`` says why that hand grade needs another look ('' if it does not)."""

    problem: str
    part: str
    points: float
    result: ResultRow | None
    mark: Mark | None = None
    recheck: str = ""

    @property
    def score(self) -> float:
        if self.mark is not None:
            return self.mark.score
        return self.result.score if self.result else 0.0

    @property
    def status(self) -> str:
        """The result's status; ``marked`` or ``overridden`` once a grader scored the part."""
        if self.mark is not None:
            return MARKED if self.mark.kind == HAND else OVERRIDDEN
        return self.result.status if self.result else MISSING

    @property
    def waiting(self) -> bool:
        """True while the part waits for a human: graded by hand and not marked yet, or
        marked and needing another look."""
        return self.status == MANUAL or bool(self.recheck)


@dataclass(frozen=True)
class Handin:
    """One of a student's handins as the deadline saw it: its row, its lateness (None without
    a deadline), whether it counts, and why (or why not). Its score is the automatic one: a
    hand grade belongs to the student's part, not to a handin."""
    row: SubmissionRow
    lateness: Lateness | None
    counts: bool
    why: str

    @property
    def after_penalty(self) -> float:
        """The handin's score less its late penalty (0 when the policy refuses it)."""
        if self.lateness is None:
            return self.row.score
        if not self.lateness.accepted:
            return 0.0
        return self.row.score * (1 - self.lateness.penalty_percent / 100)


class Counted(NamedTuple):
    """What ``counted`` says of one student: the handin that counts (None: none, or none the
    policy accepts), its lateness, how many they handed in, the latest's handin id, every
    handin (``Handin``, the last received first), the refused one when none is accepted, and
    what the choice itself makes the TA look at (lateness, a better on-time handin not counted)."""
    submission: SubmissionRow | None
    lateness: Lateness | None
    handins: int
    latest: str | None
    history: tuple[Handin, ...] = ()
    refused: SubmissionRow | None = None
    issues: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class StudentGrades:
    id: str
    name: str
    email: str
    status: str                   # the submission's status, "missing" without one
    notes: tuple[str, ...]
    parts: tuple[Part, ...]       # in the key's problem and part order
    total: float
    max_score: float
    problem_scores: dict          # problem id → points earned
    issues: tuple = ()            # (code, message) of the counted handin: grader.store.look
    handins: int = 0              # distinct notebooks handed in (the counted one is below)
    path: str = ""                # the counted handin's file (not accepted: the refused one's)
    received_at: str | None = None   # when it was handed in (UTC), and where that time comes from
    received_from: str = ""
    handin: str = ""              # the counted handin (the gradebook's key for its rows)
    penalty: float = 0.0          # late penalty, in points (already taken off ``total``)
    late: str = ""                # what the late policy made of the counted handin ("" without one)
    history: tuple[Handin, ...] = ()  # every handin, the last received first, the counted one marked

    @property
    def look(self) -> list[tuple[str, str]]:
        """The issues that need a human look before this grade stands: the handin's, and
        hand grades to look at again."""
        return look_of(self.issues, self.status, self.path) + [
            (RECHECK, f"{p.problem}/{p.part}: {p.recheck}") for p in self.parts if p.recheck]

    @property
    def waiting(self) -> int:
        """Parts that wait for a human (not marked yet, or marked and to look at again)."""
        return sum(p.waiting for p in self.parts)

    @property
    def shown_notes(self) -> list[str]:
        """The notes the student may read (grader.store.look.student_notes)."""
        return student_notes(self.notes, self.issues)


def _student_parts(entry: dict, problems: list[dict], rows: list[ResultRow], marked=None,
                   recheck=None, heads: dict | None = None) -> tuple[Part, ...]:
    """The student's parts in the key's order; ``marked``: (problem, part) → active mark,
    ``recheck``: (problem, part) → why it needs another look; ``heads``: problem → its
    (part, points), where the key's head lists them (``head_parts``; else the entry's)."""
    by_part = {(r.problem, r.part): r for r in rows}
    marked, recheck = marked or {}, recheck or {}
    parts = []
    for problem in problems:
        pid = problem["id"]
        known = heads[pid] if heads is not None else graded_parts(problem_record(entry, pid, {}))
        parts += [Part(pid, part, points, by_part.pop((pid, part), None), marked.get((pid, part)),
                       recheck.get((pid, part), "")) for part, points in known]
        # A part the grader recorded that this key does not list (a key rebuilt since):
        # shown after the key's own, so no earned point goes unseen.
        parts += [Part(pid, r.part, r.max_score, r) for r in rows if (r.problem, r.part) in by_part
                  and r.problem == pid]
    return tuple(parts)


def class_students(gradebook: Gradebook, key: dict) -> list[str]:
    """The key's students; for an nbgrader course's class-wide key (one entry for everyone),
    the students the gradebook has."""
    return gradebook.students(assignment_id(key)) if is_class_key(key) else key_students(key)


CHUNK = 500          # students read from the gradebook at a time by the class pass


def class_grades(gradebook: Gradebook, key: dict, deadline: Deadline | None = None) -> Spilled:
    """Every student of the key, by id, with their counted handin and its parts — without
    the students' answers (up to 64 kB a part: a class's would be gigabytes; ``with_answers``
    reads one student's when their page is drawn). Without a ``deadline`` the handin received
    last counts; with one, the last one the late policy accepts, less its penalty. Read
    ``CHUNK`` students at a time into a ``Spilled`` sequence: what the class pass holds does
    not grow with the class."""
    assignment = assignment_id(key)
    students = class_students(gradebook, key)
    grades = Spilled()
    for start in range(0, len(students), CHUNK):
        chosen = counted(gradebook, key, deadline, students[start:start + CHUNK])
        marked, recheck = _marks_by_student(gradebook, assignment, chosen)
        handins = {sid: c.submission.handin for sid, c in chosen.items() if c.submission is not None}
        rows: dict[str, list[ResultRow]] = {}
        for r in gradebook.handin_results(assignment, handins, answers=False):
            rows.setdefault(r.student, []).append(r)
        grades.extend(_late(_grades_of(key, sid, c.submission, rows.get(sid, []), c.handins,
                                       marked.get(sid), recheck.get(sid)), c)
                      for sid, c in chosen.items())
    return grades


def _marks_by_student(gradebook: Gradebook, assignment: str, chosen: dict) -> tuple[dict, dict]:
    """student → {(problem, part): active mark}, and student → {(problem, part): why it
    needs another look}, for the students of ``chosen`` with a counted handin."""
    handins = {sid: c.submission.handin for sid, c in chosen.items() if c.submission is not None}
    marked: dict[str, dict] = {}
    for (sid, pid, part), mark in active_marks(gradebook, assignment, students=list(handins)).items():
        if sid in handins:
            marked.setdefault(sid, {})[(pid, part)] = mark
    recheck: dict[str, dict] = {}
    if marked:
        for (sid, pid, part), reason in rechecks(gradebook, assignment, handins).items():
            recheck.setdefault(sid, {})[(pid, part)] = reason
    return marked, recheck


def counted(gradebook: Gradebook, key: dict, deadline: Deadline | None = None,
            students: list[str] | None = None) -> dict[str, Counted]:
    """student → ``Counted`` (the handin that counts or None, what the late policy made of it
    or None, how many they handed in, the handin id of the latest, …), for every student of
    the key (or of ``students``), read from the handins alone (no parts, no key entries)."""
    assignment = assignment_id(key)
    students = class_students(gradebook, key) if students is None else students
    handins: dict[str, list[SubmissionRow]] = {}
    for h in gradebook.handins(assignment, students=students):     # (each student's, latest first)
        handins.setdefault(h.student, []).append(h)
    return {sid: _counting_handin(deadline, sid, handins.get(sid, [])) for sid in students}


def class_look(gradebook: Gradebook, key: dict, deadline: Deadline | None = None) -> list[tuple]:
    """(student, file, issues that need a look) of every student with a handin — what
    ``class_grades(…)[i].look`` says, without reading a part or a key entry (the TA's list
    after a run of ten thousand costs the handins' rows, not the class's results)."""
    out = []
    chosen = counted(gradebook, key, deadline)
    _, recheck = _marks_by_student(gradebook, assignment_id(key), chosen)
    for sid, c in chosen.items():
        if not c.handins:
            continue
        submission = c.submission
        status = submission.status if submission is not None else NOT_ACCEPTED
        path = (submission or c.refused).path
        issues = (*(submission.issues if submission is not None else ()), *c.issues)
        again = [(RECHECK, f"{pid}/{part}: {why}") for (pid, part), why in recheck.get(sid, {}).items()]
        out.append((sid, path, look_of(issues, status, path) + again))
    return out


def look_of(issues, status: str, path: str) -> list[tuple[str, str]]:
    """The issues that need a human look before a grade stands, and a handin the grader
    itself failed on (it counts as received last, and is graded again only by a run whose
    folder holds it)."""
    errored = [("grader-error", f"{path}: the grader failed on part of it (see its parts); "
                                "grade the folder that holds it again")] if status == ERROR else []
    return flagged(issues) + errored


def _late_issues(lateness) -> tuple:
    """The note a late (or refused) handin gets, for the TA's list."""
    if lateness is None or (lateness.accepted and not lateness.late):
        return ()
    return (("late", f"received {lateness.words}"),)


def score_text(x: float, decimals: int = 2) -> str:
    """A score as people (and LMS importers) write it: 12.5, 13, 0.67 — never "-0"."""
    text = f"{round(float(x), decimals) + 0.0:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# How formats.deadline ends the words of a handin received after the cutoff.
_REFUSED_WORDS = ": after the cutoff, not accepted"


def late_line(s) -> str:
    """What the late policy did to a student's handin, in the words every report gives the
    student (the feedback page, Moodle's feedback, Gradescope's): the points taken off, with
    how late and the percent, or that the handin was not accepted; "" when it did neither.
    ``s``: a StudentGrades, or anything with its ``status``, ``penalty`` and ``late``."""
    if s.status == NOT_ACCEPTED:
        how = s.late[:-len(_REFUSED_WORDS)] + ", after the cutoff" if s.late.endswith(_REFUSED_WORDS) \
            else s.late
        return f"Not accepted: your notebook was received {how}, so it earns no points."
    if s.penalty:
        return f"Late penalty: −{score_text(s.penalty)} points (received {s.late})."
    return ""


def _counting_handin(deadline: Deadline | None, student: str, handins: list[SubmissionRow]) -> Counted:
    """Which of ``handins`` (the last received first) counts: without a deadline the last
    one; with one, its ``counts`` rule over those the policy accepts (``Deadline.choose``);
    none when it accepts none (the last one is the refused handin then)."""
    if not handins:
        return Counted(None, None, 0, None)
    latest = handins[0].handin
    if deadline is None:
        history = tuple(Handin(h, None, i == 0, "received last" if i == 0 else "a later handin counts")
                        for i, h in enumerate(handins))
        return Counted(handins[0], None, len(handins), latest, history)
    choice = deadline.choose(student, [(_received(h), h.score) for h in handins])
    history = tuple(Handin(h, lateness, i == choice.index,
                           choice.why if i == choice.index
                           else "not accepted" if not lateness.accepted else "another handin counts")
                    for i, (h, lateness) in enumerate(zip(handins, choice.assessed)))
    if choice.index is None:
        lateness = choice.assessed[0]
        return Counted(None, lateness, len(handins), latest, history, handins[0], _late_issues(lateness))
    lateness = choice.assessed[choice.index]
    return Counted(handins[choice.index], lateness, len(handins), latest, history, None,
                   _late_issues(lateness) + _replaced_issues(history, deadline.counts))


def _replaced_issues(history: tuple[Handin, ...], rule: str) -> tuple:
    """A late handin counted while an on-time one scored more: said, with both scores (the
    policy is the spec's, but a lower grade must never come silently)."""
    chosen = next((h for h in history if h.counts), None)
    if chosen is None or not chosen.lateness.late:
        return ()
    better = [h for h in history if not h.counts and h.lateness.accepted and not h.lateness.late
              and h.after_penalty > chosen.after_penalty]
    if not better:
        return ()
    best = max(better, key=lambda h: h.after_penalty)
    penalty = chosen.lateness.penalty_percent
    after = f" after −{penalty:g} %" if penalty else ""
    return ((REPLACED_ON_TIME, f"the late handin ({score_text(chosen.after_penalty)} of "
                               f"{score_text(chosen.row.max_score)}{after}) counts; an on-time handin "
                               f"scored {score_text(best.row.score)} (counts: {rule}; with counts: best "
                               "or last_on_time in the spec the late one would not count)"),)


def _received(handin: SubmissionRow):
    try:
        return datetime.fromisoformat(handin.received_at) if handin.received_at else None
    except ValueError:
        return None


def _late(s: StudentGrades, c: Counted) -> StudentGrades:
    """``s`` with its handins beside it and its late penalty taken off, as a figure of its
    own; a student whose handins the policy all refuses is ``not accepted``, with the refused
    handin's file and time."""
    s = replace(s, history=c.history)
    lateness = c.lateness
    if lateness is None:
        return s
    issues = (*s.issues, *c.issues)
    if not lateness.accepted:
        return replace(s, status=NOT_ACCEPTED, late=lateness.words, issues=issues, path=c.refused.path,
                       received_at=c.refused.received_at, received_from=c.refused.received_from)
    penalty = round(s.total * lateness.penalty_percent / 100, 6)
    return replace(s, total=s.total - penalty, penalty=penalty, late=lateness.words, issues=issues)


def _grades_of(key: dict, sid: str, submission: SubmissionRow | None, rows: list[ResultRow],
               handins: int = 0, marked=None, recheck=None) -> StudentGrades:
    problems = head_problems(key)
    heads = _heads(key)
    # (names only where the head lists every part; else names, grading items and points)
    entry = entry_front(key, sid) if heads is not None else entry_outline(key, sid)
    parts = _student_parts(entry, problems, rows, marked if submission else None, recheck, heads)
    scores = {p["id"]: sum(x.score for x in parts if x.problem == p["id"]) for p in problems}
    return StudentGrades(
        id=sid, name=str(entry.get("name", "")), email=str(entry.get("email", "")),
        status=submission.status if submission else MISSING,
        notes=submission.notes if submission else (), parts=parts,
        total=sum(scores.values()), max_score=total_points(key), problem_scores=scores,
        issues=submission.issues if submission else (), handins=handins,
        path=submission.path if submission else "", handin=submission.handin if submission else "",
        received_at=submission.received_at if submission else None,
        received_from=submission.received_from if submission else "")


def _heads(key: dict) -> dict | None:
    """problem → (part, points), from the key's head (None where it does not list them)."""
    heads = head_parts(key)
    return None if heads is None else dict(heads)


def with_answers(gradebook: Gradebook, key: dict, s: StudentGrades) -> StudentGrades:
    """``s`` with the student's answers, read from the gradebook for them alone."""
    # (no counted handin — missing, or none the late policy accepts — no rows)
    rows = gradebook.results(assignment_id(key), s.id, handin=s.handin) if s.handin else []
    marked = {(p.problem, p.part): p.mark for p in s.parts if p.mark is not None}
    recheck = {(p.problem, p.part): p.recheck for p in s.parts if p.recheck}
    return replace(s, parts=_student_parts(entry_outline(key, s.id), head_problems(key), rows, marked, recheck))
