"""Twins of the alignment reference functions (issue 17's mistake search): each registered with
``add_twin``/``twin`` so that MISCONCEPTIONS stays the one registry.

The score mistakes come in pairs: ``additive_score_X`` for a part that asks for the scores and
``bahdanau_step_X`` for the whole step, whose weights and context carry the same mistake on.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np

from ._shapes import as_float, check_shapes
from .alignment import AlignmentStep, additive_score, attend, dot_score, general_score
from .masks import apply_mask
from .misconceptions import twin


def _parts(s, H, W, U, v):
    """The validated arguments of an additive score: s W (..., 1, n_a) and H U (..., S, n_a)."""
    s, H, W, U, v = (as_float(a, n) for a, n in ((s, "s"), (H, "H"), (W, "W"), (U, "U"), (v, "v")))
    check_shapes(s=(s, "... n_s"), H=(H, "... S n_h"), W=(W, "n_s n_a"), U=(U, "n_h n_a"),
                 v=(v, "n_a"))
    return (s @ W)[..., None, :], H @ U, v


def _sigmoid(x):
    with np.errstate(over="ignore"):        # exp(−x) overflows for x ≪ 0: σ is then 0, as it should
        return 1.0 / (1.0 + np.exp(-x))


def _key_masked(scores, mask):
    """The scores with the blocked source positions at −∞ (a (..., S) key mask), as ``attend``."""
    if mask is None:
        return scores
    return apply_mask(scores[..., None, :], np.asarray(mask)[..., None, :])[..., 0, :]


def _blend(weights, H):
    with np.errstate(over="ignore", invalid="ignore"):   # inf or NaN weights: the mistake, quietly
        return (weights[..., None, :] @ as_float(H, "H"))[..., 0, :]


# --- the additive score: what goes in, what comes out ---------------------------------------

@twin("additive_score",
      "additive scores with the tanh taken after v: tanh(v · (s W + h_j U))",
      "The tanh is the hidden layer of the alignment network: it acts on each of the n_a "
      "hidden units, e = v · tanh(s W + h_j U). Squashing the final score instead keeps every "
      "score in (−1, 1) and makes the network linear inside.",
      "np.tanh((s @ W + H @ U) @ v)           # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_tanh_after_v(s, H, W, U, v):
    decoder, encoder, v = _parts(s, H, W, U, v)
    return np.tanh((decoder + encoder) @ v)


@twin("additive_score",
      "additive scores with v left out: the tanh units summed, Σ_k tanh(s W + h_j U)_k",
      "v is a learned parameter: it weights the n_a hidden units, e = v · tanh(s W + h_j U). "
      "Summing the units treats v as all ones.",
      "np.tanh(s @ W + H @ U).sum(-1)         # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_no_v(s, H, W, U, v):
    decoder, encoder, _ = _parts(s, H, W, U, v)
    return np.tanh(decoder + encoder).sum(axis=-1)


@twin("additive_score",
      "additive scores with a sigmoid in place of the tanh: v · σ(s W + h_j U)",
      "Bahdanau's alignment network uses tanh, whose outputs lie in (−1, 1) and are centred on "
      "0; σ's lie in (0, 1), so every score changes.",
      "sigmoid(s @ W + H @ U) @ v             # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_sigmoid(s, H, W, U, v):
    decoder, encoder, v = _parts(s, H, W, U, v)
    return _sigmoid(decoder + encoder) @ v


@twin("additive_score",
      "additive scores with W and U swapped: v · tanh(s U + h_j W)",
      "W belongs to the decoder state and U to the encoder states: e = v · tanh(s W + h_j U). "
      "When both have the same shape nothing stops the swap, but every score changes.",
      "np.tanh(s @ U + H @ W) @ v             # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_W_U_swapped(s, H, W, U, v):
    return additive_score(s, H, U, W, v)      # raises unless the shapes allow the swap


# --- one Bahdanau step: the same score mistakes carried on, and the steps after ------------

def _step(scores, H, mask):
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "alignment scores with the tanh taken after v: e_ij = tanh(v · (s_{i−1} W + h_j U))",
      "The tanh is the alignment network's hidden layer: e_ij = v · tanh(s_{i−1} W + h_j U), "
      "tanh of each hidden unit, then the weighted sum with v. Squashing the final score keeps "
      "all scores in (−1, 1), so the weights come out too flat.",
      "e = np.tanh((s_prev @ W + H @ U) @ v)  # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_tanh_after_v(s_prev, H, W, U, v, mask=None):
    return _step(additive_score_tanh_after_v(s_prev, H, W, U, v), H, mask)


@twin("bahdanau_step",
      "alignment scores with v left out: the tanh units summed, e_ij = Σ_k tanh(s_{i−1} W + h_j U)_k",
      "v is a learned parameter that weights the hidden units: e_ij = v · tanh(s_{i−1} W + h_j U). "
      "Summing the units treats v as all ones, and every score changes.",
      "e = np.tanh(s_prev @ W + H @ U).sum(-1)  # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_no_v(s_prev, H, W, U, v, mask=None):
    return _step(additive_score_no_v(s_prev, H, W, U, v), H, mask)


@twin("bahdanau_step",
      "alignment scores with a sigmoid in place of the tanh: e_ij = v · σ(s_{i−1} W + h_j U)",
      "Bahdanau's alignment network uses tanh (outputs in (−1, 1), centred on 0); σ's outputs "
      "lie in (0, 1), so the scores, the weights and the context all change.",
      "e = sigmoid(s_prev @ W + H @ U) @ v    # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_sigmoid(s_prev, H, W, U, v, mask=None):
    return _step(additive_score_sigmoid(s_prev, H, W, U, v), H, mask)


@twin("bahdanau_step",
      "the weights softmax(e / √n_a): the scores scaled as in dot-product attention",
      "The 1/√d_k scale belongs to dot-product scores, whose spread grows with the dimension. "
      "Bahdanau's scores come out of a learned network and go into the softmax as they are: "
      "α_ij = softmax_j(e_ij).",
      "alpha = softmax(e / np.sqrt(len(v)))   # should be softmax(e)")
def bahdanau_step_scaled_by_sqrt_n_a(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, context = attend(scores / np.sqrt(np.shape(v)[-1]), H, mask)
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "the exponentials exp(e) used as weights without dividing by their sum",
      "α_ij = exp(e_ij) / Σ_k exp(e_ik): after exponentiating, divide by the sum so that the "
      "weights add up to 1 and the context is a weighted average of the encoder states.",
      "alpha = np.exp(e)                      # should be np.exp(e) / np.exp(e).sum()")
def bahdanau_step_exp_not_normalised(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    with np.errstate(over="ignore"):
        weights = np.exp(_key_masked(scores, mask))
    return AlignmentStep(scores, weights, _blend(weights, H))


@twin("bahdanau_step",
      "the context blended from the projected states h_j U instead of the encoder states h_j",
      "h_j U lives only inside the alignment network, to compute the scores. The context is a "
      "weighted average of the encoder states themselves: c_i = Σ_j α_ij h_j, with n_h numbers.",
      "c = alpha @ (H @ U)                    # should be alpha @ H")
def bahdanau_step_context_from_projected(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, _ = attend(scores, H, mask)
    return AlignmentStep(scores, weights, _blend(weights, as_float(H, "H") @ as_float(U, "U")))


@twin("bahdanau_step",
      "every source position weighted equally: the context is the plain average of the encoder states",
      "The point of attention is that the weights depend on the decoder state: "
      "α_ij = softmax_j(e_ij). Averaging the h_j gives every output word the same context — "
      "the fixed summary attention was invented to replace.",
      "c = H.mean(axis=0)                     # should be softmax(e) @ H")
def bahdanau_step_uniform_weights(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, context = attend(np.zeros_like(scores), H, mask)   # uniform over the real words
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "the padding mask ignored: the padded source positions still get weight",
      "The mask must reach the scores: padded positions are set to −∞ before the softmax, so "
      "their weight is exactly 0. Accepting the mask and never using it lets the padding in.",
      "alpha = softmax(e)                     # should be softmax(np.where(mask, e, -np.inf))")
def bahdanau_step_mask_ignored(s_prev, H, W, U, v, mask=None):
    return _step(additive_score(s_prev, H, W, U, v), H, None)


@twin("bahdanau_step",
      "the padded scores set to 0 instead of −∞, so the padding still gets weight",
      "exp(0) = 1: a padded position with score 0 still gets a share of the weight. Blocked "
      "scores must be −∞ (exp(−∞) = 0) for their weight to be exactly 0.",
      "e = np.where(mask, e, 0)               # should be np.where(mask, e, -np.inf)")
def bahdanau_step_mask_with_zero(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    filled = scores if mask is None else np.where(np.asarray(mask, dtype=bool), scores, 0.0)
    weights, context = attend(filled, H)
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "the softmax over the source positions without the max subtracted (NaN on large scores)",
      "exp overflows above ~709.8 in float64, giving inf/inf = NaN. Subtract the largest score "
      "first: it changes no weight mathematically.",
      "alpha = np.exp(e) / np.exp(e).sum()    # should be np.exp(e - e.max()) / …")
def bahdanau_step_no_max_subtraction(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(_key_masked(scores, mask))
        weights = e / e.sum(axis=-1, keepdims=True)
    return AlignmentStep(scores, weights, _blend(weights, H))


# --- the general (Luong) score --------------------------------------------------------------

@twin("general_score",
      "general scores with W_a transposed: h_j W_a sᵀ instead of s W_a h_jᵀ",
      "The state being scored multiplies W_a from the left: score = s W_a h_jᵀ, `s @ W_a @ h_j`. "
      "h_j W_a sᵀ is s W_aᵀ h_jᵀ — the same only when W_a is symmetric.",
      "H @ W_a @ s                            # should be H @ (s @ W_a)")
def general_score_W_transposed(s, H, W_a):
    return general_score(s, H, np.swapaxes(as_float(W_a, "W_a"), -1, -2))   # square W_a only


@twin("general_score",
      "general scores with W_a left out: the plain dot product s · h_j",
      "The general score puts a learned matrix between the two states, s W_a h_jᵀ: first "
      "s W_a, then its dot product with each h_j. Without W_a it is the dot score.",
      "H @ s                                  # should be H @ (s @ W_a)")
def general_score_without_W(s, H, W_a):
    check_shapes(W_a=(as_float(W_a, "W_a"), "n_s n_h"))
    return dot_score(s, H)                    # needs n_s = n_h, as the student's H @ s would


# --- the content (cosine) score -------------------------------------------------------------

def _dots(s, H):
    s, H = as_float(s, "s"), as_float(H, "H")
    return (H @ s[..., None])[..., 0], np.linalg.norm(s, axis=-1, keepdims=True)


@twin("content_score",
      "cosine scores divided only by ‖s‖, not by ‖h_j‖ (sᵀh_j / ‖s‖)",
      "cos(s, h_j) = sᵀh_j / (‖s‖ ‖h_j‖): both vectors are normalised. Leaving out ‖h_j‖ "
      "lets a long encoder state win on its length alone.",
      "H @ s / np.linalg.norm(s)              # should also divide by np.linalg.norm(H, axis=-1)")
def content_score_without_h_norm(s, H):
    dots, s_norm = _dots(s, H)
    return dots / s_norm


@twin("content_score",
      "cosine scores divided by ‖s‖² instead of ‖s‖ ‖h_j‖",
      "cos(s, h_j) = sᵀh_j / (‖s‖ ‖h_j‖): each vector contributes its own length. sᵀh_j / ‖s‖² "
      "is the length of h_j's projection onto s in units of ‖s‖, not a cosine.",
      "H @ s / np.linalg.norm(s) ** 2         # should be / (norm(s) * norm(H, axis=-1))")
def content_score_by_s_norm_squared(s, H):
    dots, s_norm = _dots(s, H)
    return dots / s_norm ** 2

