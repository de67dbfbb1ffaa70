"""Alignment-score functions and the Bahdanau and Luong attention steps.

A decoder state s (..., n_s) is scored against every encoder state h_j, the rows of
H (..., S, n_h), giving scores (..., S). Softmax over the S source positions turns the scores
into alignment weights α, and the context is c = Σ_j α_j h_j.
Projection matrices are in the x·W layout: the paper's W_a s becomes s @ W with W (n_s, n_a).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._shapes import as_float, check_shapes
from .masks import apply_mask
from .softmax import softmax


def _states(s, H):
    s, H = as_float(s, "s"), as_float(H, "H")
    return s, H, check_shapes(s=(s, "... n_s"), H=(H, "... S n_h"))


def content_score(s, H) -> np.ndarray:
    """score(s, h_j) = cos(s, h_j) = sᵀh_j / (‖s‖ ‖h_j‖)  (content-based, Graves et al. 2014).
    Shapes: s (..., n), H (..., S, n) → (..., S). No learnable parameters."""
    s, H, dims = _states(s, H)
    if dims["n_s"] != dims["n_h"]:
        raise ValueError(f"H: expected shape (..., S, n={dims['n_s']}) matching s, got {H.shape}")
    s_norm = np.linalg.norm(s, axis=-1, keepdims=True)
    h_norm = np.linalg.norm(H, axis=-1)
    if (s_norm == 0).any() or (h_norm == 0).any():
        raise ValueError("content_score: cosine similarity is undefined for a zero vector")
    return (H @ s[..., None])[..., 0] / (s_norm * h_norm)


def additive_score(s, H, W, U, v) -> np.ndarray:
    """score(s, h_j) = vᵀ tanh(s W + h_j U)  (additive, Bahdanau et al. 2015).

    Shapes: s (..., n_s), H (..., S, n_h), W (n_s, n_a), U (n_h, n_a), v (n_a,) → (..., S).
    Learnable: W, U, v.
    """
    s, H, _ = _states(s, H)
    W, U, v = as_float(W, "W"), as_float(U, "U"), as_float(v, "v")
    check_shapes(s=(s, "... n_s"), H=(H, "... S n_h"), W=(W, "n_s n_a"), U=(U, "n_h n_a"),
                 v=(v, "n_a"))
    return np.tanh((s @ W)[..., None, :] + H @ U) @ v


def concat_score(s, H, W_a, v) -> np.ndarray:
    """score(s, h_j) = vᵀ tanh([s; h_j] W_a)  (the "concat" form of additive attention).

    Shapes: s (..., n_s), H (..., S, n_h), W_a (n_s + n_h, n_a), v (n_a,) → (..., S).
    Equal to ``additive_score`` with W = W_a[:n_s], U = W_a[n_s:]. Learnable: W_a, v.
    """
    s, H, dims = _states(s, H)
    W_a = as_float(W_a, "W_a")
    if W_a.ndim != 2 or W_a.shape[0] != dims["n_s"] + dims["n_h"]:
        raise ValueError(f"W_a: expected shape (n_s + n_h = {dims['n_s'] + dims['n_h']}, n_a), "
                         f"got {W_a.shape}")
    v = as_float(v, "v")
    check_shapes(W_a=(W_a, "n_in n_a"), v=(v, "n_a"))
    s_repeated = np.broadcast_to(s[..., None, :], H.shape[:-1] + (dims["n_s"],))
    return np.tanh(np.concatenate([s_repeated, H], axis=-1) @ W_a) @ v


def location_score(s, W_a) -> np.ndarray:
    """scores = s W_a  (location-based, Luong et al. 2015): from the target state alone.

    Shapes: s (..., n_s), W_a (n_s, S) → (..., S); the source length S is fixed by W_a.
    Learnable: W_a.
    """
    s, W_a = as_float(s, "s"), as_float(W_a, "W_a")
    check_shapes(s=(s, "... n_s"), W_a=(W_a, "n_s S"))
    return s @ W_a


def general_score(s, H, W_a) -> np.ndarray:
    """score(s, h_j) = sᵀ W_a h_j  (general, Luong et al. 2015).
    Shapes: s (..., n_s), H (..., S, n_h), W_a (n_s, n_h) → (..., S). Learnable: W_a."""
    s, H, _ = _states(s, H)
    W_a = as_float(W_a, "W_a")
    check_shapes(s=(s, "... n_s"), H=(H, "... S n_h"), W_a=(W_a, "n_s n_h"))
    return (H @ (s @ W_a)[..., None])[..., 0]


def dot_score(s, H) -> np.ndarray:
    """score(s, h_j) = sᵀ h_j  (dot-product, Luong et al. 2015); needs n_s = n_h.
    Shapes: s (..., n), H (..., S, n) → (..., S). No learnable parameters."""
    s, H, dims = _states(s, H)
    if dims["n_s"] != dims["n_h"]:
        raise ValueError(f"H: expected shape (..., S, n={dims['n_s']}) matching s, got {H.shape}")
    return (H @ s[..., None])[..., 0]


def scaled_dot_score(s, H) -> np.ndarray:
    """score(s, h_j) = sᵀ h_j / √n  (scaled dot-product, Vaswani et al. 2017), n = state size.
    Shapes: s (..., n), H (..., S, n) → (..., S). No learnable parameters."""
    return dot_score(s, H) / np.sqrt(np.shape(s)[-1])


@dataclass(frozen=True)
class ScoreFunction:
    name: str
    function: Callable
    learnable: tuple[str, ...]
    formula: str
    introduced_by: str


ALIGNMENT_SCORES: dict[str, ScoreFunction] = {f.name: f for f in (
    ScoreFunction("content", content_score, (), "cosine[s_t, h_i]", "Graves et al. 2014 (NTM)"),
    ScoreFunction("additive", additive_score, ("W", "U", "v"),
                  "vᵀ tanh(W s_{t−1} + U h_i)", "Bahdanau et al. 2015"),
    ScoreFunction("concat", concat_score, ("W_a", "v"), "vᵀ tanh(W_a [s_{t−1}; h_i])",
                  "Bahdanau et al. 2015"),
    ScoreFunction("location", location_score, ("W_a",), "α_t = softmax(W_a s_t)",
                  "Luong et al. 2015"),
    ScoreFunction("general", general_score, ("W_a",), "s_tᵀ W_a h_i", "Luong et al. 2015"),
    ScoreFunction("dot", dot_score, (), "s_tᵀ h_i", "Luong et al. 2015"),
    ScoreFunction("scaled_dot", scaled_dot_score, (), "s_tᵀ h_i / √n", "Vaswani et al. 2017"),
)}


@dataclass(frozen=True)
class AlignmentStep:
    """One attention step: scores e (..., S), weights α (..., S), context c (..., n_h);
    for Luong also the attentional state h̃ (..., n_out)."""

    scores: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    attentional_state: np.ndarray | None = None


def attend(scores, H, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """α = softmax(e) over the source positions, c = Σ_j α_j h_j.
    Shapes: scores (..., S), H (..., S, n_h), ``mask`` (..., S) bool → α (..., S), c (..., n_h)."""
    scores, H = as_float(scores, "scores"), as_float(H, "H")
    check_shapes(scores=(scores, "... S"), H=(H, "... S n_h"))
    if mask is not None:  # a (..., S) key mask is a one-query-row attention mask
        scores = apply_mask(scores[..., None, :], np.asarray(mask)[..., None, :])[..., 0, :]
    weights = softmax(scores, axis=-1)
    return weights, (weights[..., None, :] @ H)[..., 0, :]


def bahdanau_step(s_prev, H, W, U, v, mask=None) -> AlignmentStep:
    """One Bahdanau decoder step, from the *previous* decoder state s_{i−1}:

    e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j),  α_ij = softmax_j(e_ij),  c_i = Σ_j α_ij h_j.

    Shapes: s_prev (..., n_s), H (..., S, n_h), W (n_s, n_a), U (n_h, n_a), v (n_a,)
    → scores, weights (..., S), context (..., n_h). The new state s_i = f(s_{i−1}, y_{i−1}, c_i)
    is the RNN's job and is not computed here.
    """
    scores = additive_score(s_prev, H, W, U, v)
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


def luong_step(h_t, H, W_c, score="dot", mask=None, **score_params) -> AlignmentStep:
    """One Luong step, from the *current* decoder state h_t:

    a_t = softmax_s(score(h_t, h̄_s)),  c_t = Σ_s a_t(s) h̄_s,  h̃_t = tanh([c_t; h_t] W_c).

    Shapes: h_t (..., n), H (..., S, n_h), W_c (n_h + n, n_out) → scores, weights (..., S),
    context (..., n_h), attentional_state (..., n_out). ``score``: a name from
    ``ALIGNMENT_SCORES`` ("dot", "general" with W_a=…, "concat" with W_a=, v=…, "location" with
    W_a=…, which looks at h_t alone) or a score function taking (h_t, H, **score_params).
    """
    if isinstance(score, str):
        if score not in ALIGNMENT_SCORES:
            raise ValueError(f"score: unknown score function {score!r}; known: "
                             f"{', '.join(ALIGNMENT_SCORES)}")
        score = ALIGNMENT_SCORES[score].function
    if score is location_score:
        scores = location_score(h_t, **score_params)
    else:
        scores = score(h_t, H, **score_params)
    weights, context = attend(scores, H, mask)
    W_c = as_float(W_c, "W_c")
    joined = np.concatenate([context, as_float(h_t, "h_t")], axis=-1)
    check_shapes(joined=(joined, "... n_in"), W_c=(W_c, "n_in n_out"))
    return AlignmentStep(scores, weights, context, np.tanh(joined @ W_c))


def winner(scores) -> int:
    """The position of the largest score, counted from 1 as the lecture numbers the encoder
    states h_1 … h_n. ``scores``: (n,)."""
    scores = as_float(scores, "scores")
    if scores.ndim != 1:
        raise ValueError(f"winner: expected the (n,) scores of one decoder step, got shape {scores.shape}")
    return int(np.argmax(scores)) + 1
