"""Why divide by √d_k: dot-product variance, softmax saturation, entropy and the Jacobian."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solutions import attention_entropy, dot_product_variance, scaling_comparison, softmax, \
    softmax_jacobian

N_SAMPLES = 20_000


@pytest.mark.parametrize("d_k", [1, 16, 64, 256])
def test_dot_product_variance_is_d_k_and_one_after_scaling(d_k):
    unscaled, scaled = dot_product_variance(d_k, num_samples=N_SAMPLES, rng=d_k)
    # X = q·k has E X² = d_k and E X⁴ = 3d_k² + 6d_k, so the sample variance has
    # std ≈ √((2d_k² + 6d_k)/N); allow 5 std (scaled: divide by d_k).
    std = math.sqrt((2 * d_k**2 + 6 * d_k) / N_SAMPLES)
    assert unscaled == pytest.approx(d_k, abs=5 * std)
    assert scaled == pytest.approx(1.0, abs=5 * std / d_k)


def test_dot_product_variance_is_reproducible_from_a_seed():
    assert dot_product_variance(8, 1000, rng=3) == dot_product_variance(8, 1000, rng=3)


def loop_row_stats(scores):
    """Mean max weight and mean entropy (nats) of softmax over each row, with math.exp."""
    maxima, entropies = [], []
    for row in scores:
        top = max(row)
        exps = [math.exp(v - top) for v in row]
        p = [e / sum(exps) for e in exps]
        maxima.append(max(p))
        entropies.append(-sum(x * math.log(x) for x in p if x > 0))
    return sum(maxima) / len(maxima), sum(entropies) / len(entropies)


@pytest.fixture(scope="module")
def random_qk():
    rng = np.random.default_rng(0)
    return rng.standard_normal((16, 512)), rng.standard_normal((16, 512))


def test_unscaled_scores_saturate_the_softmax_at_d_k_512(random_qk):
    Q, K = random_qk
    report = scaling_comparison(Q, K)
    assert report.max_weight_unscaled > report.max_weight_scaled
    assert report.entropy_unscaled < report.entropy_scaled
    assert report.jacobian_norm_unscaled < report.jacobian_norm_scaled
    # The lecture's measurement at L = 16, d_k = 512: max weight 0.95 vs 0.24.
    assert report.max_weight_unscaled > 0.8 and report.max_weight_scaled < 0.5


def test_scaling_comparison_statistics_match_a_loop_computation(random_qk):
    Q, K = random_qk
    raw = [[float(np.dot(q, k)) for k in K] for q in Q]
    max_unscaled, entropy_unscaled = loop_row_stats(raw)
    max_scaled, entropy_scaled = loop_row_stats([[v / math.sqrt(512) for v in r] for r in raw])
    report = scaling_comparison(Q, K)
    assert report.max_weight_unscaled == pytest.approx(max_unscaled, rel=1e-10)
    assert report.max_weight_scaled == pytest.approx(max_scaled, rel=1e-10)
    assert report.entropy_unscaled == pytest.approx(entropy_unscaled, rel=1e-9, abs=1e-12)
    assert report.entropy_scaled == pytest.approx(entropy_scaled, rel=1e-10)


@pytest.fixture
def probabilities():
    return softmax(np.random.default_rng(1).normal(size=(3, 5)))


def test_softmax_jacobian_rows_sum_to_zero(probabilities):
    J = softmax_jacobian(probabilities)
    assert J.shape == (3, 5, 5)
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, rtol=0, atol=1e-15)


def test_softmax_jacobian_is_diag_p_minus_p_p_transpose(probabilities):
    J = softmax_jacobian(probabilities)
    for b, p in enumerate(probabilities):
        expected = [[p[i] * ((i == j) - p[j]) for j in range(5)] for i in range(5)]
        np.testing.assert_allclose(J[b], expected, rtol=1e-14, atol=1e-17)


def test_softmax_jacobian_matches_central_differences():
    z = np.array([0.3, -1.2, 2.0, 0.0])
    h = 1e-6
    numeric = np.empty((4, 4))
    for j in range(4):
        step = np.zeros(4)
        step[j] = h
        numeric[:, j] = (softmax(z + step) - softmax(z - step)) / (2 * h)
    np.testing.assert_allclose(softmax_jacobian(softmax(z)), numeric, rtol=0, atol=1e-9)


@pytest.mark.parametrize("S", [1, 2, 7, 64])
def test_entropy_of_uniform_weights_is_log_S(S):
    assert attention_entropy(np.full(S, 1.0 / S)) == pytest.approx(math.log(S), rel=1e-14,
                                                                   abs=1e-15)


def test_entropy_of_one_hot_weights_is_zero():
    np.testing.assert_array_equal(attention_entropy(np.eye(4)), np.zeros(4))


def test_entropy_by_hand_with_batch_axes():
    weights = np.array([[[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]])
    # −(½ log ½ + 2 · ¼ log ¼) = 1.5 log 2
    np.testing.assert_allclose(attention_entropy(weights), [[1.5 * math.log(2), math.log(3)]],
                               rtol=1e-14)


def test_dot_product_moments_by_hand_and_by_simulation():
    from solutions import dot_product_moments
    m = dot_product_moments(16, 2.0, 3.0)
    assert m.variance == 96.0 and np.isclose(m.scaled_std, np.sqrt(6.0))
    assert dot_product_moments(64).variance == 64.0 and dot_product_moments(64).scaled_std == 1.0
    rng = np.random.default_rng(0)
    q = rng.normal(0, np.sqrt(2.0), (200_000, 16))
    k = rng.normal(0, np.sqrt(3.0), (200_000, 16))
    dots = np.sum(q * k, axis=-1)
    assert abs(np.var(dots) / m.variance - 1) < 0.02
    assert abs(np.std(dots / 4.0) / m.scaled_std - 1) < 0.01
    with pytest.raises(ValueError):
        dot_product_moments(0)
