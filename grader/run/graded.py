"""One submission graded: the ``GradedSubmission`` record a run keeps for it, every part's verdict from
what the sandbox returned (``grade_values``; ``unrunnable`` for a notebook that could not run),
and what of it is stored: answers JSON-ready and capped, never echoing the student's hidden
inputs, and notes and issues capped. Decided in the trusted process (``grader.run.grading``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np

from formats.cells import grade_id
from formats.key_shape import answer_names, gradings, is_free_response, part_id, problem_records
from formats.key_shape import points as points_of
from formats.serialize import NotSerializable, to_jsonable

from grader.budget import UNLIMITED, Budget
from grader.verdicts.follow_through import carried
from grader.verdicts.parts import ERROR, MISSING, Missing, Verdict, code, problem_verdicts
from grader.sandbox.frames import list_objects
from grader.verdicts.hidden import HiddenInputs, may_hold_numbers
from grader.store.rows import ANSWER_LIMIT, OMITTED
from grader.sandbox.results import send_label


@dataclass
class GradedSubmission:
    """One submission after the sandbox and the checks."""
    verdicts: dict                  # (problem, part) → Verdict
    answers: dict                   # (problem, part) → the student's value, JSON-ready, or None
    notes: list[str] = field(default_factory=list)
    issues: list = field(default_factory=list)  # the Issues behind some notes (code, message)
    seconds: float = 0.0
    content_hash: str | None = None  # of the bytes that were graded (None: not read)


def _json_objects(value, limit: int) -> int:
    """How many Python objects ``to_jsonable(value)`` would make, counted from shapes (never
    by converting), and only up to ``limit``: beyond it the exact number does not matter."""
    if isinstance(value, np.ndarray):
        return list_objects(value.shape)
    if isinstance(value, (list, tuple, dict)):
        total = 1
        for item in (value.values() if isinstance(value, dict) else value):
            total += _json_objects(item, limit - total)
            if total > limit:
                break
        return total
    return 1


def _jsonable_answer(value):
    if isinstance(value, Missing):
        return None
    if _json_objects(value, ANSWER_LIMIT // 2) > ANSWER_LIMIT // 2:
        # (at two characters a value at least, it could never be kept: not worth a copy that
        # would take ten times the array's memory — or, for an array with an empty axis after
        # huge ones, 2**31 empty lists: sizes are judged by shape, never by .size alone)
        shape = f" of shape {_shape_text(value.shape)}" if isinstance(value, np.ndarray) else ""
        return {OMITTED: f"{'an array' if shape else 'an answer'}{shape} is too large to keep"}
    type_name = getattr(value, "type_name", None)
    if type_name is not None and not isinstance(value, str):
        return {"unsupported": str(type_name)}
    try:
        return to_jsonable(value)
    except (NotSerializable, TypeError, ValueError):
        return {"unsupported": type(value).__name__}


def _shape_text(shape) -> str:
    text = str(tuple(shape))
    return text if len(text) <= 80 else text[:79] + "…"


MAX_NOTES = 20               # notes kept for one submission (the rest are counted)
MAX_NOTE = 1_000             # characters of one note


def capped_notes(notes: list[str]) -> list[str]:
    """A submission's notes as they are stored and shown: each once, each at most a line or
    two, at most ``MAX_NOTES`` of them. Their number and length are the student's choice (a
    notebook of 100,000 cells could make megabytes of notes, and a feedback page as large)."""
    unique = list(dict.fromkeys(notes))
    kept = [n if len(n) <= MAX_NOTE else n[:MAX_NOTE - 1] + "…" for n in unique[:MAX_NOTES]]
    if len(unique) > MAX_NOTES:
        kept.append(f"… and {len(unique) - MAX_NOTES:,} more notes like these, not shown")
    return kept


def capped_issues(issues: list) -> list:
    """A submission's issues as stored: each once, each message capped like a note, at most
    ``MAX_NOTES`` of them (the rest are in the count of notes)."""
    unique = list(dict.fromkeys(issues))[:MAX_NOTES]
    return [replace(i, message=i.message if len(i.message) <= MAX_NOTE else i.message[:MAX_NOTE - 1] + "…")
            for i in unique]


def causes_of(result) -> dict:
    """answer cell label → why it may not have assigned its variable (an error or a crash)."""
    causes = {}
    for error in result.errors:
        where = f" on line {error.line}" if error.line else ""
        message = (error.message or "").strip()
        said = f": {code(message)}" if message else ""       # (NotImplementedError() says nothing, or "\n")
        causes.setdefault(error.label, f"the cell raised {code(error.type)}{where}{said}")
    for crash in result.crashes:
        if crash.case is None and crash.label.startswith(send_label("")):   # a whole problem's values
            causes[crash.label] = (f"the run stopped ({crash.reason}) while this problem's answers "
                                   "were being sent back to the grader")
        elif crash.case is None:
            causes[crash.label] = f"the cell stopped the run ({crash.reason}) and was skipped"
    return causes


# Follow-through credit rewards a chain worked right on the student's own earlier numbers. On
# a notebook issued to someone else, or whose givens were edited, every chain is consistent
# with numbers that are not this student's: credit there would pay for copying a classmate's
# notebook or for replacing the givens with easy ones. Those handins get none.
FOLLOW_WITHHELD = frozenset({"wrong-student", "wrong-variant", "givens-edited"})


def grade_values(entry: dict, values: dict, outcomes: dict, free_text: dict, causes: dict,
                 stopped: str = "", budget: Budget = UNLIMITED, follow: bool = True) -> GradedSubmission:
    """Verdicts for every part of every problem of one student's key ``entry``, from what the
    sandbox returned: ``values`` problem → {variable: value}, ``outcomes`` problem → {case
    position: CaseOutcome}, ``free_text`` problem → {part: text}, ``causes`` answer cell
    label → why its variable may be missing. ``budget`` is checked before each problem;
    ``follow`` False withholds follow-through credit (see ``FOLLOW_WITHHELD``)."""
    verdicts, answers = {}, {}
    hidden = _Unechoed(entry)
    for pid, record in problem_records(entry):      # (the key sorts them; rows keep the item order)
        budget.check("comparing the answers")
        got = dict(values.get(pid, {}))
        never_sent = stopped and pid not in values
        for part, variable in answer_names(record).items():
            if variable not in got:
                cause = (f"the run stopped before this problem: {stopped}" if never_sent
                         else causes.get(grade_id(pid, part)) or causes.get(send_label(pid), ""))
                got[variable] = Missing(cause)
        try:
            parts = problem_verdicts(record, got, outcomes.get(pid, {}), free_text.get(pid, {}))
            if follow:
                parts = carried(record, got, parts)      # follow-through credit, where the key has recipes
        except Exception as err:  # noqa: BLE001 — a grader bug costs this problem, never the batch
            parts = {part_id(g): Verdict(0.0, points_of(g), ERROR,
                                         f"internal grader error: {type(err).__name__}: {err}")
                     for g in gradings(record)}
        for part, verdict in parts.items():
            verdicts[(pid, part)] = hidden.masked(verdict)
            variable = answer_names(record).get(part)
            if variable is not None:
                answers[(pid, part)] = hidden.kept(got.get(variable), verdict)
            elif is_free_response(record):
                answers[(pid, part)] = free_text.get(pid, {}).get(part)
            else:
                answers[(pid, part)] = None
    return GradedSubmission(verdicts, answers)


class _Unechoed:
    """Verdict messages and answers with the student's hidden inputs kept out of them
    (grader.verdicts.hidden). Only a part that did not pass can echo them (a right answer is not the
    inputs), and the inputs are gathered only once such a part has numbers enough to hold
    them: a correct submission never pays for it."""

    def __init__(self, entry: dict):
        self.entry, self._hidden = entry, None

    @property
    def hidden(self) -> HiddenInputs:
        if self._hidden is None:
            self._hidden = HiddenInputs(self.entry)
        return self._hidden

    def masked(self, verdict: Verdict) -> Verdict:
        if verdict.passed or not may_hold_numbers(verdict.message):
            return verdict
        return replace(verdict, message=self.hidden.mask(verdict.message))

    def kept(self, value, verdict: Verdict):
        """The answer as it is stored: JSON-ready, unless it echoes hidden inputs."""
        answer = _jsonable_answer(value)
        if verdict.passed:
            return answer
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and isinstance(answer, dict) \
                and OMITTED not in answer and self.hidden.holds_values(value):
            return {OMITTED: "the answer holds values of the hidden test inputs: not kept"}
        if isinstance(answer, (str, list, dict)) and not isinstance(value, np.ndarray):
            text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            if len(text) <= ANSWER_LIMIT and may_hold_numbers(text) and self.hidden.holds(text):
                return {OMITTED: "the answer holds numbers of the hidden test inputs: not kept"}
        return answer


def unrunnable(entry: dict, reason: str) -> GradedSubmission:
    """Every part of a submission that could not be run at all (an unreadable notebook):
    ``missing``, with the reason."""
    verdicts = {}
    for pid, record in problem_records(entry):
        for g in gradings(record):
            verdicts[(pid, part_id(g))] = Verdict(0.0, points_of(g), MISSING, reason)
    return GradedSubmission(verdicts, {k: None for k in verdicts}, [reason])
