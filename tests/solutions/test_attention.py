import math

import numpy as np
import pytest

import solutions


def test_self_attention_projects_then_attends():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2, 4, 5))
    W_Q, W_K, W_V = rng.normal(size=(5, 3)), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
    expected = solutions.scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V)
    np.testing.assert_allclose(solutions.self_attention(X, W_Q, W_K, W_V), expected, rtol=1e-14)


def test_same_weights_different_sentence_different_output_for_the_same_word():
    # The lecture's "bank" argument: identical embedding and weights, other context words.
    rng = np.random.default_rng(0)
    W_Q, W_K, W_V = (rng.normal(size=(4, 4)) for _ in range(3))
    bank, account, river = rng.normal(size=(3, 4))
    z_money = solutions.self_attention(np.stack([bank, account]), W_Q, W_K, W_V)[0]
    z_river = solutions.self_attention(np.stack([bank, river]), W_Q, W_K, W_V)[0]
    assert not np.allclose(z_money, z_river)


def test_steps_expose_the_hand_arithmetic_of_step_3b():
    # scaled scores [ln 3, 0] → exp [3, 1] → row sum 4 → weights [3/4, 1/4]
    Q, K = np.array([[1.0, 0.0]]), np.array([[math.log(3.0), 0.0], [0.0, 0.0]])
    steps = solutions.scaled_dot_product_attention(Q, K, np.eye(2), scale=1.0, return_steps=True)
    np.testing.assert_allclose(steps.exp_scores, [[3.0, 1.0]], rtol=1e-14)
    np.testing.assert_allclose(steps.row_sums, [[4.0]], rtol=1e-14)
    np.testing.assert_allclose(steps.exp_scores / steps.row_sums, steps.weights, rtol=1e-14)


def test_masked_entries_have_zero_exponentials():
    steps = solutions.scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.eye(2),
                                                   mask=solutions.causal_mask(2),
                                                   return_steps=True)
    assert steps.exp_scores[0, 1] == 0.0


def test_causal_attention_is_sdpa_with_the_lower_triangular_mask():
    r = np.random.default_rng(3)
    Q, K, V = r.standard_normal((2, 4, 3)), r.standard_normal((2, 6, 3)), r.standard_normal((2, 6, 2))
    expected = solutions.scaled_dot_product_attention(Q, K, V, mask=solutions.causal_mask(4, 6))
    np.testing.assert_array_equal(solutions.causal_attention(Q, K, V), expected)
    steps = solutions.causal_attention(Q, K, V, return_steps=True)
    assert np.all(steps.weights[..., 0, 1:] == 0) and np.all(steps.weights[..., 3, 4:] == 0)


def test_causal_attention_output_row_ignores_later_tokens():
    # The point of the mask: output row i depends on tokens 0..i only, so a decoder can be
    # trained on every position at once.
    r = np.random.default_rng(4)
    X = r.standard_normal((5, 3))
    changed = X.copy()
    changed[3:] = r.standard_normal((2, 3))
    before, after = solutions.causal_attention(X, X, X), solutions.causal_attention(changed, changed, changed)
    np.testing.assert_array_equal(before[:3], after[:3])
    assert not np.allclose(before[3:], after[3:])


def test_the_gradient_check_is_the_centred_difference_and_its_error_is_order_h_squared():
    r = np.random.default_rng(7)
    Q, K, V, dZ = r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2)), r.normal(size=(3, 2))
    _, cache = solutions.attention_forward(Q, K, V)
    analytic = solutions.attention_backward(dZ, cache)[0][1, 2]
    assert abs(solutions.gradient_check(Q, K, V, dZ, 1, 2, 1e-5) - analytic) < 1e-9
    errors = [solutions.gradient_check(Q, K, V, dZ, 1, 2, h) - analytic for h in (0.2, 0.1)]
    assert 3.5 < errors[0] / errors[1] < 4.5          # halving h quarters an O(h²) error
    E = np.zeros_like(Q)
    E[1, 2] = 0.3
    def loss(q):
        return float(np.sum(solutions.scaled_dot_product_attention(q, K, V) * dZ))
    assert solutions.gradient_check(Q, K, V, dZ, 1, 2, 0.3) == pytest.approx((loss(Q + E) - loss(Q - E)) / 0.6, abs=1e-14)
    with pytest.raises(ValueError, match="outside Q"):
        solutions.gradient_check(Q, K, V, dZ, 3, 0, 0.1)
