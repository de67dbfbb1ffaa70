"""An assignment's due date, late policy and extensions: read with file:line errors."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from exercises.assignment import AssignmentError, load_assignment

HEAD = """\
id: hw1
title: Homework 1
secret: {env: ATTNKIT_TEST_SECRET}
problems: [{template: sdpa_four_tokens}]
"""


def spec(tmp_path, text: str):
    (tmp_path / "hw.yaml").write_text(HEAD + text, encoding="utf-8")
    return load_assignment(tmp_path / "hw.yaml", templates=False)


def problems(tmp_path, text: str) -> list[str]:
    with pytest.raises(AssignmentError) as caught:
        spec(tmp_path, text)
    return [p.split("hw.yaml:", 1)[1] for p in caught.value.problems]


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_a_due_date_with_a_time_zone_a_penalty_and_extensions(tmp_path):
    (tmp_path / "ext.csv").write_text("student_id,name,due\ns1,Ada,2026-12-08 12:00\ns2,Bo,\n", encoding="utf-8")
    a = spec(tmp_path, "due: 2026-12-05 23:59\ntimezone: Europe/Berlin\n"
                       "late: {policy: penalty, percent: 10, per: day, floor: 50}\nextensions: ext.csv\n")
    berlin = ZoneInfo("Europe/Berlin")
    assert a.deadline.due == datetime(2026, 12, 5, 23, 59, tzinfo=berlin)
    assert (a.deadline.late.kind, a.deadline.late.percent, a.deadline.late.floor) == ("penalty", 10, 50)
    assert a.deadline.extensions == {"s1": datetime(2026, 12, 8, 12, 0, tzinfo=berlin)}
    late = a.deadline.assess("s3", datetime(2026, 12, 6, 0, 30, tzinfo=timezone.utc))
    assert late.late_by == timedelta(hours=1, minutes=31) and late.penalty_percent == 10   # 23:59 in Berlin is 22:59 UTC


def test_without_due_there_is_no_deadline(tmp_path):
    assert spec(tmp_path, "").deadline is None


@pytest.mark.parametrize("text, expected", [
    ("due: next friday\n", "5: due: 'next friday' is not a date and time"),
    ("due: 2026-12-05\ntimezone: UTC\n", "5: due: '2026-12-05' has no time of day"),
    ("due: 2026-12-05 23:59\n", "5: due: '2026-12-05 23:59' has no time zone"),
    ("due: 2026-12-05T23:59+01:00\ntimezone: Mars/Olympus\n", "6: timezone: 'Mars/Olympus' is not a time zone name"),
    ("due: 2026-12-05T23:59Z\nlate: {policy: lenient}\n", "6: late.policy: expected one of accept, penalty, cutoff"),
    ("due: 2026-12-05T23:59Z\nlate: {policy: penalty}\n", "6: late.percent: a penalty policy needs percent"),
    ("due: 2026-12-05T23:59Z\nlate: {policy: penalty, percent: 10, per: week}\n", "6: late.per: expected day or hour"),
    ("due: 2026-12-05T23:59Z\nextensions: nowhere.csv\n", "6: extensions: nowhere.csv: no such file"),
    ("late: {policy: cutoff}\n", "5: late: needs a due date"),
])
def test_a_broken_deadline_names_its_line(tmp_path, text, expected):
    assert any(p.startswith(expected) for p in problems(tmp_path, text)), problems(tmp_path, text)


def test_an_extensions_file_needs_its_columns_and_real_dates(tmp_path):
    (tmp_path / "ext.csv").write_text("id,until\ns1,2026-12-08\n", encoding="utf-8")
    assert problems(tmp_path, "due: 2026-12-05T23:59Z\nextensions: ext.csv\n") == \
        ["6: extensions: ext.csv: needs the columns student_id and due"]
    (tmp_path / "ext.csv").write_text("student_id,due\ns1,someday\n", encoding="utf-8")
    assert problems(tmp_path, "due: 2026-12-05T23:59Z\nextensions: ext.csv\n")[0].startswith(
        "6: extensions (ext.csv:2): 'someday' is not a date and time")
