"""The commonest mistake on each by-hand matrix part, for the dashboard's last section
(``grader.reports.dashboard``): every student has their own numbers, so the wrong answers are
grouped by the misconception the grader diagnosed or, lacking one, by the shape of the error
(transposed, signs flipped, a constant factor off, …), and one student of the largest group
that can be drawn is shown beside their own expected matrix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formats.compare import within
from formats.key_shape import assignment_id, entry_for, gradings, head_problems, problem_record
from formats.serialize import decode_names

from grader.reports.dashboard_format import count_of
from grader.reports.feedback_page import as_array, decoded_answer
from grader.store.gradebook import Gradebook
from grader.store.rows import omitted_reason


@dataclass(frozen=True)
class Mistake:
    """The commonest mistake on one matrix part: what it is, who made it, and one of them."""

    problem: str
    part: str
    label: str                    # the misconception's code, or the shape of the error
    named: bool                   # a diagnosed misconception (not just the error's shape)
    students: tuple[str, ...]     # who made it
    wrong: int                    # students who got the part wrong at all
    student: str                  # the one shown
    answer: object                # their wrong answer (decoded)
    expected: object              # their expected answer, from the key
    message: str                  # the grader's message to them
    commonest: str | None = None  # the commonest mistake when it cannot be drawn (this one is)
    template: str | None = None   # a pool's member (its parts are its own)

    @property
    def where(self) -> str:
        return f"{self.problem}[{self.template}]/{self.part}" if self.template else f"{self.problem}/{self.part}"


def student_record(key: dict, student: str, problem: str) -> dict:
    return problem_record(entry_for(key, student) or {}, problem, {})


def _expected(record: dict, part: str):
    answers = record.get("answers", {})
    return decode_names({part: answers[part]})[part] if part in answers else None


def _grading(record: dict, part: str) -> dict:
    return next((g for g in gradings(record, []) if g.get("id") == part), {})


def as_matrix(value) -> np.ndarray | None:
    """``value`` as a 2-D array of numbers (booleans as 0/1) with both sides above 1, else None."""
    array = as_array(value)
    if array is None or array.ndim != 2 or min(array.shape) < 2 or array.dtype.kind not in "biuf":
        return None
    return array.astype(float)


def matrix_parts(key: dict, students: list[str]) -> list[tuple[str, str | None, str]]:
    """(problem, template, part) of every numeric part whose expected answer is a matrix, in
    the assignment's order; ``template`` names a pool's member (None for a plain problem),
    read from the first student whose variant has it."""
    out = []
    for problem in head_problems(key):
        pid = problem["id"]
        members = [m["template"] for m in problem["pool"]] if problem.get("pool") else [None]
        for template in members:
            record = next((r for r in (student_record(key, s, pid) for s in students)
                           if r and (template is None or r.get("template") == template)), {})
            if record.get("kind") == "numeric":
                out += [(pid, template, g["id"]) for g in gradings(record, [])
                        if as_matrix(_expected(record, g["id"])) is not None]
    return out


def error_shape(answer, expected, rtol: float, atol: float) -> str:
    """What kind of wrong a wrong matrix is, for an answer no misconception explains: the
    groups "most common" is counted in when every student has different numbers."""
    e = np.asarray(expected, dtype=float)
    a = as_array(answer)
    if a is None or a.dtype.kind not in "biuf":
        return "not an array of numbers"
    a = a.astype(float)
    if not np.isfinite(a).all():
        return "NaN or infinite entries"
    if a.shape != e.shape:
        if a.shape == e.T.shape and within(a, e.T, rtol, atol):
            return "rows and columns swapped (the transpose of the expected matrix)"
        return "the right entries in the wrong shape" if a.size == e.size and within(
            a.reshape(e.shape), e, rtol, atol) else "the wrong shape"
    if within(a, e.T, rtol, atol):
        return "rows and columns swapped (the transpose of the expected matrix)"
    if within(-a, e, rtol, atol):
        return "the signs flipped"
    nonzero = np.abs(e) > atol
    if nonzero.any():
        factor = float(np.median(a[nonzero] / e[nonzero]))
        if factor not in (0.0, 1.0) and within(a, factor * e, rtol, atol):
            return "a constant factor off"
    wrong = int((np.abs(a - e) > atol + rtol * np.abs(e)).sum())
    return "one entry wrong" if wrong == 1 else "a few entries wrong" if wrong <= max(2, e.size // 4) \
        else "most entries wrong"


def commonest_mistake(gradebook: Gradebook, key: dict, problem: str, template: str | None, part: str,
                       counted: dict, wrong: list[str]) -> Mistake | None:
    """The answers of the students who got the part wrong (``wrong``: the summary's, as the
    misconception table counts them) grouped by the misconception diagnosed (or, lacking
    one, by the shape of the error); the largest group that can be drawn, and one of its
    students."""
    counted = {sid: counted[sid] for sid in wrong if sid in counted}
    groups: dict[tuple[bool, str], list] = {}
    for _, r in sorted(gradebook.part_results(assignment_id(key), problem, part, handins=counted),
                       key=lambda hr: hr[1].student):
        record = student_record(key, r.student, problem)
        expected = _expected(record, part)
        if r.answer is None or omitted_reason(r.answer) is not None or as_matrix(expected) is None:
            continue
        answer = decoded_answer(r.answer)
        if r.status == "passed":            # the automatic grader passed it; a grader did not
            label = (False, "points taken off by a grader")
        elif r.misconception:
            label = (True, r.misconception)
        else:
            g = _grading(record, part)
            label = (False, error_shape(answer, expected, float(g.get("rtol", 1e-5)), float(g.get("atol", 1e-8))))
        groups.setdefault(label, []).append((r, answer, expected))
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), not kv[0][0], kv[0][1]))
    for (named, label), members in ranked:
        drawable = next((m for m in members if as_matrix(m[1]) is not None), None)
        if drawable is None:
            continue
        r, answer, expected = drawable
        first = ranked[0][0]
        commonest = None if (named, label) == first else f"{first[1]} ({count_of(len(ranked[0][1]), 'student')})"
        return Mistake(problem, part, label, named, tuple(m[0].student for m in members), len(wrong), r.student,
                       answer, expected, r.message or "", commonest, template)
    return None
