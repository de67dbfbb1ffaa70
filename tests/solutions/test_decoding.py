"""Parallel training equals left-to-right generation: each cached step's output row is the
matching row of the teacher-forced causal pass, and cached greedy decoding is greedy decoding."""

from pathlib import Path

import numpy as np
import pytest

import solutions
from solutions.checkpoint import load_model
from solutions.decoding import (cached_attention, cached_greedy_decode, causal_mask_bottom_right,
                                decode_step, empty_cache, positional_self_attention, shift_right)
from solutions.toy_tasks import BOS, EOS, ToyTask, batch_of, held_out

MODELS = Path(__file__).resolve().parents[2] / "problem_bank" / "models"


def test_shift_right_puts_bos_first_and_drops_the_last_target():
    np.testing.assert_array_equal(shift_right([[5, 6, 7], [8, 9, 2]], bos=1), [[1, 5, 6], [1, 8, 9]])
    with pytest.raises(ValueError, match="T ≥ 1"):
        shift_right(np.zeros((2, 0), dtype=int), bos=1)


def test_the_bottom_right_mask_lets_the_last_queries_see_every_earlier_key():
    np.testing.assert_array_equal(causal_mask_bottom_right(2, 4), [[1, 1, 1, 0], [1, 1, 1, 1]])
    np.testing.assert_array_equal(causal_mask_bottom_right(3, 3), solutions.causal_mask(3))
    np.testing.assert_array_equal(solutions.causal_mask(1, 4), [[1, 0, 0, 0]])   # top-left: wrong for a cache
    with pytest.raises(ValueError):
        causal_mask_bottom_right(3, 2)


def test_cached_attention_step_by_step_equals_the_causal_pass():
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    whole = solutions.causal_attention(Q, K, V)
    K_cache, V_cache = np.zeros((0, 3)), np.zeros((0, 2))
    for t in range(5):
        Z, K_cache, V_cache = cached_attention(Q[t:t + 1], K[t:t + 1], V[t:t + 1], K_cache, V_cache)
        np.testing.assert_allclose(Z[0], whole[t], rtol=0, atol=1e-12)
    Z, _, _ = cached_attention(Q[3:], K[3:], V[3:], K[:3], V[:3])     # two new queries at once
    np.testing.assert_allclose(Z, whole[3:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("tied, decoder_layers", [(False, 2), (True, 2), (False, 0)])
def test_each_decode_step_equals_its_row_of_the_teacher_forced_pass(tied, decoder_layers):
    config = solutions.TransformerConfig(7, 9, d_model=8, num_heads=2, d_ff=16, num_encoder_layers=2,
                                         num_decoder_layers=decoder_layers, final_layer_norm=True,
                                         tie_output=tied)
    model = solutions.Transformer.from_seed(config, seed=1)
    src, lengths = np.array([[3, 4, 5, 6], [5, 6, 0, 0]]), np.array([4, 2])
    tgt = shift_right(np.array([[3, 8, 7, 2, 4], [2, 2, 5, 1, 6]]), bos=1)
    whole = model.log_probs(src, tgt, lengths)
    memory = model.encode(src, lengths)
    cache = empty_cache(model, 2)
    for t in range(tgt.shape[1]):
        row, cache = decode_step(model, memory, cache, tgt[:, t], lengths)
        np.testing.assert_allclose(row, whole[:, t], rtol=0, atol=1e-12)
    assert cache.length == tgt.shape[1]
    assert [k.shape for k in cache.keys] == [(2, 2, 5, 4)] * decoder_layers


def test_cached_greedy_decoding_is_greedy_decoding_on_the_reverse_model():
    model, _ = load_model(MODELS / "reverse.json")
    task = ToyTask("reverse")
    batch = batch_of(task, held_out(task)[:50])
    np.testing.assert_array_equal(
        cached_greedy_decode(model, batch.src, BOS, EOS, task.max_len + 1, batch.src_lengths),
        model.greedy_decode(batch.src, BOS, EOS, task.max_len + 1, batch.src_lengths))


def test_positions_make_self_attention_order_aware():
    rng = np.random.default_rng(0)
    X, W = rng.standard_normal((4, 6)), [rng.standard_normal((6, 6)) for _ in range(3)]
    order = [2, 0, 3, 1]
    blind = solutions.self_attention(X, *W)
    np.testing.assert_allclose(solutions.self_attention(X[order], *W), blind[order], rtol=0, atol=1e-12)
    seeing = positional_self_attention(X, *W)
    assert not np.allclose(positional_self_attention(X[order], *W), seeing[order], atol=1e-3)


@pytest.mark.parametrize("t, L", [(0, 1), (0, 3), (1, 1), (4, 1), (2, 2), (3, 3)])
def test_a_decode_step_equals_the_matching_rows_of_the_parallel_causal_pass(t, L):
    from solutions import causal_attention, self_attention_decode_step
    r = np.random.default_rng(t * 10 + L)
    X = r.standard_normal((t + L, 4))
    W_Q, W_K, W_V = (r.standard_normal((4, 3)) for _ in range(3))
    Z, (K, V) = self_attention_decode_step((X[:t] @ W_K, X[:t] @ W_V), X[t:], W_Q, W_K, W_V)
    np.testing.assert_allclose(Z, causal_attention(X @ W_Q, X @ W_K, X @ W_V)[t:], rtol=0, atol=1e-12)
    np.testing.assert_allclose(K, X @ W_K, rtol=0, atol=1e-12)
    np.testing.assert_allclose(V, X @ W_V, rtol=0, atol=1e-12)
