"""Hand-written checks of the generation and training twins of solutions/twins/decoding.py:
each twin gives exactly the numbers of the wrong computation written out in plain NumPy
(``cases.check_twin``)."""

import numpy as np
import pytest

import solutions
from tests.solutions.twins.cases import check_twin, rng


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attend(q, K, V, allowed=None):
    s = q @ K.T / np.sqrt(q.shape[-1])
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    return _softmax(s) @ V


def cache_args():
    """Two new positions after a cache of three: L = 2, S = 5, d_k = 3, d_v = 4."""
    r = rng()
    return {"q": r.standard_normal((2, 3)), "k": r.standard_normal((2, 3)), "v": r.standard_normal((2, 4)),
            "K_cache": r.standard_normal((3, 3)), "V_cache": r.standard_normal((3, 4))}


def cross_args():
    r = rng()
    params = {n: r.standard_normal((4, 4)) for n in ("W_Q", "W_K", "W_V", "W_O")}
    return {"y": r.standard_normal((3, 4)), "memory": r.standard_normal((5, 4)), "params": params,
            "num_heads": 2, "memory_mask": solutions.padding_mask(np.array([4]), 5)[0]}


def positional_args():
    r = rng()
    return {"X": r.standard_normal((5, 6)), "W_Q": r.standard_normal((6, 4)),
            "W_K": r.standard_normal((6, 4)), "W_V": r.standard_normal((6, 4))}


def smoothing_args():
    r = rng()
    return {"logits": r.standard_normal((2, 3, 6)), "targets": np.array([[3, 5, 0], [1, 4, 2]]),
            "ignore_index": 0, "label_smoothing": 0.2}


def layer_norm_backward_args():
    r = rng()
    _, cache = solutions.layer_norm_forward(r.standard_normal((3, 5)), 1 + r.standard_normal(5),
                                            r.standard_normal(5))
    return {"dy": r.standard_normal((3, 5)), "cache": cache}


# twin name → its argument builder (cases.arguments_for reads this).
ARGUMENTS_OF: dict = {
    "cached_attention_appended_after_use": cache_args,
    "cached_attention_top_left_mask": cache_args,
    "shift_right_not_shifted": lambda: {"targets": np.array([[5, 6, 7, 2], [8, 2, 0, 0]]), "bos": 1},
    "cross_attention_query_from_encoder": lambda: {**cross_args(), "memory_mask": None},
    "cross_attention_causal_mask": cross_args,
    "positional_after_projections": positional_args,
    "positional_self_attention_without_pe": positional_args,
    "cross_entropy_smoothing_over_pad": smoothing_args,
    "layer_norm_backward_without_mean_term": layer_norm_backward_args,
}


def _after_use(a):
    K = np.vstack([a["K_cache"], a["k"]])
    V = np.vstack([a["V_cache"], a["v"]])
    return _attend(a["q"], a["K_cache"], a["V_cache"]), K, V


def _top_left(a):
    K = np.vstack([a["K_cache"], a["k"]])
    V = np.vstack([a["V_cache"], a["v"]])
    allowed = np.arange(5)[None, :] <= np.arange(2)[:, None]     # row i: keys 0 … i
    return _attend(a["q"], K, V, allowed), K, V


def _heads(x, W, h=2):
    y = x @ W
    return [y[:, i * 2:(i + 1) * 2] for i in range(h)]


def _mha(query, kv, params, allowed=None):
    heads = [_attend(q, k, v, allowed) for q, k, v in zip(_heads(query, params["W_Q"]),
                                                           _heads(kv, params["W_K"]),
                                                           _heads(kv, params["W_V"]))]
    out = np.hstack(heads) @ params["W_O"]
    return out


def _query_from_encoder(a):
    return _mha(a["memory"], a["y"], a["params"])


def _causal_cross(a):
    allowed = (np.arange(5)[None, :] <= np.arange(3)[:, None]) & (np.arange(5) < 4)[None, :]
    return _mha(a["y"], a["memory"], a["params"], allowed)


def _pe(L, d):
    pos, i = np.arange(L)[:, None], np.arange(d)[None, :]
    angle = pos / 10000 ** ((i - i % 2) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle))


def _after_projections(a):
    X = a["X"]
    Q, K, V = (X @ a[w] + _pe(5, 4) for w in ("W_Q", "W_K", "W_V"))
    return _attend(Q, K, V)


def _without_pe(a):
    X = a["X"]
    return _attend(X @ a["W_Q"], X @ a["W_K"], X @ a["W_V"])


def _smoothing_over_pad(a):
    z, y, eps = a["logits"], a["targets"], a["label_smoothing"]
    log_p = np.log(_softmax(z))
    total, n = 0.0, 0
    for index in np.ndindex(y.shape):
        if y[index] == 0:
            continue
        q = np.full(6, eps / 6)
        q[y[index]] += 1 - eps
        total -= float(q @ log_p[index])
        n += 1
    return total / n


def _without_mean_term(a):
    x_hat, r, gamma = a["cache"]
    g = a["dy"] * gamma
    dx = r * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))
    return dx, (a["dy"] * x_hat).sum(axis=0), a["dy"].sum(axis=0)


HAND_WRITTEN = {
    "cached_attention_appended_after_use": _after_use,
    "cached_attention_top_left_mask": _top_left,
    "shift_right_not_shifted": lambda a: a["targets"],
    "cross_attention_query_from_encoder": _query_from_encoder,
    "cross_attention_causal_mask": _causal_cross,
    "positional_after_projections": _after_projections,
    "positional_self_attention_without_pe": _without_pe,
    "cross_entropy_smoothing_over_pad": _smoothing_over_pad,
    "layer_norm_backward_without_mean_term": _without_mean_term,
}


def _output_only(name):
    """The cross-attention twins return (out, weights): the hand-written checks give out."""
    twin = solutions.TWINS[name].function
    return lambda **arguments: twin(**arguments)[0]


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_each_twin_equals_its_hand_written_wrong_computation(name):
    if name.startswith("cross_attention_"):       # (out, weights): the mistake shows in out
        np.testing.assert_allclose(_output_only(name)(**ARGUMENTS_OF[name]()), HAND_WRITTEN[name](ARGUMENTS_OF[name]()),
                                   rtol=1e-12, atol=1e-12, err_msg=name)
    else:
        check_twin(name, HAND_WRITTEN[name], ARGUMENTS_OF[name])


def test_the_cache_twin_with_an_empty_cache_attends_to_nothing():
    twin = solutions.TWINS["cached_attention_appended_after_use"].function
    Z, K, V = twin(np.ones((1, 3)), np.ones((1, 3)), np.ones((1, 4)), np.zeros((0, 3)), np.zeros((0, 4)))
    assert not Z.any() and K.shape == (1, 3) and V.shape == (1, 4)


# --- one decoding step of a self-attention head -----------------------------------------------

def step_args():
    """Two new tokens after a cache of three: L = 2, t = 3, d_model = 4, d_k = 3, d_v = 2."""
    r = rng()
    return {"cache": (r.standard_normal((3, 3)), r.standard_normal((3, 2))), "x_new": r.standard_normal((2, 4)),
            "W_Q": r.standard_normal((4, 3)), "W_K": r.standard_normal((4, 3)), "W_V": r.standard_normal((4, 2))}


def _step(a, keys="appended", allowed=None, scale=True, keep=False):
    q, k, v = a["x_new"] @ a["W_Q"], a["x_new"] @ a["W_K"], a["x_new"] @ a["W_V"]
    K, V = np.vstack([a["cache"][0], k]), np.vstack([a["cache"][1], v])
    seen_K, seen_V = (K, V) if keys == "appended" else a["cache"]
    s = q @ seen_K.T / (np.sqrt(3) if scale else 1.0)
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    return _softmax(s) @ seen_V, (a["cache"] if keep else (K, V))


BOTTOM_RIGHT = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=bool)   # new token i sees keys ≤ 3 + i
TOP_LEFT = np.array([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=bool)

ARGUMENTS_OF.update({name: step_args for name in (
    "decode_step_appended_after_use", "decode_step_top_left_mask", "decode_step_cache_not_extended",
    "decode_step_no_scale", "decode_step_unmasked")})
HAND_WRITTEN.update({
    "decode_step_appended_after_use": lambda a: _step(a, keys="old"),
    "decode_step_top_left_mask": lambda a: _step(a, allowed=TOP_LEFT),
    "decode_step_cache_not_extended": lambda a: _step(a, allowed=BOTTOM_RIGHT, keep=True),
    "decode_step_no_scale": lambda a: _step(a, allowed=BOTTOM_RIGHT, scale=False),
    "decode_step_unmasked": lambda a: _step(a),
})


def test_the_reference_step_is_the_bottom_right_hand_computation():
    a = step_args()
    Z, (K, V) = solutions.self_attention_decode_step(**a)
    want_Z, (want_K, want_V) = _step(a, allowed=BOTTOM_RIGHT)
    np.testing.assert_allclose(Z, want_Z, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(K, want_K)
    np.testing.assert_array_equal(V, want_V)
