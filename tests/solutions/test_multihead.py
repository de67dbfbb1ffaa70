import numpy as np
import pytest

import solutions

rng = np.random.default_rng(7)


def params(d_model=6, bias=True):
    out = {f"W_{n}": rng.normal(size=(d_model, d_model)) for n in "QKVO"}
    if bias:
        out.update({f"b_{n}": rng.normal(size=d_model) for n in "QKVO"})
    return out


def test_biases_are_optional_and_equal_to_zero_biases():
    x = rng.normal(size=(2, 3, 6))
    p = params(bias=False)
    zero_bias = dict(p, **{f"b_{n}": np.zeros(6) for n in "QKVO"})
    out, weights = solutions.multi_head_attention(x, x, x, p, num_heads=2)
    out0, weights0 = solutions.multi_head_attention(x, x, x, zero_bias, num_heads=2)
    np.testing.assert_allclose(out, out0, rtol=1e-14)
    np.testing.assert_allclose(weights, weights0, rtol=1e-14)
    _, cache = solutions.mha_forward(x, x, x, p, 2)
    *_, grads = solutions.mha_backward(np.ones_like(out), cache)
    assert set(grads) == {"W_Q", "W_K", "W_V", "W_O"}


def test_unknown_parameter_names_are_rejected():
    x = rng.normal(size=(3, 6))
    with pytest.raises(ValueError, match=r"unknown \['W_q'\]"):
        solutions.multi_head_attention(x, x, x, dict(params(), W_q=np.eye(6)), 2)


def test_split_then_merge_is_the_identity_and_heads_take_column_blocks():
    x = np.arange(2 * 3 * 6, dtype=float).reshape(2, 3, 6)
    heads = solutions.split_heads(x, 3)
    assert heads.shape == (2, 3, 3, 2)
    np.testing.assert_array_equal(heads[0, 1, 2], x[0, 2, 2:4])  # head 1, token 2
    np.testing.assert_array_equal(solutions.merge_heads(heads), x)


def test_head_projection_is_the_ith_column_block():
    W = np.arange(12.0).reshape(2, 6)
    np.testing.assert_array_equal(solutions.head_projection(W, 3, 1), [[2, 3], [8, 9]])
    with pytest.raises(ValueError, match="0 ≤ i < h"):
        solutions.head_projection(W, 3, 3)


def test_each_head_is_attention_with_its_own_projection_block():
    x, p = rng.normal(size=(4, 6)), params()
    _, weights = solutions.multi_head_attention(x, x, x, p, num_heads=2)
    for i in range(2):
        q = x @ solutions.head_projection(p["W_Q"], 2, i) + p["b_Q"][3 * i:3 * i + 3]
        k = x @ solutions.head_projection(p["W_K"], 2, i) + p["b_K"][3 * i:3 * i + 3]
        head = solutions.scaled_dot_product_attention(q, k, k, return_steps=True)
        np.testing.assert_allclose(weights[i], head.weights, rtol=1e-13)


@pytest.mark.parametrize("heads", [1, 2, 4, 8])
def test_mha_parameter_count_does_not_depend_on_the_number_of_heads(heads):
    assert solutions.mha_param_count(512, heads) == 4 * 512 ** 2 + 4 * 512


def test_mha_parameter_count_with_explicit_head_sizes():
    # d = 6, h = 2, d_k = 4, d_v = 5: W_Q, W_K 6×8 each, W_V 6×10, W_O 10×6 → 48+48+60+60 = 216
    # biases: 8 + 8 + 10 + 6 = 32
    assert solutions.mha_param_count(6, 2, d_k=4, d_v=5) == 216 + 32
    assert solutions.mha_param_count(6, 2, d_k=4, d_v=5, bias=False) == 216
