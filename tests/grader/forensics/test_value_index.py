"""The forensics' index of one part's values (grader/forensics/value_index.py): the owners
it lists are exactly those a full comparison finds, a crowd is none, and an index that keeps
only what its queries may match answers those queries as the full one does."""

import numpy as np
import pytest

from formats.compare import within
from grader.forensics.value_index import CROWD, ValueIndex

RTOL, ATOL = 1e-5, 0.005


def _class(rng, n=600):
    """Values of a few shapes, with repeats, values a tolerance apart, and non-numbers."""
    values = []
    for i in range(n):
        shape = [(4, 4), (3,), (), (0,), (2, 8)][i % 5]
        v = rng.normal(size=shape)
        if i % 7 == 0 and values:
            v = values[-5]                                       # a repeat
        elif i % 11 == 0 and len(values) > 5 and not isinstance(values[-5], str):
            v = np.asarray(values[-5]) + rng.choice([0.9, 1.1]) * ATOL   # just inside or outside
        values.append(v if i % 13 else "not a number")
    return values


def _brute(values, v):
    a = np.asarray(v, dtype=float)
    return [i for i, b in enumerate(values) if not isinstance(b, str)
            and np.shape(b) == a.shape and within(a, np.asarray(b, dtype=float), RTOL, ATOL)]


def _index(values, queries=None, limit=0):
    index = ValueIndex(RTOL, ATOL, queries, limit)
    for v in values:
        index.add(v)
    return index.freeze()


def test_the_owners_listed_are_those_a_full_comparison_finds():
    rng = np.random.default_rng(0)
    values = _class(rng)
    index = _index(values)
    assert index.n == len(values)
    queries = [v for v in values[::3] if not isinstance(v, str)] + [rng.normal(size=(4, 4))]
    for v in queries:
        assert sorted(index.matching(v)) == _brute(values, v)
    assert index.matching("not a number") == [] and index.matching(np.zeros((5, 5))) == []


def test_a_listing_past_its_limit_is_none():
    index = _index([np.ones(4)] * 5 + [np.zeros(4)])
    assert index.matching(np.ones(4), 4) is None and index.matching(np.ones(4), 5) == [0, 1, 2, 3, 4]
    assert index.matching(np.zeros(4), 0) is None and index.matching(np.zeros(4), 1) == [5]


def test_each_owner_gets_back_what_it_added_as_floats():
    values = [np.arange(4).reshape(2, 2), [1, 2, 3], 2.5, "x", np.array([np.nan, 1.0])]
    index = _index(values)
    np.testing.assert_array_equal(index.value(0), np.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(index.value(1), [1.0, 2.0, 3.0])
    assert index.value(2) == 2.5 and index.value(2).shape == ()
    assert index.value(3) is None and index.value(4) is None


def test_more_than_a_crowd_of_distinct_values_near_one_projection_is_none():
    from grader.forensics.value_index import _weights
    w = _weights(16)
    along = np.zeros(16)
    along[0], along[1] = w[1], -w[0]                 # moves a value without moving its projection
    crowd = [np.full(16, 0.25) + 0.01 * i * along for i in range(CROWD + 5)]
    index = _index(crowd)
    assert index.matching(crowd[0]) is None
    assert _index(crowd[:CROWD]).matching(crowd[0]) == [0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_keeping_only_what_the_queries_may_match_answers_them_as_the_full_index(seed):
    rng = np.random.default_rng(seed)
    values = _class(rng, 900)
    queries = [v for v in values[::17] if not isinstance(v, str)]
    queries += [np.asarray(v, dtype=float) - 0.95 * ATOL for v in values[5::29] if not isinstance(v, str)]
    full = _index(values)
    for limit in (0, 2, 3):
        kept = _index(values, _index(queries), limit)
        for v in queries:
            assert kept.matching(v, limit) == full.matching(v, limit)
    stored = sum(len(rows.owners) for _, rows in kept._shapes)
    assert stored < len(values) / 3, stored               # the rest only counted


def test_a_kept_index_counts_the_values_it_did_not_keep_towards_a_crowd():
    from grader.forensics.value_index import _weights
    w = _weights(16)
    along = np.zeros(16)
    along[0], along[1] = w[1], -w[0]
    crowd = [np.full(16, 0.25) + 0.01 * i * along for i in range(CROWD + 5)]
    query = crowd[7]
    kept = _index(crowd, _index([query]))
    assert sum(len(rows.owners) for _, rows in kept._shapes) == 0     # a crowd: nothing to keep
    assert kept.matching(query) is None                  # as the full index says
    kept = _index(crowd, _index([query]), 300)
    assert sum(len(rows.owners) for _, rows in kept._shapes) == 1
    assert kept.matching(query, 300) == _index(crowd).matching(query, 300) == [7]   # a wider limit, no crowd


def test_values_written_in_many_blocks_keep_the_right_owners(monkeypatch):
    import grader.forensics.value_index as module
    monkeypatch.setattr(module, "_BATCH_BYTES", 7 * 32)
    rng = np.random.default_rng(5)
    values = [rng.normal(size=4) for _ in range(100)] + [np.zeros(0)] * 3
    queries = values[3::10]
    kept = _index(values, _index(queries))
    assert [kept.matching(q) for q in queries] == [[i] for i in range(3, 100, 10)]
