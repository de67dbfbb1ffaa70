"""formats.compact_json: a value to_jsonable made, written byte for byte as json.dumps writes
the canonical text (sorted keys, no spaces, ensure_ascii off, NaN refused)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from formats import compact_json
from formats.serialize import canonical_parts, to_jsonable

from .test_indented_json import floats_of_every_size


def expected(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


# texts that look like numbers orjson writes otherwise, after a ',' or ':' of their own
tricky_texts = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from([",1e-05", ":2.5e-7", "[0.00001", 'a"b', "back\\slash", "0.0000", "e-", "1e+16",
                     "x,1e-7,y", "\x00\x1f\x7f\u2028", "é😀"]))
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), floats_of_every_size(),
              tricky_texts,
              arrays(np.float64, st.integers(0, 6), elements=floats_of_every_size()),
              arrays(np.int64, st.integers(0, 4))),
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(tricky_texts, inner, max_size=5)),
    max_leaves=30)


@settings(max_examples=800, deadline=None)
@given(values)
def test_every_value_to_jsonable_makes_is_written_as_json_writes_it(value):
    jsonable = to_jsonable(value)
    assert compact_json.dumps_jsonable(jsonable) == expected(jsonable)


def test_floats_of_every_magnitude_in_one_array():
    rng = np.random.default_rng(5)
    x = rng.standard_normal(4000) * 10.0 ** rng.integers(-30, 30, 4000)
    x[::97] = 0.0
    jsonable = to_jsonable({"a": x, "b": [x[:7], -x[7:20]]})
    assert compact_json.dumps_jsonable(jsonable) == expected(jsonable)


def test_numbers_are_rewritten_only_outside_texts():
    jsonable = {"text": "values [0.00001,2.5e-7] and: 1e-05", "x": [1e-05, 2.5e-07, 1e16, 0.5]}
    text = compact_json.dumps_jsonable(jsonable)
    assert text == expected(jsonable)
    assert '"values [0.00001,2.5e-7] and: 1e-05"' in text and "[1e-05,2.5e-07,1e+16,0.5]" in text


def test_the_fast_path_writes_floats_orjson_writes_otherwise(monkeypatch):
    """orjson, not the fallback, writes a record's arrays, tiny and huge floats included:
    the tests above would pass with the fallback alone."""
    jsonable = to_jsonable({"twin": np.array([[1e-05, -3.2e-9], [0.25, 1.5e17]]), "name": "sdpa"})
    want = expected(jsonable)
    monkeypatch.setattr(compact_json, "canonical_dumps",
                        lambda value: pytest.fail("took json's path"))
    assert compact_json.dumps_jsonable(jsonable) == want


@pytest.mark.parametrize("value", [2**64, "lone \ud800 surrogate", 'a "quoted" text', "tab\t"])
def test_what_orjson_refuses_or_escapes_takes_jsons_path(value):
    assert compact_json.dumps_jsonable({"v": [value, 1e-5]}) == expected({"v": [value, 1e-5]})


def test_canonical_parts_writes_the_same_text_either_way():
    body = {"answers": to_jsonable({"p": np.array([1e-6, 0.3])}), "grading": [{"rtol": 1e-05}],
            "prompts": {"": "Compute $\\sqrt{d_k}$"}}
    assert canonical_parts(body, jsonable=frozenset({"answers"})) == canonical_parts(body) == expected(body)


def test_a_nan_is_never_written_as_null_by_to_jsonable():
    """Why the fast path is only for to_jsonable's values: orjson writes NaN as null, and
    to_jsonable never leaves one as a float."""
    jsonable = to_jsonable([math.nan, np.array([math.inf, 1.0]), {"x": -math.inf}])
    assert "null" not in compact_json.dumps_jsonable(jsonable)
    assert compact_json.dumps_jsonable(jsonable) == expected(jsonable)
