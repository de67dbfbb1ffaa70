"""Hand-written checks of the layer twins (multi-head attention, shapes, the encoder and
decoder layers) (``cases.check_twin``)."""

import numpy as np
import pytest

from solutions.twins.registry import TWINS
from tests.solutions.twins.cases import (HEADS, _layer_norm, _mha_by_hand,
                                                 _softmax, check_twin, multi_head_attention_args)


def _by_hand_attention(q, k, v, mask, scale):
    """softmax(q kᵀ · scale, blocked where mask is False) v, one head, written out."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    return _softmax(s if mask is None else np.where(mask, s, -np.inf)) @ v


def _heads_by_hand(query, key, value, p, h, mask, *, scale="d_k", columns="blocks",
                   biases=True, w_o=True):
    """Concat(head_0, …, head_{h−1}) W_O + b_O with each head written out: ``columns`` says
    which columns of q, k, v head i takes (its block, or every h-th), ``scale`` 1/√d_k or
    1/√d_model, ``biases`` / ``w_o`` whether the biases and the output projection are used."""
    def project(x, n):
        return x @ p[f"W_{n}"] + (p[f"b_{n}"] if biases and f"b_{n}" in p else 0)

    q, k, v = project(query, "Q"), project(key, "K"), project(value, "V")
    outs = []
    for i in range(h):
        dk, dv = q.shape[-1] // h, v.shape[-1] // h
        if columns == "blocks":
            qi, ki, vi = q[..., i * dk:(i + 1) * dk], k[..., i * dk:(i + 1) * dk], v[..., i * dv:(i + 1) * dv]
        else:
            qi, ki, vi = q[..., i::h], k[..., i::h], v[..., i::h]
        factor = 1 / np.sqrt(dk) if scale == "d_k" else 1 / np.sqrt(query.shape[-1])
        outs.append(_by_hand_attention(qi, ki, vi, mask, factor))
    concat = np.concatenate(outs, axis=-1)
    return concat @ p["W_O"] + (p["b_O"] if biases else 0) if w_o else concat


def _ffn_by_hand(h, f, relu=True):
    hidden = h @ f["W1"] + f["b1"]
    return (np.maximum(hidden, 0) if relu else hidden) @ f["W2"] + f["b2"]


SUBLAYERS = {   # words → (attention(query, key, value, params, mask), relu)
    "ffn_no_relu": (lambda q, k, v, p, m: _heads_by_hand(q, k, v, p, HEADS, m), False),
    "one_head": (lambda q, k, v, p, m: _heads_by_hand(q, k, v, p, 1, m), True),
    "no_output_projection": (lambda q, k, v, p, m: _heads_by_hand(q, k, v, p, HEADS, m, w_o=False), True),
    "scale_by_d_model": (lambda q, k, v, p, m: _heads_by_hand(q, k, v, p, HEADS, m, scale="d_model"), True),
    "interleaved_heads": (lambda q, k, v, p, m: _heads_by_hand(q, k, v, p, HEADS, m, columns="strided"), True),
}


def _encoder_sublayers_by_hand(a, words):
    attend, relu = SUBLAYERS[words]
    x, p = a["x"], a["params"]
    h = _layer_norm(x + attend(x, x, x, p["self_attn"], a["mask"]), p["norm1"])
    return _layer_norm(h + _ffn_by_hand(h, p["ffn"], relu), p["norm2"])


def _decoder_sublayers_by_hand(a, words):
    attend, relu = SUBLAYERS[words]
    y, m, p = a["y"], a["memory"], a["params"]
    h1 = _layer_norm(y + attend(y, y, y, p["self_attn"], a["self_mask"]), p["norm1"])
    h2 = _layer_norm(h1 + attend(h1, m, m, p["cross_attn"], None), p["norm2"])
    return _layer_norm(h2 + _ffn_by_hand(h2, p["ffn"], relu), p["norm3"])


def _split_full_width_by_hand(a):
    x = a["x"]                                            # (B, L, d_model)
    return np.stack([x] * a["num_heads"], axis=1)         # every head: all d_model columns


def _merge_interleaved_by_hand(a):
    x = a["x"]                                            # (B, h, L, d)
    B, h, L, d = x.shape
    out = np.empty((B, L, d * h))
    for f in range(d):
        for i in range(h):
            out[:, :, f * h + i] = x[:, i, :, f]          # feature f of every head, then f + 1
    return out


def _log_probabilities_wrongly(a):
    e = np.exp(a["x"] - a["x"].max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _pe_from_one_by_hand(a):
    L, d = a["L"], a["d_model"]
    pe = np.zeros((L, d))
    for pos in range(L):
        for i in range(d // 2):
            angle = (pos + 1) / 10000 ** (2 * i / d)      # positions 1, 2, …, L
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return pe


def _mha_args_with_all_biases():
    a = multi_head_attention_args()
    assert "b_O" in a["params"]
    return a


def _weights_by_hand(a):
    """Per-head weights (B, h, L, S) of multi_head_attention_args, written out."""
    p, h = a["params"], a["num_heads"]
    q, k = a["query"] @ p["W_Q"] + p["b_Q"], a["key"] @ p["W_K"] + p["b_K"]
    d = q.shape[-1] // h
    out = []
    for i in range(h):
        s = q[..., i * d:(i + 1) * d] @ np.swapaxes(k[..., i * d:(i + 1) * d], -1, -2) / np.sqrt(d)
        out.append(_softmax(np.where(a["mask"], s, -np.inf)))
    return np.stack(out, axis=1)


def _mha_cache_args():
    from solutions import mha_forward
    a = multi_head_attention_args()
    return {"cache": mha_forward(**a)[1], "_args": a}


def _projection_args():
    return {"W": rng_matrix(), "num_heads": 2, "i": 1}


def rng_matrix():
    return np.arange(24, dtype=float).reshape(4, 6) ** 1.5


HAND_WRITTEN = {
    "mha_no_scale": lambda a: _mha_by_hand(a, lambda d: 1.0, a.get("mask")),
    "mha_divide_by_d_head": lambda a: _mha_by_hand(a, lambda d: 1.0 / d, a.get("mask")),
    "mha_no_biases": lambda a: _heads_by_hand(a["query"], a["key"], a["value"], a["params"],
                                              a["num_heads"], a["mask"], biases=False),
    "mha_interleaved_heads": lambda a: _heads_by_hand(a["query"], a["key"], a["value"], a["params"],
                                                      a["num_heads"], a["mask"], columns="strided"),
    "split_heads_full_width": _split_full_width_by_hand,
    "merge_heads_interleaved": _merge_interleaved_by_hand,
    # d = 512, h = 8: each head's W_Q, W_K, W_V is 512 × 512 with a bias of 512; one W_O.
    "mha_param_count_full_width_heads": lambda a: 3 * 8 * (512 * 512 + 512) + 512 * 512 + 512,
    "log_softmax_gives_probabilities": _log_probabilities_wrongly,
    # b_O alone left out: Concat(heads) W_O, with b_Q, b_K, b_V still added
    "mha_no_output_bias": lambda a: _heads_by_hand(a["query"], a["key"], a["value"], a["params"],
                                                   a["num_heads"], a["mask"]) - a["params"]["b_O"],
    "positional_encoding_one_based": _pe_from_one_by_hand,
    # every head d_model·h wide: the row of x repeated h times, for each of the h heads
    "split_heads_width_times_heads": lambda a: np.stack(
        [np.concatenate([a["x"]] * a["num_heads"], axis=-1)] * a["num_heads"], axis=1),
    "merge_heads_summed": lambda a: sum(a["x"][:, i] for i in range(a["x"].shape[1])),
    "head_projection_numbered_from_one": lambda a: a["W"][:, 0:3],      # head 1 → columns 0–2
    "head_projection_full_width": lambda a: a["W"],
    # column j of each head's weights: the weights with their last two axes swapped
    "mha_weights_read_by_column": lambda a: np.swapaxes(a["cache"].attention.P, -1, -2),
    **{f"encoder_layer_{w}": (lambda w: lambda a: _encoder_sublayers_by_hand(a, w))(w) for w in SUBLAYERS},
    **{f"decoder_layer_{w}": (lambda w: lambda a: _decoder_sublayers_by_hand(a, w))(w) for w in SUBLAYERS},
}


ARGUMENTS_OF = {"head_projection_numbered_from_one": _projection_args,
                "head_projection_full_width": _projection_args,
                "mha_weights_read_by_column": lambda: {"cache": _mha_cache_args()["cache"]},
                "mha_no_output_bias": _mha_args_with_all_biases}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name], ARGUMENTS_OF.get(name))


def test_the_weights_read_by_column_are_the_weights_transposed():
    # A student who reads column j of a head's weights gets the queries' weights on key j:
    # argmax over the queries (axis 0 of one head's L × S matrix), not over the keys.
    built = _mha_cache_args()
    weights = _weights_by_hand(built["_args"])
    got = TWINS["mha_weights_read_by_column"].function(built["cache"])
    np.testing.assert_allclose(got, np.swapaxes(weights, -1, -2), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(got.argmax(axis=-1), weights.argmax(axis=-2))


def test_heads_counted_from_one_have_no_head_0():
    with pytest.raises(ValueError, match="no head 0"):
        TWINS["head_projection_numbered_from_one"].function(rng_matrix(), 2, 0)


def test_the_new_layer_twins_speak_of_the_sizes_of_their_templates():
    # encoder_decoder_step (d_model = 4, 2 heads) lists the interleaved-heads layers: the
    # text's columns 0–1 and 2–3 are its heads' blocks
    text = TWINS["decoder_layer_interleaved_heads"].explanation
    assert "columns 0–1 and 2–3" in text and "d_model = 4 and 2 heads" in text
    assert "PE(0) = [sin 0, cos 0, …] = [0, 1, 0, 1, …]" in TWINS["positional_encoding_one_based"].explanation


def test_the_interleaved_split_and_merge_are_inverses():
    # Head i of the interleaved split takes columns i, i+h, …; the interleaved merge puts them back.
    x = np.arange(2 * 3 * 12, dtype=float).reshape(2, 3, 12)
    split = TWINS["split_heads_interleaved_columns"].function(x, 3)
    np.testing.assert_array_equal(TWINS["merge_heads_interleaved"].function(split), x)


def test_the_inverted_mask_gives_nan_where_a_query_may_attend_everywhere():
    # A student's np.where(mask, -inf, scores) + softmax: a row allowed everywhere becomes −inf
    # everywhere, and exp(−inf − (−inf)) / Σ = NaN in that query's weights and output.
    a = multi_head_attention_args()
    mask = a["mask"].copy()
    mask[1, 1, :] = True                          # query 1 of sequence 1 may attend to every key
    a["mask"] = mask
    out, weights = TWINS["mha_inverted_mask"].function(**a)
    assert np.isnan(out[1, 1]).all() and np.isnan(weights[1, :, 1]).all()
    rest = np.ones(out.shape[:-1], dtype=bool)
    rest[1, 1] = False
    expected = _mha_by_hand(a, lambda d: 1 / np.sqrt(d), ~mask)
    np.testing.assert_allclose(out[rest], expected[rest], rtol=1e-6, atol=1e-9)
    assert np.isfinite(weights[np.broadcast_to(rest[:, None, :, None], weights.shape)]).all()


def test_the_inverted_mask_without_a_mask_is_plain_attention():
    a = multi_head_attention_args()
    a["mask"] = None
    out, _ = TWINS["mha_inverted_mask"].function(**a)
    np.testing.assert_allclose(out, _mha_by_hand(a, lambda d: 1 / np.sqrt(d), None), rtol=1e-6, atol=1e-9)
