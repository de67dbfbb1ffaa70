"""The small encoder-decoder Transformer the corpus's encoder_decoder_step mistakes are
computed with, written here from the prompt's equations: ``CORRECT`` holds one flag per
step a student can get wrong, and ``encdec_forward`` runs the model with some of them
changed."""

from __future__ import annotations

import numpy as np

from .mistakes_base import attention, layer_norm, log_softmax, lower, sinusoid


CORRECT = {"embed_scale": True, "pe": True, "pe_swapped": False, "enc_residual": True,
           "dec_residual": True, "causal": True, "pre_ln": False, "ln_axis": -1,
           "ln_unbiased": False, "relu": True, "heads": 2, "out_proj": True, "scale": None,
           "pe_from": 0, "pe_halves": False, "pe_exponent_j": False, "strided": False,
           "dec_heads": None}


def _norm(x, flags):
    if flags["ln_unbiased"]:       # the Annotated Transformer's (x − μ)/(std + ε), std with ddof=1
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / (x.std(axis=-1, ddof=1, keepdims=True) + 1e-5)
    return layer_norm(x, axis=flags["ln_axis"])


def multihead(xq, xkv, W, flags, allowed=None):
    """(output, weights per head) of Concat(head_1, head_2) W_O on column blocks."""
    q, k, v = xq @ W[0], xkv @ W[1], xkv @ W[2]
    h = flags["heads"]
    d = q.shape[1] // h
    scale = flags["scale"] if flags["scale"] is not None else 1 / np.sqrt(d)
    cols = [slice(i, None, h) if flags["strided"] else slice(i * d, (i + 1) * d) for i in range(h)]
    heads = [attention(q[:, c], k[:, c], v[:, c], scale, allowed) for c in cols]
    concat = np.concatenate([out for _, out in heads], axis=1)
    return (concat @ W[3] if flags["out_proj"] else concat), np.stack([w for w, _ in heads])


def feed_forward(x, W1, W2, flags):
    hidden = x @ W1
    return (np.maximum(hidden, 0) if flags["relu"] else hidden) @ W2


def sublayer(x, f, flags, residual):
    """Post-LN LayerNorm(x + f(x)), pre-LN x + f(LayerNorm(x)); without the residual LN(f(x))."""
    if flags["pre_ln"]:
        return x + f(_norm(x, flags))
    return _norm(x + f(x) if residual else f(x), flags)


def _positions(L, flags):
    """The sinusoidal encoding as the student writes it (counted from ``pe_from``; sin and
    cos in two halves; the column index j as the exponent)."""
    if not (flags["pe_from"] or flags["pe_halves"] or flags["pe_exponent_j"]):
        return sinusoid(L, 4, flags["pe_swapped"])
    pos = np.arange(flags["pe_from"], flags["pe_from"] + L)[:, None]
    if flags["pe_exponent_j"]:
        angle = pos / 10000.0 ** (np.arange(4)[None, :] / 4)
        pe = np.sin(angle)
        pe[:, 1::2] = np.cos(angle[:, 1::2])
        return pe
    angle = pos / 10000.0 ** (np.arange(0, 4, 2)[None, :] / 4)
    if flags["pe_halves"]:
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    pe = np.zeros((L, 4))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def embedded_inputs(g, tokens, table, flags):
    x = table[np.asarray(tokens, dtype=int)] * (2.0 if flags["embed_scale"] else 1.0)
    return x + _positions(len(tokens), flags) if flags["pe"] else x


def _encode(g, flags):
    x = embedded_inputs(g, g.src, g.E_src, flags)
    W = (g.enc_W_Q, g.enc_W_K, g.enc_W_V, g.enc_W_O)
    h = sublayer(x, lambda z: multihead(z, z, W, flags)[0], flags, flags["enc_residual"])
    return sublayer(h, lambda z: feed_forward(z, g.enc_W1, g.enc_W2, flags), flags, flags["enc_residual"])


def encdec_forward(g, **changes):
    """(memory, cross weights (2, T, S), log-probabilities of the next token) with ``changes``."""
    flags = {**CORRECT, **changes}
    memory = _encode(g, flags)
    y = embedded_inputs(g, g.tgt, g.E_tgt, flags)
    T = len(y)
    allowed = lower(T) if flags["causal"] else None
    W_self = (g.self_W_Q, g.self_W_K, g.self_W_V, g.self_W_O)
    W_cross = (g.cross_W_Q, g.cross_W_K, g.cross_W_V, g.cross_W_O)
    res = flags["dec_residual"]
    if flags["dec_heads"] is not None:            # the encoder right, the decoder's heads not
        flags = {**flags, "heads": flags["dec_heads"]}
    h1 = sublayer(y, lambda z: multihead(z, z, W_self, flags, allowed)[0], flags, res)
    q_in = _norm(h1, flags) if flags["pre_ln"] else h1
    cross_weights = multihead(q_in, memory, W_cross, flags)[1]
    h2 = sublayer(h1, lambda z: multihead(z, memory, W_cross, flags)[0], flags, res)
    out = sublayer(h2, lambda z: feed_forward(z, g.dec_W1, g.dec_W2, flags), flags, res)
    logits = out @ g.E_tgt.T
    return memory, cross_weights, log_softmax(logits[-1]), logits
