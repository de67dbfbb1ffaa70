"""When each notebook was handed in, from an LMS's export of submission times.

An LMS knows when a student submitted; the file it lets you download often does not (a bulk
download's modification times are the download's). ``attnkit grade --received times.csv``
reads a CSV with a ``student_id`` column and a time column (``received_at``, or what LMS
exports call it: ``submitted_at``, ``Submitted``, ``Submission time``) in ISO 8601 with an
offset (``2026-12-05T23:10:00+01:00``, ``…Z``), and those times win over nbgrader's
``timestamp.txt`` and the file's modification time; the reports say they came from the export.

A receipt time, once recorded, is kept against a worse source (``merged``): the sources rank
LMS export > nbgrader's timestamp.txt > the file's modification time > none, so grading a
handin again without the export (``--regrade``, a rebuilt key) keeps the export's time, and
what was kept, or changed by a source as good, is reported (``ReceiptChange``).

This module uses the standard library only: the gradebook applies ``merged`` when it writes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from formats.textfile import InputError, read_utf8

RECEIVED_FROM_TIMESTAMP = "nbgrader timestamp.txt"
RECEIVED_FROM_MTIME = "file modification time"
LMS_EXPORT = "LMS export"        # "LMS export (<file name>)"
TIME_COLUMNS = ("received_at", "submitted_at", "submitted", "submission time", "submitted at")


class ReceiptsError(InputError):
    """A submission-times file that cannot be read; each problem is 'file:line: message'."""


def read_receipts(path: str | Path) -> tuple[dict[str, datetime], str]:
    """(student id → when they handed in, the source to report: "LMS export (<file name>)")."""
    path = Path(path)
    text, _ = read_utf8(path, str(path), ReceiptsError)
    rows = list(csv.reader(io.StringIO(text), delimiter=";" if text.count(";") > text.count(",") else ","))
    header = [c.strip().lower() for c in rows[0]] if rows else []
    time_column = next((header.index(c) for c in TIME_COLUMNS if c in header), None)
    if "student_id" not in header or time_column is None:
        raise ReceiptsError([f"{path}:1: needs a student_id column and a time column "
                             f"({', '.join(TIME_COLUMNS)})"])
    sid = header.index("student_id")
    times, problems = {}, []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) <= max(sid, time_column) or not row[sid].strip():
            problems.append(f"{path}:{line}: a row without a student id or a time")
            continue
        text_time = row[time_column].strip()
        try:
            when = datetime.fromisoformat(text_time.replace("Z", "+00:00"))
        except ValueError:
            problems.append(f"{path}:{line}: {text_time!r} is not a time (ISO 8601, e.g. 2026-12-05T23:10:00+01:00)")
            continue
        if when.tzinfo is None:
            problems.append(f"{path}:{line}: {text_time!r} has no time zone (add +01:00 or Z)")
            continue
        times[row[sid].strip()] = when
    if problems:
        raise ReceiptsError(problems)
    return times, f"{LMS_EXPORT} ({path.name})"


def source_rank(source: str) -> int:
    """How far a receipt time from ``source`` is to be believed: the LMS saw the submission
    (3), nbgrader's exchange stamped it (2), a file's modification time may be a download's
    (1), anything else (unknown, a migrated gradebook's) says nothing (0)."""
    if source.startswith(LMS_EXPORT):
        return 3
    return {RECEIVED_FROM_TIMESTAMP: 2, RECEIVED_FROM_MTIME: 1}.get(source, 0)


@dataclass(frozen=True)
class ReceiptChange:
    """A recorded handin's receipt time that a new one did not simply confirm: ``kept`` (the
    new one's source ranks lower, so the recorded time stays) or replaced (a source as good
    or better gave another time). Times are UTC ISO 8601 as the gradebook stores them."""
    student: str
    handin: str
    kept: bool
    recorded_at: str | None
    recorded_from: str
    given_at: str | None
    given_from: str

    def as_json(self) -> dict:
        return {"student": self.student, "recorded_at": self.recorded_at,
                "recorded_from": self.recorded_from, "given_at": self.given_at,
                "given_from": self.given_from}


def merged(student: str, handin: str, recorded: tuple[str | None, str] | None,
           given: tuple[str | None, str]) -> tuple[str | None, str, ReceiptChange | None]:
    """(receipt time, its source, what changed or None) of a handin recorded with
    ``recorded`` (None: not recorded yet) and given ``given`` now: the better-ranked source's
    time; the given one's when they rank alike. Learning a time that was unknown, or a better
    source for the same time, is no change."""
    if recorded is None:
        return (*given, None)
    (was_at, was_from), (at, source) = recorded, given
    if source_rank(source) < source_rank(was_from):
        change = None if was_at == at else ReceiptChange(student, handin, True, was_at, was_from, at, source)
        return was_at, was_from, change
    if was_at is None or was_at == at:
        return at, source, None
    return at, source, ReceiptChange(student, handin, False, was_at, was_from, at, source)
