"""The mini encoder-decoder Transformer, its layers, positional encodings and parameter counts."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from solutions import (Transformer, TransformerConfig, bert_param_count, decoder_layer,
                       decoder_layer_param_count, embed, encoder_layer,
                       encoder_layer_param_count, ffn_param_count, layer_norm_param_count,
                       mha_param_count, parameter_shapes, positional_encoding,
                       transformer_param_count)

BOS, EOS = 1, 2


@pytest.fixture(scope="module")
def config():
    return TransformerConfig(src_vocab_size=11, tgt_vocab_size=13, d_model=16, num_heads=2,
                             d_ff=24)


@pytest.fixture(scope="module")
def model(config):
    return Transformer.from_seed(config, 0)


@pytest.fixture
def src():
    return np.array([[3, 4, 5, 6, 7], [8, 9, 10, 3, 4]])


def mha_shapes(prefix, d):
    return {f"{prefix}{kind}_{x}": (d, d) if kind == "W" else (d,)
            for x in "QKVO" for kind in "Wb"}


def norm_shapes(prefix, d):
    return {f"{prefix}gamma": (d,), f"{prefix}beta": (d,)}


def ffn_shapes(prefix, d, d_ff):
    return {f"{prefix}W1": (d, d_ff), f"{prefix}b1": (d_ff,), f"{prefix}W2": (d_ff, d),
            f"{prefix}b2": (d,)}


# --- named weights -------------------------------------------------------------------------

def test_parameter_shapes_of_a_one_layer_model_are_exactly_the_paper_weights():
    config = TransformerConfig(src_vocab_size=7, tgt_vocab_size=9, d_model=8, num_heads=2,
                               d_ff=12, num_encoder_layers=1, num_decoder_layers=1)
    enc, dec = "encoder.layers.0.", "decoder.layers.0."
    expected = {"src_embedding": (7, 8), "tgt_embedding": (9, 8),
                **mha_shapes(enc + "self_attn.", 8), **norm_shapes(enc + "norm1.", 8),
                **ffn_shapes(enc + "ffn.", 8, 12), **norm_shapes(enc + "norm2.", 8),
                **mha_shapes(dec + "self_attn.", 8), **norm_shapes(dec + "norm1.", 8),
                **mha_shapes(dec + "cross_attn.", 8), **norm_shapes(dec + "norm2.", 8),
                **ffn_shapes(dec + "ffn.", 8, 12), **norm_shapes(dec + "norm3.", 8),
                "generator.W": (8, 9), "generator.b": (9,)}
    assert parameter_shapes(config) == expected


def test_parameter_shapes_have_one_block_per_layer_and_optional_final_norms(config):
    names = set(parameter_shapes(config))
    assert {n.split(".")[2] for n in names if n.startswith("encoder.layers.")} == {"0", "1"}
    assert {n.split(".")[2] for n in names if n.startswith("decoder.layers.")} == {"0", "1"}
    assert not any(n.startswith(("encoder.norm.", "decoder.norm.")) for n in names)

    with_norms = dataclasses.replace(config, final_layer_norm=True)
    added = set(parameter_shapes(with_norms)) - names
    assert added == {"encoder.norm.gamma", "encoder.norm.beta", "decoder.norm.gamma",
                     "decoder.norm.beta"}


def test_from_seed_builds_every_weight_with_its_shape_and_is_reproducible(config):
    a, b = Transformer.from_seed(config, 7), Transformer.from_seed(config, 7)
    shapes = parameter_shapes(config)
    assert {n: w.shape for n, w in a.named_weights().items()} == shapes
    for name in shapes:
        assert a.weights[name].dtype == np.float64
        np.testing.assert_array_equal(a.weights[name], b.weights[name], err_msg=name)


def test_named_weights_round_trip_through_the_constructor(model, config, src):
    weights = model.named_weights()
    rebuilt = Transformer(config, weights)
    for name, value in model.weights.items():
        np.testing.assert_array_equal(rebuilt.weights[name], value, err_msg=name)
    tgt = np.array([[BOS, 5, 6], [BOS, 7, 8]])
    np.testing.assert_array_equal(rebuilt.log_probs(src, tgt), model.log_probs(src, tgt))


def test_named_weights_are_copies(model):
    weights = model.named_weights()
    original = model.weights["generator.b"].copy()
    weights["generator.b"] += 1.0
    np.testing.assert_array_equal(model.weights["generator.b"], original)


def test_a_missing_weight_is_a_value_error_naming_it(model, config):
    weights = model.named_weights()
    del weights["decoder.layers.1.cross_attn.W_K"]
    with pytest.raises(ValueError, match=re.escape("decoder.layers.1.cross_attn.W_K")):
        Transformer(config, weights)


def test_an_unexpected_weight_is_a_value_error_naming_it(model, config):
    weights = model.named_weights()
    weights["encoder.layers.2.ffn.W1"] = np.zeros((16, 24))
    with pytest.raises(ValueError, match=re.escape("encoder.layers.2.ffn.W1")):
        Transformer(config, weights)


def test_a_wrongly_shaped_weight_is_a_value_error_naming_it(model, config):
    weights = model.named_weights()
    weights["encoder.layers.0.ffn.W1"] = weights["encoder.layers.0.ffn.W1"].T
    with pytest.raises(ValueError, match=re.escape("encoder.layers.0.ffn.W1")):
        Transformer(config, weights)


# --- forward pass and decoding -------------------------------------------------------------

def test_log_probs_are_normalised_distributions_over_the_target_vocabulary(model, src):
    tgt = np.array([[BOS, 5, 6, 7], [BOS, 8, 9, 10]])
    log_p = model.log_probs(src, tgt)
    assert log_p.shape == (2, 4, 13)
    assert np.all(log_p <= 0.0)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=-1), 1.0, rtol=0, atol=1e-12)


def test_greedy_decode_picks_the_argmax_of_the_teacher_forced_log_probs(model, src):
    out = model.greedy_decode(src, BOS, eos_id=999, max_len=6)  # an id that never occurs
    assert out.shape == (2, 7)
    np.testing.assert_array_equal(out[:, 0], BOS)
    for t in range(1, out.shape[1]):
        next_token = np.argmax(model.log_probs(src, out[:, :t])[:, -1], axis=-1)
        np.testing.assert_array_equal(out[:, t], next_token, err_msg=f"step {t}")


@pytest.mark.parametrize("max_len", [0, 1, 4])
def test_greedy_decode_generates_at_most_max_len_tokens(model, src, max_len):
    out = model.greedy_decode(src, BOS, eos_id=999, max_len=max_len)
    assert out.shape == (2, 1 + max_len)


def expected_with_eos(free_run: np.ndarray, eos: int) -> np.ndarray:
    """Cut a run decoded with an unreachable <eos>: after a row's first ``eos`` only ``eos``,
    and stop as soon as every row has finished."""
    rows, finished_at = [], []
    for row in free_run.tolist():
        hits = [i for i in range(1, len(row)) if row[i] == eos]
        end = hits[0] if hits else None
        finished_at.append(end if end is not None else len(row) - 1)
        rows.append(row if end is None else row[:end + 1] + [eos] * (len(row) - end - 1))
    return np.array(rows)[:, :max(finished_at) + 1]


def test_greedy_decode_pads_finished_sequences_with_eos(config, src):
    model = Transformer.from_seed(config, 8)
    free_run = model.greedy_decode(src, BOS, eos_id=999, max_len=8)
    # With seed 8 only the second sequence emits token 2, and later it would emit others:
    # choosing 2 as <eos> makes that row finish early while the first keeps going.
    eos = 2
    assert eos not in free_run[0] and free_run[1, 2] == eos and (free_run[1, 3:] != eos).any()
    out = model.greedy_decode(src, BOS, eos_id=eos, max_len=8)
    np.testing.assert_array_equal(out, expected_with_eos(free_run, eos))
    np.testing.assert_array_equal(out[1, 2:], eos)
    assert out.shape == (2, 9)


def test_greedy_decode_stops_as_soon_as_every_sequence_emitted_eos(config, src):
    model = Transformer.from_seed(config, 5)
    free_run = model.greedy_decode(src, BOS, eos_id=999, max_len=8)
    eos = 8  # with seed 5 both sequences emit 8 first
    assert np.all(free_run[:, 1] == eos)
    np.testing.assert_array_equal(model.greedy_decode(src, BOS, eos_id=eos, max_len=8),
                                  [[BOS, eos], [BOS, eos]])


# --- layers --------------------------------------------------------------------------------

def layer_params(rng, d, d_ff, attention_blocks, norms):
    def mha():
        return {f"{kind}_{x}": rng.normal(0, 1 / math.sqrt(d), (d, d) if kind == "W" else d)
                for x in "QKVO" for kind in "Wb"}
    params = {name: mha() for name in attention_blocks}
    params.update({name: {"gamma": np.ones(d), "beta": np.zeros(d)} for name in norms})
    params["ffn"] = {"W1": rng.normal(0, 1 / math.sqrt(d), (d, d_ff)),
                     "b1": rng.normal(0, 0.1, d_ff),
                     "W2": rng.normal(0, 1 / math.sqrt(d_ff), (d_ff, d)),
                     "b2": rng.normal(0, 0.1, d)}
    return params


def assert_standardised_per_token(out):
    # Post-LN with γ = 1, β = 0: each token is (x − μ)/√(σ² + ε), so std = √(σ²/(σ² + ε)) ≈ 1.
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out.std(axis=-1), 1.0, rtol=0, atol=1e-4)


def test_encoder_layer_output_shape_and_post_layer_norm():
    rng = np.random.default_rng(1)
    params = layer_params(rng, 8, 16, ["self_attn"], ["norm1", "norm2"])
    x = rng.normal(size=(3, 5, 8))
    out, weights = encoder_layer(x, params, num_heads=2, return_weights=True)
    assert out.shape == (3, 5, 8)
    assert weights["self_attn"].shape == (3, 2, 5, 5)
    assert_standardised_per_token(out)


def test_decoder_layer_output_shape_and_post_layer_norm():
    rng = np.random.default_rng(2)
    params = layer_params(rng, 8, 16, ["self_attn", "cross_attn"], ["norm1", "norm2", "norm3"])
    y, memory = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 6, 8))
    out, weights = decoder_layer(y, memory, params, num_heads=2, return_weights=True)
    assert out.shape == (3, 4, 8)
    assert weights["self_attn"].shape == (3, 2, 4, 4)
    assert weights["cross_attn"].shape == (3, 2, 4, 6)
    assert_standardised_per_token(out)


def test_the_last_operation_of_an_encoder_layer_is_the_affine_layer_norm():
    rng = np.random.default_rng(3)
    params = layer_params(rng, 8, 16, ["self_attn"], ["norm1", "norm2"])
    x = rng.normal(size=(2, 5, 8))
    standardised = encoder_layer(x, params, num_heads=2)
    gamma, beta = rng.normal(size=8), rng.normal(size=8)
    params["norm2"] = {"gamma": gamma, "beta": beta}
    np.testing.assert_allclose(encoder_layer(x, params, num_heads=2),
                               gamma * standardised + beta, rtol=1e-12, atol=1e-12)


# --- embeddings and positional encoding ----------------------------------------------------

def test_positional_encoding_of_position_zero_alternates_zero_and_one():
    np.testing.assert_array_equal(positional_encoding(3, 8)[0], [0, 1, 0, 1, 0, 1, 0, 1])


def test_positional_encoding_at_position_one_by_hand():
    # d_model = 4: frequencies 1/10000^(0/4) = 1 and 1/10000^(2/4) = 1/100.
    expected = [math.sin(1.0), math.cos(1.0), math.sin(0.01), math.cos(0.01)]
    np.testing.assert_allclose(expected, [0.8414709848078965, 0.5403023058681398,
                                          0.009999833334166664, 0.9999500004166653])
    np.testing.assert_allclose(positional_encoding(2, 4)[1], expected, rtol=1e-15, atol=0)


def test_positional_encoding_columns_2i_and_2i_plus_1_share_a_frequency():
    pe = positional_encoding(50, 10)
    sin, cos = pe[:, 0::2], pe[:, 1::2]
    np.testing.assert_allclose(sin**2 + cos**2, 1.0, rtol=0, atol=1e-12)
    # For pos = 1 the shared angle is the frequency itself, 10000^(−2i/d).
    frequencies = np.array([10000.0 ** (-2 * i / 10) for i in range(5)])
    np.testing.assert_allclose(np.arctan2(sin[1], cos[1]), frequencies, rtol=1e-12)
    np.testing.assert_allclose(sin, np.sin(np.arange(50)[:, None] * frequencies), atol=1e-12)


@pytest.mark.parametrize("L, d_model", [(4, 5), (4, 0), (0, 4)])
def test_positional_encoding_rejects_odd_or_empty_sizes(L, d_model):
    with pytest.raises(ValueError):
        positional_encoding(L, d_model)


def test_embed_looks_up_rows_and_multiplies_by_sqrt_d_model():
    table = np.arange(12.0).reshape(3, 4)  # V = 3, d_model = 4, so √d_model = 2
    out = embed(np.array([[2, 0], [1, 1]]), table)
    np.testing.assert_array_equal(out, [[[16, 18, 20, 22], [0, 2, 4, 6]],
                                        [[8, 10, 12, 14], [8, 10, 12, 14]]])


@pytest.mark.parametrize("tokens", [[0, 3], [-1, 0], [0.0, 1.0]])
def test_embed_rejects_out_of_range_or_non_integer_ids(tokens):
    with pytest.raises(ValueError):
        embed(np.array(tokens), np.zeros((3, 4)))


# --- parameter counts ----------------------------------------------------------------------

@pytest.mark.parametrize("count, expected", [
    (lambda: mha_param_count(512), 1_050_624),  # 4·512² + 4·512
    (lambda: mha_param_count(512, bias=False), 1_048_576),
    (lambda: ffn_param_count(512, 2048), 2_099_712),  # 2·512·2048 + 2048 + 512
    (lambda: layer_norm_param_count(512), 1_024),
    (lambda: encoder_layer_param_count(512, 2048), 3_152_384),
    (lambda: decoder_layer_param_count(512, 2048), 4_204_032),
    (lambda: transformer_param_count(), 44_140_544),  # nn.Transformer()
    (lambda: transformer_param_count(final_layer_norms=False), 44_138_496),
    (lambda: bert_param_count(), 109_482_240),  # BERT-base with pooler
], ids=["mha", "mha-no-bias", "ffn", "layer-norm", "encoder-layer", "decoder-layer",
        "transformer", "transformer-no-final-norms", "bert-base"])
def test_published_parameter_counts(count, expected):
    assert count() == expected


@pytest.mark.parametrize("final_layer_norm", [False, True])
def test_mini_model_weight_count_is_the_sum_of_the_layer_counts(config, final_layer_norm):
    config = dataclasses.replace(config, final_layer_norm=final_layer_norm)
    model = Transformer.from_seed(config, 0)
    total = sum(w.size for w in model.named_weights().values())
    d, V_src, V_tgt = config.d_model, config.src_vocab_size, config.tgt_vocab_size
    embeddings = V_src * d + V_tgt * d
    generator = d * V_tgt + V_tgt
    stacks = transformer_param_count(d, config.d_ff, config.num_encoder_layers,
                                     config.num_decoder_layers, final_layer_norm)
    assert total == embeddings + stacks + generator
    assert stacks == (2 * encoder_layer_param_count(16, 24) + 2 * decoder_layer_param_count(16, 24)
                      + (4 * 16 if final_layer_norm else 0))


def test_decode_returns_each_layers_cross_attention_weights(model, config, src):
    lengths = np.array([src.shape[1], 2])[: src.shape[0]]
    memory = model.encode(src, src_lengths=lengths)
    tgt = np.zeros((src.shape[0], 3), dtype=np.int64)
    log_probs, weights = model.decode(tgt, memory, src_lengths=lengths, return_weights=True)
    np.testing.assert_array_equal(log_probs, model.decode(tgt, memory, src_lengths=lengths))
    assert len(weights) == config.num_decoder_layers
    cross = weights[-1]["cross_attn"]
    assert cross.shape == (src.shape[0], config.num_heads, 3, src.shape[1])
    np.testing.assert_allclose(cross.sum(axis=-1), 1.0, rtol=1e-12)
    if src.shape[0] > 1:
        assert (cross[1, :, :, 2:] == 0).all()  # padded source positions get no weight
    self_weights = weights[0]["self_attn"]
    assert (np.triu(self_weights[0, 0], k=1) == 0).all()  # causal


def test_encode_returns_each_layers_self_attention_weights(model, config, src):
    memory, weights = model.encode(src, return_weights=True)
    np.testing.assert_array_equal(memory, model.encode(src))
    assert [w["self_attn"].shape for w in weights] == \
        [(src.shape[0], config.num_heads, src.shape[1], src.shape[1])] * config.num_encoder_layers


def test_greedy_step_is_the_argmax_of_the_last_position(model, src):
    memory = model.encode(src)
    prefix = np.full((src.shape[0], 1), 1, dtype=np.int64)
    next_token, log_probs = model.greedy_step(memory, prefix)
    np.testing.assert_array_equal(next_token, np.argmax(model.decode(prefix, memory)[:, -1], -1))
    np.testing.assert_array_equal(log_probs, model.decode(prefix, memory)[:, -1])
    np.testing.assert_array_equal(model.greedy_decode(src, 1, 2, max_len=1)[:, 1], next_token)


def test_config_rejects_non_positive_sizes():
    with pytest.raises(ValueError, match="num_heads"):
        TransformerConfig(5, 5, num_heads=0)


def test_embedding_one_token_leaves_the_table_as_it_was():
    """embed scales its lookup in place: the lookup must be a copy even for a single id,
    where table[id] would be a view of the table."""
    from solutions.positional import embed
    table = np.arange(12.0).reshape(3, 4)
    before = table.copy()
    assert np.array_equal(embed(np.int64(1), table), before[1] * 2.0)
    assert np.array_equal(embed(np.array(2), table), before[2] * 2.0)
    assert np.array_equal(table, before)
