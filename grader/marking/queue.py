"""What a grader marks: one part across the class, answer by answer, in a stable
pseudo-random order, with identical answers (and for an auto-graded part, answers with the
same diagnosis) gathered in groups graded at once.

Read from the gradebook (the counted handin's result for the part: its answer, its auto
verdict; the part's marks) and the answer key (the student's rubric, prompt and givens).
The queue is light — one row per student, no prompts, givens or rubric texts — so a part of
a thousand answers is read in one query and sent at once; ``detail`` reads one student's
prompt, givens, rubric and history when that answer is shown.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass

from formats.deadline import Deadline
from formats.key_shape import (assignment_id, entry_for, givens_of, graded_parts, head_problems, is_free_response,
                              kind as record_kind, problem_record, prompt_of, rubric_of)
from formats.rubric import Rubric

from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, omitted_reason
from grader.store.grades import counted
from grader.store.marks import HAND, OVERRIDE, Mark, history, look, mark_of, marks as all_marks, rechecks

ANSWER_SHOWN = 64 * 1024          # characters of an answer the queue carries (the gradebook caps at 64 kB)
NO_ANSWER = "(no answer)"


@dataclass(frozen=True)
class PartSummary:
    """One markable part: every free-response part, and every auto-graded part (which a
    grader may open to override)."""

    problem: str
    part: str
    title: str
    points: float
    kind: str                     # HAND: waits for a grader; OVERRIDE: auto-graded
    answers: int                  # students with a counted handin
    graded: int                   # HAND: marked and needing no look; OVERRIDE: overridden


@dataclass(frozen=True)
class Answer:
    """One student's answer to the part, with its auto result and mark (light: no texts of the key)."""

    student: str
    name: str
    position: int                 # 1-based place in the part's stable pseudo-random order
    text: str                     # the answer as text (free response: as written)
    result: ResultRow | None      # the auto result of the counted handin (None: no row)
    mark: Mark | None             # active or cleared; None: never marked
    look: str                     # why the mark needs another look ('' when it does not)
    group: str                    # the group's key (answers of one group are graded at once)

    @property
    def version(self) -> int:
        return self.mark.version if self.mark else 0

    @property
    def marked(self) -> bool:
        return bool(self.mark and self.mark.active)

    @property
    def done(self) -> bool:
        """Needs no grader: marked with nothing to look at again (a free-response part), or
        scored automatically (an auto-graded part not overridden, or a blank answer)."""
        if self.marked:
            return not self.look
        return self.result is not None and self.result.status != "manual"


@dataclass(frozen=True)
class Group:
    key: str
    label: str                    # e.g. "7 identical answers", "diagnosed: no 1/√d_k scale"
    members: tuple[str, ...]      # student ids, in queue order


@dataclass(frozen=True)
class PartQueue:
    problem: str
    part: str
    title: str
    points: float
    kind: str
    answers: tuple[Answer, ...]   # in the stable pseudo-random order
    groups: tuple[Group, ...]     # groups of two or more, largest first

    @property
    def graded(self) -> int:
        """As ``PartSummary.graded``: HAND, answers done; OVERRIDE, answers overridden."""
        if self.kind == HAND:
            return sum(a.done for a in self.answers)
        return sum(a.marked for a in self.answers)


# --- which parts ---------------------------------------------------------------------------

def sample_record(key: dict, problem: str, template: str | None = None) -> dict:
    """The problem's record in the first entry that has it (for a pool, of that member
    ``template``): every student with the same template has the same parts and rubric items
    (only their texts and numbers differ). The entries are read lazily from the key file, so
    this stops at the first."""
    return next((problem_record(e, problem) for e in key["students"].values()
                 if problem in e.get("problems", {})
                 and (template is None or problem_record(e, problem).get("template") == template)), {})


def _records(key: dict, problem: dict) -> list[dict]:
    """One representative record per template the problem can have (a pool: per member)."""
    if not problem.get("pool"):
        return [sample_record(key, problem["id"])]
    return [r for m in problem["pool"] if (r := sample_record(key, problem["id"], m["template"]))]


def markable_parts(key: dict) -> list[tuple[str, str, str, float, str]]:
    """(problem, part, title, points, kind) of every graded part, in the key's order. A pool's
    parts are its members' together (a part id two members share is listed once: each
    student's own record gives its prompt, rubric and points)."""
    out, seen = [], set()
    for problem in head_problems(key):
        pid = problem["id"]
        for record in _records(key, problem):
            kind = HAND if is_free_response(record) else OVERRIDE
            for part, points in graded_parts(record):
                if (pid, part) not in seen:
                    seen.add((pid, part))
                    out.append((pid, part, str(problem.get("title", pid)), points, kind))
    return out


def part_record(key: dict, problem: str, part: str) -> dict:
    """A representative record of the template that has the part (a pool: the first member
    with a part of that id)."""
    head = next((p for p in head_problems(key) if p["id"] == problem), {"id": problem})
    return next((r for r in _records(key, head) if part in dict(graded_parts(r))), {})


def _has_part(key: dict, student: str, problem: str, part: str) -> bool:
    """Whether the student's variant has the part (a pool member may not; every variant of
    a plain problem has its parts, and no entry is read for it)."""
    if not any(p["id"] == problem and p.get("pool") for p in head_problems(key)):
        return True
    record = problem_record(entry_for(key, student) or {}, problem, {})
    return part in dict(graded_parts(record))


def counted_handins(gb: Gradebook, key: dict, deadline: Deadline | None = None) -> dict[str, str]:
    """student → the handin that counts (under the late policy when there is one)."""
    return {sid: s.handin for sid, (s, *_rest) in counted(gb, key, deadline).items() if s is not None}


def parts_to_mark(gb: Gradebook, key: dict, deadline: Deadline | None = None) -> list[PartSummary]:
    """Every part, free-response ones first, with its progress: read from the results'
    statuses and the marks alone (no answer, no message), in three queries for the class."""
    assignment = assignment_id(key)
    handins = counted_handins(gb, key, deadline)
    status = {(sid, pid, part): st for sid, handin, pid, part, st in gb.part_statuses(assignment)
              if handins.get(sid) == handin}
    marked = {k for k, m in all_marks(gb, assignment).items() if k[0] in handins}
    again = set(rechecks(gb, assignment, handins)) if marked else set()
    summaries = []
    for pid, part, title, points, kind in markable_parts(key):
        if kind == HAND:
            graded = sum(((sid, pid, part) in marked and (sid, pid, part) not in again)
                         or ((sid, pid, part) not in marked and status.get((sid, pid, part), "manual") != "manual")
                         for sid in handins)
        else:
            graded = sum((sid, pid, part) in marked for sid in handins)
        summaries.append(PartSummary(pid, part, title, points, kind, len(handins), graded))
    return sorted(summaries, key=lambda s: s.kind != HAND)


# --- one part's queue ----------------------------------------------------------------------

def order_key(assignment: str, problem: str, part: str, student: str) -> str:
    """The stable pseudo-random order of a part's answers: the same at every opening, on
    every grader's screen, and different for every part (sequential-grading bias)."""
    return hashlib.sha256(f"{assignment}\0{problem}\0{part}\0{student}".encode()).hexdigest()


def normalised(text: str) -> str:
    """An answer as groups compare it: Unicode NFC (one spelling of each accented letter),
    whitespace collapsed, trailing full stops and commas ignored — differences no grader
    grades. Nothing that can change what an answer says is folded: not case (``Q`` and
    ``q``, ``d_k`` and ``D_k``), not Markdown emphasis characters (``2*3`` is not ``23``,
    ``x_1`` not ``x1``), not compatibility forms (NFKC reads ``x²`` as ``x2``), not ``!``
    (``n!`` is not ``n``): a group's grade goes only to answers its grader read."""
    text = unicodedata.normalize("NFC", text)
    return re.sub(r"\s+", " ", text).strip().rstrip(".,;").strip()


def _text(result: ResultRow | None) -> str:
    if result is None or result.answer is None:
        return NO_ANSWER
    if isinstance(result.answer, str):
        return result.answer[:ANSWER_SHOWN]
    return json.dumps(result.answer, ensure_ascii=False)[:ANSWER_SHOWN]


def _group_key(kind: str, result: ResultRow | None, text: str) -> str:
    if kind == HAND:
        if result is None or result.status == "missing" or result.answer is None:
            return "blank"
        if omitted_reason(result.answer) is not None:
            # too large to keep: the text is only the marker (the same for every answer of
            # that size), so it is a group of its own, never "identical" to another
            return f"omitted:{result.student}"
        return "text:" + hashlib.sha256(normalised(text).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    # An auto-graded part: by what the kit diagnosed.
    if result is None:
        return "status:missing"
    if result.misconception:
        return f"misconception:{result.misconception}"
    return f"status:{result.status}"


def _group_label(group: str, n: int, sample: ResultRow | None) -> str:
    if group.startswith("text:"):
        return f"{n} identical answers"
    if group == "blank":
        return f"{n} without an answer"
    if group.startswith("misconception:"):
        return f"{n} diagnosed: {(sample.message if sample else '').split('.')[0] or group[14:]}"
    return f"{n} {group[7:]}"


def _results(gb: Gradebook, assignment: str, problem: str, part: str, handins: dict) -> dict:
    """student → the result row of their counted handin for the part."""
    return {row.student: row for handin, row in gb.part_results(assignment, problem, part, handins=handins)
            if handins.get(row.student) == handin}


def _part_info(key: dict, problem: str, part: str) -> tuple[str, str, str, float, str]:
    info = next((p for p in markable_parts(key) if p[:2] == (problem, part)), None)
    if info is None:
        raise KeyError(f"the key has no part {problem}/{part}")
    return info


def _answer(key: dict, kind: str, sid: str, position: int, result, mark) -> Answer:
    text = _text(result)
    return Answer(sid, str(entry_for(key, sid).get("name", "")), position, text, result, mark,
                  look(mark, result), _group_key(kind, result, text))


def part_queue(gb: Gradebook, key: dict, problem: str, part: str,
               deadline: Deadline | None = None) -> PartQueue:
    """The part's answers, one per student with a counted handin."""
    assignment = assignment_id(key)
    _, _, title, points, kind = _part_info(key, problem, part)
    handins = counted_handins(gb, key, deadline)
    results = _results(gb, assignment, problem, part, handins)
    current = {k[0]: m for k, m in all_marks(gb, assignment, active_only=False, problem=problem,
                                             part=part).items()}
    students = sorted((sid for sid in handins if _has_part(key, sid, problem, part)),
                      key=lambda sid: order_key(assignment, problem, part, sid))
    answers = [_answer(key, kind, sid, i, results.get(sid), current.get(sid))
               for i, sid in enumerate(students, 1)]
    return PartQueue(problem, part, title, points, kind, tuple(answers), _groups(answers))


def answer_of(gb: Gradebook, key: dict, problem: str, part: str, student: str,
              deadline: Deadline | None = None) -> Answer | None:
    """One student's answer to the part as ``part_queue`` has it (None: no counted handin),
    read for them alone."""
    assignment = assignment_id(key)
    _, _, _, _, kind = _part_info(key, problem, part)
    handins = counted_handins(gb, key, deadline)
    if student not in handins:
        return None
    result = next((row for handin, row in gb.part_results(assignment, problem, part, student)
                   if handin == handins[student]), None)
    order = sorted(handins, key=lambda sid: order_key(assignment, problem, part, sid))
    return _answer(key, kind, student, order.index(student) + 1, result,
                   mark_of(gb, assignment, student, problem, part))


def _groups(answers: list[Answer]) -> tuple[Group, ...]:
    members: dict[str, list[Answer]] = {}
    for a in answers:
        members.setdefault(a.group, []).append(a)
    groups = [Group(g, _group_label(g, len(m), m[0].result), tuple(a.student for a in m))
              for g, m in members.items() if len(m) > 1]
    return tuple(sorted(groups, key=lambda g: (-len(g.members), g.key)))


# --- one answer in full --------------------------------------------------------------------

@dataclass(frozen=True)
class Detail:
    """What the grader reads beside one answer: the student's own prompt, givens and rubric."""

    problem_prompt: str           # Markdown, this student's numbers
    part_prompt: str
    givens: dict                  # name → the value as a NumPy literal (text)
    rubric: Rubric
    kind: str                     # the record's kind (numeric, choice, free_response, implement)
    history: tuple                # grader.store.marks.LogEntry, oldest first


def detail(gb: Gradebook, key: dict, problem: str, part: str, student: str) -> Detail:
    from formats.literals import literal
    from formats.serialize import decode_names

    record = problem_record(entry_for(key, student), problem)
    points = dict(graded_parts(record))[part]
    try:
        givens = {name: literal(value) for name, value in decode_names(givens_of(record)).items()}
    except Exception:  # noqa: BLE001 — a given that cannot be drawn is shown as stored
        givens = {name: json.dumps(value) for name, value in givens_of(record).items()}
    return Detail(prompt_of(record), prompt_of(record, part), givens, rubric_of(record, part, points),
                  str(record_kind(record)), tuple(history(gb, assignment_id(key), student, problem, part)))
