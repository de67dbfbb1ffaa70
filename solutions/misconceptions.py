"""Misconception twins: named, deliberately wrong versions of the reference functions.

Each twin has the signature of the function it shadows and makes exactly one mistake that
students really make (``attnkit misconceptions -v`` lists each with what it gets wrong). The grader runs a
student's wrong answer against the twins of the same function on the student's own variant;
a match turns "wrong" into "your weights equal softmax(QKᵀ) without the 1/√d_k scale".

Look twins up with ``MISCONCEPTIONS[name]`` or ``misconceptions_for("causal_mask")``.

A twin coincides with the reference where its mistake has nothing to act on — no mask for the
masking twins, d_k = 1 for the scaling twins, one head for the head-splitting twins, 2-D input
for ``softmax_axis_1``, N = 1 for the unaveraged gradient. A problem variant that is meant to
diagnose a twin must avoid those cases; the variant validation checks that each listed twin's
answer is outside the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._shapes import as_float
from .alignment import AlignmentStep, additive_score, attend
from .attention import (AttentionSteps, attention_backward, attention_shapes,
                        scaled_dot_product_attention, validated_attention)
from .masks import causal_mask
from .bert import KEEP, MASK, RANDOM, UNCHANGED, MLMSelection, mlm_loss
from .feed_forward import ffn
from .layer_norm import layer_norm
from .linear import linear
from .losses import IGNORE_INDEX, cross_entropy, softmax_cross_entropy_backward
from .masks import apply_mask, check_mask_shape
from .multihead import head_mask, merge_heads, multi_head_attention, split_heads
from .positional import embed
from .softmax import softmax
from .tokenization import CONTINUATION, UNK, tokenize_words


@dataclass(frozen=True)
class Misconception:
    """name: stable code stored in the gradebook; shadows: the correct function's name in
    ``solutions``; summary: completes "your answer equals …"; explanation: why it is wrong
    and what to do; code: the wrong line beside the right one."""

    name: str
    shadows: str
    function: Callable
    summary: str
    explanation: str
    code: str


MISCONCEPTIONS: dict[str, Misconception] = {}


def add_twin(name: str, shadows: str, function: Callable, summary: str, explanation: str,
             code: str) -> Callable:
    """Register ``function`` as the twin ``name``: the one entry point, so that the factories
    that generate a family of twins (one per variant of a mistake) and the ``twin`` decorator
    fill the same registry."""
    if name in MISCONCEPTIONS:
        raise ValueError(f"misconception {name!r} registered twice")
    function.__name__ = function.__qualname__ = name
    MISCONCEPTIONS[name] = Misconception(name, shadows, function, summary, explanation, code)
    return function


def twins_of(function_name: str, listed=()) -> dict[str, Callable]:
    """name → function of every registered twin of the reference function ``function_name``
    besides those in ``listed``: the space the build searches for a part's other mistakes."""
    return {name: m.function for name, m in MISCONCEPTIONS.items()
            if m.shadows == function_name and name not in listed}


def twin(shadows: str, summary: str, explanation: str, code: str):
    """Register the decorated function as the twin named after it."""
    def register(function):
        return add_twin(function.__name__, shadows, function, summary, explanation, code)
    return register


def get_misconception(name: str) -> Misconception:
    """The twin called ``name``; KeyError lists the known names."""
    try:
        return MISCONCEPTIONS[name]
    except KeyError:
        raise KeyError(f"unknown misconception {name!r}; known: {', '.join(sorted(MISCONCEPTIONS))}") from None


def misconceptions_for(function_name: str) -> list[Misconception]:
    """Every twin of the reference function ``function_name``, in registration order."""
    return [m for m in MISCONCEPTIONS.values() if m.shadows == function_name]


def _attention_result(Q, K, V, raw, scale, masked, weights, return_steps):
    output = weights @ V
    if return_steps:
        return AttentionSteps(raw, scale, raw * scale, masked, weights, output)
    return output


def _raw_scores(Q, K, V, scale):
    """Validated Q, K, V, the raw scores QKᵀ and the scale in use (1/√d_k by default)."""
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"]) if scale is None else scale
    return Q, K, V, Q @ np.swapaxes(K, -1, -2), scale


BLOCKED_SCORE = -1e4  # an additive mask at or below this blocks (−inf, or the −1e9 fill)


def _bool_mask(mask):
    """A mask as bool, True = may attend; an additive mask blocks where it is ≤ BLOCKED_SCORE."""
    mask = np.asarray(mask)
    return mask if mask.dtype == bool else mask > BLOCKED_SCORE


# --- scaled dot-product attention ---------------------------------------------------------

def scale_twin(name: str, factor: Callable, summary: str, explanation: str, code: str):
    """Register an attention twin that multiplies the scores by ``factor(dims)`` instead of
    1/√d_k; ``dims`` holds L, S, d_k, d_v. One definition for the whole "another scale" family
    (1, 1/d_k, 1/√S, 1/√d_v, √d_k, …), so each member differs only in its factor and words."""
    def function(Q, K, V, mask=None, scale=None, return_steps=False):
        Q, K, V, dims = attention_shapes(Q, K, V)
        return validated_attention(Q, K, V, dims, mask, factor(dims), return_steps)
    return add_twin(name, "scaled_dot_product_attention", function, summary, explanation, code)


scale_twin(
    "sdpa_no_scale", lambda dims: 1.0,
    "softmax(QKᵀ)V without the 1/√d_k scale",
    "Divide the scores QKᵀ by √d_k before the softmax. Unscaled, they spread more the larger "
    "d_k is (their variance grows like d_k), so the weights come out too peaked; at a real "
    "model's d_k = 64 the rows are nearly one-hot and the gradients vanish.",
    "weights = softmax(Q @ K.T)            # should be softmax(Q @ K.T / np.sqrt(d_k))")
scale_twin(
    "sdpa_divide_by_d_k", lambda dims: 1.0 / dims["d_k"],
    "softmax(QKᵀ/d_k)V: divided by d_k instead of √d_k",
    "The scale is 1/√d_k, the inverse standard deviation of q·k; dividing by d_k flattens "
    "every row towards uniform.",
    "weights = softmax(Q @ K.T / d_k)      # should be / np.sqrt(d_k)")
scale_twin(
    "sdpa_scale_by_sqrt_seq_len", lambda dims: 1.0 / np.sqrt(dims["S"]),
    "softmax(QKᵀ/√S)V: scaled by the sequence length instead of the key dimension d_k",
    "The scale comes from Var(q·k) = d_k, the dimension of the query/key vectors, not from "
    "how many tokens there are (a slip some tutorials make, writing √n for the length).",
    "weights = softmax(Q @ K.T / np.sqrt(S))  # should be / np.sqrt(d_k)")


@twin("scaled_dot_product_attention",
      "weights normalised over the queries (columns sum to 1) instead of over the keys",
      "Each query's row of weights is a distribution over the keys, so the softmax runs over "
      "the last axis (axis=-1); over axis 0/-2 the columns sum to 1 and the rows do not.",
      "weights = softmax(scores, axis=0)     # should be axis=-1")
def sdpa_softmax_over_queries(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    if Q.shape[-2] == 1:      # one query: no axis of queries to normalise over by mistake
        raise ValueError("one query: the softmax has no queries' axis to run over")
    masked = apply_mask(raw * scale, mask)
    weights = softmax(masked, axis=-2)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


@twin("scaled_dot_product_attention",
      "the mask applied after the softmax (masked weights zeroed, rows no longer sum to 1)",
      "Masking must happen before the softmax, by setting blocked scores to −inf, so that the "
      "remaining weights are renormalised; zeroing weights afterwards leaves rows summing to < 1.",
      "weights = softmax(scores) * mask      # should be softmax(np.where(mask, scores, -np.inf))")
def sdpa_mask_after_softmax(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    weights = softmax(raw * scale)
    if mask is not None:
        check_mask_shape(np.asarray(mask), weights.shape)
        weights = weights * _bool_mask(mask)
    return _attention_result(Q, K, V, raw, scale, raw * scale, weights, return_steps)


@twin("scaled_dot_product_attention",
      "blocked scores set to 0 instead of −inf (masked positions still get weight)",
      "A score of 0 is an ordinary score: exp(0) = 1, so 'masked' positions keep a share of "
      "the weight. Blocked positions need −inf (or a very large negative number).",
      "scores[~mask] = 0                     # should be scores[~mask] = -np.inf")
def sdpa_mask_with_zero(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    masked = raw * scale
    if mask is not None:
        check_mask_shape(np.asarray(mask), masked.shape)
        masked = np.where(_bool_mask(mask), masked, 0.0)
    weights = softmax(masked)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


@twin("scaled_dot_product_attention",
      "the mask read the other way round (True = blocked, the nn.MultiheadAttention convention)",
      "F.scaled_dot_product_attention and this kit use True = may attend; nn.MultiheadAttention's "
      "attn_mask uses True = blocked. Mixing them attends exactly where it should not.",
      "scores = np.where(mask, -np.inf, scores)  # should be np.where(mask, scores, -np.inf)")
def sdpa_inverted_mask(Q, K, V, mask=None, scale=None, return_steps=False):
    inverted = None if mask is None else ~_bool_mask(mask)
    return scaled_dot_product_attention(Q, K, V, inverted, scale, return_steps)


@twin("scaled_dot_product_attention",
      "softmax(QKᵀ/√d_k)V with a softmax that does not subtract the row max (NaN on large scores)",
      "exp overflows above ~709.8 in float64, so large scores give inf/inf = NaN. Subtract each "
      "row's max before exponentiating: the weights are unchanged and never overflow.",
      "e = np.exp(scores)                     # should be np.exp(scores - scores.max(-1, keepdims=True))")
def sdpa_no_max_subtraction(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    masked = raw * scale if mask is None else apply_mask(raw * scale, mask)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(masked)
        weights = e / np.sum(e, axis=-1, keepdims=True)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


# --- causal attention -----------------------------------------------------------------------

def _causal(Q, K):
    return causal_mask(np.shape(Q)[-2], np.shape(K)[-2])


@twin("causal_attention",
      "attention with no causal mask: every token also attends to the tokens after it",
      "A decoder is trained on all positions at once; without the mask, position i sees the "
      "very tokens it must predict, so training leaks the answer and generation breaks.",
      "weights = softmax(Q @ K.T / np.sqrt(d_k))   # should block j > i: np.where(np.tril(ones), s, -inf)")
def causal_attention_unmasked(Q, K, V, return_steps=False):
    return scaled_dot_product_attention(Q, K, V, return_steps=return_steps)


@twin("causal_attention",
      "the mask built with triu instead of tril: each token attends to itself and the future",
      "np.triu keeps j ≥ i — the future. The causal mask keeps j ≤ i: np.tril(np.ones((L, S), bool)).",
      "mask = np.triu(np.ones((L, S), bool))   # should be np.tril(...)")
def causal_attention_triu(Q, K, V, return_steps=False):
    mask = np.triu(np.ones(_causal(Q, K).shape, dtype=bool))
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


@twin("causal_attention",
      "future scores set to 0 instead of −∞, so future tokens still get weight",
      "exp(0) = 1: a zeroed score still takes part in the softmax. Blocked scores must be −∞ "
      "(or a very negative number) so that their weight is exactly 0.",
      "scores = scores * mask                  # should be np.where(mask, scores, -np.inf)")
def causal_attention_mask_with_zero(Q, K, V, return_steps=False):
    return sdpa_mask_with_zero(Q, K, V, mask=_causal(Q, K), return_steps=return_steps)


# --- softmax --------------------------------------------------------------------------------

@twin("softmax",
      "softmax computed as exp(x)/Σexp(x) without subtracting the max (overflows to NaN)",
      "exp overflows above ~709.8 in float64 (~88.7 in float32), giving inf/inf = NaN. "
      "Subtract the row max first: it changes nothing mathematically.",
      "e = np.exp(x)                          # should be np.exp(x - x.max(axis, keepdims=True))")
def softmax_no_max_subtraction(x, axis=-1):
    x = as_float(x, "x")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)


@twin("softmax",
      "softmax over axis=1 (as in the lecture demo), which for a batch (B, L, S) normalises over the queries",
      "axis=1 is the key axis only for a single (L, S) matrix; with a batch axis in front it is "
      "the query axis. Use axis=-1, which is the key axis whatever the batch shape.",
      "softmax(scores, axis=1)                # should be axis=-1")
def softmax_axis_1(x, axis=-1):
    return softmax(x, axis=1)


# --- masks ----------------------------------------------------------------------------------

@twin("causal_mask",
      "np.triu instead of np.tril: each token sees the future, not the past",
      "Query i may attend to keys j ≤ i: the lower triangle. With triu, the first token sees "
      "the whole sentence and the last token only itself.",
      "np.triu(np.ones((L, S), bool))         # should be np.tril(...)")
def causal_mask_triu(L, S=None):
    S = L if S is None else S
    return np.triu(np.ones((L, S), dtype=bool))


@twin("causal_mask",
      "the diagonal excluded: a token may not attend to itself (first row fully masked)",
      "Causal masking hides only the future (j > i); position i itself is known. Excluding the "
      "diagonal leaves the first row with nothing to attend to.",
      "np.tril(np.ones((L, S), bool), k=-1)   # should be k=0")
def causal_mask_no_diagonal(L, S=None):
    S = L if S is None else S
    return np.tril(np.ones((L, S), dtype=bool), k=-1)


# --- multi-head attention -------------------------------------------------------------------

def _split_without_transpose(x, num_heads):
    *lead, L, d = x.shape
    return x.reshape(*lead, num_heads, L, d // num_heads)


def _merge_without_transpose(x):
    *lead, H, L, d_head = x.shape
    return x.reshape(*lead, L, H * d_head)


@twin("multi_head_attention",
      "heads split and merged with reshape alone, without the transpose (tokens are mixed across heads)",
      "(…, L, h·d) must be reshaped to (…, L, h, d) and then transposed to (…, h, L, d); "
      "reshaping straight to (…, h, L, d) cuts tokens across heads.",
      "q.reshape(B, h, L, d_head)             # should be q.reshape(B, L, h, d_head).transpose(0, 2, 1, 3)")
def mha_split_without_transpose(query, key, value, params, num_heads, mask=None):
    q = linear(query, params["W_Q"], params.get("b_Q"))
    k = linear(key, params["W_K"], params.get("b_K"))
    v = linear(value, params["W_V"], params.get("b_V"))
    steps = scaled_dot_product_attention(
        _split_without_transpose(q, num_heads), _split_without_transpose(k, num_heads),
        _split_without_transpose(v, num_heads), mask=head_mask(mask), return_steps=True)
    out = linear(_merge_without_transpose(steps.output), params["W_O"], params.get("b_O"))
    return out, steps.weights


@twin("multi_head_attention",
      "heads split correctly but merged with reshape alone, without transposing back (tokens mixed)",
      "Concat needs (…, h, L, d_head) transposed back to (…, L, h, d_head) before the reshape to "
      "(…, L, h·d_head); reshaping directly puts head 0's outputs for tokens 0 and 1 side by side "
      "in row 0.",
      "heads.reshape(B, L, h * d_head)         # should be heads.transpose(0, 2, 1, 3).reshape(B, L, -1)")
def mha_merge_without_transpose(query, key, value, params, num_heads, mask=None):
    heads = [linear(x, params[f"W_{n}"], params.get(f"b_{n}")) for x, n in
             ((query, "Q"), (key, "K"), (value, "V"))]
    steps = scaled_dot_product_attention(*(split_heads(h, num_heads) for h in heads),
                                         mask=head_mask(mask), return_steps=True)
    out = linear(_merge_without_transpose(steps.output), params["W_O"], params.get("b_O"))
    return out, steps.weights


def _mha_with_scale(query, key, value, params, num_heads, mask, scale):
    heads = [linear(x, params[f"W_{n}"], params.get(f"b_{n}")) for x, n in
             ((query, "Q"), (key, "K"), (value, "V"))]
    steps = scaled_dot_product_attention(
        *(split_heads(h, num_heads) for h in heads), mask=head_mask(mask),
        scale=scale, return_steps=True)
    return merge_heads(steps.output), steps.weights


@twin("multi_head_attention",
      "scores scaled by 1/√d_model instead of 1/√d_head",
      "Each head attends in its own d_head = d_model/h dimensions, so the scale is 1/√d_head; "
      "1/√d_model is too small by a factor √h and flattens every head.",
      "scores / np.sqrt(d_model)              # should be / np.sqrt(d_model // num_heads)")
def mha_scale_by_d_model(query, key, value, params, num_heads, mask=None):
    d_model = np.shape(query)[-1]
    concat, weights = _mha_with_scale(query, key, value, params, num_heads, mask,
                                      1.0 / np.sqrt(d_model))
    return linear(concat, params["W_O"], params.get("b_O")), weights


@twin("multi_head_attention",
      "the concatenated heads returned without the output projection W_O",
      "MultiHead = Concat(head_1, …, head_h) W_O: the final projection mixes the heads' "
      "outputs and is part of the layer.",
      "return concat                          # should be return concat @ W_O + b_O")
def mha_no_output_projection(query, key, value, params, num_heads, mask=None):
    d_k = np.shape(params["W_Q"])[1] // num_heads
    return _mha_with_scale(query, key, value, params, num_heads, mask, 1.0 / np.sqrt(d_k))


# --- PyTorch layout -------------------------------------------------------------------------

@twin("mha_params_from_torch",
      "PyTorch weights used as x @ W without the transpose (PyTorch computes x @ W.T)",
      "nn.Linear stores weight as (d_out, d_in) and computes x Wᵀ + b; to write x @ W you "
      "must transpose it. Square weights hide the mistake from the shapes.",
      "W_Q = w_q                              # should be W_Q = w_q.T")
def mha_params_from_torch_no_transpose(in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias):
    w_q, w_k, w_v = np.split(as_float(in_proj_weight, "in_proj_weight"), 3, axis=0)
    b_q, b_k, b_v = np.split(as_float(in_proj_bias, "in_proj_bias"), 3)
    return {"W_Q": w_q, "b_Q": b_q, "W_K": w_k, "b_K": b_k, "W_V": w_v, "b_V": b_v,
            "W_O": as_float(out_proj_weight, "out_proj_weight"),
            "b_O": as_float(out_proj_bias, "out_proj_bias")}


# --- Bahdanau alignment ---------------------------------------------------------------------

@twin("additive_score",
      "additive scores without the tanh: v · (s W + h_j U)",
      "The additive score is a small network with one hidden layer: v · tanh(s W + h_j U). "
      "Apply the tanh to each hidden unit before taking the dot product with v; without it the "
      "score is a linear function of s and h_j, and every score changes.",
      "(s @ W + H @ U) @ v                    # should be np.tanh(s @ W + H @ U) @ v")
def additive_score_no_tanh(s, H, W, U, v):
    s, H = as_float(s, "s"), as_float(H, "H")
    return ((s @ as_float(W, "W"))[..., None, :] + H @ as_float(U, "U")) @ as_float(v, "v")


@twin("bahdanau_step",
      "alignment scores without the tanh: e_ij = v · (s_{i−1} W + h_j U)",
      "The alignment model is a small network with one hidden layer: "
      "e_ij = v · tanh(s_{i−1} W + h_j U). Apply the tanh to each hidden unit before taking the "
      "dot product with v; without it the scores are linear in s_{i−1} and h_j, and the "
      "weights and the context change too.",
      "e = (s_prev @ W + H @ U) @ v           # should be np.tanh(s_prev @ W + H @ U) @ v")
def bahdanau_step_no_tanh(s_prev, H, W, U, v, mask=None):
    scores = additive_score_no_tanh(s_prev, H, W, U, v)
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


@twin("bahdanau_step",
      "the context built from the raw scores e instead of the softmax weights α",
      "The scores e_ij are unnormalised; the context is c_i = Σ_j α_ij h_j with "
      "α_ij = softmax_j(e_ij), a weighted average of the encoder states.",
      "c = e @ H                              # should be c = softmax(e) @ H")
def bahdanau_step_unnormalised(s_prev, H, W, U, v, mask=None):
    scores = additive_score(s_prev, H, W, U, v)
    weights, _ = attend(scores, H, mask)
    context = (scores[..., None, :] @ as_float(H, "H"))[..., 0, :]
    return AlignmentStep(scores, weights, context)


# --- layer norm, positions, embeddings, layers -----------------------------------------------

@twin("layer_norm",
      "layer norm computed over the tokens (axis -2) instead of over each token's features",
      "LayerNorm normalises each token's d_model features (axis=-1); statistics over the "
      "sequence axis are closer to batch norm and leak information between tokens.",
      "mu = x.mean(axis=-2, keepdims=True)    # should be axis=-1")
def layer_norm_over_tokens(x, gamma, beta, eps=1e-5):
    x = as_float(x, "x")
    mu = x.mean(axis=-2, keepdims=True)
    var = x.var(axis=-2, keepdims=True)
    return as_float(gamma, "gamma") * (x - mu) / np.sqrt(var + eps) + as_float(beta, "beta")


@twin("layer_norm",
      "normalised by the unbiased std with ε added to the std (Annotated-Transformer style)",
      "nn.LayerNorm divides by √(σ² + ε) with the biased variance (÷D). The unbiased std "
      "(÷(D−1)) shrinks every output by √((D−1)/D), 0.935 at D = 8.",
      "(x - mu) / (x.std(-1, ddof=1) + eps)   # should be (x - mu) / np.sqrt(x.var(-1) + eps)")
def layer_norm_unbiased_std(x, gamma, beta, eps=1e-5):
    x = as_float(x, "x")
    mu = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, ddof=1, keepdims=True)
    return as_float(gamma, "gamma") * (x - mu) / (std + eps) + as_float(beta, "beta")


def _angles(L, d_model, exponent):
    return np.arange(L)[:, None] / 10000.0 ** (exponent[None, :] / d_model)


@twin("positional_encoding",
      "sin and cos swapped (cos on even columns), so PE[0] = [1, 0, 1, 0, …]",
      "PE(pos, 2i) = sin(…) and PE(pos, 2i+1) = cos(…): even columns take the sine.",
      "pe[:, 0::2] = np.cos(angle)            # should be np.sin(angle)")
def positional_encoding_sin_cos_swapped(L, d_model):
    angle = _angles(L, d_model, np.arange(0, d_model, 2))
    pe = np.empty((L, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.cos(angle), np.sin(angle)
    return pe


@twin("positional_encoding",
      "sines and cosines concatenated in two halves instead of interleaved",
      "The paper interleaves: column 2i is sin, 2i+1 is cos of the same frequency. "
      "[sin | cos] halves give PE[0] = [0…0, 1…1] (seen in tensor2tensor #391).",
      "np.concatenate([np.sin(angle), np.cos(angle)], -1)  # should interleave 0::2 / 1::2")
def positional_encoding_concatenated(L, d_model):
    angle = _angles(L, d_model, np.arange(0, d_model, 2))
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)


@twin("positional_encoding",
      "frequency exponent j/d_model for column j instead of 2⌊j/2⌋/d_model",
      "Columns 2i and 2i+1 share one frequency, 1/10000^(2i/d_model); using the column index j "
      "gives every odd column the wrong frequency.",
      "10000 ** (j / d_model)                 # should be 10000 ** (2 * (j // 2) / d_model)")
def positional_encoding_exponent_j(L, d_model):
    angle = _angles(L, d_model, np.arange(d_model))
    pe = np.empty((L, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle[:, 0::2]), np.cos(angle[:, 1::2])
    return pe


@twin("embed",
      "token embeddings used without the ×√d_model scale",
      "The Transformer multiplies embeddings by √d_model before adding the positional "
      "encoding, so the two have comparable size.",
      "table[tokens]                          # should be table[tokens] * np.sqrt(d_model)")
def embed_no_sqrt_d_model(tokens, table):
    return embed(tokens, table) / np.sqrt(np.shape(table)[1])


@twin("encoder_layer",
      "pre-LN instead of post-LN: x + Sublayer(LayerNorm(x))",
      "The lecture's (and the paper's) layer is post-LN: LayerNorm(x + Sublayer(x)). Pre-LN "
      "normalises the sublayer input instead, and its output is not normalised.",
      "h = x + attn(layer_norm(x))            # should be h = layer_norm(x + attn(x))")
def encoder_layer_pre_ln(x, params, num_heads, mask=None, eps=1e-5, return_weights=False):
    normed = layer_norm(x, **params["norm1"], eps=eps)
    attended, weights = multi_head_attention(normed, normed, normed, params["self_attn"],
                                             num_heads, mask)
    h = as_float(x, "x") + attended
    out = h + ffn(layer_norm(h, **params["norm2"], eps=eps), **params["ffn"])
    return (out, {"self_attn": weights}) if return_weights else out


@twin("decoder_layer",
      "pre-LN instead of post-LN in the decoder: y + Sublayer(LayerNorm(y)) for all three sublayers",
      "The lecture's (and the paper's) decoder layer is post-LN: LayerNorm(y + Sublayer(y)) after "
      "masked self-attention, cross-attention and the FFN alike.",
      "h = y + self_attn(layer_norm(y))       # should be h = layer_norm(y + self_attn(y))")
def decoder_layer_pre_ln(y, memory, params, num_heads, self_mask=None, memory_mask=None,
                         eps=1e-5, return_weights=False):
    normed = layer_norm(y, **params["norm1"], eps=eps)
    attended, self_weights = multi_head_attention(normed, normed, normed, params["self_attn"],
                                                  num_heads, self_mask)
    h1 = as_float(y, "y") + attended
    crossed, cross_weights = multi_head_attention(layer_norm(h1, **params["norm2"], eps=eps),
                                                  memory, memory, params["cross_attn"],
                                                  num_heads, memory_mask)
    h2 = h1 + crossed
    out = h2 + ffn(layer_norm(h2, **params["norm3"], eps=eps), **params["ffn"])
    if return_weights:
        return out, {"self_attn": self_weights, "cross_attn": cross_weights}
    return out


# --- BERT -----------------------------------------------------------------------------------

@twin("mlm_loss",
      "cross-entropy averaged over every position, not only the selected (masked) ones",
      "MLM predicts only the ~15% selected positions; the other tokens were visible in the "
      "input, and including them rewards copying.",
      "cross_entropy(logits, tokens)          # should skip unselected positions (label −100)")
def mlm_loss_every_position(logits, tokens, selected):
    return cross_entropy(logits, np.asarray(tokens))


@twin("mlm_loss",
      "the selected positions' loss summed but divided by all T positions (scaled by n_sel/T)",
      "The mean runs over the selected positions only: Σ_{i∈M} CE_i / |M|. Dividing by T "
      "shrinks the loss by |M|/T.",
      "loss = ce[selected].sum() / T          # should be ce[selected].mean()")
def mlm_loss_divided_by_all_tokens(logits, tokens, selected):
    selected = np.asarray(selected, dtype=bool)
    return mlm_loss(logits, tokens, selected) * selected.sum() / selected.size


@twin("mlm_select",
      "80/10/10 applied to every token instead of to the 15% selected",
      "First 15% of the positions are selected; only those are corrupted, 80% to [MASK], 10% to "
      "a random token, 10% unchanged — and only those enter the loss.",
      "for every position: u < 0.8 → [MASK] … # should first select 15% of the positions")
def mlm_select_every_token(tokens, rng, vocab_size, mask_id, special_ids=(), select_prob=0.15):
    tokens = np.asarray(tokens)
    rng = np.random.default_rng(rng)
    u = rng.random(len(tokens))
    random_ids = rng.integers(0, vocab_size, size=len(tokens))
    candidate = ~np.isin(tokens, list(special_ids))
    actions = np.where(candidate, np.where(u < 0.8, MASK,
                                           np.where(u < 0.9, RANDOM, UNCHANGED)), KEEP)
    inputs = np.where(actions == MASK, mask_id,
                      np.where(actions == RANDOM, random_ids, tokens))
    selected = actions != KEEP
    return MLMSelection(inputs, selected, np.where(selected, tokens, IGNORE_INDEX), actions)


# --- backward passes ------------------------------------------------------------------------

@twin("softmax_backward",
      "softmax gradient using only the Jacobian's diagonal p(1 − p)",
      "∂p_i/∂z_j = p_i(δ_ij − p_j): every output depends on every input. Keeping only the "
      "diagonal drops −p_i p_j, and the gradient rows stop summing to 0.",
      "dz = dp * p * (1 - p)                  # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_diagonal_only(dp, cache):
    p = cache
    return as_float(dp, "dp") * p * (1.0 - p)


@twin("softmax_cross_entropy_backward",
      "cross-entropy gradient not divided by the number of targets N",
      "The loss is a mean over N targets, so its gradient is (P − onehot)/N.",
      "dz = P - onehot                        # should be (P - onehot) / N")
def softmax_cross_entropy_backward_not_averaged(dloss, cache):
    count = cache.count
    return softmax_cross_entropy_backward(dloss, cache) * count


@twin("attention_backward",
      "dQ and dK without the 1/√d_k factor of the forward scale",
      "S = QKᵀ/√d_k, so by the chain rule dQ = dS K/√d_k and dK = dSᵀQ/√d_k.",
      "dQ = dS @ K                            # should be dS @ K / np.sqrt(d_k)")
def attention_backward_no_scale(dZ, cache):
    dQ, dK, dV = attention_backward(dZ, cache)
    scale = cache.scale
    return dQ / scale, dK / scale, dV


# --- WordPiece ------------------------------------------------------------------------------

@twin("wordpiece_tokenize",
      "pieces after the first looked up without the \"##\" continuation prefix",
      "In WordPiece a piece inside a word is a different vocabulary entry from the same letters "
      "starting a word: \"##ing\" is not \"ing\". Look up continuation pieces with \"##\".",
      "piece = word[start:end]               # should be '##' + word[start:end] when start > 0")
def wordpiece_tokenize_no_prefix(text, vocab, unk=UNK):
    def split_word(word, vocab, unk):
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start and word[start:end] not in vocab:
                end -= 1
            if end == start:
                return [unk]
            pieces.append(word[start:end])
            start = end
        return pieces
    return tokenize_words(text, vocab, unk, split_word)


@twin("wordpiece_tokenize",
      "the shortest matching piece taken first instead of the longest",
      "WordPiece is greedy longest-match-first: at each position it takes the longest "
      "vocabulary entry, so common words stay whole (\"playing\" → play ##ing, not p ##l …).",
      "end = start + 1 and grow               # should start from end = len(word) and shrink")
def wordpiece_tokenize_shortest_first(text, vocab, unk=UNK):
    def split_word(word, vocab, unk):
        pieces, start = [], 0
        while start < len(word):
            for end in range(start + 1, len(word) + 1):
                piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
                if piece in vocab:
                    break
            else:
                return [unk]
            pieces.append(piece)
            start = end
        return pieces
    return tokenize_words(text, vocab, unk, split_word)


# The generated families live in their own modules; importing them registers their twins here,
# so MISCONCEPTIONS stays the one registry.
from . import (misconceptions_attention, misconceptions_layers, misconceptions_bert,  # noqa: E402,F401
               misconceptions_alignment, misconceptions_gradients)
