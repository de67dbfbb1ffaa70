"""Plausible mistakes in the families on training in parallel and generating left to right:
parallel_generation by hand, and the implement problem implement_decode_step (wrong code a
student might hand in, with the problem's signature)."""

from __future__ import annotations

import numpy as np

from .mistakes_base import blocked, code_mistake, lower, mistake, softmax

PARALLEL = "parallel_generation"
DECODE = "implement_decode_step"


def _log_softmax(x):
    return np.log(softmax(x))


def _tgt(g):
    return np.concatenate([[0], np.asarray(g.y, dtype=int)[:-1]])


def _pass(g, tgt=None, allowed=None, scale=1 / np.sqrt(2.0), residual=True):
    """The decoder's rows over ``tgt`` (default: the shifted targets): log-probabilities."""
    X = np.asarray(g.E, dtype=float)[_tgt(g) if tgt is None else tgt]
    scores = (X @ g.W_Q) @ (X @ g.W_K).T * scale
    allowed = lower(3) if allowed is None else allowed
    Z = softmax(blocked(scores, allowed)) @ (X @ g.W_V)
    return _log_softmax(((X + Z) if residual else Z) @ g.W_out)


@mistake(PARALLEL, "tgt", "the targets read unshifted", accept=["shift_right_not_shifted"])
def tgt_unshifted(g):
    return np.asarray(g.y, dtype=int)


@mistake(PARALLEL, "tgt", "shifted the wrong way: y[1:] then <bos>")
def tgt_shifted_left(g):
    return np.concatenate([np.asarray(g.y, dtype=int)[1:], [0]])


@mistake(PARALLEL, "log_probs", "no causal mask: every position reads the later ones",
         accept=["causal_attention_unmasked"])
def log_probs_unmasked(g):
    return _pass(g, allowed=np.ones((3, 3), dtype=bool))


@mistake(PARALLEL, "log_probs", "np.triu for the mask: each position reads itself and the later ones",
         accept=["causal_attention_triu"])
def log_probs_triu(g):
    return _pass(g, allowed=np.triu(np.ones((3, 3), dtype=bool)))


@mistake(PARALLEL, "log_probs", "no residual: Z W_out instead of (X + Z) W_out")
def log_probs_no_residual(g):
    return _pass(g, residual=False)


@mistake(PARALLEL, "log_probs", "scores not scaled by 1/√2", accept=["causal_attention_no_scale"])
def log_probs_unscaled(g):
    return _pass(g, scale=1.0)


@mistake(PARALLEL, "log_probs", "probabilities instead of log-probabilities",
         accept=["log_softmax_gives_probabilities"])
def log_probs_exponentiated(g):
    return np.exp(_pass(g))


@mistake(PARALLEL, "loss", "the sum over the positions instead of the mean")
def loss_summed_positions(g):
    return float(-np.sum(_pass(g)[np.arange(3), np.asarray(g.y, dtype=int)]))


@mistake(PARALLEL, "loss", "each position scored against the token it reads, not the next one")
def loss_against_read_token(g):
    return float(-np.mean(_pass(g)[np.arange(3), _tgt(g)]))


def _step(g, see_self=True, top_left=False):
    X = np.asarray(g.E, dtype=float)[_tgt(g)]
    s = int(g.s)
    x = X[s:s + 1]
    keys = X[:s + 1] if see_self else X[:s]
    if top_left:
        keys = X[:1]
    weights = softmax((x @ g.W_Q) @ (keys @ g.W_K).T / np.sqrt(2.0))
    return _log_softmax((x + weights @ (keys @ g.W_V)) @ g.W_out)[0]


@mistake(PARALLEL, "step_row", "attended over the cache before appending: the token misses itself",
         accept=["cached_attention_appended_after_use"])
def step_row_appended_after(g):
    return _step(g, see_self=False)


@mistake(PARALLEL, "step_row", "the top-left causal mask: the one new query sees key 0 alone",
         accept=["cached_attention_top_left_mask"])
def step_row_top_left(g):
    return _step(g, top_left=True)


@mistake(PARALLEL, "step_row", "the row of step s − 1 given (the cache's last position)")
def step_row_previous(g):
    return _pass(g)[int(g.s) - 1]


# --- implement_decode_step -------------------------------------------------------------------

def _decode(cache, x_new, W_Q, W_K, W_V, scale=True, append_first=True, mask="bottom_right",
            keep_cache=False, raw_keys=False):
    K_cache, V_cache = (np.asarray(c, dtype=float) for c in cache)
    x = np.asarray(x_new, dtype=float)
    q, k, v = x @ W_Q, (x if raw_keys else x @ W_K), x @ W_V
    K = np.concatenate([K_cache, k], axis=0)
    V = np.concatenate([V_cache, v], axis=0)
    keys, values = (K, V) if append_first else (K_cache, V_cache)
    L, S = q.shape[0], keys.shape[0]
    scores = q @ keys.T / (np.sqrt(q.shape[-1]) if scale else 1.0)
    if mask == "bottom_right":
        scores = blocked(scores, lower(L, S, S - L))
    elif mask == "top_left":
        scores = blocked(scores, lower(L, S))
    Z = softmax(scores) @ values if S else np.zeros((L, V.shape[-1]))
    return Z, ((K_cache, V_cache) if keep_cache else (K, V))


@code_mistake(DECODE, "attends over the old cache, then appends", accept=["decode_step_appended_after_use"])
def decode_appended_after(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, append_first=False)


@code_mistake(DECODE, "the top-left causal mask", accept=["decode_step_top_left_mask"])
def decode_top_left(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, mask="top_left")


@code_mistake(DECODE, "returns the cache it was given", accept=["decode_step_cache_not_extended"])
def decode_cache_kept(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, keep_cache=True)


@code_mistake(DECODE, "no mask: the new tokens of a chunk see each other's future", accept=["decode_step_unmasked"])
def decode_unmasked(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, mask=None)


@code_mistake(DECODE, "no 1/√d_k scale", accept=["decode_step_no_scale"])
def decode_unscaled(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, scale=False)


@code_mistake(DECODE, "the raw embeddings cached as keys (W_K never applied)")
def decode_raw_keys(cache, x_new, W_Q, W_K, W_V):
    return _decode(cache, x_new, W_Q, W_K, W_V, raw_keys=True)
