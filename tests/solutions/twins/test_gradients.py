"""Hand-written checks of the gradients twins (solutions/twins/): each twin
gives exactly the numbers of the wrong computation written out in plain NumPy
(``cases.check_twin``)."""

import numpy as np
import pytest

import solutions

from tests.solutions.twins.cases import D_K, _sdpa_by_hand, check_twin


def _p(a):
    return a["cache"]


# twin name → its argument builder (cases.arguments_for reads this).
ARGUMENTS_OF: dict = {
    "softmax_jacobian_no_outer_p": lambda: {"p": np.array([0.5, 0.3, 0.2])},
}


# --- the backward pass through attention, written out from the lecture's chain rule --------
# S = QKᵀ·s, A = softmax(S), Z = AV:  dV = Aᵀ dZ,  dA = dZ Vᵀ,  dS = A ⊙ (dA − Σ_j dA ⊙ A),
# dQ = dS K·s,  dK = dSᵀ Q·s.  (The cache's A already holds the mask's zeros.)

def _T(x):
    return np.swapaxes(x, -1, -2)


def _chain(a):
    Q, K, V, A, s = a["cache"]
    dZ = a["dZ"]
    dA = dZ @ _T(V)
    dS = A * (dA - (dA * A).sum(-1, keepdims=True))
    return Q, K, V, A, s, dZ, dA, dS


def _by_d_k(a):
    Q, K, V, A, s, dZ, dA, dS = _chain(a)
    return dS @ K / D_K, _T(dS) @ Q / D_K, _T(A) @ dZ


def _softmax_skipped(a):
    Q, K, V, A, s, dZ, dA, dS = _chain(a)
    return dA @ K / np.sqrt(D_K), _T(dA) @ Q / np.sqrt(D_K), _T(A) @ dZ


def _dv_transposed(a):
    Q, K, V, A, s, dZ, dA, dS = _chain(a)
    return dS @ K / np.sqrt(D_K), _T(dS) @ Q / np.sqrt(D_K), _T(dZ) @ A


def _dv_from_scores(a):
    Q, K, V, A, s, dZ, dA, dS = _chain(a)
    scores = Q @ _T(K) / np.sqrt(D_K)
    return dS @ K / np.sqrt(D_K), _T(dS) @ Q / np.sqrt(D_K), _T(scores) @ dZ


def _attention_loss(a, Q=None, K=None):
    Q = a["Q"] if Q is None else Q
    K = a["K"] if K is None else K
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return float(np.sum((e / e.sum(-1, keepdims=True)) @ a["V"] * a["dZ"]))


def _E(shape, a):
    E = np.zeros(shape)
    E[a["row"], a["col"]] = 1.0
    return E


HAND_WRITTEN: dict = {
    "gradient_check_one_sided": lambda a: (_attention_loss(a, Q=a["Q"] + a["h"] * _E(a["Q"].shape, a))
                                           - _attention_loss(a)) / a["h"],
    "gradient_check_over_h": lambda a: (_attention_loss(a, Q=a["Q"] + a["h"] * _E(a["Q"].shape, a))
                                        - _attention_loss(a, Q=a["Q"] - a["h"] * _E(a["Q"].shape, a))) / a["h"],
    "gradient_check_on_keys": lambda a: (_attention_loss(a, K=a["K"] + a["h"] * _E(a["K"].shape, a))
                                         - _attention_loss(a, K=a["K"] - a["h"] * _E(a["K"].shape, a))) / (2 * a["h"]),
    # the analytic entry: the centred difference with a tiny step agrees with it to ~1e-10
    "gradient_check_analytic": lambda a: (_attention_loss(a, Q=a["Q"] + 1e-5 * _E(a["Q"].shape, a))
                                          - _attention_loss(a, Q=a["Q"] - 1e-5 * _E(a["Q"].shape, a))) / 2e-5,
    # dx_j = p_j (dp_j − Σ_i dp_i), the row term without its p_i
    "softmax_backward_sum_without_p": lambda a: _p(a) * (a["dp"] - a["dp"].sum(-1, keepdims=True)),
    # dx_j = dp_j − Σ_i dp_i p_i, the factor p_j in front dropped
    "softmax_backward_no_outer_p": lambda a: a["dp"] - (a["dp"] * _p(a)).sum(-1, keepdims=True),
    # dx_j = p_j (Σ_i dp_i p_i − dp_j)
    "softmax_backward_sign_flipped": lambda a: _p(a) * ((a["dp"] * _p(a)).sum(-1, keepdims=True) - a["dp"]),
    "softmax_backward_skipped": lambda a: a["dp"],
    "attention_backward_divide_by_d_k": _by_d_k,
    "attention_backward_softmax_skipped": _softmax_skipped,
    "attention_backward_dv_transposed": _dv_transposed,
    "attention_backward_dv_from_scores": _dv_from_scores,
    "sdpa_scale_by_sqrt_2d_k": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(2 * D_K)),
    "dot_product_moments_unit_variances": lambda a: solutions.DotProductMoments(16.0, 1.0),
    "dot_product_moments_variances_added": lambda a: solutions.DotProductMoments(16 * 5.0, np.sqrt(5.0)),
    "dot_product_moments_std_not_rooted": lambda a: solutions.DotProductMoments(96.0, 6.0),
    "dot_product_moments_std_unscaled": lambda a: solutions.DotProductMoments(96.0, np.sqrt(96.0)),
    "attention_weights_backward_transposed": lambda a: a["cache"][2] @ np.swapaxes(a["dZ"], -1, -2),
    "attention_weights_backward_times_weights": lambda a: (a["dZ"] @ np.swapaxes(a["cache"][2], -1, -2)) * a["cache"][3],
    "softmax_cross_entropy_backward_sign_flipped": lambda a: -solutions.softmax_cross_entropy_backward(**a),
    # issue 36: dA = dZ Vᵀ·s; dV = Aᵀ dZ·s; Var = √(16·2·3) or 2·3; J = I − 1pᵀ
    "attention_weights_backward_scaled": lambda a: (a["dZ"] @ np.swapaxes(a["cache"][2], -1, -2)) * a["cache"][4],
    "attention_backward_dv_scaled": lambda a: (lambda c: (c[7] @ c[1] * c[4], _T(c[7]) @ c[0] * c[4],
                                                          _T(c[3]) @ c[5] * c[4]))(_chain(a)),
    "dot_product_moments_std_for_variance": lambda a: solutions.DotProductMoments(np.sqrt(96.0), np.sqrt(6.0)),
    "dot_product_moments_one_term": lambda a: solutions.DotProductMoments(6.0, np.sqrt(6.0)),
    "softmax_jacobian_no_outer_p": lambda a: np.eye(3) - np.array([0.5, 0.3, 0.2])[None, :],
    "softmax_cross_entropy_backward_no_onehot": lambda a: (
        np.exp(a["cache"][0]) * a["cache"][2][..., None] * float(a["dloss"]) / a["cache"][3]),
    "softmax_cross_entropy_backward_over_all_rows": lambda a: (
        solutions.softmax_cross_entropy_backward(**a) * a["cache"][3] / a["cache"][2].size),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])


def test_the_2d_k_scale_is_not_computed_where_it_is_the_1_over_d_k_scale():
    # d_k = 2: √(2·2) = 2 = d_k, the twin sdpa_divide_by_d_k itself.
    from solutions.twins.registry import TWINS
    r = np.random.default_rng(0)
    Q, K, V = r.standard_normal((3, 2)), r.standard_normal((4, 2)), r.standard_normal((4, 3))
    with pytest.raises(ValueError, match="d_k = 2"):
        TWINS["sdpa_scale_by_sqrt_2d_k"].function(Q, K, V)


def test_skipping_the_softmax_backward_gives_rows_that_do_not_sum_to_zero():
    # The softmax's gradient rows sum to 0 (a shift of the scores changes nothing); dp's do not.
    from solutions import softmax_backward, softmax_forward
    from solutions.twins.registry import TWINS
    r = np.random.default_rng(1)
    _, p = softmax_forward(r.standard_normal((3, 5)))
    dp = r.standard_normal((3, 5))
    np.testing.assert_allclose(softmax_backward(dp, p).sum(-1), 0, atol=1e-12)
    assert np.abs(TWINS["softmax_backward_skipped"].function(dp, p).sum(-1)).min() > 1e-6


# --- issue 36: the twins added for the mistakes the corpus found unnamed -------------------------

def _twin_fn(name):
    from solutions.twins.registry import TWINS
    return TWINS[name].function


def test_dA_with_the_scale_put_in_too_early():
    # V = [[1, 0], [0, 2]], dZ = [[1, 1]]: dZ Vᵀ = [[1, 2]]; with s = 1/√4 = 0.5 the twin gives half.
    V = np.array([[1.0, 0.0], [0.0, 2.0]])
    cache = solutions.attention.AttentionCache(np.zeros((1, 4)), np.ones((2, 4)), V,
                                               np.array([[0.5, 0.5]]), 0.5)
    dZ = np.array([[1.0, 1.0]])
    np.testing.assert_allclose(solutions.attention_weights_backward(dZ, cache), [[1.0, 2.0]])
    np.testing.assert_allclose(_twin_fn("attention_weights_backward_scaled")(dZ, cache), [[0.5, 1.0]])


def test_dV_with_the_scale_applied_too():
    # Q = 0: both scores 0, A = [[0.5, 0.5]]; dZ = [[2, 4]]: Aᵀ dZ = [[1, 2], [1, 2]]; d_k = 4, s = 0.5.
    Q, K, V = np.zeros((1, 4)), np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]), np.eye(2)
    _, cache = solutions.attention_forward(Q, K, V)
    dZ = np.array([[2.0, 4.0]])
    dQ, dK, dV = _twin_fn("attention_backward_dv_scaled")(dZ, cache)
    np.testing.assert_allclose(dV, [[0.5, 1.0], [0.5, 1.0]])
    ref = solutions.attention_backward(dZ, cache)
    np.testing.assert_allclose(dQ, ref[0])
    np.testing.assert_allclose(dK, ref[1])


def test_the_standard_deviation_given_for_the_variance():
    # d_k = 16, σ_q² = σ_k² = 2: Var = 64, its square root 8; the scaled std σ_q σ_k = 2 stays.
    got = _twin_fn("dot_product_moments_std_for_variance")(16, 2.0, 2.0)
    assert got.variance == pytest.approx(8.0) and got.scaled_std == pytest.approx(2.0)
    assert solutions.dot_product_moments(16, 2.0, 2.0).variance == pytest.approx(64.0)


def test_the_variance_of_one_product():
    # d_k = 16, σ_q² = 2, σ_k² = 3: one product has variance 6, the sum of 16 of them 96.
    got = _twin_fn("dot_product_moments_one_term")(16, 2.0, 3.0)
    assert got.variance == pytest.approx(6.0)
    with pytest.raises(ValueError, match="d_k = 1"):
        _twin_fn("dot_product_moments_one_term")(1, 2.0, 3.0)


def test_the_jacobian_without_the_factor_p():
    # p = (0.5, 0.25, 0.25): ∂p_0/∂z_0 = 0.5·0.5 = 0.25; without the factor p_0 it is 1 − 0.5.
    p = np.array([0.5, 0.25, 0.25])
    got = _twin_fn("softmax_jacobian_no_outer_p")(p)
    np.testing.assert_allclose(got, [[0.5, -0.25, -0.25], [-0.5, 0.75, -0.25], [-0.5, -0.25, 0.75]])
    assert solutions.softmax_jacobian(p)[0, 0] == pytest.approx(0.25)
