"""Twins of the alignment reference functions, for the build's mistake search: each registered with
``add_twin``/``twin`` so that TWINS stays the one registry.

The score mistakes come in pairs: ``additive_score_X`` for a part that asks for the scores and
``bahdanau_step_X`` for the whole step, whose weights and context carry the same mistake on.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np

from .._shapes import as_float, check_shapes
from ..alignment import AlignmentStep, additive_score, attend, dot_score, general_score
from ..masks import apply_mask
from .registry import add_twin, twin


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
      "Apply the tanh to each hidden unit of s W + h_j U first, then take the dot product with "
      "v: e = v · tanh(s W + h_j U). Taking the tanh of the final score instead squashes every "
      "score into (−1, 1).",
      "np.tanh((s @ W + H @ U) @ v)           # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_tanh_after_v(s, H, W, U, v):
    decoder, encoder, v = _parts(s, H, W, U, v)
    return np.tanh((decoder + encoder) @ v)


@twin("additive_score",
      "additive scores with v left out: the tanh units summed, Σ_k tanh(s W + h_j U)_k",
      "Take the dot product of the tanh units with the learned v: e = v · tanh(s W + h_j U). "
      "Summing the units instead is the same as using v = (1, …, 1).",
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


@twin("additive_score",
      "additive scores without the decoder state: v · tanh(h_j U), the s W term left out",
      "The score compares the decoder state with each encoder state, so both go into the "
      "tanh: v · tanh(s W + h_j U). Add s W (one row, the same for every j) to every row of "
      "H U before the tanh.",
      "np.tanh(H @ U) @ v                     # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_without_state(s, H, W, U, v):
    _, encoder, v = _parts(s, H, W, U, v)
    return np.tanh(encoder) @ v


# --- one Bahdanau step: the same score mistakes carried on, and the steps after ------------

def _step(scores, H, mask):
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


def _step_twin(name: str, score_twin, summary: str, explanation: str, code: str):
    """Register the Bahdanau step that carries an additive-score twin's mistake on into the
    weights and the context (``solutions.same_error`` groups the two)."""
    def function(s_prev, H, W, U, v, mask=None):
        return _step(score_twin(s_prev, H, W, U, v), H, mask)
    return add_twin(name, "bahdanau_step", function, summary, explanation, code)


_step_twin(
    "bahdanau_step_tanh_after_v", additive_score_tanh_after_v,
    "alignment scores with the tanh taken after v: e_ij = tanh(v · (s_{i−1} W + h_j U))",
    "Apply the tanh to each hidden unit of s_{i−1} W + h_j U first, then take the dot "
    "product with v: e_ij = v · tanh(s_{i−1} W + h_j U). Taking the tanh of the final score "
    "instead squashes every score into (−1, 1), and the weights and the context change.",
    "e = np.tanh((s_prev @ W + H @ U) @ v)  # should be np.tanh(s_prev @ W + H @ U) @ v")


_step_twin(
    "bahdanau_step_no_v", additive_score_no_v,
    "alignment scores with v left out: the tanh units summed, e_ij = Σ_k tanh(s_{i−1} W + h_j U)_k",
    "Take the dot product of the tanh units with the learned v: "
    "e_ij = v · tanh(s_{i−1} W + h_j U). Summing the units instead is the same as using "
    "v = (1, …, 1), and every score changes.",
    "e = np.tanh(s_prev @ W + H @ U).sum(-1)  # should be np.tanh(s_prev @ W + H @ U) @ v")


_step_twin(
    "bahdanau_step_sigmoid", additive_score_sigmoid,
    "alignment scores with a sigmoid in place of the tanh: e_ij = v · σ(s_{i−1} W + h_j U)",
    "Bahdanau's alignment network uses tanh (outputs in (−1, 1), centred on 0); σ's outputs "
    "lie in (0, 1), so the scores, the weights and the context all change.",
    "e = sigmoid(s_prev @ W + H @ U) @ v    # should be np.tanh(s_prev @ W + H @ U) @ v")


@twin("bahdanau_step",
      "alignment scores from the paper's column form typed as it is printed: `W @ s_prev` and "
      "`U @ h_j`, both matrices transposed",
      "Bahdanau's paper writes column vectors, W s_{i−1} + U h_j. Here every vector is a row "
      "vector and the matrices multiply from the right: s_{i−1} W + h_j U, in NumPy "
      "`s_prev @ W + H @ U`. `W @ s_prev` and `U @ h_j` use W and U transposed; the shapes "
      "only fit when both are square.",
      "e = np.tanh(W @ s_prev + H @ U.T) @ v  # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_W_U_transposed(s_prev, H, W, U, v, mask=None):
    W, U = (np.swapaxes(as_float(a, n), -1, -2) for a, n in ((W, "W"), (U, "U")))
    return _step(additive_score(s_prev, H, W, U, v), H, mask)      # square W and U only


_step_twin(
    "bahdanau_step_without_state", additive_score_without_state,
    "alignment scores without the decoder state: e_ij = v · tanh(h_j U), the s_{i−1} W term "
    "left out",
    "The score compares the previous decoder state with each encoder state, so both go into "
    "the tanh: e_ij = v · tanh(s_{i−1} W + h_j U). Without s_{i−1} W the weights would be "
    "the same at every decoder step, and so would the context.",
    "e = np.tanh(H @ U) @ v                 # should be np.tanh(s_prev @ W + H @ U) @ v")


@twin("bahdanau_step",
      "the weights softmax(e / √n_a), n_a the number of entries of v: the scores scaled as in "
      "dot-product attention",
      "The 1/√d_k scale belongs to dot-product scores. Bahdanau's scores come out of a small "
      "learned network and go into the softmax as they are: α_ij = softmax_j(e_ij).",
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
      "the weights e_ij / Σ_k e_ik: the scores divided by their sum, without the exp",
      "The softmax takes exp first: α_ij = exp(e_ij) / Σ_k exp(e_ik). exp makes every weight "
      "positive; the scores themselves can be negative, so dividing them by their sum gives "
      "weights below 0 or above 1.",
      "alpha = e / e.sum()                    # should be np.exp(e) / np.exp(e).sum()")
def bahdanau_step_normalised_without_exp(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    kept = scores if mask is None else np.where(np.asarray(mask, dtype=bool), scores, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = kept / kept.sum(axis=-1, keepdims=True)
    return AlignmentStep(scores, weights, _blend(weights, H))


@twin("bahdanau_step",
      "the softmax taken over the batch axis (axis=0) instead of over the source positions",
      "The weights of one decoder state are a softmax over its own S source positions, the "
      "last axis: softmax(e, axis=-1). With a batch, e is (B, S) and axis=0 mixes the scores "
      "of different sentences, so the weights of a sentence no longer sum to 1.",
      "alpha = softmax(e, axis=0)             # should be softmax(e, axis=-1)")
def bahdanau_step_softmax_over_batch(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    masked = _key_masked(scores, mask)
    with np.errstate(invalid="ignore"):
        e = np.exp(masked - masked.max(axis=0, keepdims=True))
        weights = e / e.sum(axis=0, keepdims=True)
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
      "the padding zeroed after the softmax, so the weights no longer sum to 1",
      "Block the padding before the softmax (scores → −∞) so that the real words share the "
      "whole weight. Multiplying the weights by the mask afterwards leaves them summing to "
      "less than 1.",
      "alpha = softmax(e) * mask              # should be softmax(np.where(mask, e, -np.inf))")
def bahdanau_step_mask_after_softmax(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, _ = attend(scores, H)
    if mask is not None:
        weights = weights * np.asarray(mask, dtype=bool)
    return AlignmentStep(scores, weights, _blend(weights, H))


@twin("bahdanau_step",
      "the softmax over the source positions without the max subtracted (NaN on large scores)",
      "np.exp gives inf for scores above about 709.8, and inf / inf is NaN. Subtract the "
      "largest score before exponentiating: the weights stay exactly the same.",
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
      "The decoder state comes first: s W_a h_jᵀ is `s @ W_a @ h_j`. Putting h_j first "
      "(`h_j @ W_a @ s`) uses W_a transposed, which gives the same scores only when W_a is "
      "symmetric.",
      "H @ W_a @ s                            # should be H @ (s @ W_a)")
def general_score_W_transposed(s, H, W_a):
    return general_score(s, H, np.swapaxes(as_float(W_a, "W_a"), -1, -2))   # square W_a only


@twin("general_score",
      "general scores with W_a left out: the plain dot product s · h_j",
      "The general score puts the learned matrix W_a between the two states, s W_a h_jᵀ: "
      "first s W_a, then its dot product with each h_j. Without W_a it is the dot score.",
      "H @ s                                  # should be H @ (s @ W_a)")
def general_score_without_W(s, H, W_a):
    check_shapes(W_a=(as_float(W_a, "W_a"), "n_s n_h"))
    return dot_score(s, H)                    # needs n_s = n_h, as the student's H @ s would


# --- the content (cosine) score -------------------------------------------------------------

def _dots(s, H):
    s, H = as_float(s, "s"), as_float(H, "H")
    return (H @ s[..., None])[..., 0], np.linalg.norm(s, axis=-1, keepdims=True)


@twin("content_score",
      "cosine scores divided only by ‖s‖, not by ‖h_j‖ (s · h_j / ‖s‖)",
      "cos(s, h_j) = s · h_j / (‖s‖ ‖h_j‖): divide by the lengths of both vectors. Leaving out "
      "‖h_j‖ lets a long encoder state win on its length alone.",
      "H @ s / np.linalg.norm(s)              # should also divide by np.linalg.norm(H, axis=-1)")
def content_score_without_h_norm(s, H):
    dots, s_norm = _dots(s, H)
    return dots / s_norm


@twin("content_score",
      "cosine scores divided by ‖s‖² instead of ‖s‖ ‖h_j‖",
      "cos(s, h_j) = s · h_j / (‖s‖ ‖h_j‖): divide by the length of each vector once — ‖s‖ "
      "and ‖h_j‖, not ‖s‖ twice.",
      "H @ s / np.linalg.norm(s) ** 2         # should be / (norm(s) * norm(H, axis=-1))")
def content_score_by_s_norm_squared(s, H):
    dots, s_norm = _dots(s, H)
    return dots / s_norm ** 2


# --- which encoder state wins ------------------------------------------------------------------

def _winner_from_zero(scores):
    scores = as_float(scores, "scores")
    return int(np.argmax(scores))


add_twin("winner_counted_from_zero", "winner", _winner_from_zero,
         "the winner counted from 0 (NumPy's argmax) where the encoder states are numbered from 1",
         "np.argmax gives the position from 0; the problem numbers the encoder states h_1 … h_n, "
         "so the state with the largest score is h_{argmax + 1}.",
         "np.argmax(scores)                      # should be np.argmax(scores) + 1 here")
