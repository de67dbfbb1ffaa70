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


def test_times_are_compared_to_the_second():
    """23:59 is 23:59:00: 30 s after is late; 23:59:59 accepts all of that second."""
    minute = Deadline(DUE, LatePolicy("cutoff"))
    assert minute.assess("a", at(seconds=30)).late_by == timedelta(seconds=30)
    assert not minute.assess("a", at(seconds=30)).accepted
    last_second = Deadline(DUE.replace(second=59), LatePolicy("cutoff"))
    assert last_second.assess("a", at(seconds=59, microseconds=999_999)).words == "on time"
    assert not last_second.assess("a", at(seconds=60)).accepted


# which handin counts: (receipt time, score) each, the last received first
HANDINS = [(at(days=1, hours=1), 8.0),         # −40 % under 20 % a day: 4.8
           (at(hours=1), 9.0),                 # −20 %: 7.2
           (at(days=-2), 4.0),                 # on time
           (at(days=-3), 6.0)]                 # on time, earlier


@pytest.mark.parametrize("counts, index", [("last", 0), ("best", 1), ("last_on_time", 2)])
def test_the_counting_rule_chooses_among_the_accepted_handins(counts, index):
    choice = Deadline(DUE, LatePolicy("penalty", 20, "day"), counts=counts).choose("a", HANDINS)
    assert choice.index == index and [x.penalty_percent for x in choice.assessed] == [40, 20, 0, 0]


def test_refused_handins_never_count_and_a_tie_goes_to_the_later_one():
    policy = LatePolicy("penalty", 20, "day", cutoff=at(hours=12))
    assert Deadline(DUE, policy, counts="best").choose("a", HANDINS).index == 1       # 0 is after the cutoff
    assert Deadline(DUE, policy).choose("a", HANDINS).why.endswith("(the later ones are after the cutoff)")
    tie = [(at(days=-1), 5.0), (at(days=-2), 5.0)]
    assert Deadline(DUE, policy, counts="best").choose("a", tie).index == 0
    late_only = [(at(hours=2), 5.0)]
    assert Deadline(DUE, policy, counts="last_on_time").choose("a", late_only).index == 0
    refused = Deadline(DUE, LatePolicy("cutoff"), counts="best").choose("a", late_only)
    assert refused.index is None and not refused.assessed[0].accepted
