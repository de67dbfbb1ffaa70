"""An assignment's due date, late policy and extensions: read with file:line errors."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from exercises.course.assignment import AssignmentError, load_assignment

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
    return [p.split("hw.yaml:", 1)[1] for p in caught.value.errors]


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


@pytest.mark.parametrize("due", ["2026-12-05 23:59", "2026-12-05T23:59Z", "2026-12-05T23:59:00+00:00"])
def test_a_due_time_without_seconds_is_second_0_and_30_seconds_after_is_late(tmp_path, due):
    a = spec(tmp_path, f"due: {due}\ntimezone: UTC\nlate: {{policy: cutoff}}\n")
    assert a.deadline.due == datetime(2026, 12, 5, 23, 59, 0, tzinfo=timezone.utc)
    late = a.deadline.assess("s1", datetime(2026, 12, 5, 23, 59, 30, tzinfo=timezone.utc))
    assert late.late_by == timedelta(seconds=30) and not late.accepted and late.words.startswith("30 seconds late")


@pytest.mark.parametrize("due, zone", [("2026-12-05 23:59:59", ZoneInfo("Europe/Berlin")),
                                       ("'2026-12-05 23:59:59'", ZoneInfo("Europe/Berlin")),
                                       ("2026-12-05T23:59:59+01:00", timezone(timedelta(hours=1))),
                                       ("2026-12-05 23:59:59.5 +01:00", timezone(timedelta(hours=1)))])
def test_a_due_time_with_seconds_keeps_them(tmp_path, due, zone):
    """YAML reads an unquoted date and time with seconds as a timestamp, quoted as text: both
    mean the second written, in the spec's timezone when it has no offset."""
    a = spec(tmp_path, f"due: {due}\ntimezone: Europe/Berlin\nlate: {{policy: cutoff}}\n")
    assert a.deadline.due.replace(microsecond=0) == datetime(2026, 12, 5, 23, 59, 59, tzinfo=zone)
    assert a.deadline.due.utcoffset() == timedelta(hours=1)
    that_second = datetime(2026, 12, 5, 22, 59, 59, 700_000, tzinfo=timezone.utc)
    assert a.deadline.assess("s1", that_second).words == "on time"
    assert not a.deadline.assess("s1", that_second + timedelta(seconds=1)).accepted


@pytest.mark.parametrize("counts", ["last", "best", "last_on_time"])
def test_counts_chooses_the_rule(tmp_path, counts):
    assert spec(tmp_path, f"due: 2026-12-05T23:59Z\ncounts: {counts}\n").deadline.counts == counts


def test_counts_defaults_to_the_last_handin(tmp_path):
    assert spec(tmp_path, "due: 2026-12-05T23:59Z\n").deadline.counts == "last"


@pytest.mark.parametrize("text, expected", [
    ("due: 2026-12-05T23:59Z\ncounts: highest\n",
     "6: counts: expected one of last, best, last_on_time, got str 'highest'"),
    ("due: 2026-12-05T23:59Z\ncounts: [best]\n", "6: counts: expected one of last, best, last_on_time, got"),
    ("counts: best\n", "5: counts: needs a due date"),
])
def test_a_bad_counts_names_the_file_and_key(tmp_path, text, expected):
    with pytest.raises(AssignmentError) as caught:
        spec(tmp_path, text)
    assert any(p.startswith("hw.yaml:" + expected) for p in caught.value.errors), caught.value.errors


def test_the_readmes_deadline_example_loads_as_documented(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "problem_bank" / "README.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", readme, re.S) if b.startswith("due: "))
    (tmp_path / "extensions.csv").write_text("student_id,due\ns1,2026-12-07 23:59:59\n", encoding="utf-8")
    d = spec(tmp_path, block).deadline
    berlin = ZoneInfo("Europe/Berlin")
    assert (d.due, d.counts, d.late.kind, d.late.cutoff) == (
        datetime(2026, 12, 5, 23, 59, tzinfo=berlin), "last", "penalty", datetime(2026, 12, 8, 23, 59, tzinfo=berlin))
    assert d.extensions == {"s1": datetime(2026, 12, 7, 23, 59, 59, tzinfo=berlin)}
