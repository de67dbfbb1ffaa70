"""When each notebook was handed in, from an LMS's export of submission times.

An LMS knows when a student submitted; the file it lets you download often does not (a bulk
download's modification times are the download's). ``attnkit grade --received times.csv``
reads a CSV with a ``student_id`` column and a time column (``received_at``, or what LMS
exports call it: ``submitted_at``, ``Submitted``, ``Submission time``) in ISO 8601 with an
offset (``2026-12-05T23:10:00+01:00``, ``…Z``), and those times win over nbgrader's
``timestamp.txt`` and the file's modification time; the reports say they came from the export.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime
from pathlib import Path

from formats.textfile import ProblemsError, read_utf8

TIME_COLUMNS = ("received_at", "submitted_at", "submitted", "submission time", "submitted at")


class ReceiptsError(ProblemsError):
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
    return times, f"LMS export ({path.name})"
