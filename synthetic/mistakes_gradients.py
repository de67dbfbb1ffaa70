"""More of the corpus's plausible mistakes (see synthetic.mistakes): gradients — the backward
pass through attention, the variance behind 1/√d_k and the softmax's derivative. Each is
computed here from the lecture's equations in plain NumPy (never from ``solutions`` or the
grader), with one step changed."""

from __future__ import annotations

import re

import numpy as np

from .mistakes_base import code_mistake, mistake, softmax

# --- attention_gradient ------------------------------------------------------------------------

GRAD = "attention_gradient"


def _forward(g, Q=None, K=None):
    """(A, Z, s) of softmax(QKᵀ·s) V with s = 1/√d_k."""
    Q = np.asarray(g.Q if Q is None else Q, dtype=float)
    K = np.asarray(g.K if K is None else K, dtype=float)
    s = 1 / np.sqrt(Q.shape[1])
    A = softmax(Q @ K.T * s)
    return A, A @ np.asarray(g.V, dtype=float), s


def _dA(g):
    return np.asarray(g.dZ, dtype=float) @ np.asarray(g.V, dtype=float).T


def _loss(g, Q=None, K=None):
    return float(np.sum(_forward(g, Q, K)[1] * g.dZ))


def _check_entry(g):
    """(row, column, step h) the gradient-check part names in its prompt."""
    prompt = g.prompt("grad_check")
    r, c = (int(x) for x in re.search(r"E\[(\d+), (\d+)\] = 1", prompt).groups())
    h = float(re.search(r"\$h = ([0-9.]+)\$", prompt).group(1))
    return r, c, h


def _shifted(g, sign, on_keys=False):
    r, c, h = _check_entry(g)
    base = np.asarray(g.K if on_keys else g.Q, dtype=float)
    E = np.zeros_like(base)
    E[r, c] = 1.0
    return _loss(g, K=base + sign * h * E) if on_keys else _loss(g, Q=base + sign * h * E)


@mistake(GRAD, "dA", "dZ Vᵀ/√d_k: the forward scale put on dA", accept=["attention_weights_backward_scaled"])
def grad2_da_scaled(g):
    return _dA(g) * _forward(g)[2]


@mistake(GRAD, "dV", "Aᵀ dZ/√d_k: the scale applied to dV too", accept=["attention_backward_dv_scaled"])
def grad2_dv_scaled(g):
    A, _, s = _forward(g)
    return A.T @ np.asarray(g.dZ, dtype=float) * s


@mistake(GRAD, "dS", "A ⊙ (dA − Σ dA): the row term without the weights", accept=["softmax_backward_sum_without_p"])
def grad2_ds_sum_without_a(g):
    A = _forward(g)[0]
    dA = _dA(g)
    return A * (dA - dA.sum(axis=1, keepdims=True))


@mistake(GRAD, "dS", "dA − Σ dA·A: the factor A in front dropped", accept=["softmax_backward_no_outer_p"])
def grad2_ds_no_outer_a(g):
    A = _forward(g)[0]
    dA = _dA(g)
    return dA - (dA * A).sum(axis=1, keepdims=True)


@mistake(GRAD, "dS", "A ⊙ (Σ dA·A − dA): the sign flipped", accept=["softmax_backward_sign_flipped"])
def grad2_ds_sign(g):
    A = _forward(g)[0]
    dA = _dA(g)
    return A * ((dA * A).sum(axis=1, keepdims=True) - dA)


@mistake(GRAD, "grad_check", "a one-sided difference (ℓ(Q + hE) − ℓ(Q))/h with the given step h",
         accept=["gradient_check_one_sided"])
def grad2_check_one_sided(g):
    return (_shifted(g, +1) - _loss(g)) / _check_entry(g)[2]


@mistake(GRAD, "grad_check", "the entry of K moved by ±h instead of the entry of Q",
         accept=["gradient_check_on_keys"])
def grad2_check_on_keys(g):
    return (_shifted(g, +1, on_keys=True) - _shifted(g, -1, on_keys=True)) / (2 * _check_entry(g)[2])


@mistake(GRAD, "grad_check", "the centred difference over h instead of 2h", accept=["gradient_check_over_h"])
def grad2_check_no_half(g):
    return (_shifted(g, +1) - _shifted(g, -1)) / _check_entry(g)[2]


@mistake(GRAD, "grad_check", "the analytic dQ entry given instead of a finite difference",
         accept=["gradient_check_analytic"])
def grad2_check_analytic(g):
    r, c, _ = _check_entry(g)
    A, _, s = _forward(g)
    dA = _dA(g)
    dS = A * (dA - (dA * A).sum(axis=1, keepdims=True))
    return float((dS @ np.asarray(g.K, dtype=float) * s)[r, c])


# --- why_sqrt_dk -------------------------------------------------------------------------------

WHY = "why_sqrt_dk"
PAIR = np.array([110.0, 58.0])


@mistake(WHY, "scaled_row", "multiplied by √d_k instead of divided", accept=["sdpa_multiply_by_sqrt_d_k"])
def why2_scaled_times(g):
    return np.asarray(g.scores, dtype=float) * np.sqrt(g.d_k)


@mistake(WHY, "max_scaled", "the largest unscaled weight given for the scaled one",
         accept=["sdpa_no_scale", "sdpa_multiply_by_sqrt_d_k"])
def why2_max_scaled_unscaled(g):
    return float(softmax(np.asarray(g.scores, dtype=float)).max())


@mistake(WHY, "pair_weight_scaled", "the unscaled two-key weight (1.000) given", accept=["sdpa_no_scale", "sdpa_multiply_by_sqrt_d_k"])
def why2_pair_unscaled(g):
    return float(softmax(PAIR)[0])


@mistake(WHY, "pair_weight_scaled", "110/√768 and 58/√768 scaled, then exp(3.97)/(exp(3.97) + exp(2.09)) with the exponent rounded",
         accept=[])
def why2_pair_rounded(g):
    return float(np.exp(4.0) / (np.exp(4.0) + np.exp(2.0)))


# --- softmax_gradient --------------------------------------------------------------------------

SOFTMAX = "softmax_gradient"


@code_mistake(SOFTMAX, "dp passed on unchanged: the softmax's backward step skipped", accept=["softmax_backward_skipped"])
def softmax2_grad_skipped(dp, cache):
    return np.array(dp, dtype=float, copy=True)


@code_mistake(SOFTMAX, "the row sum over the whole array, not per row", accept=["softmax_backward_sum_over_all_entries"])
def softmax2_grad_sum_everything(dp, cache):
    p = np.asarray(cache, dtype=float)
    return p * (dp - np.sum(dp * p))
