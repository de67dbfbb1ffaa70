"""Hand-written checks of the attention twins of solutions/twins/ (the
mistake search's scale and mask mistakes): each twin gives exactly the numbers of the wrong
computation written out in plain NumPy (``cases.check_twin``)."""

import numpy as np
import pytest

import solutions
from tests.solutions.twins.cases import (ARGUMENTS, B, D_K, D_V, L, S, _masked, _scores,
                                                 _sdpa_by_hand, _softmax, _tril, check_twin, rng)


def cube_sdpa_args():
    """L = S = d_k, the only shapes for which QᵀK and then the blend can be computed."""
    r = rng()
    return {"Q": r.standard_normal((B, L, L)), "K": r.standard_normal((B, L, L)),
            "V": r.standard_normal((B, L, D_V)), "mask": None}


def square_unmasked_args():
    r = rng()
    return {"Q": r.standard_normal((B, L, D_K)), "K": r.standard_normal((B, L, D_K)),
            "V": r.standard_normal((B, L, D_V)), "mask": None}


def square_linear_args():
    r = rng()
    return {"x": r.standard_normal((4, 4)), "W": r.standard_normal((4, 4)), "b": r.standard_normal(4)}


def _naive_softmax(x):
    """A student's softmax: NaN for a row where every score is −∞."""
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)


def _visible_mean(a):
    visible = a["mask"].astype(float)
    return (visible / visible.sum(-1, keepdims=True)) @ a["V"]

HAND_WRITTEN = {
    "sdpa_scale_by_sqrt_d_v": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_V)),
    "sdpa_scale_by_sqrt_head_dim": lambda a: _sdpa_by_hand(a, 1 / 8.0),
    "causal_mask_shifted_by_one": lambda a: np.tril(np.ones((L, S), dtype=bool), k=1),
    "causal_attention_mask_shifted_by_one": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=_tril(L, S, 1)),
    "causal_attention_mask_no_diagonal": lambda a: _naive_softmax(_masked(_scores(a) / np.sqrt(D_K),
                                                                          _tril(L, S, -1))) @ a["V"],
    "causal_attention_bottom_right": lambda a: _softmax(_masked(_scores(a) / np.sqrt(D_K),
                                                                _tril(L, S, S - L))) @ a["V"],
    "sdpa_scale_by_sqrt_model_dim": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(768)),
    "sdpa_q_transposed": lambda a: _softmax(np.swapaxes(a["Q"], 1, 2) @ a["K"] / np.sqrt(L)) @ a["V"],
    "sdpa_weights_transposed": lambda a: np.swapaxes(_softmax(_scores(a) / np.sqrt(D_K)), 1, 2) @ a["V"],
    "sdpa_raw_scores_as_weights": lambda a: np.where(a["mask"], _scores(a), 0.0) @ a["V"],
    "sdpa_uniform_weights": _visible_mean,
    "sdpa_scaled_scores_as_weights": lambda a: np.where(a["mask"], _scores(a) / np.sqrt(D_K), 0.0) @ a["V"],
    "causal_mask_all_visible": lambda a: np.ones((L, S), dtype=bool),
    "combine_masks_first_only": lambda a: np.broadcast_to(np.tril(np.ones((S, S), dtype=bool)), (2, S, S)),
    "combine_masks_last_only": lambda a: np.broadcast_to((np.arange(S) < np.array([2, 4])[:, None])[:, None, :],
                                                         (2, S, S)),
    "linear_weight_first": lambda a: a["W"] @ a["x"] + a["b"],
    "linear_skipped": lambda a: a["x"],
    "merge_heads_reversed": lambda a: np.concatenate([a["x"][:, i] for i in reversed(range(a["x"].shape[1]))], axis=-1),
}

def values_as_wide_as_the_queries_args():
    """d_v = L, the only shape for which V A can be computed."""
    r = rng()
    return {"Q": r.standard_normal((B, L, D_K)), "K": r.standard_normal((B, S, D_K)),
            "V": r.standard_normal((B, S, L)), "mask": None}


def k_dot_t_args():
    """B = S = d_k: the shapes for which Q @ K.T of a batch runs (and gives nonsense)."""
    r = rng()
    return {"Q": r.standard_normal((3, L, 3)), "K": r.standard_normal((3, 3, 3)),
            "V": r.standard_normal((3, 3, 2)), "mask": None}


def square_causal_args():
    r = rng()
    return {"Q": r.standard_normal((L, D_K)), "K": r.standard_normal((L, D_K)), "V": r.standard_normal((L, D_V))}


HAND_WRITTEN.update({
    "sdpa_values_times_weights": lambda a: np.swapaxes(a["V"], 0, 0) @ _softmax(_scores(a) / np.sqrt(D_K)),
    "sdpa_mask_added": lambda a: _softmax(_scores(a) / np.sqrt(D_K) + a["mask"].astype(float)) @ a["V"],
    "sdpa_k_dot_t": lambda a: _softmax(a["Q"] @ a["K"].T / np.sqrt(3)) @ a["V"],
    "sdpa_softmax_axis_1": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), axis=1),
    "causal_attention_mask_added": lambda a: _softmax(_scores(a) / np.sqrt(D_K)
                                                      + _tril(L, S).astype(float)) @ a["V"],
    "causal_attention_square_mask": lambda a: _softmax(_masked(_scores(a) / np.sqrt(D_K), _tril(L, L))) @ a["V"],
    "combine_masks_padding_on_query_rows": lambda a: (np.tril(np.ones((S, S), dtype=bool))
                                                      & (np.arange(S) < np.array([2, 4])[:, None])[:, :, None]),
})

ARGUMENTS_OF = {"sdpa_q_transposed": cube_sdpa_args, "sdpa_weights_transposed": square_unmasked_args,
                "linear_weight_first": square_linear_args, "linear_skipped": square_linear_args,
                "sdpa_values_times_weights": values_as_wide_as_the_queries_args,
                "sdpa_k_dot_t": k_dot_t_args, "causal_attention_square_mask": square_causal_args}


def test_a_square_causal_mask_is_right_when_l_equals_s_and_an_error_otherwise():
    twin = solutions.TWINS["causal_attention_square_mask"].function
    a = square_causal_args()
    np.testing.assert_allclose(twin(**a), solutions.causal_attention(**a), rtol=1e-12)
    r = rng()
    with pytest.raises(ValueError, match="broadcast"):
        twin(r.standard_normal((L, D_K)), r.standard_normal((S, D_K)), r.standard_normal((S, D_V)))


def test_k_dot_t_is_right_for_one_matrix_and_wrong_for_a_batch():
    twin = solutions.TWINS["sdpa_k_dot_t"].function
    r = rng()
    Q, K, V = r.standard_normal((L, D_K)), r.standard_normal((S, D_K)), r.standard_normal((S, D_V))
    np.testing.assert_allclose(twin(Q, K, V), solutions.scaled_dot_product_attention(Q, K, V), rtol=1e-12)
    a = k_dot_t_args()
    assert not np.allclose(twin(**a), solutions.scaled_dot_product_attention(**a))


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name], ARGUMENTS_OF.get(name))


def test_uniform_weights_ignore_the_scores_but_not_the_mask():
    a = ARGUMENTS["scaled_dot_product_attention"]()
    out = solutions.TWINS["sdpa_uniform_weights"].function(**a)
    assert np.allclose(out, _visible_mean(a)) and not np.allclose(out, a["V"].mean(-2, keepdims=True))
