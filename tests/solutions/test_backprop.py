"""The training pass (solutions.backprop) against torch.autograd on the same weights
(tests/fixtures/torch_gradients.npz, made by make_torch_gradients.py) and against finite
differences: every layer, the whole model, tied and untied, with padding and label smoothing."""

from pathlib import Path

import numpy as np
import pytest

import solutions
from solutions._params import flatten
from solutions.backprop import loss_and_gradients, transformer_backward, transformer_forward
from solutions.masks import padding_mask
from solutions.torch_layout import (decoder_layer_params_from_torch, encoder_layer_params_from_torch,
                                    linear_from_torch, transformer_weights_from_torch)
from solutions.transformer_layers import (decoder_layer_backward, decoder_layer_forward,
                                          encoder_layer_backward, encoder_layer_forward)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "torch_gradients.npz"
TOL = dict(rtol=0, atol=1e-10)
PAD = 0


@pytest.fixture(scope="module")
def ref():
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def group(ref, prefix):
    return {name[len(prefix):]: value for name, value in ref.items() if name.startswith(prefix)}


def model_of(d, tied):
    config = solutions.TransformerConfig(7, 9, d_model=8, num_heads=2, d_ff=16, final_layer_norm=True,
                                         tie_output=tied)
    weights = transformer_weights_from_torch(d, 2, 2)
    weights.update(src_embedding=d["src_embedding"], tgt_embedding=d["tgt_embedding"],
                   **{"generator.b": d["generator.bias"]})
    if not tied:
        weights["generator.W"] = linear_from_torch(d["generator.weight"])[0]
    return solutions.Transformer(config, weights)


def torch_gradients(d, tied):
    """torch's gradients, converted to the kit's names and layouts as the weights are."""
    g = group(d, "grad.")
    grads = transformer_weights_from_torch(g, 2, 2)
    grads.update(src_embedding=g["src_embedding"], tgt_embedding=g["tgt_embedding"],
                 **{"generator.b": g["generator.bias"]})
    if not tied:
        grads["generator.W"] = g["generator.weight"].T
    return grads


@pytest.mark.parametrize("case, tied", [("model", False), ("tied", True)])
def test_every_gradient_of_the_whole_model_equals_autograd(ref, case, tied):
    d = group(ref, f"{case}.")
    model = model_of(d, tied)
    loss, grads = loss_and_gradients(model, d["src"], d["tgt"], d["targets"], d["src_lengths"],
                                     ignore_index=PAD, label_smoothing=float(d["smoothing"]))
    assert loss == pytest.approx(float(d["loss"]), abs=1e-12)
    expected = torch_gradients(d, tied)
    assert sorted(grads) == sorted(expected) == sorted(model.weights)
    for name, grad in expected.items():
        np.testing.assert_allclose(grads[name], grad, **TOL, err_msg=name)


def test_the_encoder_layer_backward_equals_autograd(ref):
    d = group(ref, "enc_layer.")
    params = encoder_layer_params_from_torch(d)
    mask = padding_mask((d["padding"] == 0).sum(axis=1), 5)
    out, cache = encoder_layer_forward(d["x"], params, 2, mask)
    dx, grads = encoder_layer_backward(d["dout"], cache)
    np.testing.assert_allclose(dx, d["grad.x"], **TOL)
    expected = encoder_layer_params_from_torch(group(d, "grad."))
    for name, grad in flatten(expected).items():
        np.testing.assert_allclose(flatten(grads)[name], grad, **TOL, err_msg=name)


def test_the_decoder_layer_backward_equals_autograd_memory_included(ref):
    d = group(ref, "dec_layer.")
    params = decoder_layer_params_from_torch(d)
    memory_mask = padding_mask((d["padding"] == 0).sum(axis=1), 5)
    out, cache = decoder_layer_forward(d["y"], d["memory"], params, 2, solutions.causal_mask(4), memory_mask)
    dy, dmemory, grads = decoder_layer_backward(d["dout"], cache)
    np.testing.assert_allclose(dy, d["grad.y"], **TOL)
    np.testing.assert_allclose(dmemory, d["grad.memory"], **TOL)
    expected = decoder_layer_params_from_torch(group(d, "grad."))
    for name, grad in flatten(expected).items():
        np.testing.assert_allclose(flatten(grads)[name], grad, **TOL, err_msg=name)


def test_the_training_pass_is_the_evaluation_pass(ref):
    d = group(ref, "model.")
    model = model_of(d, tied=False)
    logits, _ = transformer_forward(model, d["src"], d["tgt"], d["src_lengths"])
    np.testing.assert_allclose(solutions.log_softmax(logits), model.log_probs(d["src"], d["tgt"], d["src_lengths"]),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("tied", [False, True])
def test_gradients_equal_centred_differences(tied):
    """Without torch: ∂loss/∂θ against (loss(θ + h) − loss(θ − h)) / 2h on entries of every
    kind of weight, a small model from a seed, padding and smoothing on."""
    config = solutions.TransformerConfig(6, 7, d_model=4, num_heads=2, d_ff=8, num_encoder_layers=1,
                                         num_decoder_layers=1, tie_output=tied)
    model = solutions.Transformer.from_seed(config, seed=3)
    src, lengths = np.array([[3, 4, 5], [5, 4, 0]]), np.array([3, 2])
    tgt, targets = np.array([[1, 3, 6], [1, 2, 5]]), np.array([[3, 6, 2], [2, 5, 0]])
    loss, grads = loss_and_gradients(model, src, tgt, targets, lengths, ignore_index=PAD, label_smoothing=0.1)
    rng, h = np.random.default_rng(0), 1e-6
    for name, value in model.weights.items():
        for flat in rng.choice(value.size, size=min(2, value.size), replace=False):
            index = np.unravel_index(flat, value.shape)
            keep = value[index]
            value[index] = keep + h
            up = loss_and_gradients(model, src, tgt, targets, lengths, PAD, 0.1)[0]
            value[index] = keep - h
            down = loss_and_gradients(model, src, tgt, targets, lengths, PAD, 0.1)[0]
            value[index] = keep
            assert grads[name][index] == pytest.approx((up - down) / (2 * h), abs=1e-7), (name, index)


def test_a_backward_without_decoder_layers_gives_the_encoder_zero_gradient():
    config = solutions.TransformerConfig(5, 5, d_model=4, num_heads=2, d_ff=8, num_encoder_layers=1,
                                         num_decoder_layers=0)
    model = solutions.Transformer.from_seed(config, seed=0)
    logits, cache = transformer_forward(model, np.array([[3, 4]]), np.array([[1, 3]]))
    grads = transformer_backward(np.ones_like(logits), cache)
    assert not grads["src_embedding"].any() and not grads["encoder.layers.0.ffn.W1"].any()
    assert grads["tgt_embedding"].any()


def test_the_fixture_records_its_torch_version(ref):
    assert str(ref["torch_version"]).startswith("2.")
