"""Degenerate answers: the forms that make a chain's later steps trivial, judged against the
key's own answer (a form the answer has too proves nothing)."""

import numpy as np
import pytest

from formats.degenerate import FLAT, NOT_FINITE, ZERO, degenerate, describe, forms

SCORES = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [1.5, 1.5, -2.0]])


@pytest.mark.parametrize("value, form, words", [
    (np.zeros((3, 3)), ZERO, "is all zeros"),
    (np.full((3, 3), 0.004), ZERO, "is all zeros"),               # within atol 0.005 of 0
    (np.full((3, 3), 7.0), FLAT, "all the entries of each row equal"),
    (np.array([[1.0, 1, 1], [2, 2, 2], [-3, -3, -3]]), FLAT, "all the entries of each row equal"),
    (100 * np.eye(3), FLAT, "a single entry that is not zero"),
    (np.eye(3)[[2, 0, 1]] * 5, FLAT, "a single entry that is not zero"),
    (np.tril(np.ones((3, 3))), FLAT, "the same number in every entry that is not zero"),
    (np.array([[np.nan, 1, 2], [0, 1, 2], [0, 1, 2]]), NOT_FINITE, "NaN or infinity"),
    (np.array([1 / 3, 1 / 3, 1 / 3]), FLAT, "has all its entries equal"),
    (np.array([0.0, 1.0, 0.0]), FLAT, "has a single entry that is not zero"),
    (np.float64(0.0), ZERO, "is all zeros"),
])
def test_each_degenerate_form_is_found_and_said_in_a_students_words(value, form, words):
    expected = SCORES if np.ndim(value) == 2 else (SCORES[0] if np.ndim(value) == 1 else 3.0)
    assert degenerate(value, expected, 0.0, 0.005) == form
    assert describe(form, value, 0.005).endswith(words)


@pytest.mark.parametrize("value", [
    SCORES + 1.0,                                     # an honest slip, everywhere
    np.where(np.eye(3) > 0, 0.0, SCORES),             # one entry of each row lost
    SCORES.T, -SCORES, SCORES[[1, 0, 2]],             # swapped, negated, rows exchanged
    np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [1.0, 1.0, 1.0]]),   # one flat row of three
])
def test_a_real_attempt_is_not_degenerate(value):
    assert degenerate(value, SCORES, 0.0, 0.005) is None


def test_a_form_the_answer_has_too_proves_nothing():
    weights = np.tril(np.ones((3, 3)))
    weights /= weights.sum(axis=1, keepdims=True)
    assert FLAT in forms(weights, 0.0, 0.005)
    assert degenerate(weights, weights, 0.0, 0.005) is None          # causal uniform weights
    masked = np.where(np.tril(np.ones((3, 3))) > 0, SCORES, -np.inf)
    assert degenerate(masked, masked, 0.0, 0.005) is None             # -inf where the answer has it
    assert degenerate(np.zeros(3), np.array([0.0, 0.0, 1e-9]), 0.0, 1e-6) is None


def test_the_tolerance_is_the_steps_own():
    near = SCORES * 0 + np.array([[1.0, 1.003, 0.998]])
    assert degenerate(near, SCORES, 0.0, 0.005) == FLAT          # equal as far as grading can tell
    assert degenerate(near, SCORES, 0.0, 1e-9) is None
    assert degenerate(np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([[1.0, 3.0], [0.5, 2.0]]), 0.01, 0.0) \
        == FLAT


def test_nothing_but_shape_and_arithmetic_is_used_on_a_large_value():
    big = np.zeros((2000, 500))
    assert degenerate(big, np.ones((2000, 500)) + np.arange(500), 0.0, 1e-9) == ZERO
