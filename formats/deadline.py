"""Due dates, extensions and the late policy: what an assignment spec says (parsed by
``exercises.deadlines``) and what it makes of a handin's receipt time (read by the reports).

A policy is one of:

- ``accept``: late work counts in full (its lateness is still reported);
- ``penalty``: ``percent`` of the earned points per started ``per`` (day or hour) late, never
  taking more than ``100 - floor`` percent of them; after ``cutoff`` (if any) not accepted;
- ``cutoff``: nothing received after ``cutoff`` (default: the due date) is accepted.

A student's due date is their extension's when they have one. Times are timezone-aware; a
handin whose receipt time is unknown is taken as on time, and the report says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

POLICIES = ("accept", "penalty", "cutoff")
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

    def due_for(self, student: str) -> datetime:
        return self.extensions.get(student, self.due)

    def assess(self, student: str, received_at: datetime | None) -> Lateness:
        due = self.due_for(student)
        extended = " (extended)" if student in self.extensions else ""
        if received_at is None:
            return Lateness(due, None, timedelta(0), True, 0.0,
                            "receipt time unknown: taken as on time")
        late_by = max(received_at - due, timedelta(0))
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
