"""Practice verdicts: a practice variant's answers judged as the grader judges a submission —
the same functions (``problem_verdicts``, then follow-through's ``carried``), on a record made
from the practice variant, so a student practising gets the verdict the grader would give.

``Practice`` is what a practice notebook runs (this module travels in it, with the modules it
imports: ``exercises.practice.bundle``): its variants, the one being worked, and each
attempt. The terminal's ``attnkit practice`` judges with the same ``judge`` and ``said``.
"""

from __future__ import annotations

import numpy as np

from formats.key_shape import FREE_RESPONSE, IMPLEMENT, gradings, part_id
from formats.serialize import decode_names

from grader.verdicts.follow_through import FOLLOW_THROUGH, carried
from grader.verdicts.parts import PASSED, CaseOutcome, Missing, Verdict, problem_verdicts

PRACTISED = ("numeric", "choice")      # what a typed answer can be (code is practised in a notebook)
RIGHT, FOLLOWS, WRONG = "right", "right given your earlier answer", "wrong"


def practice_record(record: dict) -> dict:
    """A variant's key record, with each part's answer in a variable of the part's own name."""
    if record["kind"] in (IMPLEMENT, FREE_RESPONSE):
        raise ValueError(f"{record['template']}: a {record['kind']} problem is not answered with "
                         "values (practise it in a notebook)")
    return {**record, "answer_names": {part_id(g): part_id(g) for g in gradings(record)}}


def judge(record: dict, answers: dict) -> dict[str, Verdict]:
    """part id → Verdict for ``answers`` (part id → value; a part not answered yet is missing),
    follow-through included: a part right given the student's own earlier answer says so."""
    record = practice_record(record) if "answer_names" not in record else record
    values = {part: answers.get(part, Missing()) for part in record["answer_names"]}
    return carried(record, values, problem_verdicts(record, values, {}, {}))


def judge_function(record: dict, function) -> dict[str, Verdict]:
    """test family → Verdict for a student's function (an implement problem), run here on each
    of the variant's cases — in the student's own kernel, on their own code — and judged as
    the grader judges the sandbox's outcomes."""
    outcomes = {}
    for position, case in enumerate(record["tests"]):
        try:
            with np.errstate(all="ignore"):
                outcomes[position] = CaseOutcome(True, function(**decode_names(case["args"])))
        except Exception as err:  # noqa: BLE001 — the student's code: any error is its outcome
            outcomes[position] = CaseOutcome(False, error=f"{type(err).__name__}: {err}")
    return problem_verdicts(record, {}, outcomes, {})


def outcome(verdict: Verdict) -> str:
    """RIGHT, FOLLOWS (follow-through) or WRONG."""
    if verdict.message.startswith(FOLLOW_THROUGH) and verdict.score > 0:
        return FOLLOWS
    return RIGHT if verdict.status == PASSED else WRONG


def said(verdict: Verdict) -> str:
    """One verdict as the student reads it at once."""
    kind = outcome(verdict)
    if kind == RIGHT:
        return "right."
    if kind == FOLLOWS:
        return f"{FOLLOWS}. " + verdict.message[len(FOLLOW_THROUGH):].strip()
    return "wrong: " + verdict.message


class Practice:
    """A practice notebook's session: ``variants`` are (index, record) pairs of one template;
    the first is worked first, ``next_variant`` moves on (round again after the last)."""

    def __init__(self, template: str, variants: list[tuple[int, dict]]):
        self.template = template
        self.variants = [(index, record if record["kind"] == IMPLEMENT else practice_record(record))
                         for index, record in variants]
        self.position = -1
        self.answers: dict = {}
        self.attempts: list[dict] = []

    @property
    def index(self) -> int:
        return self.variants[self.position][0]

    def next_variant(self) -> dict:
        """The next variant's record (its givens decoded in ``givens``); answers start afresh."""
        self.position = (self.position + 1) % len(self.variants)
        self.answers = {}
        record = self.variants[self.position][1]
        return {**record, "givens": decode_names(record.get("givens", {}))}

    def check(self, part: str, value) -> Verdict:
        """The part's verdict now, given every answer checked so far on this variant."""
        record = self.variants[self.position][1]
        if part not in record["answer_names"]:
            raise KeyError(f"{part!r} is not a part of {self.template} "
                           f"(its parts: {', '.join(record['answer_names'])})")
        self.answers[part] = value
        verdict = judge(record, self.answers)[part]
        self._attempted(part, verdict)
        return verdict

    def check_function(self, function) -> dict[str, Verdict]:
        """An implement problem: test family → its verdict on this variant's cases."""
        verdicts = judge_function(self.variants[self.position][1], function)
        for family, verdict in verdicts.items():
            self._attempted(family, verdict)
        return verdicts

    def _attempted(self, part: str, verdict: Verdict) -> None:
        earlier = [a for a in self.attempts if a["variant"] == self.index and a["part"] == part]
        self.attempts.append({"template": self.template, "variant": self.index, "part": part,
                              "outcome": outcome(verdict), "misconception": verdict.misconception,
                              "first": not earlier})

    def progress(self) -> dict[str, dict]:
        """part → attempts, variants tried, first-time right, misconceptions met (name → times)."""
        parts: dict[str, dict] = {}
        for a in self.attempts:
            p = parts.setdefault(a["part"], {"attempts": 0, "variants": set(), "first_time_right": 0,
                                             "misconceptions": {}})
            p["attempts"] += 1
            p["variants"].add(a["variant"])
            p["first_time_right"] += a["first"] and a["outcome"] != WRONG
            if a["misconception"]:
                p["misconceptions"][a["misconception"]] = p["misconceptions"].get(a["misconception"], 0) + 1
        return {part: {**p, "variants": len(p["variants"])} for part, p in parts.items()}
