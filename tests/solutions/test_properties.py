"""Property-based tests of the reference implementation: invariants that must hold for any input."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from solutions import (Transformer, TransformerConfig, causal_mask, multi_head_attention,
                       padding_mask, scaled_dot_product_attention, softmax)

PROPERTY = settings(max_examples=50, deadline=None)

ELEMENTS = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
SIDE = st.integers(1, 5)


def float_arrays(shape):
    return hnp.arrays(np.float64, shape, elements=ELEMENTS)


@st.composite
def qkv(draw, batch=()):
    """Q (*batch, L, d_k), K (*batch, S, d_k), V (*batch, S, d_v)."""
    L, S, d_k, d_v = draw(SIDE), draw(SIDE), draw(SIDE), draw(SIDE)
    Q = draw(float_arrays(batch + (L, d_k)))
    K = draw(float_arrays(batch + (S, d_k)))
    V = draw(float_arrays(batch + (S, d_v)))
    return Q, K, V


def random_mha_params(seed: int, d_model: int) -> dict:
    rng = np.random.default_rng(seed)
    params = {}
    for name in ("Q", "K", "V", "O"):
        params[f"W_{name}"] = rng.normal(0.0, 1.0 / math.sqrt(d_model), (d_model, d_model))
        params[f"b_{name}"] = rng.normal(0.0, 0.1, d_model)
    return params


def loop_attention(Q, K, V, mask=None):
    """softmax(QKᵀ/√d_k) V for 2-D inputs with plain Python loops and math.exp."""
    L, d_k = Q.shape
    S, d_v = V.shape
    weights = np.zeros((L, S))
    for i in range(L):
        allowed = [j for j in range(S) if mask is None or mask[i, j]]
        if not allowed:
            continue
        scores = {j: sum(Q[i, c] * K[j, c] for c in range(d_k)) / math.sqrt(d_k) for j in allowed}
        top = max(scores.values())
        total = sum(math.exp(v - top) for v in scores.values())
        for j in allowed:
            weights[i, j] = math.exp(scores[j] - top) / total
    output = np.array([[sum(weights[i, j] * V[j, c] for j in range(S)) for c in range(d_v)]
                       for i in range(L)]).reshape(L, d_v)
    return weights, output


# --- softmax -------------------------------------------------------------------------------

@PROPERTY
@given(data=st.data())
def test_softmax_is_a_distribution_along_any_axis(data):
    x = data.draw(float_arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    p = softmax(x, axis=axis)
    assert p.shape == x.shape
    assert np.all((p >= 0.0) & (p <= 1.0))
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=0, atol=1e-12)


@PROPERTY
@given(x=float_arrays(st.tuples(SIDE, SIDE)))
def test_softmax_matches_the_definition_computed_with_math_exp(x):
    expected = [[math.exp(v) / sum(math.exp(w) for w in row) for v in row] for row in x]
    np.testing.assert_allclose(softmax(x), np.array(expected).reshape(x.shape), rtol=1e-12,
                               atol=1e-15)


@PROPERTY
@given(data=st.data())
def test_softmax_is_invariant_to_a_constant_added_to_each_slice(data):
    x = data.draw(float_arrays(hnp.array_shapes(min_dims=1, max_dims=3, max_side=5)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    shift_shape = tuple(1 if i == axis % x.ndim else n for i, n in enumerate(x.shape))
    shift = data.draw(hnp.arrays(np.float64, shift_shape, elements=st.floats(-100, 100)))
    np.testing.assert_allclose(softmax(x + shift, axis=axis), softmax(x, axis=axis),
                               rtol=1e-9, atol=1e-12)


@PROPERTY
@given(x=float_arrays(st.tuples(SIDE, st.integers(2, 6))))
def test_softmax_of_huge_logits_is_finite_and_normalised(x):
    # ×100 spreads the logits over [−1000, 1000]; exp(1000) alone would overflow float64.
    logits = 100.0 * x
    logits[:, 0] = 1000.0
    logits[:, -1] = -1000.0
    p = softmax(logits)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(p[:, 0] >= p.max(axis=-1))


# --- attention weights and masks -----------------------------------------------------------

@PROPERTY
@given(qkv=qkv())
def test_attention_weights_are_row_distributions_and_match_the_loop_definition(qkv):
    Q, K, V = qkv
    steps = scaled_dot_product_attention(Q, K, V, return_steps=True)
    np.testing.assert_allclose(steps.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    weights, output = loop_attention(Q, K, V)
    np.testing.assert_allclose(steps.weights, weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(steps.output, output, rtol=1e-9, atol=1e-9)


@st.composite
def qkv_with_mask(draw):
    """Q, K, V and an (L, S) bool mask in which every query row may attend somewhere."""
    Q, K, V = draw(qkv())
    L, S = Q.shape[0], K.shape[0]
    mask = draw(hnp.arrays(np.bool_, (L, S)))
    for i in range(L):
        mask[i, draw(st.integers(0, S - 1))] = True
    return Q, K, V, mask


@PROPERTY
@given(case=qkv_with_mask())
def test_masked_positions_get_exactly_zero_weight_and_rows_still_sum_to_one(case):
    Q, K, V, mask = case
    steps = scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=True)
    assert np.all(steps.weights[~mask] == 0.0)
    np.testing.assert_allclose(steps.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    weights, output = loop_attention(Q, K, V, mask)
    np.testing.assert_allclose(steps.weights, weights, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(steps.output, output, rtol=1e-9, atol=1e-9)


@PROPERTY
@given(case=qkv_with_mask(), data=st.data())
def test_a_fully_masked_row_gives_zero_weights_and_zero_output(case, data):
    Q, K, V, mask = case
    blocked = data.draw(st.integers(0, Q.shape[0] - 1))
    mask[blocked] = False
    steps = scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=True)
    assert np.all(np.isfinite(steps.output))
    assert np.all(steps.weights[blocked] == 0.0)
    assert np.all(steps.output[blocked] == 0.0)
    others = np.arange(Q.shape[0]) != blocked
    np.testing.assert_allclose(steps.weights[others].sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@PROPERTY
@given(case=qkv_with_mask())
def test_softmax_and_attention_leave_their_inputs_untouched(case):
    Q, K, V, mask = case
    originals = [a.copy() for a in (Q, K, V, mask)]
    softmax(Q)
    scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=True)
    for before, after in zip(originals, (Q, K, V, mask)):
        np.testing.assert_array_equal(after, before)


# --- permutation equivariance --------------------------------------------------------------

@PROPERTY
@given(data=st.data())
def test_self_attention_is_permutation_equivariant(data):
    L, d = data.draw(SIDE), data.draw(SIDE)
    x = data.draw(float_arrays((L, d)))
    perm = np.array(data.draw(st.permutations(range(L))))
    out = scaled_dot_product_attention(x, x, x)
    permuted = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    np.testing.assert_allclose(permuted, out[perm], rtol=1e-9, atol=1e-9)


@PROPERTY
@given(data=st.data())
def test_multi_head_self_attention_is_permutation_equivariant(data):
    L, num_heads, d_head = data.draw(SIDE), data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    d_model = num_heads * d_head
    x = data.draw(float_arrays((L, d_model)))
    params = random_mha_params(data.draw(st.integers(0, 2**32 - 1)), d_model)
    perm = np.array(data.draw(st.permutations(range(L))))
    out, weights = multi_head_attention(x, x, x, params, num_heads)
    permuted_out, permuted_weights = multi_head_attention(x[perm], x[perm], x[perm], params,
                                                          num_heads)
    np.testing.assert_allclose(permuted_out, out[perm], rtol=1e-9, atol=1e-9)
    # Weights permute on both axes: query i' = perm[i] attends to key perm[j] as before.
    np.testing.assert_allclose(permuted_weights, weights[:, perm][:, :, perm], rtol=1e-9,
                               atol=1e-12)


# --- scaling -------------------------------------------------------------------------------

@PROPERTY
@given(qkv=qkv())
def test_scaling_by_one_over_sqrt_dk_never_changes_a_rows_argmax(qkv):
    Q, K, V = qkv
    raw = np.array([[sum(q * k for q, k in zip(Q[i], K[j])) for j in range(len(K))]
                    for i in range(len(Q))])
    top_two = np.sort(raw, axis=-1)[:, ::-1][:, :2]
    # A row with a near-tie could legitimately collapse to an exact tie after rounding.
    gap = top_two[:, 0] - top_two[:, -1] if raw.shape[1] > 1 else np.full(len(raw), np.inf)
    clear = gap > 1e-9 * (1.0 + np.abs(top_two[:, 0]))
    assume(clear.any())
    steps = scaled_dot_product_attention(Q, K, V, return_steps=True)
    np.testing.assert_allclose(steps.scaled_scores, raw / math.sqrt(Q.shape[-1]), rtol=1e-12,
                               atol=1e-12)
    expected = np.argmax(raw, axis=-1)[clear]
    np.testing.assert_array_equal(np.argmax(steps.scaled_scores, axis=-1)[clear], expected)
    np.testing.assert_array_equal(np.argmax(steps.weights, axis=-1)[clear], expected)


# --- causality -----------------------------------------------------------------------------

@PROPERTY
@given(data=st.data())
def test_causal_attention_output_ignores_later_tokens(data):
    L, d = data.draw(st.integers(2, 6)), data.draw(SIDE)
    x = data.draw(float_arrays((L, d)))
    t = data.draw(st.integers(0, L - 2))
    changed = x.copy()
    changed[t + 1:] = data.draw(float_arrays((L - t - 1, d)))
    out = scaled_dot_product_attention(x, x, x, mask=causal_mask(L))
    out_changed = scaled_dot_product_attention(changed, changed, changed, mask=causal_mask(L))
    np.testing.assert_allclose(out_changed[:t + 1], out[:t + 1], rtol=0, atol=1e-12)


@PROPERTY
@given(data=st.data())
def test_causal_multi_head_attention_output_ignores_later_tokens(data):
    L, num_heads = data.draw(st.integers(2, 6)), data.draw(st.integers(1, 3))
    d_model = 2 * num_heads
    x = data.draw(float_arrays((L, d_model)))
    params = random_mha_params(data.draw(st.integers(0, 2**32 - 1)), d_model)
    t = data.draw(st.integers(0, L - 2))
    changed = x.copy()
    changed[t + 1:] = data.draw(float_arrays((L - t - 1, d_model)))
    out, _ = multi_head_attention(x, x, x, params, num_heads, causal_mask(L))
    out_changed, _ = multi_head_attention(changed, changed, changed, params, num_heads,
                                          causal_mask(L))
    np.testing.assert_allclose(out_changed[:t + 1], out[:t + 1], rtol=0, atol=1e-12)


MINI = TransformerConfig(src_vocab_size=11, tgt_vocab_size=13, d_model=16, num_heads=2, d_ff=32)


@lru_cache(maxsize=None)
def mini_model(seed: int = 0) -> Transformer:
    return Transformer.from_seed(MINI, seed)


def token_arrays(shape, vocab_size):
    return hnp.arrays(np.int64, shape, elements=st.integers(0, vocab_size - 1))


@PROPERTY
@given(data=st.data())
def test_transformer_decoder_log_probs_ignore_later_target_tokens(data):
    B, S, T = data.draw(st.integers(1, 2)), data.draw(SIDE), data.draw(st.integers(2, 6))
    src = data.draw(token_arrays((B, S), MINI.src_vocab_size))
    tgt = data.draw(token_arrays((B, T), MINI.tgt_vocab_size))
    t = data.draw(st.integers(0, T - 2))
    changed = tgt.copy()
    changed[:, t + 1:] = data.draw(token_arrays((B, T - t - 1), MINI.tgt_vocab_size))
    model = mini_model()
    np.testing.assert_allclose(model.log_probs(src, changed)[:, :t + 1],
                               model.log_probs(src, tgt)[:, :t + 1], rtol=0, atol=1e-12)


# --- padding -------------------------------------------------------------------------------

@PROPERTY
@given(data=st.data())
def test_padded_keys_do_not_change_the_attention_output(data):
    B = data.draw(st.integers(1, 3))
    Q, K, V = data.draw(qkv(batch=(B,)))
    S = K.shape[-2]
    lengths = np.array(data.draw(st.lists(st.integers(1, S), min_size=B, max_size=B)))
    padded = np.arange(S)[None, :] >= lengths[:, None]
    K2, V2 = K.copy(), V.copy()
    K2[padded] = data.draw(float_arrays(K2[padded].shape))
    V2[padded] = data.draw(float_arrays(V2[padded].shape))
    mask = padding_mask(lengths, S)
    out = scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(scaled_dot_product_attention(Q, K2, V2, mask=mask), out,
                               rtol=0, atol=1e-12)


@PROPERTY
@given(data=st.data())
def test_padded_source_tokens_do_not_change_the_transformer_log_probs(data):
    B, S, T = data.draw(st.integers(1, 3)), data.draw(st.integers(2, 6)), data.draw(SIDE)
    src = data.draw(token_arrays((B, S), MINI.src_vocab_size))
    tgt = data.draw(token_arrays((B, T), MINI.tgt_vocab_size))
    lengths = np.array(data.draw(st.lists(st.integers(1, S), min_size=B, max_size=B)))
    padded = np.arange(S)[None, :] >= lengths[:, None]
    changed = src.copy()
    changed[padded] = data.draw(token_arrays((int(padded.sum()),), MINI.src_vocab_size))
    model = mini_model()
    np.testing.assert_allclose(model.log_probs(changed, tgt, lengths),
                               model.log_probs(src, tgt, lengths), rtol=0, atol=1e-12)


# --- determinism of greedy decoding --------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(src=token_arrays(st.tuples(st.integers(1, 2), SIDE), MINI.src_vocab_size),
       seed=st.integers(0, 2**32 - 1))
def test_greedy_decoding_is_deterministic(src, seed):
    model = Transformer.from_seed(MINI, seed)
    twin = Transformer.from_seed(MINI, seed)
    first = model.greedy_decode(src, bos_id=1, eos_id=2, max_len=5)
    np.testing.assert_array_equal(model.greedy_decode(src, bos_id=1, eos_id=2, max_len=5), first)
    assert twin.weights.keys() == model.weights.keys()
    for name, value in model.weights.items():
        np.testing.assert_array_equal(twin.weights[name], value, err_msg=name)
    np.testing.assert_array_equal(twin.greedy_decode(src, bos_id=1, eos_id=2, max_len=5), first)


@settings(max_examples=20, deadline=None)
@given(seeds=st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=2, unique=True))
def test_different_seeds_give_different_weights(seeds):
    a, b = (Transformer.from_seed(MINI, seed) for seed in seeds)
    for name, value in a.weights.items():
        assert not np.array_equal(b.weights[name], value), name
