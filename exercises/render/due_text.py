"""When an assignment is due and what happens to late work, as a student reads it in their
notebook's first cell and on their printed problem set (``formats.deadline`` holds the
values, ``exercises.course.deadline_spec`` reads them from the spec).

Each text is one line of plain text (the caller escapes it for Markdown or HTML): the due
date with its weekday and its time zone spelled out — the zone's name and its offset from
UTC, since a student may sit in another zone than the course — and the late policy in the
words the reports use for a late handin (``formats.deadline.Deadline.assess``). A student
with an extension reads *their* due date, and the cutoff it moves. The texts depend on the
spec alone, so building twice gives the same notebooks.
"""

from __future__ import annotations

from datetime import datetime

from formats.deadline import Deadline

# Weekday names by hand, not strftime("%A"): that one follows the machine's locale, and the
# same spec must build the same notebook everywhere.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def when_text(t: datetime) -> str:
    """``Saturday 2026-12-05, 23:59:00 Europe/Berlin time (UTC+01:00)``; a time given as an
    offset alone is ``… 23:59:00 UTC+01:00``, one in UTC ``… 23:59:00 UTC``. The seconds are
    always written: the deadline is that very second (a spec's ``23:59`` is 23:59:00, and a
    notebook received at 23:59:30 is late), which "23:59" alone would leave to a guess."""
    clock = f"{t:%H:%M:%S}"
    offset = t.utcoffset()
    minutes = round(offset.total_seconds() / 60) if offset is not None else 0
    sign, minutes = ("+" if minutes >= 0 else "-"), abs(minutes)
    utc = "UTC" if not minutes else f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    zone = getattr(t.tzinfo, "key", None)           # an IANA name (ZoneInfo), when the spec gave one
    where = f"{zone} time ({utc})" if zone and zone not in ("UTC", "Etc/UTC") else utc
    return f"{_WEEKDAYS[t.weekday()]} {t:%Y-%m-%d}, {clock} {where}"


def due_text(deadline: Deadline | None, student: str | None = None) -> str:
    """"Due Saturday 2026-12-05, 23:59:00 Europe/Berlin time (UTC+01:00)", the student's own
    date when they have an extension ("…, your extension"); "" without a due date."""
    if deadline is None:
        return ""
    extended = student is not None and student in deadline.extensions
    return f"Due {when_text(deadline.due_for(student or ''))}" + (", your extension" if extended else "")


def late_text(deadline: Deadline | None, student: str | None = None) -> str:
    """The late policy in one line, for the student's own due date; "" without a due date."""
    if deadline is None:
        return ""
    policy, due = deadline.late, deadline.due_for(student or "")
    cutoff = policy.cutoff
    if cutoff is None and policy.kind == "cutoff":
        cutoff = due
    elif cutoff is not None:
        cutoff = max(cutoff, due)          # (an extension past the cutoff moves it, as assess does)
    if cutoff is not None and cutoff <= due:
        return "Nothing handed in after it is accepted."
    after = f"; nothing is accepted after {when_text(cutoff)}" if cutoff is not None else ""
    if policy.kind == "penalty":
        most = f", at most {100 - policy.floor:g} %" if policy.floor else ""
        return f"Late work loses {policy.percent:g} % of its points per {policy.per} started{most}{after}."
    return f"Late work is accepted without a penalty{after}."
