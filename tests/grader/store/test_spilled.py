"""A class's records spilled to disk (grader/store/spilled.py): read back equal, in order,
one at a time or by index, whether they stayed in memory or went to the disk."""

import numpy as np
import pytest

from grader.store import spilled
from grader.store.spilled import Spilled


def _records(n):
    # varied sizes, numpy values and a record larger than one read block
    out = [{"id": f"s{i}", "scores": list(range(i % 7)), "a": np.arange(i % 5, dtype=float)} for i in range(n)]
    out[n // 2]["big"] = "x" * (spilled._READ + 12345)
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        assert all(np.array_equal(x[k], y[k]) if isinstance(x[k], np.ndarray) else x[k] == y[k] for k in x)


@pytest.mark.parametrize("in_memory", [0, 1000, spilled.IN_MEMORY])
def test_records_come_back_equal_in_order_from_memory_or_disk(in_memory):
    records = _records(300)
    s = Spilled(records, in_memory=in_memory)
    assert len(s) == 300 and (s._file is None) == (in_memory == spilled.IN_MEMORY)
    _same(list(s), records)
    _same(list(s), records)                                   # read again: the same
    _same([s[i] for i in range(300)], records)
    _same([s[-1], s[-300]], [records[-1], records[0]])
    _same(s[10:20:3], records[10:20:3])
    with pytest.raises(IndexError):
        s[300]
    with pytest.raises(IndexError):
        s[-301]


def test_appending_after_reading_and_the_empty_sequence():
    s = Spilled(in_memory=100)
    assert len(s) == 0 and list(s) == [] and not s
    s.append({"a": 1})
    assert list(s) == [{"a": 1}]
    for i in range(50):
        s.append({"a": i})
        assert s[-1] == {"a": i} and len(s) == i + 2
    assert [r["a"] for r in s] == [1, *range(50)]
    s.close()


def test_what_a_spilled_class_holds_is_its_offsets():
    """Once on disk the records are not in memory: the buffer stays below a read block."""
    s = Spilled(({"id": i, "text": "y" * 5000} for i in range(2000)), in_memory=1 << 16)
    assert s._on_disk > 9_000_000 and len(s._buffer) < spilled._READ
    assert sum(1 for _ in s) == 2000 and s[1234]["id"] == 1234
