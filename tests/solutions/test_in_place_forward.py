"""The forward pass's in-place and fused steps give what the plain equations give, and never
write into their callers' arrays."""

import numpy as np
import pytest

from solutions import (Transformer, TransformerConfig, apply_mask, causal_mask, layer_norm,
                       layer_norm_forward, linear, log_softmax, mha_forward, mha_weights,
                       multi_head_attention, scaled_dot_product_attention, softmax)
from solutions.attention import attention_weights
from solutions.layer_norm import layer_norm_in_place
from solutions.masks import apply_mask_in_place
from solutions.multihead import project_qkv, stacked_projection
from solutions.softmax import _sum_exp, log_softmax_in_place, softmax_in_place

RNG = np.random.default_rng(19)


def test_softmax_in_place_writes_softmax_into_its_argument():
    x = RNG.normal(size=(4, 6, 9)) * 5
    x[0, 1, :] = -np.inf  # a fully masked row gives zeros
    x[1, :, 3] = -np.inf
    for axis in (-1, 0):
        expected = softmax(x, axis=axis)
        y = x.copy()
        assert softmax_in_place(y, axis=axis) is y
        np.testing.assert_array_equal(y, expected)
    with pytest.raises(ValueError, match="NaN"):
        softmax_in_place(np.array([[0.0, np.nan]]))


def test_softmax_and_log_softmax_leave_their_input_alone():
    x = RNG.normal(size=(3, 8))
    before = x.copy()
    softmax(x), log_softmax(x), layer_norm(x, np.ones(8), np.zeros(8))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 600, 40), (1100, 33)])
def test_log_softmax_in_place_and_its_blockwise_sum(shape):
    x = RNG.normal(size=shape) * 4
    expected = x - np.max(x, axis=-1, keepdims=True)
    expected -= np.log(np.sum(np.exp(expected), axis=-1, keepdims=True))
    y = x.copy()
    assert log_softmax_in_place(y) is y
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(log_softmax(x), expected)
    # blocks of rows or one sum: each row is summed on its own, so the same numbers
    np.testing.assert_array_equal(_sum_exp(x, -1), np.sum(np.exp(x), axis=-1, keepdims=True))
    if x.ndim > 1:
        np.testing.assert_array_equal(_sum_exp(x, 0), np.sum(np.exp(x), axis=0, keepdims=True))


def test_apply_mask_in_place_is_apply_mask():
    scores = RNG.normal(size=(2, 3, 4, 5))
    for mask in (causal_mask(4, 5), RNG.random((2, 1, 4, 5)) > 0.3,
                 np.where(causal_mask(4, 5), 0.0, -np.inf)):
        y = scores.copy()
        assert apply_mask_in_place(y, mask) is y
        np.testing.assert_array_equal(y, apply_mask(scores, mask))
    with pytest.raises(ValueError):
        apply_mask_in_place(scores.copy(), np.ones((3, 5)) * 0.5)


def test_layer_norm_in_place_is_the_layer_norm_forward_pass():
    x, gamma, beta = RNG.normal(size=(3, 4, 10)) * 3 + 1, RNG.normal(size=10), RNG.normal(size=10)
    expected, _ = layer_norm_forward(x, gamma, beta)
    y = x.copy()
    assert layer_norm_in_place(y, gamma, beta) is y
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(layer_norm(x, gamma, beta), expected)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_weights_are_the_weights_of_the_worked_steps(masked):
    Q, K = RNG.normal(size=(2, 3, 5, 4)), RNG.normal(size=(2, 3, 6, 4))
    V = RNG.normal(size=(2, 3, 6, 2))
    mask = causal_mask(5, 6) if masked else None
    steps = scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=True)
    P = attention_weights(Q, K, mask)
    assert P.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(P, steps.weights, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(P.sum(axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(scaled_dot_product_attention(Q, K, V, mask=mask), steps.output,
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(attention_weights(Q, K, mask, scale=0.3),
                               softmax(apply_mask(Q @ np.swapaxes(K, -1, -2) * 0.3, mask)),
                               rtol=1e-14, atol=1e-16)


def test_attention_weights_of_a_fully_masked_row_are_zero():
    Q, K = RNG.normal(size=(3, 4)), RNG.normal(size=(5, 4))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    P = attention_weights(Q, K, mask)
    np.testing.assert_array_equal(P[1], 0.0)
    np.testing.assert_allclose(P[[0, 2]].sum(axis=-1), 1.0, rtol=1e-14)


def mha_params(d=8, biases=True):
    params = {f"W_{x}": RNG.normal(size=(d, d)) / np.sqrt(d) for x in "QKVO"}
    if biases:
        params.update({f"b_{x}": RNG.normal(size=d) * 0.1 for x in "QKVO"})
    return params


@pytest.mark.parametrize("biases", [True, False])
def test_stacked_projections_are_the_separate_projections(biases):
    params = mha_params(biases=biases)
    if biases:
        del params["b_K"]  # a missing bias counts as zero
    x, memory = RNG.normal(size=(2, 5, 8)), RNG.normal(size=(2, 7, 8))
    separate = [linear(x, params[f"W_{n}"], params.get(f"b_{n}")) for n in "QKV"]
    for got, want in zip(project_qkv(x, x, x, params), separate):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    K, V = stacked_projection(memory, params, "KV")
    np.testing.assert_allclose(K, linear(memory, params["W_K"]), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(V, linear(memory, params["W_V"], params.get("b_V")),
                               rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("kind", ["self", "cross", "separate"])
def test_multi_head_attention_is_the_cached_forward_pass(kind):
    params = mha_params()
    x, memory = RNG.normal(size=(2, 5, 8)), RNG.normal(size=(2, 7, 8))
    query, key, value = {"self": (x, x, x), "cross": (x, memory, memory),
                         "separate": (x, memory, memory.copy())}[kind]
    mask = causal_mask(5, key.shape[-2])
    out, weights = multi_head_attention(query, key, value, params, 2, mask)
    expected, cache = mha_forward(query, key, value, params, 2, mask)
    np.testing.assert_allclose(out, expected, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(weights, mha_weights(cache), rtol=1e-14, atol=1e-16)


def test_the_forward_pass_writes_into_neither_inputs_nor_weights():
    config = TransformerConfig(src_vocab_size=11, tgt_vocab_size=300, d_model=16, num_heads=2,
                               d_ff=24)
    model = Transformer.from_seed(config, 4)
    before = model.named_weights()
    src, tgt = RNG.integers(0, 11, (3, 6)), RNG.integers(0, 300, (3, 5))
    src_before, tgt_before = src.copy(), tgt.copy()
    first = model.log_probs(src, tgt, src_lengths=np.array([6, 2, 4]))
    second = model.log_probs(src, tgt, src_lengths=np.array([6, 2, 4]))
    np.testing.assert_array_equal(first, second)
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(src, src_before)
    np.testing.assert_array_equal(tgt, tgt_before)
    for name, value in model.weights.items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    log_probs, weights = model.decode(tgt, model.encode(src), return_weights=True)
    arrays = [w for layer in weights for w in layer.values()]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:])
    np.testing.assert_allclose(np.exp(log_probs).sum(axis=-1), 1.0, rtol=1e-13)
