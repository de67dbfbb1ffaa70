"""literal(): the code a notebook shows evaluates to the exact value."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from formats.literals import assignment, literal


def evaluate(code):
    return eval(code, {"np": np})  # noqa: S307 — our own generated literal, in a test


def same(a, b):
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    return type(a) is type(b) and a == b


@given(hnp.arrays(st.sampled_from([np.float64, np.int64, np.bool_]),
                  hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))
def test_arrays_round_trip_bit_for_bit(array):
    assert same(evaluate(literal(array)), array)


@pytest.mark.parametrize("value", [0.1, -0.0, 1e-300, 2.5e17, float("inf"), float("-inf"), 7, True,
                                   "The dog", ["ran", "fast"], (1, 2.5), (3,), None,
                                   {"W_Q": np.eye(2), "b": np.array([1.5, -np.inf])}])
def test_scalars_text_and_containers_round_trip(value):
    assert same(evaluate(literal(value)), value)


def test_nan_round_trips():
    assert np.isnan(evaluate(literal(float("nan"))))


def test_a_matrix_is_written_row_by_row_with_aligned_columns():
    assert assignment("Q", np.array([[1.0, -1.0], [0.5, 2.0]])) == (
        "Q = np.array([[ 1.0, -1.0],\n"
        "              [ 0.5,  2.0]])")


def test_other_integer_dtypes_are_named():
    assert literal(np.array([1, 2], dtype=np.int32)) == "np.array([1, 2], dtype=np.int32)"
