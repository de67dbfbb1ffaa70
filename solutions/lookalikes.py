"""Lookalikes: plausible mistakes that are *not* modelled as twins, kept only to tell when a
twin's name would be a guess.

A twin (``solutions.misconceptions``) names a mistake when a student's wrong value equals the
twin's on the student's own variant. That is only a diagnosis if no other plausible mistake
gives the same numbers there: with d_k = 2 and four tokens, "divided by d_k" and "divided by
√L" are the same division; with saturated softmax rows "no scale" and "scaled by √64" give
the same one-hot weights; a decoder whose rows all peak on the past or the next token cannot
tell "no causal mask" from a mask shifted by one. A lookalike is such another mistake,
written as a function with the signature of the reference function it shadows, exactly like
a twin, so the variant builder recomputes a template with it the same way.

Lookalikes are never named on their own (they have no explanation or code line, and no
template lists them): they only make a diagnosis ambiguous. ``alternatives_for`` gives, for
one reference function, every lookalike of it and every registered twin of it that the part
does not list (an unlisted twin is as plausible as a lookalike).

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .attention import scaled_dot_product_attention
from .linear import linear
from .misconceptions import MISCONCEPTIONS
from .multihead import head_mask, merge_heads, split_heads

# The per-head d_k of both models the lecture describes: BERT-base (768 / 12 heads) and the
# Transformer base model (512 / 8 heads). A student who has learnt "divide by √64 = 8" uses
# it whatever d_k the exercise gives.
HEAD_DIM = 64


@dataclass(frozen=True)
class Lookalike:
    """name: a stable code (never clashes with a twin's); shadows: the reference function;
    summary: completes "your answer equals …", like a twin's summary."""

    name: str
    shadows: str
    function: Callable
    summary: str


LOOKALIKES: dict[str, Lookalike] = {}


def lookalike(shadows: str, summary: str):
    """Register the decorated function as the lookalike named after it."""
    def register(function):
        name = function.__name__
        if name in LOOKALIKES or name in MISCONCEPTIONS:
            raise ValueError(f"lookalike {name!r} registered twice or named like a twin")
        LOOKALIKES[name] = Lookalike(name, shadows, function, summary)
        return function
    return register


def alternatives_for(function_name: str, listed=()) -> dict[str, Callable]:
    """name → function of every plausible mistake in ``function_name`` besides the twins in
    ``listed``: its lookalikes and its other twins."""
    out = {name: m.function for name, m in MISCONCEPTIONS.items()
           if m.shadows == function_name and name not in listed}
    out.update({name: a.function for name, a in LOOKALIKES.items() if a.shadows == function_name})
    return out


def summary_of(name: str) -> str:
    """The words for a twin or a lookalike (the twin's summary, or the lookalike's)."""
    if name in MISCONCEPTIONS:
        return MISCONCEPTIONS[name].summary
    return LOOKALIKES[name].summary


# --- the scale of scaled dot-product attention ---------------------------------------------

def _divisor(n, what: str) -> float:
    """√n as a scale's divisor; n = 1 raises: dividing by √1 is not dividing at all, which
    is the twin ``sdpa_no_scale`` itself, not another explanation of it."""
    if n == 1:
        raise ValueError(f"{what} = 1: the same as no scale")
    return float(np.sqrt(n))


@lookalike("scaled_dot_product_attention",
           "softmax(QKᵀ/√d_v)V: scaled by the value dimension d_v instead of d_k")
def sdpa_scale_by_sqrt_d_v(Q, K, V, mask=None, scale=None, return_steps=False):
    d_v = np.shape(V)[-1]
    return scaled_dot_product_attention(Q, K, V, mask, 1.0 / _divisor(d_v, "d_v"), return_steps)


@lookalike("scaled_dot_product_attention",
           "softmax(QKᵀ/√L)V: scaled by the number of queries L instead of d_k")
def sdpa_scale_by_sqrt_query_len(Q, K, V, mask=None, scale=None, return_steps=False):
    L = np.shape(Q)[-2]
    return scaled_dot_product_attention(Q, K, V, mask, 1.0 / _divisor(L, "L"), return_steps)


@lookalike("scaled_dot_product_attention",
           f"softmax(QKᵀ/√{HEAD_DIM})V: scaled by one head's √{HEAD_DIM} = {int(np.sqrt(HEAD_DIM))} "
           f"(BERT-base, the Transformer) instead of this d_k")
def sdpa_scale_by_sqrt_head_dim(Q, K, V, mask=None, scale=None, return_steps=False):
    return scaled_dot_product_attention(Q, K, V, mask, 1.0 / np.sqrt(HEAD_DIM), return_steps)


# --- the causal mask ------------------------------------------------------------------------

def _shifted_causal(L, S, k):
    return np.tril(np.ones((L, S), dtype=bool), k=k)


@lookalike("causal_mask",
           "np.tril(…, k=1): the mask shifted by one, each token also sees the next one")
def causal_mask_shifted_by_one(L, S=None):
    return _shifted_causal(L, L if S is None else S, 1)


@lookalike("causal_attention",
           "a causal mask shifted by one (np.tril(…, k=1)): each token also attends to the next one")
def causal_attention_mask_shifted_by_one(Q, K, V, return_steps=False):
    mask = _shifted_causal(np.shape(Q)[-2], np.shape(K)[-2], 1)
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


@lookalike("causal_attention",
           "a causal mask without the diagonal (np.tril(…, k=-1)): no token attends to itself")
def causal_attention_mask_no_diagonal(Q, K, V, return_steps=False):
    mask = _shifted_causal(np.shape(Q)[-2], np.shape(K)[-2], -1)
    with np.errstate(invalid="ignore"):
        return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


# --- the scale inside multi-head attention --------------------------------------------------

def _mha_scaled(query, key, value, params, num_heads, mask, scale_of_d_head):
    """Multi-head attention as the reference computes it, with the scale a function of d_head."""
    heads = [split_heads(linear(x, params[f"W_{n}"], params.get(f"b_{n}")), num_heads)
             for x, n in ((query, "Q"), (key, "K"), (value, "V"))]
    d_head = np.shape(heads[0])[-1]
    steps = scaled_dot_product_attention(*heads, mask=head_mask(mask),
                                         scale=scale_of_d_head(d_head), return_steps=True)
    return linear(merge_heads(steps.output), params["W_O"], params.get("b_O")), steps.weights


@lookalike("multi_head_attention", "multi-head attention without the 1/√d_head scale")
def mha_no_scale(query, key, value, params, num_heads, mask=None):
    return _mha_scaled(query, key, value, params, num_heads, mask, lambda d: 1.0)


@lookalike("multi_head_attention", "multi-head scores divided by d_head instead of √d_head")
def mha_divide_by_d_head(query, key, value, params, num_heads, mask=None):
    return _mha_scaled(query, key, value, params, num_heads, mask, lambda d: 1.0 / d)
