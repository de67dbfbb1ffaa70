"""Plausible mistakes in attention_gradient: the backward pass through scaled dot-product
attention, part by part (dV, dA, the softmax's backward dS, dQ, dK, and the gradient check)."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake, softmax

# --- attention_gradient ------------------------------------------------------------------------

GRAD = "attention_gradient"


def _forward(g, Q=None, K=None):
    Q = g.Q if Q is None else Q
    K = g.K if K is None else K
    scale = 1 / np.sqrt(Q.shape[1])
    A = softmax(Q @ K.T * scale)
    return A, A @ g.V, scale


def _dS(g):
    A, _, _ = _forward(g)
    dA = g.dZ @ g.V.T
    return A * (dA - (A * dA).sum(axis=1, keepdims=True))


@mistake(GRAD, "dV", "dZᵀ A: the transpose on the wrong side", accept=["attention_backward_dv_transposed"])
def grad_dv_transposed(g):
    return g.dZ.T @ _forward(g)[0]


@mistake(GRAD, "dV", "the scores S instead of the weights A: Sᵀ dZ", accept=["attention_backward_dv_from_scores"])
def grad_dv_scores(g):
    return (g.Q @ g.K.T / np.sqrt(g.Q.shape[1])).T @ g.dZ


@mistake(GRAD, "dA", "V dZᵀ: the transpose of dA", accept=["attention_weights_backward_transposed"])
def grad_da_transposed(g):
    return g.V @ g.dZ.T


@mistake(GRAD, "dA", "dZ Vᵀ multiplied by A (the softmax's chain started too early)", accept=["attention_weights_backward_times_weights"])
def grad_da_times_a(g):
    return (g.dZ @ g.V.T) * _forward(g)[0]


@mistake(GRAD, "dS", "the Jacobian's diagonal only: dA·A(1 − A)", accept=["softmax_backward_diagonal_only"])
def grad_ds_diagonal(g):
    A = _forward(g)[0]
    return (g.dZ @ g.V.T) * A * (1 - A)


@mistake(GRAD, "dS", "the softmax skipped: dS = dA", accept=["softmax_backward_skipped"])
def grad_ds_skipped(g):
    return g.dZ @ g.V.T


@mistake(GRAD, "dS", "A ⊙ dA: the row-sum term forgotten",
         accept=["softmax_backward_no_sum_term"])
def grad_ds_no_row_term(g):
    return (g.dZ @ g.V.T) * _forward(g)[0]


@mistake(GRAD, "dS", "the 1/√d_k already multiplied in", accept=["attention_weights_backward_scaled"])
def grad_ds_scaled(g):
    return _dS(g) / np.sqrt(g.Q.shape[1])


@mistake(GRAD, "dQ", "dS K without the 1/√d_k", accept=["attention_backward_no_scale"])
def grad_dq_no_scale(g):
    return _dS(g) @ g.K


@mistake(GRAD, "dQ", "dS K / d_k instead of / √d_k", accept=["attention_backward_divide_by_d_k"])
def grad_dq_by_dk(g):
    return _dS(g) @ g.K / g.Q.shape[1]


@mistake(GRAD, "dQ", "dA K/√d_k: the softmax's backward skipped", accept=["attention_backward_softmax_skipped"])
def grad_dq_softmax_skipped(g):
    return (g.dZ @ g.V.T) @ g.K / np.sqrt(g.Q.shape[1])


@mistake(GRAD, "dK", "dSᵀ Q without the 1/√d_k", accept=["attention_backward_no_scale"])
def grad_dk_no_scale(g):
    return _dS(g).T @ g.Q


@mistake(GRAD, "dK", "dSᵀ Q / d_k instead of / √d_k", accept=["attention_backward_divide_by_d_k"])
def grad_dk_by_dk(g):
    return _dS(g).T @ g.Q / g.Q.shape[1]


@mistake(GRAD, "dK", "dAᵀ Q/√d_k: the softmax's backward skipped", accept=["attention_backward_softmax_skipped"])
def grad_dk_softmax_skipped(g):
    return (g.dZ @ g.V.T).T @ g.Q / np.sqrt(g.Q.shape[1])


def _loss_shifted(g, sign, on_keys=False):
    r, c = (g.number(r"E\[(\d+), \d+\] = 1", "grad_check"), g.number(r"E\[\d+, (\d+)\] = 1", "grad_check"))
    E = np.zeros_like(g.K if on_keys else g.Q)
    E[r, c] = 1.0
    if on_keys:
        return float(np.sum(_forward(g, K=g.K + sign * 1e-4 * E)[1] * g.dZ))
    return float(np.sum(_forward(g, Q=g.Q + sign * 1e-4 * E)[1] * g.dZ))


@mistake(GRAD, "grad_check", "a one-sided difference (ℓ(Q + εE) − ℓ(Q))/ε")
def grad_check_one_sided(g):
    return (_loss_shifted(g, +1) - float(np.sum(_forward(g)[1] * g.dZ))) / 1e-4


@mistake(GRAD, "grad_check", "the centred difference divided by ε instead of 2ε")
def grad_check_no_half(g):
    return (_loss_shifted(g, +1) - _loss_shifted(g, -1)) / 1e-4


@mistake(GRAD, "grad_check", "K perturbed instead of Q (with a tiny step)", accept=["gradient_check_on_keys"])
def grad_check_on_keys(g):
    return (_loss_shifted(g, +1, True) - _loss_shifted(g, -1, True)) / 2e-4
