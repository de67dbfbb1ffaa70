"""When a notebook found on disk was handed in: nbgrader's ``timestamp.txt`` beside it, read
leniently and boundedly, else the file's modification time (``Found.received_from`` says which).
An LMS export's times (``grader.intake.receipts``) win over both."""

from __future__ import annotations

import os
import re
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

from formats.textfile import terminal_safe

from grader.intake.issues import Issue, short
from grader.intake.receipts import RECEIVED_FROM_MTIME, RECEIVED_FROM_TIMESTAMP

_MAX_TIMESTAMP = 256                # bytes of a timestamp.txt read (nbgrader writes ~30)


def received(nb: Path, base: Path, shown: str,
             stamps: dict[Path, tuple[datetime | None, str]]) -> tuple[datetime | None, str, tuple[Issue, ...]]:
    """(when, where that time comes from, notes): nbgrader's timestamp.txt in the notebook's
    folder (not the searched folder itself), else the file's modification time."""
    notes: tuple[Issue, ...] = ()
    if nb.parent != base:
        if nb.parent not in stamps:
            stamps[nb.parent] = read_timestamp(nb.parent / "timestamp.txt")
        at, problem = stamps[nb.parent]
        if at is not None:
            return at, RECEIVED_FROM_TIMESTAMP, notes
        if problem:
            notes = (Issue("bad-timestamp", f"{shown}: the timestamp.txt beside it is not a time "
                                            f"({problem}): the file's modification time is used"),)
    try:
        mtime = os.lstat(nb).st_mtime_ns
    except OSError:
        return None, "", notes
    return datetime.fromtimestamp(mtime / 1e9, timezone.utc), RECEIVED_FROM_MTIME, notes


def read_timestamp(path: Path) -> tuple[datetime | None, str]:
    """(the time, '') from an nbgrader ``timestamp.txt``; (None, '') when there is none;
    (None, why) when it is not a time. Never raises; reads at most 256 bytes, never
    follows a symbolic link."""
    if not os.path.lexists(path):
        return None, ""
    if os.path.islink(path):
        return None, "a symbolic link: not followed"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None, "not a regular file"
            data = os.read(fd, _MAX_TIMESTAMP + 1)
        finally:
            os.close(fd)
    except OSError as err:
        return None, f"could not be read: {err.strerror or type(err).__name__}"
    if len(data) > _MAX_TIMESTAMP:
        return None, f"longer than {_MAX_TIMESTAMP} bytes"
    try:
        text = data.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    at = parse_timestamp(text)
    if at is None:
        return None, f"{terminal_safe(short(text, 48), newlines=False)!r}" if text else "empty"
    return at, ""


_TIMESTAMP = re.compile(r"(?P<date>[0-9]{4}-[0-9]{1,2}-[0-9]{1,2})[ T]+(?P<h>[0-9]{1,2}):(?P<m>[0-9]{2})"
                        r"(?::(?P<s>[0-9]{2})(?:[.,](?P<frac>[0-9]{1,9}))?)?\s*(?P<zone>.*)")
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?\s*(?P<sign>[+-])(?P<hh>[0-9]{1,2}):?(?P<mm>[0-9]{2})?")
_ZONE_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_+/-]{0,39}")
# What %Z prints for the zones nbgrader courses set that the tz database has no key for;
# the database itself (zoneinfo) knows EST, MST, HST, CET, EET, WET, MET and every Area/City.
_ABBREVIATIONS = {"EDT": -4, "CDT": -5, "CST": -6, "MDT": -6, "PDT": -7, "PST": -8, "AKST": -9,
                  "AKDT": -8, "HDT": -9, "CEST": 2, "EEST": 3, "WEST": 1, "BST": 1, "AEST": 10,
                  "AEDT": 11, "ACST": 9.5, "ACDT": 10.5, "AWST": 8, "NZST": 12, "NZDT": 13, "JST": 9,
                  "KST": 9, "SGT": 8, "HKT": 8}


def parse_timestamp(text: str) -> datetime | None:
    """nbgrader's timestamp ("2026-11-30 23:59:01.123456 UTC", what ``strftime("%Y-%m-%d
    %H:%M:%S.%f %Z")`` writes), leniently: 'T' or a space between date and time, seconds and
    fractions optional, a zone as UTC/GMT/Z, an offset (+01:00, +0100, UTC+1), a tz
    database name (Europe/Berlin, EST) or a common abbreviation (CEST, PDT). No zone at all
    is UTC, as nbgrader reads it. None when it is not a time."""
    m = _TIMESTAMP.fullmatch(text.strip())
    if not m:
        return None
    zone = _zone(m["zone"].strip())
    if zone is None:
        return None
    try:
        year, month, day = (int(x) for x in m["date"].split("-"))
        micro = int((m["frac"] or "0").ljust(6, "0")[:6])
        return datetime(year, month, day, int(m["h"]), int(m["m"]), int(m["s"] or 0), micro, tzinfo=zone)
    except (ValueError, OverflowError):
        return None


def _zone(text: str):
    """The tzinfo a timestamp's zone names, or None."""
    if text in ("", "Z", "UTC", "GMT", "UT", "utc", "z"):
        return timezone.utc
    offset = _OFFSET.fullmatch(text)
    if offset:
        hours, minutes = int(offset["hh"]), int(offset["mm"] or 0)
        if hours > 23 or minutes > 59:
            return None
        delta = timedelta(hours=hours, minutes=minutes)
        return timezone(-delta if offset["sign"] == "-" else delta)
    if text.upper() in _ABBREVIATIONS:
        return timezone(timedelta(hours=_ABBREVIATIONS[text.upper()]))
    if _ZONE_KEY.fullmatch(text) and ".." not in text:
        try:
            from zoneinfo import ZoneInfo
            return ZoneInfo(text)
        except Exception:  # noqa: BLE001 — not a key the tz database has (or no database)
            return None
    return None
