"""The lecture's own numbers and small examples worked by hand.

The slide values are truncated 768-dimensional numbers, so they are fixtures for the
arithmetic the lecture shows, not for a full attention matrix (one of the lecture's known slips).
"""

import math

import numpy as np
import pytest

import solutions
from attnkit import walkthrough


def scaled_score(raw: float, d_k: int) -> float:
    """The scaled score the reference computes for a query·key product of ``raw``."""
    q = np.ones((1, d_k))
    k = np.full((1, d_k), raw / d_k)
    steps = solutions.scaled_dot_product_attention(q, k, k, return_steps=True)
    assert steps.raw_scores[0, 0] == pytest.approx(raw)
    return steps.scaled_scores[0, 0]


def test_110_over_sqrt_768_is_3_97():
    assert round(scaled_score(110.0, 768), 2) == 3.97


def test_58_over_sqrt_768_is_2_09():
    assert round(scaled_score(58.0, 768), 2) == 2.09


def test_sqrt_768_is_27_7_and_bert_head_scale_is_8():
    assert round(1 / scaled_score(1.0, 768), 1) == 27.7
    assert 1 / scaled_score(1.0, 64) == pytest.approx(8.0)


def test_z_the_1_is_2_972():
    weights_the = np.array([0.99, 0.0004, 0.0003, 0.0005])
    v_column_1 = np.array([3.0, 1.4, 5.4, 0.6])
    assert round(float(weights_the @ v_column_1), 3) == 2.972


def test_the_slide_rows_are_distributions_up_to_rounding():
    rows = {"The": [0.99, 0.0004, 0.0003, 0.0005], "ran": [0.38, 0.269, 0.094, 0.25]}
    for weights in rows.values():
        assert sum(weights) == pytest.approx(1.0, abs=0.01)
    # The lecture text calls 0.38 "ran"'s self-weight; the column order The/Dog/ran/fast
    # says it is 0.094 (a known slip of the lecture's).
    assert rows["ran"][2] == 0.094


def test_log_three_scores_give_three_quarters():
    # Scaled scores [ln 3, 0] → weights [3/4, 1/4] exactly; Z is then the 3:1 blend of V.
    Q = np.array([[1.0, 1.0, 1.0, 1.0]])
    K = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])  # raw scores [4, 0]
    V = np.array([[8.0, 0.0], [0.0, 4.0]])
    steps = solutions.scaled_dot_product_attention(Q, K, V, scale=math.log(3) / 4,
                                                   return_steps=True)
    np.testing.assert_allclose(steps.weights, [[0.75, 0.25]], rtol=1e-15)
    np.testing.assert_allclose(steps.output, [[6.0, 1.0]], rtol=1e-15)


def test_default_scale_divides_by_two_when_d_k_is_4():
    # raw [4, 0] ÷ √4 → [2, 0] → weights [e²/(e²+1), 1/(e²+1)]
    Q = np.ones((1, 4))
    K = np.array([[1.0] * 4, [0.0] * 4])
    V = np.array([[1.0, 0.0], [0.0, 1.0]])
    steps = solutions.scaled_dot_product_attention(Q, K, V, return_steps=True)
    e2 = math.exp(2.0)
    np.testing.assert_allclose(steps.scaled_scores, [[2.0, 0.0]])
    np.testing.assert_allclose(steps.weights, [[e2 / (e2 + 1), 1 / (e2 + 1)]], rtol=1e-14)
    np.testing.assert_allclose(steps.output, steps.weights, rtol=1e-14)


def naive_attention(Q, K, V, d_k):
    """Plain-Python loops, written independently of ``solutions``."""
    out = []
    for q in Q:
        scores = [sum(a * b for a, b in zip(q, k)) / math.sqrt(d_k) for k in K]
        exps = [math.exp(s - max(scores)) for s in scores]
        weights = [e / sum(exps) for e in exps]
        out.append([sum(w * v[j] for w, v in zip(weights, V)) for j in range(len(V[0]))])
    return out


def test_walkthrough_toy_example_matches_hand_arithmetic():
    Q, K, V = (walkthrough.X @ W for W in (walkthrough.W_Q, walkthrough.W_K, walkthrough.W_V))
    steps = solutions.scaled_dot_product_attention(Q, K, V, return_steps=True)
    # By hand: q_The = x_The·W_Q = rows 0 + 2 of W_Q = [2, 0, 1, 1];
    # k_dog = x_dog·W_K = 2·row 1 + row 3 = [4, −2, 1, 2]; q_The·k_dog = 8 + 0 + 1 + 2 = 11.
    np.testing.assert_array_equal(Q[0], [2, 0, 1, 1])
    np.testing.assert_array_equal(K[1], [4, -2, 1, 2])
    assert steps.raw_scores[0, 1] == 11
    assert steps.scaled_scores[0, 1] == 5.5
    np.testing.assert_allclose(steps.output, naive_attention(Q.tolist(), K.tolist(), V.tolist(), 4),
                               rtol=1e-13)


def test_walkthrough_text_shows_every_step_and_the_lecture_numbers():
    text = walkthrough.lecture_walkthrough()
    for needle in ("raw scores QKᵀ", "÷ √d_k", "softmax weights", "Z = weights · V",
                   "110/√768 = 3.97", "58/√768 = 2.09", "= 2.972"):
        assert needle in text
