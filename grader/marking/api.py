"""The marking page's JSON API (``grader.marking.web`` serves it): what each route does,
with the gradebook and the key, and no HTTP — the parts to mark and their progress, one
part's answers (``grader.marking.queue``), one answer with its prompt, givens, rubric and
history, and saving or clearing a grade (``grader.store.marks``).

Student text (answers, auto messages, TAs' comments) leaves only as JSON strings, which the
page puts in the DOM with ``textContent``; an answer's and a message's control and format
characters (a bidi override, ESC, a zero-width space) are written visibly, ``⟨U+202E⟩``
(``formats.textfile.visible``), so what the grader reads is what the student wrote. The only
HTML sent is the key's own, trusted texts (prompts, rubric texts and notes, the guide),
rendered with ``exercises.render.html.markdown_to_html`` (which passes no raw HTML through) in
``*_html`` fields.

Every save names, per student, the version of the grade it started from and the answer its
grader read (``answer_digest``, as ``/api/answer``'s ``save_with`` gives them): a grade saved
since by someone else, or an answer changed since (a later handin, a regrade), is a 409 with
things as they stand now — never an overwrite, never a grade on an answer nobody read.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter

from exercises.render.html import markdown_to_html
from formats.key_shape import assignment_id
from formats.textfile import printable, visible

from grader.store.gradebook import Gradebook
from grader.store.rows import answer_digest
from grader.store.marks import AnswerChanged, Conflict, Edit, MarkError, Target, clear, look, save
from .queue import Answer, answer_of, detail, part_queue, parts_to_mark

GRADER_LIMIT = 100                # characters of a grader's name
COMMENTS_OFFERED = 30             # the most used comments of a part, offered for reuse


class ApiError(Exception):
    """A request the API refuses: its HTTP status and the message the page shows."""

    def __init__(self, status: int, message: str, extra: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra or {}


# --- JSON shapes (student text stays text: the page shows it with textContent) ------------------

def _mark_json(mark) -> dict | None:
    if mark is None:
        return None
    return {"active": mark.active, "kind": mark.kind, "items": sorted(mark.items),
            "adjustment": mark.adjustment, "comment": printable(mark.comment),
            "reason": printable(mark.reason), "score": mark.score, "max_score": mark.max_score,
            "grader": printable(mark.grader), "marked_at": mark.marked_at, "version": mark.version}


def _answer_json(a: Answer) -> dict:
    r = a.result
    auto = None if r is None else {"score": r.score, "max_score": r.max_score, "status": r.status,
                                   "message": visible(r.message), "misconception": r.misconception}
    return {"student": a.student, "name": printable(a.name), "position": a.position,
            "text": visible(a.text), "answer_digest": _digest(a), "auto": auto, "mark": _mark_json(a.mark), "look": a.look,
            "group": a.group, "version": a.version, "marked": a.marked, "done": a.done}


def _digest(a: Answer) -> str:
    """Which answer this is (``marks.Target.answer_seen``): a save names it, so a grade is
    never saved onto an answer that changed since its grader read it."""
    return answer_digest(a.result.answer if a.result is not None else None)


def _rubric_json(rubric) -> dict:
    return {"items": [{"id": i.id, "points": i.points, "text_html": markdown_to_html(i.text),
                       "note_html": markdown_to_html(i.note)} for i in rubric.items],
            "floor": rubric.floor, "ceiling": rubric.ceiling, "start": rubric.start,
            "guide_html": markdown_to_html(rubric.guide), "version": rubric.version}


def _comments(answers) -> list[str]:
    """The comments already used on this part, the most used first: the page offers them."""
    used = Counter(a.mark.comment for a in answers if a.marked and a.mark.comment.strip())
    return [printable(c) for c, _ in used.most_common(COMMENTS_OFFERED)]


def _history_json(entry) -> dict:
    m = entry.mark
    return {"version": entry.version, "event": entry.event, "grader": printable(entry.grader),
            "at": entry.at, "score": m.get("score"), "items": sorted(m.get("items") or {}),
            "adjustment": m.get("adjustment"), "comment": printable(str(m.get("comment", ""))),
            "note": printable(entry.note)}


# --- the API -------------------------------------------------------------------------------------

class MarkingApi:
    """What each route does, with the gradebook and the key (no HTTP here)."""

    def __init__(self, gradebook: Gradebook, key: dict, deadline=None, grader: str = "ta"):
        self.gb, self.key, self.deadline, self.grader = gradebook, key, deadline, grader
        self._lock = threading.Lock()
        self._writes = 0                  # saves through this server: the parts list is read again after one
        self._parts: tuple[int, list] | None = None

    def parts(self, _query) -> dict:
        """Every part with its progress. Reading it costs a part queue per part (for a large
        class, a wait the page would show), so it is kept until the next save through this server
        (a grade saved elsewhere, by ``attnkit mark import``, shows at the next save or start)."""
        with self._lock:
            writes = self._writes
            if self._parts is None or self._parts[0] != writes:
                self._parts = writes, [
                    {"problem": s.problem, "part": s.part, "title": s.title, "points": s.points,
                     "kind": s.kind, "answers": s.answers, "graded": s.graded}
                    for s in parts_to_mark(self.gb, self.key, self.deadline)]
            parts = self._parts[1]
        return {"assignment": assignment_id(self.key), "grader": self.grader, "parts": parts}

    def _wrote(self) -> None:
        with self._lock:
            self._writes += 1

    def _queue(self, problem: str, part: str):
        try:
            return part_queue(self.gb, self.key, problem, part, self.deadline)
        except KeyError:
            raise ApiError(404, f"no part {problem}/{part} in this assignment") from None

    def part(self, query) -> dict:
        problem, part = _param(query, "problem"), _param(query, "part")
        q = self._queue(problem, part)
        rubric = None
        if q.answers:
            rubric = _rubric_json(detail(self.gb, self.key, problem, part, q.answers[0].student).rubric)
        return {"problem": q.problem, "part": q.part, "title": q.title, "points": q.points,
                "kind": q.kind, "rubric": rubric, "answers": [_answer_json(a) for a in q.answers],
                "groups": [{"key": g.key, "label": g.label, "members": list(g.members)} for g in q.groups],
                "comments": _comments(q.answers)}

    def answer(self, query) -> dict:
        problem, part, student = (_param(query, n) for n in ("problem", "part", "student"))
        try:
            current = answer_of(self.gb, self.key, problem, part, student, self.deadline)
        except KeyError:
            raise ApiError(404, f"no part {problem}/{part} in this assignment") from None
        if current is None:
            raise ApiError(404, f"no answer of {student} to {problem}/{part}")
        d = detail(self.gb, self.key, problem, part, student)
        return {"answer": _answer_json(current), "kind": d.kind,
                "save_with": {"problem": problem, "part": part, "students": [
                    {"id": student, "version": current.version, "answer": _digest(current)}]},
                "problem_prompt_html": markdown_to_html(d.problem_prompt),
                "part_prompt_html": markdown_to_html(d.part_prompt),
                "givens": [[name, printable(text)] for name, text in d.givens.items()],
                "rubric": _rubric_json(d.rubric), "history": [_history_json(e) for e in d.history]}

    def mark(self, body: dict) -> dict:
        problem, part = _field(body, "problem", str), _field(body, "part", str)
        answers = self._targets(problem, part, body)
        grader = _grader(body, self.grader)
        edit = Edit(tuple(_items(body)), _number(body, "adjustment"), _text(body, "comment"),
                    _text(body, "reason"))
        targets = [Target(a.student, v, a.result, seen) for a, v, seen in answers]
        try:
            saved = save(self.gb, self.key, problem, part, targets, edit, grader)
        except MarkError as err:
            raise ApiError(400, str(err)) from None
        except (Conflict, AnswerChanged) as err:
            raise self._conflict(problem, part, answers, err) from None
        self._wrote()
        reply = {"answers": [_answer_json(_with(a, m)) for (a, _, _), m in zip(answers, saved)]}
        same_by = sorted({printable(m.grader) for m in saved if m.student in saved.kept})
        return {**reply, "same_by": same_by} if same_by else reply

    def clear(self, body: dict) -> dict:
        problem, part = _field(body, "problem", str), _field(body, "part", str)
        answers = self._targets(problem, part, body)
        if len(answers) != 1:
            raise ApiError(400, "clear one answer at a time")
        (a, version, _), = answers
        try:
            mark = clear(self.gb, self.key, problem, part, Target(a.student, version, a.result),
                         _grader(body, self.grader))
        except Conflict as err:
            raise self._conflict(problem, part, answers, err) from None
        self._wrote()
        return {"answers": [_answer_json(_with(a, mark))]}

    def _targets(self, problem: str, part: str, body: dict) -> list[tuple[Answer, int, str]]:
        """(the answer as the queue has it now, the version the grader's edit started from,
        the digest of the answer the grader read)."""
        students = body.get("students")
        if not isinstance(students, list) or not students:
            raise ApiError(400, "students: give a list of {id, version, answer}")
        current = {a.student: a for a in self._queue(problem, part).answers}
        out = []
        for s in students:
            if not isinstance(s, dict) or not isinstance(s.get("id"), str) \
                    or not isinstance(s.get("version"), int) or isinstance(s.get("version"), bool):
                raise ApiError(400, "students: each is {id: text, version: whole number, answer: its digest}")
            if not isinstance(s.get("answer"), str):
                raise ApiError(400, "students: each names the answer its grader read (answer: the "
                               "answer_digest the page was sent)")
            if s["id"] not in current:
                raise ApiError(400, f"{s['id']}: no answer to {problem}/{part}")
            out.append((current[s["id"]], s["version"], s["answer"]))
        if len({a.student for a, _, _ in out}) != len(out):
            raise ApiError(400, "students: a student is named twice")
        return out

    def _conflict(self, problem: str, part: str, answers, err: Conflict | AnswerChanged) -> ApiError:
        """409, with the grades and answers as they stand now, so the page shows them (never
        overwrites); ``changed`` names the students whose answer changed since it was read."""
        now = {a.student: a for a in self._queue(problem, part).answers}
        extra = {"answers": [_answer_json(now[a.student]) for a, _, _ in answers if a.student in now]}
        changed = {"changed": err.students} if isinstance(err, AnswerChanged) else {}
        return ApiError(409, str(err), {**extra, **changed})


def _with(a: Answer, mark) -> Answer:
    return Answer(a.student, a.name, a.position, a.text, a.result, mark, look(mark, a.result), a.group)


def _param(query: dict, name: str) -> str:
    values = query.get(name)
    if not values or not values[0]:
        raise ApiError(400, f"missing parameter {name!r}")
    return values[0]


def _field(body: dict, name: str, kind: type):
    value = body.get(name)
    if not isinstance(value, kind) or (kind is str and not value):
        raise ApiError(400, f"{name}: missing or not a {kind.__name__}")
    return value


def _items(body: dict) -> list[str]:
    items = body.get("items", [])
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ApiError(400, "items: give a list of rubric item ids")
    return items


def _number(body: dict, name: str) -> float:
    value = body.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ApiError(400, f"{name}: must be a number")
    return float(value)


def _text(body: dict, name: str) -> str:
    value = body.get(name, "")
    if not isinstance(value, str):
        raise ApiError(400, f"{name}: must be text")
    return value


def _grader(body: dict, default: str) -> str:
    name = body.get("grader") or default
    if not isinstance(name, str) or len(name.strip()) == 0 or len(name) > GRADER_LIMIT:
        raise ApiError(400, f"grader: a name of 1 to {GRADER_LIMIT} characters")
    # A name is shown in every history line, the conflict box and the reports: control and
    # format characters (ESC, bidi overrides, zero-width ones) there would only disguise who
    # saved a grade, so they are refused rather than stored.
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in name):
        raise ApiError(400, "grader: a name without control or format characters")
    return name.strip()
