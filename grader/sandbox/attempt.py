"""One child's events judged against the job that was sent (``Attempt``), and collected into
the ``RunResult``. Every event is whatever the child chose to write: nothing in it is trusted
but its type-checked parts.

The grader knows the one order of ``start`` events a job allows (every step but a call, then
each case of a call from ``first`` on: ``expected_starts``) and takes a start only if it is the
next one due, after the previous case's output or send step's values. Anything else — a start
naming another step (a loop in one cell would be blamed on an unrelated one, and the run
restarted until its limit), a case asked for out of turn, a second ``ready``, ``done`` before
the last step — is a forgery (``Forged``): the stream fails ("bad frame") and the crash is
charged to the step that was legitimately running, the last valid start. Error, values and
output events count only for the step running, once, and values only for the names that step
asked for — so a forged event can at most submit values, what the student was asked to do
anyway. A child may start a case only once the job pipe holds nothing unread (FIONREAD).
"""

from __future__ import annotations

from . import protocol
from .results import CellError, Output, RunResult, step_label

FRAME_SLACK = 8                   # frames beyond what its job accounts for (see frame_cap)
MAX_WALLS = 16                    # walls kept from a ready event (there are 8)


def _text(value, limit: int = 2000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def same(value, expected) -> bool:
    """``value == expected`` for a value from the child, which may be anything (a numpy array
    compared with ``==`` gives an array, and its truth raises)."""
    return type(value) is type(expected) and value == expected


class Forged(Exception):
    """An event that a child following its job could not have sent (a start out of turn, a
    case asked for early, a second ``ready``, ``done`` before the last step): the stream fails
    ("bad frame"), the child is stopped, and the crash is charged to the last valid start."""


def first_case(step: dict) -> int:
    """The first case of a call step to run (its ``first``, never below 0)."""
    return max(0, int(step.get("first", 0)))


def expected_starts(pending: list) -> list:
    """The ``start`` events a child must send for a job, in order, as (job index, case or
    None): one per step but a call, one per case of a call from ``first`` on."""
    starts = []
    for index, (_, step) in enumerate(pending):
        if step.get("op") == protocol.CALL:
            starts += [(index, case) for case in range(first_case(step), len(step.get("cases", [])))]
        else:
            starts.append((index, None))
    return starts


def frame_cap(pending: list) -> int:
    """The most frames a child following this job sends: ready and done; a start per step,
    plus an error per exec step and a values per send; need, start and output per case."""
    count = 2 + FRAME_SLACK
    for _, step in pending:
        op = step.get("op")
        if op == protocol.CALL:
            count += 3 * max(0, len(step.get("cases", [])) - first_case(step))
        else:
            count += 2 if op in (protocol.EXEC, protocol.SEND) else 1
    return count


class Attempt:
    """Collects one child's events into a RunResult, checking each against the job sent.
    ``pending`` is the job's steps as (index in the caller's list, step); ``cases`` the case
    frames to write when the child asks, by (index in the caller's list, case). Every event is
    whatever the child chose to write: nothing in it is trusted but its type-checked parts,
    and the order of starts is the grader's, not the child's (``expected_starts``)."""

    def __init__(self, pending: list, result: RunResult, reported_errors: set, cases: dict):
        self.pending, self.result, self.reported_errors, self.cases = pending, result, reported_errors, cases
        self.expected = expected_starts(pending)
        self.frame_cap = frame_cap(pending)
        self.started = 0                # how many of ``expected`` have come
        self.last_start = None          # (job step index, case or None): the last valid start
        self.asked = None               # (job step index, case) sent on the job pipe, not yet started
        self.outbox = bytearray()       # case frames not yet written to the job pipe
        self.unread = lambda: 0         # bytes in the job pipe no child has read (set by the server)
        self.arrived_cases = set()      # (job step index, case)
        self.sent_steps = set()         # job step indices whose values arrived
        self.ready = False              # the child read its whole job and is inside the walls
        self.done = False               # the child says every step ran

    def _step(self, index):
        if type(index) is int and 0 <= index < len(self.pending):
            return self.pending[index][1]
        return None

    def _next(self):
        return self.expected[self.started] if self.started < len(self.expected) else None

    def __call__(self, event) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if type(kind) is not str:
            return
        if not self.ready and kind != protocol.READY:
            raise Forged(f"{kind[:50]!r} before ready")
        handler = self._HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def _on_ready(self, event) -> None:
        if self.ready:
            raise Forged("a second ready")
        self.ready = True
        held = event.get("layers")
        if isinstance(held, list):
            self.result.walls = [{"name": _text(x.get("name"), 100), "active": x.get("active") is True,
                                  "detail": _text(x.get("detail"))} for x in held[:MAX_WALLS] if isinstance(x, dict)]

    def _on_done(self, event) -> None:
        self._check_finished()
        if self._next() is not None or self.asked is not None:
            raise Forged("done before every step started")
        self.done = True

    def _check_finished(self) -> None:
        """A child following its job sends a case's output, and a send step's values, before
        it asks for or starts anything else: a claim that skips them is forged."""
        last = self.last_start
        if last is None:
            return
        if last[1] is not None and last not in self.arrived_cases:
            raise Forged("the next step claimed before a case's output")
        if last[1] is None and self.pending[last[0]][1].get("op") == protocol.SEND and last[0] not in self.sent_steps:
            raise Forged("the next step claimed before a send step's values")

    def _claims(self, event, expected) -> bool:
        """Does ``event`` name exactly the start ``expected`` (a step, and a case or none)?"""
        step, case = event.get("step"), event.get("case")
        return (expected is not None and same(step, expected[0])
                and (case is None if expected[1] is None else same(case, expected[1])))

    def _on_need(self, event) -> None:
        expected = self._next()
        if not self._claims(event, expected) or expected[1] is None or self.asked is not None:
            raise Forged("a case asked for out of turn")
        self._check_finished()
        index, case = expected
        self.asked = expected
        self.outbox += self.cases[(self.pending[index][0], case)]

    def _on_start(self, event) -> None:
        expected = self._next()
        if not self._claims(event, expected):
            # (named by what was due: a repr of the child's values could be as large as a frame)
            raise Forged(f"a start out of turn (the next one due: {expected})")
        self._check_finished()
        if expected[1] is not None:
            # a child can start a case only once it has read the whole frame of it: anything left
            # in the job pipe would be the next child's "job"
            if self.asked != expected or self.outbox or self.unread():
                raise Forged("a case started before its arguments were read")
            self.asked = None
        self.started += 1
        self.last_start = expected

    def _on_error(self, event) -> None:
        step = self._step(event.get("step"))
        if step is None or step.get("op") != protocol.EXEC or self.last_start != (event["step"], None):
            return
        original = self.pending[event["step"]][0]
        if original in self.reported_errors:        # a rerun repeats earlier cells' errors
            return
        self.reported_errors.add(original)
        line = event.get("line")
        self.result.errors.append(CellError(step_label(original, step), _text(event.get("type"), 200),
                                            _text(event.get("message")),
                                            line if type(line) is int else None))

    def _on_values(self, event) -> None:
        if self.last_start is None or self.last_start[1] is not None or self.last_start[0] in self.sent_steps:
            return
        step = self._step(self.last_start[0])
        if step.get("op") != protocol.SEND or not same(event.get("problem"), step.get("problem")):
            return
        self.sent_steps.add(self.last_start[0])
        asked = [n for n in step.get("names", []) if isinstance(n, str)]
        values = event.get("values") if isinstance(event.get("values"), dict) else {}
        missing = event.get("missing") if isinstance(event.get("missing"), list) else []
        missing = {n for n in missing if type(n) is str}
        problem = step.get("problem")
        self.result.values.setdefault(problem, {}).update({n: values[n] for n in asked if n in values})
        self.result.missing[problem] = [n for n in asked if n in missing and n not in values]

    def _on_output(self, event) -> None:
        if self.last_start is None or self.last_start[1] is None or self.last_start in self.arrived_cases:
            return
        step = self._step(self.last_start[0])
        if not same(event.get("case"), self.last_start[1]) or not same(event.get("problem"), step.get("problem")):
            return
        output = (Output(True, event.get("value")) if event.get("ok") is True
                  else Output(False, None, _text(event.get("error")) or "an error"))
        self.result.outputs.setdefault(step.get("problem"), {})[self.last_start[1]] = output
        self.arrived_cases.add(self.last_start)

    _HANDLERS = {protocol.READY: _on_ready, protocol.DONE: _on_done, protocol.NEED: _on_need,
                 protocol.START: _on_start, protocol.ERROR: _on_error, protocol.VALUES: _on_values,
                 protocol.OUTPUT: _on_output}

    def sent(self, job_index: int) -> bool:
        """Did this send step's values arrive?"""
        step = self.pending[job_index][1]
        return step.get("problem") in self.result.values or step.get("problem") in self.result.missing
