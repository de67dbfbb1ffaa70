"""Finite-difference checks of every backward pass in ``solutions``.

Each check differentiates the scalar loss sum(out * dout), with a random dout, by central
differences in float64 and compares it with the analytic gradient from ``*_backward``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import solutions

RELATIVE_TOLERANCE = 1e-6

# Shapes chosen so that no two sizes coincide: a transposed or misplaced axis cannot go unnoticed.
B, L, S, D_K, D_V, D_MODEL, HEADS, D_FF = 2, 3, 5, 4, 6, 8, 2, 7


def numerical_gradient(f, x, h=1e-6):
    """Central-difference gradient of the scalar function ``f`` at ``x`` (``x`` is not modified)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + h
        f_plus = f(x)
        x[index] = original - h
        f_minus = f(x)
        x[index] = original
        grad[index] = (f_plus - f_minus) / (2 * h)
    return grad


def relative_error(analytic, numeric):
    analytic, numeric = np.asarray(analytic), np.asarray(numeric)
    scale = max(np.max(np.abs(analytic)), np.max(np.abs(numeric)), 1e-12)
    return np.max(np.abs(analytic - numeric)) / scale


@dataclass(frozen=True)
class GradientCase:
    """make_inputs(rng) → keyword inputs of ``forward``; forward(**inputs) → (out, cache);
    backward(dout, cache) → one gradient per name in ``wrt``, in that order (a tuple, or a
    bare array when there is only one)."""

    make_inputs: Callable[[np.random.Generator], dict]
    forward: Callable[..., tuple]
    backward: Callable[..., tuple]
    wrt: tuple[str, ...]


def attention_mask_with_blocked_entries():
    mask = np.ones((B, L, S), dtype=bool)
    mask[0, 0, 3:] = False
    mask[0, 2, 0] = False
    mask[1, 1, 1:4] = False
    return mask


def attention_mask_with_fully_masked_row():
    mask = attention_mask_with_blocked_entries()
    mask[0, 1, :] = False
    return mask


FULLY_MASKED_ROW = (0, 1)


def attention_inputs(mask):
    def make(rng):
        return {"Q": rng.standard_normal((B, L, D_K)), "K": rng.standard_normal((B, S, D_K)),
                "V": rng.standard_normal((B, S, D_V)), "mask": mask}
    return make


def ffn_inputs(rng):
    inputs = {"x": rng.standard_normal((B, L, D_MODEL)), "W1": rng.standard_normal((D_MODEL, D_FF)),
              "b1": rng.standard_normal(D_FF), "W2": rng.standard_normal((D_FF, D_MODEL)),
              "b2": rng.standard_normal(D_MODEL)}
    # ReLU has a kink at 0: a pre-activation within h of it would make the finite difference
    # straddle the kink and disagree with any correct gradient.
    pre_activation = inputs["x"] @ inputs["W1"] + inputs["b1"]
    assert np.min(np.abs(pre_activation)) > 1e-3, "reseed: a pre-activation is too close to 0"
    return inputs


def cross_entropy_inputs(rng):
    targets = rng.integers(0, 7, size=(B, S))
    targets[0, 1] = targets[1, 4] = solutions.losses.IGNORE_INDEX
    return {"logits": rng.standard_normal((B, S, 7)), "targets": targets}


def mha_params(rng):
    # Weights scaled by 1/√fan_in keep the softmax away from saturation, where a wrong dS
    # would hide behind near-zero Jacobians.
    def weight(fan_in, fan_out):
        return rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)

    return {"W_Q": weight(D_MODEL, HEADS * D_K), "b_Q": rng.standard_normal(HEADS * D_K),
            "W_K": weight(D_MODEL, HEADS * D_K), "b_K": rng.standard_normal(HEADS * D_K),
            "W_V": weight(D_MODEL, HEADS * D_V), "b_V": rng.standard_normal(HEADS * D_V),
            "W_O": weight(HEADS * D_V, D_MODEL), "b_O": rng.standard_normal(D_MODEL)}


def cross_attention_inputs(rng):
    return {"query": rng.standard_normal((B, L, D_MODEL)), "key": rng.standard_normal((B, S, D_MODEL)),
            "value": rng.standard_normal((B, S, D_MODEL)),
            "mask": attention_mask_with_blocked_entries(), **mha_params(rng)}


def self_attention_inputs(rng):
    return {"x": rng.standard_normal((B, S, D_MODEL)), "mask": solutions.causal_mask(S),
            **mha_params(rng)}


def cross_attention_forward(query, key, value, mask, **params):
    return solutions.mha_forward(query, key, value, params, HEADS, mask)


def self_attention_forward(x, mask, **params):
    return solutions.mha_forward(x, x, x, params, HEADS, mask)


def cross_attention_backward(dout, cache):
    dquery, dkey, dvalue, grads = solutions.mha_backward(dout, cache)
    return (dquery, dkey, dvalue, *(grads[name] for name in solutions.multihead.MHA_PARAM_NAMES))


def self_attention_backward(dout, cache):
    dquery, dkey, dvalue, _ = solutions.mha_backward(dout, cache)
    return (dquery + dkey + dvalue,)


CASES = {
    "softmax": GradientCase(
        lambda rng: {"x": rng.standard_normal((B, L, S))},
        solutions.softmax_forward, solutions.softmax_backward, ("x",)),
    "attention": GradientCase(
        attention_inputs(mask=None), solutions.attention_forward, solutions.attention_backward,
        ("Q", "K", "V")),
    "attention_masked": GradientCase(
        attention_inputs(attention_mask_with_blocked_entries()), solutions.attention_forward,
        solutions.attention_backward, ("Q", "K", "V")),
    "attention_fully_masked_row": GradientCase(
        attention_inputs(attention_mask_with_fully_masked_row()), solutions.attention_forward,
        solutions.attention_backward, ("Q", "K", "V")),
    "linear": GradientCase(
        lambda rng: {"x": rng.standard_normal((B, L, D_K)), "W": rng.standard_normal((D_K, D_V)),
                     "b": rng.standard_normal(D_V)},
        solutions.linear_forward, solutions.linear_backward, ("x", "W", "b")),
    "layer_norm": GradientCase(
        lambda rng: {"x": rng.standard_normal((B, L, D_MODEL)),
                     "gamma": rng.standard_normal(D_MODEL), "beta": rng.standard_normal(D_MODEL)},
        solutions.layer_norm_forward, solutions.layer_norm_backward, ("x", "gamma", "beta")),
    "ffn": GradientCase(
        ffn_inputs, solutions.ffn_forward, solutions.ffn_backward, ("x", "W1", "b1", "W2", "b2")),
    "softmax_cross_entropy": GradientCase(
        cross_entropy_inputs, solutions.softmax_cross_entropy_forward,
        solutions.softmax_cross_entropy_backward, ("logits",)),
    "mha_cross_attention": GradientCase(
        cross_attention_inputs, cross_attention_forward, cross_attention_backward,
        ("query", "key", "value", *solutions.multihead.MHA_PARAM_NAMES)),
    "mha_self_attention": GradientCase(
        self_attention_inputs, self_attention_forward, self_attention_backward, ("x",)),
}


# b_K shifts every score of a query row by the same q·b_K, which the softmax ignores.
IDENTICALLY_ZERO = {("mha_cross_attention", "b_K")}


def analytic_and_numeric_gradient(case: GradientCase, wrt: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    inputs = case.make_inputs(rng)
    out, cache = case.forward(**inputs)
    dout = rng.standard_normal(np.shape(out))
    gradients = case.backward(dout, cache)
    if isinstance(gradients, np.ndarray):
        gradients = (gradients,)
    assert len(gradients) == len(case.wrt)
    analytic = dict(zip(case.wrt, gradients))[wrt]

    def loss(perturbed):
        return np.sum(case.forward(**{**inputs, wrt: perturbed})[0] * dout)

    numeric = numerical_gradient(loss, inputs[wrt])
    assert np.shape(analytic) == np.shape(numeric)
    return analytic, numeric


@pytest.mark.parametrize("case_name, wrt", [
    pytest.param(case_name, wrt, id=f"{case_name}-d{wrt}")
    for case_name, case in CASES.items() for wrt in case.wrt])
def test_backward_matches_central_differences(case_name, wrt):
    analytic, numeric = analytic_and_numeric_gradient(CASES[case_name], wrt)
    if (case_name, wrt) in IDENTICALLY_ZERO:
        # A relative error of two round-off-sized arrays is meaningless; compare to 0 instead.
        assert np.max(np.abs(analytic)) < 1e-10 and np.max(np.abs(numeric)) < 1e-7
    else:
        assert relative_error(analytic, numeric) < RELATIVE_TOLERANCE


def test_fully_masked_row_gets_zero_output_and_finite_zero_gradient():
    inputs = attention_inputs(attention_mask_with_fully_masked_row())(np.random.default_rng(0))
    out, cache = solutions.attention_forward(**inputs)
    dQ, dK, dV = solutions.attention_backward(np.random.default_rng(1).standard_normal(out.shape), cache)
    assert all(np.isfinite(grad).all() for grad in (dQ, dK, dV))
    assert np.all(out[FULLY_MASKED_ROW] == 0)
    assert np.all(dQ[FULLY_MASKED_ROW] == 0)


@pytest.mark.parametrize("case_name, wrt, twin_name", [
    ("softmax", "x", "softmax_backward_diagonal_only"),
    ("softmax_cross_entropy", "logits", "softmax_cross_entropy_backward_not_averaged"),
    ("attention_masked", "Q", "attention_backward_no_scale"),
    ("attention_masked", "K", "attention_backward_no_scale"),
])
def test_checker_flags_wrong_backward(case_name, wrt, twin_name):
    twin = solutions.get_twin(twin_name).function
    wrong_case = dataclasses.replace(CASES[case_name], backward=twin)
    analytic, numeric = analytic_and_numeric_gradient(wrong_case, wrt)
    assert relative_error(analytic, numeric) > 1e-3
