"""Plausible mistakes in the one-training-step family (one_training_step): the forward pass to
the loss, the gradient to W_O and to one attention logit, and the loss after an SGD step."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake, softmax

STEP = "one_training_step"


def _forward(g):
    Q, K, V = g.X @ g.W_Q, g.X @ g.W_K, g.X @ g.W_V
    P = softmax(Q @ K.T / np.sqrt(2.0))
    Z = P @ V
    return P, V, Z, softmax(Z @ g.W_O)


def _loss(probs, y):
    return float(-np.mean(np.log(probs[np.arange(2), np.asarray(y)])))


def _dlogits(g, probs):
    onehot = np.eye(3)[np.asarray(g.y)]
    return (probs - onehot) / 2.0


def _dP(g):
    P, V, Z, probs = _forward(g)
    return P, (_dlogits(g, probs) @ g.W_O.T) @ V.T


@mistake(STEP, "probs", "the softmax taken over the two tokens (columns sum to 1)", accept=["softmax_axis_0"])
def probs_over_tokens(g):
    Z = _forward(g)[2]
    return softmax(Z @ g.W_O, axis=0)


@mistake(STEP, "probs", "the logits ZW_O given for the probabilities")
def probs_logits(g):
    return _forward(g)[2] @ g.W_O


@mistake(STEP, "loss", "the sum over the two tokens instead of the mean")
def loss_summed(g):
    return 2 * _loss(_forward(g)[3], g.y)


@mistake(STEP, "loss", "token 0's loss alone")
def loss_first_token(g):
    return float(-np.log(_forward(g)[3][0, int(np.asarray(g.y)[0])]))


@mistake(STEP, "dW_O", "the gradient not divided by the 2 tokens", accept=["softmax_cross_entropy_backward_not_averaged"])
def dW_O_not_averaged(g):
    P, V, Z, probs = _forward(g)
    return Z.T @ (2 * _dlogits(g, probs))


@mistake(STEP, "dW_O", "onehot(y) − softmax(L): the sign flipped", accept=["softmax_cross_entropy_backward_sign_flipped"])
def dW_O_sign(g):
    P, V, Z, probs = _forward(g)
    return -(Z.T @ _dlogits(g, probs))


@mistake(STEP, "dW_O", "softmax(L)/2 without the one-hot target", accept=["softmax_cross_entropy_backward_no_onehot"])
def dW_O_no_onehot(g):
    P, V, Z, probs = _forward(g)
    return Z.T @ (probs / 2.0)


@mistake(STEP, "dW_O", "the logits' gradient ∂ℓ/∂L given for W_O's (Zᵀ left out)")
def dW_O_without_Z(g):
    return _dlogits(g, _forward(g)[3])


@mistake(STEP, "dlogit", "the softmax's backward step skipped: ∂ℓ/∂P_ij given for ∂ℓ/∂S_ij",
         accept=["softmax_backward_skipped"])
def dlogit_skipped(g):
    P, dP = _dP(g)
    return float(dP[g.i, g.j])


@mistake(STEP, "dlogit", "the softmax's gradient with its sign flipped", accept=["softmax_backward_sign_flipped"])
def dlogit_sign(g):
    P, dP = _dP(g)
    return float(-(P * (dP - np.sum(dP * P, axis=-1, keepdims=True)))[g.i, g.j])


@mistake(STEP, "dlogit", "the gradient of the unscaled score QKᵀ: divided by √2 once more")
def dlogit_unscaled(g):
    P, dP = _dP(g)
    return float((P * (dP - np.sum(dP * P, axis=-1, keepdims=True)))[g.i, g.j] / np.sqrt(2.0))


@mistake(STEP, "loss_after", "the step taken up the gradient: W_O + η ∂ℓ/∂W_O")
def loss_after_uphill(g):
    P, V, Z, probs = _forward(g)
    W = g.W_O + g.eta * (Z.T @ _dlogits(g, probs))
    return _loss(softmax(Z @ W), g.y)


@mistake(STEP, "loss_after", "the loss before the step")
def loss_after_unchanged(g):
    return _loss(_forward(g)[3], g.y)
