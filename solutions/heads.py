"""What a trained toy model's heads learned: the teacher-forced pass over the model's own
answer (the rows greedy decoding computed one at a time), every head's weights on the way, the
pattern a head's map follows, and the model with one head ablated (its output zeroed).

Token ids are those of ``toy_tasks``: a source is a sequence of digits 0–9, an answer the
model's greedy output, <eos> last.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .model import Transformer
from .toy_tasks import BOS, EOS, encode_digits

PATTERNS = ("previous token", "same token", "first token", "mirrored source position")


class HeadMaps(NamedTuple):
    """Every head's weights for one input, each row summing to 1."""
    source: np.ndarray    # (S,) token ids of the input
    tgt: np.ndarray       # (T,) what the decoder read: <bos> + the answer without <eos>
    answer: np.ndarray    # (T,) the model's answer, <eos> last
    encoder: np.ndarray   # (layers, heads, S, S)
    self: np.ndarray      # (layers, heads, T, T)  causal self-attention
    cross: np.ndarray     # (layers, heads, T, S)  target positions × source positions


def model_answer(model: Transformer, digits, max_len: int | None = None) -> np.ndarray:
    """The model's greedy answer (token ids, <eos> last) to a sequence of digits, at most
    ``max_len`` tokens (default: one more than the digits)."""
    src = np.array([encode_digits(digits)], dtype=np.int64)
    out = model.greedy_decode(src, BOS, EOS, max_len or src.shape[1] + 1)[0]
    ended = np.flatnonzero(out[1:] == EOS)
    return out[1: 1 + (int(ended[0]) + 1 if ended.size else len(out) - 1)]


def head_maps(model: Transformer, digits, max_len: int | None = None) -> HeadMaps:
    """The model's answer to ``digits`` (``model_answer``) and every head's weights while it
    gives it."""
    src = np.array([encode_digits(digits)], dtype=np.int64)
    answer = model_answer(model, digits, max_len)
    tgt = np.concatenate([[BOS], answer[:-1]])[None]
    memory, encoder = model.encode(src, return_weights=True)
    _, decoder = model.decode(tgt, memory, return_weights=True)
    return HeadMaps(src[0], tgt[0], answer,
                    np.stack([w["self_attn"][0] for w in encoder]),
                    np.stack([w["self_attn"][0] for w in decoder]),
                    np.stack([w["cross_attn"][0] for w in decoder]))


def pattern_scores(weights, kind: str) -> np.ndarray:
    """The mean weight one head's map (rows: queries) puts on each of ``PATTERNS``: the
    previous position, the same position, position 0, and — cross-attention only — the
    mirrored source position S − 1 − t (the reverse task's anti-diagonal; NaN for a
    self-attention map). A self-attention map's row 0 is left out (it can only read itself),
    and so is a cross-attention map's last row (it predicts <eos>); the previous and first
    position count from row 1 (row 0 has no previous key, and its first is its own)."""
    W = np.asarray(weights, dtype=float)
    L, S = W.shape
    rows = range(L - 1) if kind == "cross" else range(1, L)
    later = [t for t in rows if 1 <= t < S + 1]
    previous = np.mean([W[t, t - 1] for t in later])
    same = np.mean([W[t, t] for t in rows if t < S])
    first = np.mean([W[t, 0] for t in later])
    mirrored = np.mean([W[t, S - 1 - t] for t in rows if t < S]) if kind == "cross" else np.nan
    return np.array([previous, same, first, mirrored])


def strongest_keys(weights) -> np.ndarray:
    """For each query (row), the key (column) with the largest weight."""
    return np.argmax(np.asarray(weights, dtype=float), axis=-1)


def mirrored_position(t, length: int) -> int:
    """The source position a reversing model reads to write output position t: length − 1 − t."""
    return int(length) - 1 - int(t)


def ablate_head(model: Transformer, attention: str, head: int, layer: int = 0) -> Transformer:
    """The model with one decoder head's output zeroed: the rows of its attention's W_O that
    read that head (the head's d_k entries of the concatenation) set to 0, so the other heads
    and the bias b_O are untouched. ``attention`` is "self" or "cross"."""
    if attention not in ("self", "cross"):
        raise ValueError(f"attention is 'self' or 'cross', got {attention!r}")
    H = model.config.num_heads
    if not 0 <= head < H:
        raise ValueError(f"head {head} of {H} (numbered from 0)")
    d_k = model.config.d_model // H
    weights = dict(model.weights)
    name = f"decoder.layers.{layer}.{attention}_attn.W_O"
    W_O = weights[name].copy()
    W_O[head * d_k:(head + 1) * d_k] = 0.0
    weights[name] = W_O
    return Transformer(model.config, weights)


def head_ablated_output(o, W_O, head: int, d_k: int):
    """An attention layer's output with one head ablated: concat(heads) W_O with that head's
    d_k entries of the concatenation zeroed. o (..., h·d_k), W_O (h·d_k, d_model)."""
    o = np.array(o, dtype=float)
    o[..., head * d_k:(head + 1) * d_k] = 0.0
    return o @ np.asarray(W_O, dtype=float)


def teacher_forced_probs(model: Transformer, digits, answer) -> np.ndarray:
    """(T, V) next-token probabilities of the teacher-forced pass reading <bos> + answer[:-1]."""
    src = np.array([encode_digits(digits)], dtype=np.int64)
    tgt = np.concatenate([[BOS], np.asarray(answer)[:-1]])[None].astype(np.int64)
    return np.exp(model.log_probs(src, tgt)[0])


def kl_divergence(p, q) -> float:
    """KL(p ‖ q) = Σ_i p_i log(p_i / q_i), in nats (terms with p_i = 0 count 0)."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    kept = p > 0
    return float(np.sum(p[kept] * (np.log(p[kept]) - np.log(q[kept]))))
