"""An assignment's due date, late policy, extensions and which handin counts, read from its
spec with file:line errors (the values are ``formats.deadline``'s):

    due: 2026-12-05 23:59              # ISO 8601; with an offset (+01:00, Z) or a timezone:
    timezone: Europe/Berlin            # an IANA name, for a due date without an offset
    late:
      policy: penalty                  # accept (the default) | penalty | cutoff
      percent: 10                      # penalty: per started day (or hour) late ...
      per: day
      floor: 50                        # ... keeping at least 50 % of the points
      cutoff: 2026-12-08 23:59         # nothing accepted after it (cutoff: default the due date)
    extensions: extensions.csv         # columns student_id and due (a roster with a due column will do)
    counts: last                       # last (the default) | best | last_on_time

A time without seconds means second 0 of that minute: ``23:59`` is 23:59:00, and a handin
received 30 seconds later is late. Seconds written are kept: ``23:59:59`` accepts a handin
received at 23:59:59 (receipt times are compared to the second).
"""

from __future__ import annotations

import csv
import io
import re
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from formats.deadline import COUNTS, POLICIES, UNITS, Deadline, LatePolicy
from formats.textfile import read_utf8

from exercises.template.loading import LoadErrors, describe
from exercises.template.yaml_lines import LineDict

LATE_KEYS = {"policy": "optional", "percent": "optional", "per": "optional", "floor": "optional",
             "cutoff": "optional"}
_FORMAT_HINT = "write it as 2026-12-05 23:59, 2026-12-05 23:59:59 or 2026-12-05T23:59:00+01:00"
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def read_deadline(load: LoadErrors, data: LineDict, folder: Path, error) -> Deadline | None:
    """The spec's deadline (None without ``due``); problems go to ``load``."""
    zone = _zone(load, data)
    if "due" not in data:
        for name in ("late", "extensions", "timezone", "counts"):
            if name in data:
                load.error(data.line_of(name), name, "needs a due date (due: …)")
        return None
    due = _time(load, data["due"], data.line_of("due"), "due", zone)
    late = _late(load, data, zone)
    extensions = _extensions(load, data, folder, zone, error)
    counts = _counts(load, data)
    if due is None or late is None or extensions is None or counts is None:
        return None
    return Deadline(due, late, extensions, counts)


def _counts(load: LoadErrors, data: LineDict) -> str | None:
    """Which handin counts (``counts:``, default ``last``); None after saying what is wrong."""
    counts = data.get("counts", "last")
    if counts not in COUNTS:
        load.error(data.line_of("counts"), "counts",
                   f"expected one of {', '.join(COUNTS)}, got {describe(counts)}")
        return None
    return counts


def _zone(load: LoadErrors, data: LineDict):
    if "timezone" not in data:
        return None
    name = data["timezone"]
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        load.error(data.line_of("timezone"), "timezone",
                   f"{name!r} is not a time zone name (e.g. Europe/Berlin, America/New_York, UTC)")
        return None


def _time(load: LoadErrors, value, line: int, key: str, zone) -> datetime | None:
    text = value.isoformat() if isinstance(value, (datetime, date)) else str(value).strip()
    if _DATE_ONLY.fullmatch(text):
        # (midnight would make the whole due day late: say which minute is meant)
        load.error(line, key, f"{text!r} has no time of day: write it as {text} 23:59 (and an offset "
                              "or a timezone:)")
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        load.error(line, key, f"{text!r} is not a date and time ({_FORMAT_HINT})")
        return None
    if when.tzinfo is None:
        if zone is None:
            load.error(line, key, f"{text!r} has no time zone: add an offset (+01:00) or a "
                                  "timezone: key (e.g. timezone: Europe/Berlin)")
            return None
        when = when.replace(tzinfo=zone)
    return when


def _late(load: LoadErrors, data: LineDict, zone) -> LatePolicy | None:
    if "late" not in data:
        return LatePolicy()
    raw = load.mapping(data["late"], data.line_of("late"), "late")
    if raw is None:
        return None
    load.keys(raw, LATE_KEYS, "late")
    kind = raw.get("policy", "accept")
    if kind not in POLICIES:
        load.error(raw.line_of("policy") if "policy" in raw else raw.line, "late.policy",
                   f"expected one of {', '.join(POLICIES)}, got {describe(kind)}")
        return None
    per = raw.get("per", "day")
    if per not in UNITS:
        load.error(raw.line_of("per"), "late.per", f"expected day or hour, got {describe(per)}")
        return None
    percent = load.number(raw, "percent", "late.percent", 0.0, minimum=0.0) if "percent" in raw else 0.0
    floor = load.number(raw, "floor", "late.floor", 0.0, minimum=0.0) if "floor" in raw else 0.0
    if percent is None or floor is None:
        return None
    if floor > 100 or percent > 100:
        load.error(raw.line, "late", "percent and floor are percentages: at most 100")
        return None
    if kind == "penalty" and not percent:
        load.error(raw.line, "late.percent", "a penalty policy needs percent: (per day or hour late)")
    cutoff = _time(load, raw["cutoff"], raw.line_of("cutoff"), "late.cutoff", zone) if "cutoff" in raw else None
    if "cutoff" in raw and cutoff is None:
        return None
    return LatePolicy(kind, float(percent), per, float(floor), cutoff)


def _extensions(load: LoadErrors, data: LineDict, folder: Path, zone, error) -> dict | None:
    if "extensions" not in data:
        return {}
    line = data.line_of("extensions")
    path = folder / str(data["extensions"])
    shown = "extensions"
    try:
        text, _ = read_utf8(path, str(data["extensions"]), error)
    except error as err:
        for problem in err.errors:
            load.error(line, shown, problem)
        return None
    rows = list(csv.reader(io.StringIO(text), delimiter=";" if text.count(";") > text.count(",") else ","))
    if not rows or not {"student_id", "due"} <= {c.strip() for c in rows[0]}:
        load.error(line, shown, f"{data['extensions']}: needs the columns student_id and due")
        return None
    header = [c.strip() for c in rows[0]]
    sid, due = header.index("student_id"), header.index("due")
    extensions = {}
    for n, row in enumerate(rows[1:], start=2):
        if len(row) <= max(sid, due) or not row[due].strip():
            continue                              # a roster row without an extension
        when = _time(load, row[due], line, f"{shown} ({data['extensions']}:{n})", zone)
        if when is not None:
            extensions[row[sid].strip()] = when
    return extensions
