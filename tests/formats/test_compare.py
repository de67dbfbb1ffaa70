"""compare(): the one comparison of an answer with the key, with a reason when they differ
(never revealing the expected value), exact for integers, booleans and text."""

import math
import warnings

import numpy as np
import pytest

from formats.compare import compare


# --- compare -------------------------------------------------------------------------------------

@pytest.mark.parametrize("actual, expected, reason", [
    (np.zeros((2, 3)), np.zeros((3, 2)), "wrong shape: expected (3, 2), got (2, 3)"),
    ([1.0, 2.0, 3.0], np.zeros(2), "wrong shape: expected (2,), got (3,)"),
    (np.array([1.0, np.nan]), np.array([1.0, 2.0]), "1 entries are NaN"),
    (np.array([np.inf, 1.0]), np.array([1.0, 1.0]), "1 entries are ±inf"),
    (np.array([-np.inf, 1.0]), np.array([0.0, 1.0]), "1 entries are ±inf"),
    ("abc", np.array([1.0]), "expected a number or an array, got str"),
    (None, 1.0, "expected a number or an array, got NoneType"),
    ({"a": 1}, 1.0, "expected a number or an array, got dict"),
    (3, "dog", "got 3, which is not the expected text"),  # never reveals the expected text
    (["dog"], ["the", "dog"], "expected a list of 2 items"),
    (["the", "cat"], ["the", "dog"], "item 1: got 'cat', which is not the expected text"),
    (np.array([2, 0]), np.array([True, False]), "expected True/False (or 1/0) entries"),
    (np.array([0, 0]), np.array([True, False]), "1 of 2 entries differ"),
    (np.array([1.0, 2.1]), np.array([1.0, 2.0]),
     "1 of 2 entries outside tolerance (largest error 0.1; allowed 0.01 + 0·|expected|)"),
    (2.1, 2.0, "outside tolerance (largest error 0.1; allowed 0.01 + 0·|expected|)"),
])
def test_compare_failure_messages(actual, expected, reason):
    result = compare(actual, expected, rtol=0, atol=0.01)
    assert not result.ok
    assert result.reason == reason


def test_compare_passes():
    assert compare(np.array([1.0, 2.0 + 0.005]), np.array([1.0, 2.0]), rtol=0, atol=0.01).ok
    assert compare([1, 0], np.array([True, False])).ok
    assert compare(np.array([-np.inf, 0.5]), np.array([-np.inf, 0.5])).ok  # masked scores
    assert compare(" dog ", "dog").ok
    assert compare(["the", 1.0], ["the", 1.0 + 1e-9]).ok
    assert compare([[1, 2], [3, 4]], np.array([[1.0, 2.0], [3.0, 4.0]])).ok
    # the boundary is inclusive: |a − e| ≤ atol + rtol·|e|
    assert compare(1.5, 1.0, rtol=0.25, atol=0.25).ok
    assert not compare(1.5 + 1e-9, 1.0, rtol=0.25, atol=0.25).ok


def test_compare_reports_the_largest_error():
    result = compare(np.array([1.0, 2.5, 3.1]), np.array([1.0, 2.0, 3.0]), rtol=0, atol=0.01)
    assert result.max_error == pytest.approx(0.5)
    assert compare(np.array([np.nan]), np.array([1.0])).max_error == math.inf


def test_compare_is_exact_for_integers():
    """compare's contract: 'exact equality for integers, booleans and text'. A parameter
    count off by 5 in a million is wrong, whatever rtol says."""
    assert not compare(1_000_005, 1_000_000).ok
    assert not compare(np.array([3, 1_000_005]), np.array([3, 1_000_000])).ok
    assert compare(np.array([3, 7]), np.array([3, 7])).ok


# --- odd values, integers, dicts and infinities --------------------------------------------------

@pytest.mark.parametrize("actual, expected", [
    (np.array(["a", "b"]), np.array([1.0, 2.0])),
    (np.array([1, "x"], dtype=object), np.array([1.0, 2.0])),
    (np.array([1 + 1j, 2]), np.array([1.0, 2.0])),
    (np.array([1 + 0j, 2 + 0j]), np.array([1.0, 2.0])),
    (1 + 0j, 1.0),
    (1 + 2j, 1.0),
    (True, 1),
    (np.array([True, False]), np.array([1, 0])),
    (10 ** 400, 2.5),
    ([1, "a"], [1.0, 2.0]),
    ("1.0", 1.0),
    (None, 1.0),
    ({"a": 1.0}, 1.0),
])
def test_odd_values_fail_with_a_message(actual, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(actual, expected, 1e-3, 1e-3)
    assert not result.ok
    assert result.reason


def test_integers_are_compared_exactly_whatever_the_tolerance():
    assert not compare(1_000_005, 1_000_000, rtol=1e-3).ok
    assert not compare(np.array([1_000_005]), np.array([1_000_000]), rtol=1e-3, atol=10).ok
    assert "exactly" in compare(1_000_005, 1_000_000, rtol=1e-3).reason
    assert compare(1_000_000, 1_000_000, rtol=1e-3).ok
    # a float answer with the same tolerance is compared approximately
    assert compare(1_000_005.0, 1_000_000.0, rtol=1e-3).ok


def test_dicts_are_compared_key_by_key():
    expected = {"loss": 1.0, "weights": np.array([0.25, 0.75])}
    assert compare({"loss": 1.0000001, "weights": np.array([0.25, 0.75])}, expected).ok
    wrong = compare({"loss": 1.0, "weights": np.array([0.5, 0.5])}, expected)
    assert not wrong.ok and wrong.reason.startswith("weights: ")
    missing = compare({"loss": 1.0}, expected)
    assert not missing.ok and "keys" in missing.reason
    assert not compare([1.0, np.array([0.25, 0.75])], expected).ok


@pytest.mark.parametrize("actual, expected", [
    (0.0, -math.inf),
    (-1e9, -math.inf),
    (np.array([[0.0, 1.0]]), np.array([[-np.inf, 1.0]])),
])
def test_a_finite_value_where_minus_inf_is_expected_fails(actual, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(actual, expected)
    assert not result.ok
    assert "inf" in result.reason


@pytest.mark.parametrize("value", [
    -math.inf,
    np.array([-np.inf, 0.5]),
    np.array([[-np.inf, 0.5], [0.25, -np.inf]]),
    [-math.inf, 1.0],
])
def test_minus_inf_matches_minus_inf_without_warnings(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(value, value)
    assert result.ok, result.reason


def test_plus_inf_where_minus_inf_is_expected_fails():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not compare(math.inf, -math.inf).ok
        assert not compare(np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])).ok


def test_within_says_what_compare_says_on_float_arrays():
    """``within`` is validation's ``compare(...).ok``: the same verdict on arrays of any shape
    (0-d and empty too), NaN, ±inf, entries on either side of the tolerance, and finite
    entries whose difference overflows (±1.7e308)."""
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra.numpy import array_shapes, arrays

    from formats.compare import within

    entries = st.sampled_from([0.0, -0.0, 1.0, 1.001, 0.999, 1.002, -3.5, 1e-9, 2e300,
                               1.7e308, -1.7e308, math.nan, math.inf, -math.inf])

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.data(), array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3),
           st.sampled_from([(0.0, 1e-3), (1e-3, 0.0), (0.0, 0.0), (0.5, 1.0)]))
    def check(data, shape, tolerance):
        actual = data.draw(arrays(np.float64, shape, elements=entries))
        expected = data.draw(arrays(np.float64, shape, elements=entries))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert within(actual, expected, *tolerance) == compare(actual, expected, *tolerance).ok

    check()


@pytest.mark.parametrize("actual, expected", [
    (np.array([np.inf, 1.0]), np.array([np.inf, 1.0])),      # inf − inf would be NaN
    (np.array([np.nan]), np.array([1.0])),
    (np.array([1.0]), np.array([-np.inf])),
])
def test_within_warns_of_nothing_on_non_finite_values(actual, expected):
    """Validation and grading call ``within`` on whatever a twin or a student gave: it must
    not print NumPy's floating-point warnings (a version that subtracted before testing for
    inf printed one in a grading run; and ``compare`` warned on 0 · inf where rtol is 0)."""
    from formats.compare import within
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert within(actual, expected, 0.0, 1e-3) == compare(actual, expected, 0.0, 1e-3).ok


def test_two_python_floats_are_judged_as_the_array_path_judges_them():
    """``compare`` and ``matches_twin`` take a shortcut for two Python floats (many parts are
    single numbers): the same verdict, reason and largest error as the path a NumPy float takes, on NaN, ±inf, -0.0, values on either side of the tolerance,
    differences that overflow and infinite tolerances."""
    from hypothesis import given, settings, strategies as st

    from formats.compare import matches_twin

    numbers = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 1.001, 0.999, 1.002, -3.5, 1e-9, 2e300,
                                         1.7e308, -1.7e308, math.nan, math.inf, -math.inf]),
                        st.floats(allow_nan=True, allow_infinity=True))
    tolerances = st.sampled_from([(0.0, 1e-3), (1e-3, 0.0), (0.0, 0.0), (0.5, 1.0), (1e-5, 1e-8),
                                  (0.0, math.inf), (math.inf, 0.0)])

    @settings(max_examples=600, deadline=None, database=None)
    @given(numbers, numbers, tolerances)
    def check(actual, expected, tolerance):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            slow = compare(np.float64(actual), np.float64(expected), *tolerance)
            fast = compare(actual, expected, *tolerance)
            assert (fast.ok, fast.reason) == (slow.ok, slow.reason)
            assert fast.max_error == slow.max_error or (math.isnan(fast.max_error) and math.isnan(slow.max_error))
            assert matches_twin(actual, expected, *tolerance) == matches_twin(
                np.float64(actual), np.float64(expected), *tolerance)

    check()
