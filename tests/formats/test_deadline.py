"""The late policy on receipt times, as formats/deadline.py decides it."""

from datetime import datetime, timedelta, timezone

import pytest

from formats.deadline import Deadline, LatePolicy

DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)


def at(**delta):
    return DUE + timedelta(**delta)


def test_on_time_and_unknown_times_are_accepted_in_full():
    d = Deadline(DUE, LatePolicy("penalty", 10, "day", 50))
    assert d.assess("a", at(seconds=-1)).penalty_percent == 0 and not d.assess("a", DUE).late
    unknown = d.assess("a", None)
    assert unknown.accepted and unknown.penalty_percent == 0 and "unknown" in unknown.words


@pytest.mark.parametrize("late, percent", [(dict(seconds=1), 10), (dict(hours=23), 10), (dict(days=1), 10),
                                           (dict(days=1, seconds=1), 20), (dict(days=4, hours=1), 50),
                                           (dict(days=30), 50)])
def test_a_penalty_per_started_day_never_takes_more_than_down_to_the_floor(late, percent):
    got = Deadline(DUE, LatePolicy("penalty", 10, "day", 50)).assess("a", at(**late))
    assert got.accepted and got.penalty_percent == percent and "late" in got.words


def test_per_hour_and_a_cutoff_after_which_nothing_counts():
    d = Deadline(DUE, LatePolicy("penalty", 5, "hour", 0, cutoff=at(hours=10)))
    assert d.assess("a", at(hours=2, minutes=1)).penalty_percent == 15
    refused = d.assess("a", at(hours=10, seconds=1))
    assert not refused.accepted and "not accepted" in refused.words


def test_a_hard_cutoff_defaults_to_the_due_date_and_accept_takes_nothing():
    assert not Deadline(DUE, LatePolicy("cutoff")).assess("a", at(seconds=1)).accepted
    accepted = Deadline(DUE).assess("a", at(days=3))
    assert accepted.accepted and accepted.penalty_percent == 0 and accepted.words == "3 days late: accepted"


def test_an_extension_moves_the_due_date_and_a_cutoff_before_it():
    d = Deadline(DUE, LatePolicy("penalty", 10, "day", 0, cutoff=at(days=1)), {"b": at(days=3)})
    assert d.assess("b", at(days=2)).penalty_percent == 0 and "extended" in d.assess("b", at(days=2)).words
    assert d.assess("b", at(days=3)).accepted                              # the extension is its cutoff too
    assert not d.assess("b", at(days=3, hours=1)).accepted
    assert not d.assess("a", at(days=2)).accepted
