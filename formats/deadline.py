"""Due dates, extensions and the late policy: what an assignment spec says (parsed by
``exercises.course.deadline_spec``) and what it makes of a handin's receipt time (read by the reports).

A policy is one of:

- ``accept``: late work counts in full (its lateness is still reported);
- ``penalty``: ``percent`` of the earned points per started ``per`` (day or hour) late, never
  taking more than ``100 - floor`` percent of them; after ``cutoff`` (if any) not accepted;
- ``cutoff``: nothing received after ``cutoff`` (default: the due date) is accepted.

A student's due date is their extension's when they have one. Times are timezone-aware; a
handin whose receipt time is unknown is taken as on time, and the report says so. Times are
compared to the second, as the gradebook records them: a due date of 23:59 is 23:59:00 (a
handin received at 23:59:30 is 30 seconds late), one of 23:59:59 accepts anything received
during that second.

Which of a student's handins counts (``Deadline.counts``, the spec's ``counts:``):

- ``last`` (the default): the last one received that the policy accepts;
- ``best``: the accepted one with the highest score after its late penalty (the later one
  of a tie);
- ``last_on_time``: the last one received by the student's due date, else the last accepted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

POLICIES = ("accept", "penalty", "cutoff")
COUNTS = ("last", "best", "last_on_time")
UNITS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}


@dataclass(frozen=True)
class LatePolicy:
    kind: str = "accept"
    percent: float = 0.0              # penalty: per started unit late
    per: str = "day"
    floor: float = 0.0                # penalty: the percent of the earned points always kept
    cutoff: datetime | None = None    # after it nothing is accepted (cutoff: default the due date)


@dataclass(frozen=True)
class Lateness:
    """What the policy makes of one handin."""
    due: datetime
    received_at: datetime | None
    late_by: timedelta                # zero when on time (or the time is unknown)
    accepted: bool
    penalty_percent: float            # of the earned points, taken away
    words: str                        # for the reports: "2 days 3 hours late: −20 %"

    @property
    def late(self) -> bool:
        return self.late_by > timedelta(0)


@dataclass(frozen=True)
class Deadline:
    due: datetime
    late: LatePolicy = LatePolicy()
    extensions: dict = field(default_factory=dict)     # student id → their due date
    counts: str = "last"                               # which handin counts: one of COUNTS

    def due_for(self, student: str) -> datetime:
        return self.extensions.get(student, self.due)

    def assess(self, student: str, received_at: datetime | None) -> Lateness:
        due = self.due_for(student)
        extended = " (extended)" if student in self.extensions else ""
        if received_at is None:
            return Lateness(due, None, timedelta(0), True, 0.0,
                            "receipt time unknown: taken as on time")
        # (to the second: the gradebook keeps receipt times so, and 23:59:59 means that second)
        late_by = max(received_at.replace(microsecond=0) - due, timedelta(0))
        if not late_by:
            return Lateness(due, received_at, late_by, True, 0.0, f"on time{extended}")
        late = f"{_duration(late_by)} late{extended}"
        policy = self.late
        cutoff = policy.cutoff
        if cutoff is None and policy.kind == "cutoff":
            cutoff = due
        elif cutoff is not None:
            cutoff = max(cutoff, due)                  # an extension past the cutoff moves it too
        if cutoff is not None and received_at > cutoff:
            return Lateness(due, received_at, late_by, False, 100.0, f"{late}: after the cutoff, not accepted")
        if policy.kind != "penalty":
            return Lateness(due, received_at, late_by, True, 0.0, f"{late}: accepted")
        units = math.ceil(late_by / UNITS[policy.per])
        percent = min(policy.percent * units, 100.0 - policy.floor)
        return Lateness(due, received_at, late_by, True, percent,
                        f"{late}: −{percent:g} % ({policy.percent:g} % per {policy.per} started"
                        + (f", at most {100 - policy.floor:g} %" if policy.floor else "") + ")")


    def choose(self, student: str, handins: list[tuple[datetime | None, float]]) -> Choice:
        """Which of ``handins`` ((receipt time, score) each, the last received first) counts
        under ``counts``, and why; every handin's lateness beside it."""
        assessed = tuple(self.assess(student, at) for at, _ in handins)
        accepted = [i for i, lateness in enumerate(assessed) if lateness.accepted]
        if not accepted:
            return Choice(None, assessed, "none is accepted: the last one was received after the cutoff")
        later = "" if accepted[0] == 0 else " (the later ones are after the cutoff)"
        if self.counts == "best":
            after = {i: handins[i][1] * (1 - assessed[i].penalty_percent / 100) for i in accepted}
            best = max(accepted, key=lambda i: (after[i], -i))     # (a tie: the later one)
            return Choice(best, assessed, "the highest score after the late policy (counts: best)")
        if self.counts == "last_on_time":
            on_time = [i for i in accepted if not assessed[i].late]
            if on_time:
                return Choice(on_time[0], assessed, "the last one received by the due date "
                                                    "(counts: last_on_time)")
            return Choice(accepted[0], assessed, "none was received by the due date: the last one "
                                                 f"the late policy accepts (counts: last_on_time){later}")
        return Choice(accepted[0], assessed, f"the last one received that the late policy accepts{later}")


@dataclass(frozen=True)
class Choice:
    """What ``Deadline.choose`` made of a student's handins: the index of the one that counts
    (None: none is accepted), each one's lateness, and why that one counts."""
    index: int | None
    assessed: tuple[Lateness, ...]
    why: str


def _duration(delta: timedelta) -> str:
    """A lateness as people say it: "3 hours 5 minutes", "2 days 1 hour", "40 seconds"."""
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    pieces = [(days, "day"), (hours, "hour"), (minutes, "minute")] if days or hours or minutes \
        else [(seconds, "second")]
    said = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in pieces if n][:2]
    return " ".join(said) or "0 seconds"
