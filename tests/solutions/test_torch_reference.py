"""Agreement with PyTorch on fixtures recorded by tests/fixtures/make_torch_fixtures.py.

Torch is not needed here: the fixture holds PyTorch's float64 inputs, weights and outputs, so
these tests check our layout converters and mask conventions against the real thing.
"""

from pathlib import Path

import numpy as np
import pytest

import solutions
from solutions._params import subtree

FIXTURE = Path(__file__).parent.parent / "fixtures" / "torch_reference.npz"
TOL = dict(rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def ref():
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def group(ref, prefix):
    return {k[len(prefix):]: v for k, v in ref.items() if k.startswith(prefix)}


def test_sdpa_with_bool_mask_and_causal(ref):
    d = group(ref, "sdpa.")
    out = solutions.scaled_dot_product_attention(d["q"], d["k"], d["v"], mask=d["mask"])
    np.testing.assert_allclose(out, d["out_masked"], **TOL)
    np.testing.assert_allclose(solutions.scaled_dot_product_attention(d["q"], d["k"], d["v"]),
                               d["out_nomask"], **TOL)
    causal = solutions.causal_mask(3, 5)  # L ≠ S: top-left aligned like is_causal
    np.testing.assert_allclose(solutions.scaled_dot_product_attention(d["q"], d["k"], d["v"], causal),
                               d["out_causal"], **TOL)


def test_attention_backward_matches_autograd(ref):
    d = group(ref, "sdpa.")
    _, cache = solutions.attention_forward(d["q"], d["k"], d["v"], mask=d["mask"])
    for got, want in zip(solutions.attention_backward(d["dout"], cache), (d["dq"], d["dk"], d["dv"])):
        np.testing.assert_allclose(got, want, **TOL)


def mha_params(d):
    return solutions.mha_params_from_torch(d["in_proj_weight"], d["in_proj_bias"],
                                           d["out_proj.weight"], d["out_proj.bias"])


def test_multihead_cross_attention_with_key_padding(ref):
    d = group(ref, "mha.")
    mask = solutions.key_padding_mask_from_torch(d["key_padding_mask"])
    out, weights = solutions.multi_head_attention(d["query"], d["key"], d["value"], mha_params(d),
                                                  num_heads=2, mask=mask)
    np.testing.assert_allclose(out, d["out"], **TOL)
    np.testing.assert_allclose(weights, d["weights"], **TOL)


def test_multihead_causal_self_attention_with_torch_attn_mask(ref):
    d, params = group(ref, "mha_self."), mha_params(group(ref, "mha."))
    mask = solutions.mask_from_torch(d["attn_mask"])
    np.testing.assert_array_equal(mask, solutions.causal_mask(4))
    out, weights = solutions.multi_head_attention(d["x"], d["x"], d["x"], params, 2, mask)
    np.testing.assert_allclose(out, d["out"], **TOL)
    np.testing.assert_allclose(weights, d["weights"], **TOL)


def test_encoder_layer(ref):
    d = group(ref, "enc_layer.")
    params = solutions.encoder_layer_params_from_torch(d)
    np.testing.assert_allclose(solutions.encoder_layer(d["src"], params, 2), d["out"], **TOL)


def test_decoder_layer_with_float_causal_mask(ref):
    d = group(ref, "dec_layer.")
    params = solutions.decoder_layer_params_from_torch(d)
    out = solutions.decoder_layer(d["tgt"], d["memory"], params, 2, self_mask=d["tgt_mask"])
    np.testing.assert_allclose(out, d["out"], **TOL)


def test_whole_nn_transformer_with_final_norms(ref):
    d = group(ref, "transformer.")
    config = solutions.TransformerConfig(src_vocab_size=7, tgt_vocab_size=9, d_model=8,
                                         num_heads=2, d_ff=16, final_layer_norm=True)
    tree = subtree(solutions.transformer_weights_from_torch(d, 2, 2), "")
    memory = solutions.encoder_stack(d["src"], tree["encoder"], config)
    out = solutions.decoder_stack(d["tgt"], memory, tree["decoder"], config,
                                  self_mask=solutions.causal_mask(3))
    np.testing.assert_allclose(out, d["out"], **TOL)


def test_transformer_from_torch_takes_the_converted_weights(ref):
    d = group(ref, "transformer.")
    config = solutions.TransformerConfig(src_vocab_size=7, tgt_vocab_size=9, d_model=8,
                                         num_heads=2, d_ff=16, final_layer_norm=True)
    rng = np.random.default_rng(0)
    generator_weight = rng.normal(size=(9, 8))  # nn.Linear layout (V, d_model)
    model = solutions.Transformer.from_torch(config, d, rng.normal(size=(7, 8)),
                                             rng.normal(size=(9, 8)), generator_weight,
                                             np.zeros(9))
    np.testing.assert_array_equal(model.weights["generator.W"], generator_weight.T)
    np.testing.assert_array_equal(model.weights["decoder.layers.1.cross_attn.W_V"],
                                  d["decoder.layers.1.multihead_attn.in_proj_weight"][16:].T)
    assert model.log_probs(np.array([[1, 2, 3]]), np.array([[0, 4]])).shape == (1, 2, 9)


def test_layer_norm(ref):
    d = group(ref, "layer_norm.")
    np.testing.assert_allclose(solutions.layer_norm(d["x"], d["weight"], d["bias"]), d["out"], **TOL)


def test_cross_entropy_with_ignore_index(ref):
    d = group(ref, "ce.")
    loss, cache = solutions.softmax_cross_entropy_forward(d["logits"], d["targets"])
    assert loss == pytest.approx(float(d["loss"]), rel=1e-12)
    np.testing.assert_allclose(solutions.softmax_cross_entropy_backward(1.0, cache), d["dlogits"], **TOL)


def test_fixture_records_its_torch_version(ref):
    assert str(ref["torch_version"]).startswith("2.")
