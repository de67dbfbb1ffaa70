"""The JSON form of values in the answer key: arrays bit for bit, non-finite floats as
floats, user mappings that look like our tags as mappings; what cannot be stored is refused."""

import json
import math

import numpy as np
import pytest

from formats import serialize


# --- the JSON answer key round-trips exactly -----------------------------------------------------

def _roundtrip(value):
    text = serialize.canonical_json(serialize.to_jsonable(value))
    return serialize.from_jsonable(json.loads(text))


def test_a_packed_array_reads_back_writable_and_its_own():
    first, second = (serialize.from_jsonable({"packed": "AAAAAAAA8D8AAAAAAAAAQA==", "dtype": "float64",
                                              "shape": [2]}) for _ in range(2))
    first[0] = 7.0                           # (a grader may work on a decoded value in place)
    assert first.dtype == np.float64 and first.flags.writeable
    assert second.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("value", [
    np.array([[1.5, -np.inf], [np.nan, 0.1 + 0.2]]),
    np.array([np.inf, -np.inf, np.nan]),
    np.array([[True, False], [False, True]]),
    np.array([[1, -2], [3, 2 ** 40]], dtype=np.int64),
    np.array(-0.0),
    np.array(np.pi),
    np.zeros((2, 0, 3)),
    np.random.default_rng(0).normal(size=(4, 5)) * 1e-7,
])
def test_arrays_round_trip_bit_for_bit(value):
    back = _roundtrip(value)
    assert back.shape == value.shape and back.dtype == value.dtype
    if value.dtype == np.float64:  # bit for bit, NaN and the sign of zero included
        assert np.array_equal(back.view(np.uint64), value.view(np.uint64))
    else:
        assert np.array_equal(back, value)
    assert serialize.same_value(back, value)


# --- packed arrays: what only the kit reads back ------------------------------------------------

_NEGATIVE_NAN = np.array([np.copysign(np.nan, -1.0), np.nan])    # 0·inf gives the first on x86


@pytest.mark.parametrize("value", [
    np.array([[1.5, -np.inf], [np.nan, 0.1 + 0.2]]),
    _NEGATIVE_NAN,
    np.array(-0.0),
    np.array(np.pi),
    np.zeros((2, 0, 3)),
    np.arange(12.0).reshape(3, 4)[:, ::2],                  # a strided view
    np.asfortranarray(np.arange(6.0).reshape(2, 3) - 2.5),
    np.array([1.7e308, 5e-324, -2.5e-300]),
    np.arange(6.0).astype(">f8").reshape(2, 3),             # big-endian: stored little-endian
])
def test_packed_float64_arrays_round_trip_bit_for_bit_through_the_key_text(value):
    stored = serialize.to_packed(value)
    assert set(stored) == {"packed", "dtype", "shape"}
    back = serialize.from_jsonable(json.loads(serialize.canonical_json(stored)))
    assert back.shape == value.shape and back.dtype == np.float64 and back.dtype.isnative
    assert back.flags.writeable and back.flags.c_contiguous
    native = value.astype(np.float64)
    assert np.array_equal(back.reshape(-1).view(np.uint64), native.reshape(-1).view(np.uint64))


@pytest.mark.parametrize("value", [
    [np.array([1.0, 2.0]), None, np.array([True, False]), "text", 3, 2.5, float("-inf")],
    {"a": np.eye(2), "b": [np.array([1, 2], dtype=np.int32), np.float32(0.5)]},
    (np.array([1.0], dtype=np.float32), np.array(7)),
    np.array([[True], [False]]),
])
def test_packed_values_read_back_as_the_listed_ones(value):
    """Only float64 arrays (and other float arrays, stored as float64) are packed; what they
    hold reads back as ``to_jsonable``'s text of the same value reads back."""
    listed = serialize.from_jsonable(json.loads(serialize.canonical_json(serialize.to_jsonable(value))))
    packed = serialize.from_jsonable(json.loads(serialize.canonical_json(serialize.to_packed(value))))
    assert serialize.same_value(packed, listed) if not isinstance(value, dict) else (
        packed.keys() == listed.keys() and all(serialize.same_value(packed[k], listed[k]) for k in packed))


def test_a_masked_array_is_stored_as_to_jsonable_stores_it_not_packed():
    value = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    assert serialize.to_packed(value) == serialize.to_jsonable(value)


def test_packed_values_are_refused_where_to_jsonable_refuses_them():
    for bad in (np.array([1j]), object(), {1: np.zeros(1)}):
        with pytest.raises(serialize.NotSerializable):
            serialize.to_packed(bad)


@pytest.mark.parametrize("stored, message", [
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [2]}, "8 bytes for shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": []}, None),        # 1.0, 0-d: fine
    ({"packed": "AAAAAAAA8D8", "dtype": "float64", "shape": [1]}, "not a packed"),   # padding
    ({"packed": "AAAA*AAA8D8=", "dtype": "float64", "shape": [1]}, "not a packed"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "int64", "shape": [1]}, "dtype"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [-1]}, "shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [True]}, "shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": "1"}, "shape"),
    ({"packed": 1.0, "dtype": "float64", "shape": [1]}, "not a packed"),
    ({"packed": "", "dtype": "float64", "shape": [0, 2**70]}, "not a packed"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [2**40, 2**40]}, "bytes for shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [2**63]}, "shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [1] * 65}, "shape"),
    # thousands of huge axes would make their product quadratic: refused before it is taken
    ({"packed": "", "dtype": "float64", "shape": [10**4000] * 800}, "shape"),
    ({"packed": "AAAAAAAA8D8=", "dtype": ["float64"], "shape": [1]}, "dtype"),
    ({"packed": "AAAAAAAA8D\u00e9=", "dtype": "float64", "shape": [1]}, "not a packed"),   # not ASCII
    ({"packed": "AAAAAAAA8D8=\n", "dtype": "float64", "shape": [1]}, "not a packed"),
    ({"packed": "AAAAAAAA8D8=", "dtype": "float64", "shape": [1], "extra": 1}, "not an encoded value"),
    ({"packed": "AAAAAAAA8D8=", "shape": [1]}, "not an encoded value"),
])
def test_a_damaged_packed_array_is_an_error_never_other_numbers(stored, message):
    if message is None:
        assert serialize.from_jsonable(stored) == 1.0
        return
    with pytest.raises(ValueError, match=message):
        serialize.from_jsonable(stored)


@pytest.mark.parametrize("value", [
    np.array([[1.5, -np.inf], [np.nan, 0.1 + 0.2]]),
    np.array([1.7e308, -1.7e308]),                  # finite, near the largest float64
    np.array(-0.0),
    np.array(np.inf),
    np.zeros((2, 0, 3)),
    np.arange(12.0).reshape(3, 4)[:, ::2],          # a strided view
    np.asfortranarray(np.arange(6.0).reshape(2, 3) - 2.5),
])
def test_native_float64_arrays_are_written_as_every_other_float_array(value):
    """A native float64 array takes ``to_jsonable``'s short way (no copy, the ufuncs called
    directly); it must write what the general way writes, here reached through a big-endian
    copy of the same numbers."""
    general = serialize.to_jsonable(value.astype(">f8"))
    assert serialize.to_jsonable(value) == general
    assert json.dumps(serialize.to_jsonable(value)) == json.dumps(general)


@pytest.mark.parametrize("value", [
    1.0, 0.1, -2.5e-300, 3, True, False, "−inf as text", "inf", ["the", "dog"], [1, 2.5],
    [np.array([1, 2]), "x", [np.array([True])]],
])
def test_plain_values_round_trip(value):
    assert serialize.same_value(_roundtrip(value), value)


def test_mappings_round_trip():
    back = _roundtrip({"W_Q": np.eye(2), "n": 3})
    assert set(back) == {"W_Q", "n"} and back["n"] == 3
    assert serialize.same_value(back["W_Q"], np.eye(2))


@pytest.mark.parametrize("value", [-math.inf, math.inf, math.nan, [0.5, -math.inf]])
def test_non_finite_python_floats_round_trip(value):
    """−inf is a legal answer (a masked score); it must come back as a float, not as text."""
    back = _roundtrip(value)
    assert serialize.same_value(back, value), f"{value!r} came back as {back!r}"


def test_same_value_is_strict_about_dtype_and_shape():
    assert not serialize.same_value(np.array([1, 2]), np.array([1.0, 2.0]))
    assert not serialize.same_value(np.zeros((2, 1)), np.zeros(2))
    assert serialize.same_value(np.array([np.nan]), np.array([np.nan]))
    assert not serialize.same_value(1, 1.0)
    assert serialize.same_value(math.nan, math.nan)


def test_unstorable_values_are_refused():
    with pytest.raises(serialize.NotSerializable, match="dtype complex128"):
        serialize.to_jsonable(np.array([1j]))
    with pytest.raises(serialize.NotSerializable, match="a object cannot be stored"):
        serialize.to_jsonable(object())


# --- mappings that look like tags, keys that are not text ----------------------------------------

def _through_json(value):
    return serialize.from_jsonable(json.loads(json.dumps(serialize.to_jsonable(value))))


@pytest.mark.parametrize("value", [
    {"float": 1.5},
    {"float": "-inf"},
    {"dict": {"x": 1}},
    {"array": [1, 2], "dtype": "int64", "shape": [2]},
    [{"float": 1.5}, {"dict": 2}],
])
def test_user_mappings_that_look_like_our_tags_round_trip_as_mappings(value):
    back = _through_json(value)
    assert serialize.same_value(back, value)
    assert isinstance(back, type(value))


@pytest.mark.parametrize("value", [{1: 2}, {("a",): 1}, {"ok": {2.5: 1}}, [{None: 1}]])
def test_non_text_keys_are_not_serializable(value):
    with pytest.raises(serialize.NotSerializable):
        serialize.to_jsonable(value)


# --- storable: to_jsonable's verdict without the copy --------------------------------------------

class _Opaque:
    pass


@pytest.mark.parametrize("value", [
    None, True, np.bool_(False), 3, np.int64(-2), np.uint8(7), 2.5, np.float32(0.5), "text",
    np.zeros((2, 3)), np.array([1, 2], dtype=np.uint16), np.array([True]), np.zeros(0),
    [1.0, np.ones(2), ["a", None]], (1, 2), {"a": np.eye(2), "b": {"c": [1]}},
    np.array([1 + 2j]), np.array(["a"]), np.array([None], dtype=object), 1 + 2j, _Opaque(),
    {1: 2}, {"ok": {2.5: 1}}, [1, {None: 1}], [np.zeros(1), 1j], {"a": [1, _Opaque()]},
    np.datetime64("2026-01-01"), np.array([1], dtype="datetime64[D]"),
])
def test_storable_agrees_with_to_jsonable(value):
    try:
        serialize.to_jsonable(value)
        stored = True
    except serialize.NotSerializable:
        stored = False
    assert serialize.storable(value) is stored
