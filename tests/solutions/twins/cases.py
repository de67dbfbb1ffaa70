"""What the twins' tests share: argument builders for every shadowed function (``ARGUMENTS``,
``TWIN_ARGUMENTS``, a family's own ``ARGUMENTS_OF``), the comparison of two outputs, the
lecture's formulas written out by hand in plain NumPy, and ``check_twin``."""

from __future__ import annotations

import dataclasses

import numpy as np

import solutions
from solutions import TWINS

# No two sizes coincide and there are several heads, so a swapped axis, a missing √d_k or a
# head mix-up always changes the result (the fixtures of the misconception catalogue).
B, L, S, D_K, D_V, D_MODEL, HEADS, VOCAB = 2, 3, 5, 4, 6, 8, 2, 7


def rng():
    return np.random.default_rng(0)


def attention_mask():
    """(B, L, S): every row has both blocked and allowed keys, so the inverted mask has no
    fully masked row either."""
    mask = np.ones((B, L, S), dtype=bool)
    mask[0, 0, 3:] = False
    mask[0, 1, 0] = False
    mask[0, 2, 1:3] = False
    mask[1, 0, :2] = False
    mask[1, 1, 4] = False
    mask[1, 2, 2:] = False
    return mask


def mha_params(r, d_v=D_V):
    def weight(fan_in, fan_out):
        return r.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)

    return {"W_Q": weight(D_MODEL, HEADS * D_K), "b_Q": r.standard_normal(HEADS * D_K),
            "W_K": weight(D_MODEL, HEADS * D_K), "b_K": r.standard_normal(HEADS * D_K),
            "W_V": weight(D_MODEL, HEADS * d_v), "b_V": r.standard_normal(HEADS * d_v),
            "W_O": weight(HEADS * d_v, D_MODEL), "b_O": r.standard_normal(D_MODEL)}


def norm_params(r):
    return {"gamma": 1 + 0.1 * r.standard_normal(D_MODEL), "beta": 0.1 * r.standard_normal(D_MODEL)}


def sdpa_args():
    r = rng()
    return {"Q": r.standard_normal((B, L, D_K)), "K": r.standard_normal((B, S, D_K)),
            "V": r.standard_normal((B, S, D_V)), "mask": attention_mask()}


def softmax_args():
    # Scores around 1000 overflow exp() unless the max is subtracted; the batch axis in front
    # makes axis=1 the query axis.
    return {"x": 1000 + rng().standard_normal((B, L, S))}


def multi_head_attention_args():
    r = rng()
    return {"query": r.standard_normal((B, L, D_MODEL)), "key": r.standard_normal((B, S, D_MODEL)),
            "value": r.standard_normal((B, S, D_MODEL)), "params": mha_params(r),
            "num_heads": HEADS, "mask": attention_mask()}


def mha_params_from_torch_args():
    r = rng()
    return {"in_proj_weight": r.standard_normal((3 * D_MODEL, D_MODEL)),
            "in_proj_bias": r.standard_normal(3 * D_MODEL),
            "out_proj_weight": r.standard_normal((D_MODEL, D_MODEL)),
            "out_proj_bias": r.standard_normal(D_MODEL)}


def additive_score_args():
    r = rng()
    n_s, n_h, n_a = 3, 4, 6
    return {"s": r.standard_normal((B, n_s)), "H": r.standard_normal((B, S, n_h)),
            "W": r.standard_normal((n_s, n_a)), "U": r.standard_normal((n_h, n_a)),
            "v": r.standard_normal(n_a)}


def bahdanau_step_args():
    key_mask = np.ones((B, S), dtype=bool)
    key_mask[0, 3:] = key_mask[1, 0] = False
    args = additive_score_args()
    return {"s_prev": args.pop("s"), **args, "mask": key_mask}


def layer_norm_args():
    r = rng()
    return {"x": r.standard_normal((B, L, D_MODEL)), **norm_params(r)}


def ffn_params(r):
    return {"W1": r.standard_normal((D_MODEL, 16)) / np.sqrt(D_MODEL), "b1": r.standard_normal(16),
            "W2": r.standard_normal((16, D_MODEL)) / 4.0, "b2": r.standard_normal(D_MODEL)}


def encoder_layer_args():
    r = rng()
    return {"x": r.standard_normal((B, L, D_MODEL)),
            "params": {"self_attn": mha_params(r, d_v=D_MODEL // HEADS), "norm1": norm_params(r),
                       "ffn": ffn_params(r), "norm2": norm_params(r)},
            "num_heads": HEADS, "mask": solutions.causal_mask(L)}


def decoder_layer_args():
    r = rng()
    return {"y": r.standard_normal((B, L, D_MODEL)), "memory": r.standard_normal((B, S, D_MODEL)),
            "params": {"self_attn": mha_params(r, d_v=D_MODEL // HEADS), "norm1": norm_params(r),
                       "cross_attn": mha_params(r, d_v=D_MODEL // HEADS), "norm2": norm_params(r),
                       "ffn": ffn_params(r), "norm3": norm_params(r)},
            "num_heads": HEADS, "self_mask": solutions.causal_mask(L)}


def mlm_loss_args():
    r = rng()
    selected = np.zeros((B, S), dtype=bool)
    selected[0, [1, 3]] = selected[1, 2] = True
    return {"logits": r.standard_normal((B, S, VOCAB)), "tokens": r.integers(0, VOCAB, (B, S)),
            "selected": selected}


def mlm_select_args():
    tokens = np.array([0, 5, 9, 12, 7, 7, 3, 18, 4, 11, 6, 2, 15, 8, 1, 10, 13, 19, 16, 1])
    # A seed, not a Generator: the correct function and the twin each start a fresh stream.
    return {"tokens": tokens, "rng": 1234, "vocab_size": 20, "mask_id": 17, "special_ids": (0, 1)}


def softmax_backward_args():
    r = rng()
    p, cache = solutions.softmax_forward(r.standard_normal((B, L, S)))
    return {"dp": r.standard_normal(p.shape), "cache": cache}


def softmax_cross_entropy_backward_args():
    r = rng()
    targets = r.integers(0, VOCAB, (B, S))
    targets[0, 2] = solutions.losses.IGNORE_INDEX
    _, cache = solutions.softmax_cross_entropy_forward(r.standard_normal((B, S, VOCAB)), targets)
    return {"dloss": 1.0, "cache": cache}


def attention_backward_args():
    args = sdpa_args()
    out, cache = solutions.attention_forward(**args)
    return {"dZ": rng().standard_normal(out.shape), "cache": cache}


def gradient_check_args():
    r = rng()
    return {"Q": r.standard_normal((L, D_K)), "K": r.standard_normal((S, D_K)),
            "V": r.standard_normal((S, D_V)), "dZ": r.standard_normal((L, D_V)), "row": 1, "col": 2,
            "h": 0.3}


# One argument builder per shadowed function. Builders are called once per call, so a function
# that mutates its arguments cannot leak into the other's inputs.
def large_score_sdpa_args():
    """Scores in the thousands: only an unshifted softmax overflows."""
    return {**sdpa_args(), "Q": 40 * sdpa_args()["Q"], "K": 40 * sdpa_args()["K"]}


def square_sdpa_args():
    """As many keys as queries (S = L), so a transposed score matrix or mask still fits."""
    r = rng()
    mask = attention_mask()[:, :, :L]
    return {"Q": r.standard_normal((B, L, D_K)), "K": r.standard_normal((B, L, D_K)),
            "V": r.standard_normal((B, L, D_V)), "mask": mask}


def d_k_equals_s_sdpa_args():
    """d_k = S, the only shapes for which QK (without the transpose) can be computed."""
    r = rng()
    return {"Q": r.standard_normal((B, L, S)), "K": r.standard_normal((B, S, S)),
            "V": r.standard_normal((B, S, D_V)), "mask": attention_mask()}


def large_score_causal_args():
    return {k: v for k, v in large_score_sdpa_args().items() if k != "mask"}


def long_mlm_select_args():
    """100 tokens: 15 selected, so some become a random token or stay unchanged."""
    return {**mlm_select_args(), "tokens": np.arange(100) % 18 + 2}


def square_bahdanau_args():
    """A square W (n_s = n_a), the only shape for which W @ s can be computed."""
    r = rng()
    return {"s_prev": r.standard_normal((B, 3)), "H": r.standard_normal((B, S, 4)),
            "W": r.standard_normal((3, 3)), "U": r.standard_normal((4, 3)),
            "v": r.standard_normal(3), "mask": None}


# Twins whose mistake needs special inputs to show (the default is ARGUMENTS[shadows]).
TWIN_ARGUMENTS = {
    "sdpa_no_max_subtraction": large_score_sdpa_args,
    "causal_attention_no_max_subtraction": large_score_causal_args,
    "sdpa_scores_transposed": square_sdpa_args,
    "sdpa_mask_transposed": square_sdpa_args,
    "sdpa_k_not_transposed": d_k_equals_s_sdpa_args,
    "mlm_select_only_masked": long_mlm_select_args,
    "additive_score_W_transposed": lambda: {k: v for k, v in square_bahdanau_args().items()
                                            if k not in ("mask", "s_prev")}
    | {"s": square_bahdanau_args()["s_prev"]},
    "bahdanau_step_W_transposed": square_bahdanau_args,
}

WORDPIECE_VOCAB = ["[UNK]", "un", "##aff", "##able", "play", "##ing", "ing", "p", "##l", "##a",
                   "##y", "##i", "##n", "##g", "a", "##ff"]

def nsp_args():
    r = rng()
    return {"C": r.standard_normal((4, 3)), "W_pool": r.standard_normal((3, 3)),
            "b_pool": r.standard_normal(3), "W_cls": r.standard_normal((3, 2)),
            "b_cls": r.standard_normal(2)}


def nsp_loss_args():
    return {"logits": rng().standard_normal((5, 2)), "labels": np.array([0, 1, 1, 0, 1])}


ARGUMENTS = {
    "scaled_dot_product_attention": sdpa_args,
    "padding_mask": lambda: {"lengths": np.array([2, 5, 3]), "S": S},
    "combine_masks": lambda: {"*": (solutions.causal_mask(S), solutions.padding_mask([2, 4], S))},
    "log_softmax": lambda: {"x": rng().standard_normal((B, L, S))},
    "content_score": lambda: {"s": 1 + rng().standard_normal((B, 4)),
                              "H": rng().standard_normal((B, S, 4))},
    "split_heads": lambda: {"x": rng().standard_normal((B, L, D_MODEL)), "num_heads": HEADS},
    "merge_heads": lambda: {"x": rng().standard_normal((B, HEADS, L, D_K))},
    "mha_param_count": lambda: {"d_model": 512, "num_heads": 8},
    "nsp_head": nsp_args,
    "nsp_loss": nsp_loss_args,
    "wordpiece_tokenize": lambda: {"text": "unaffable playing", "vocab": WORDPIECE_VOCAB},
    "causal_attention": lambda: {k: v for k, v in sdpa_args().items() if k != "mask"},
    "softmax": softmax_args,
    "causal_mask": lambda: {"L": L, "S": S},
    "multi_head_attention": multi_head_attention_args,
    "mha_params_from_torch": mha_params_from_torch_args,
    "additive_score": additive_score_args,
    "bahdanau_step": bahdanau_step_args,
    "layer_norm": layer_norm_args,
    "positional_encoding": lambda: {"L": S, "d_model": D_MODEL},
    "embed": lambda: {"tokens": rng().integers(0, VOCAB, (B, L)),
                      "table": rng().standard_normal((VOCAB, D_MODEL))},
    "encoder_layer": encoder_layer_args,
    "decoder_layer": decoder_layer_args,
    "mlm_loss": mlm_loss_args,
    "mlm_select": mlm_select_args,
    "softmax_backward": softmax_backward_args,
    "softmax_cross_entropy_backward": softmax_cross_entropy_backward_args,
    "attention_backward": attention_backward_args,
    "dot_product_moments": lambda: {"d_k": 16, "var_q": 2.0, "var_k": 3.0},
    "attention_weights_backward": attention_backward_args,
    "gradient_check": gradient_check_args,
    "winner": lambda: {"scores": np.array([0.3, -1.2, 2.5, 0.7])},
}


def call(function, arguments):
    """``function`` on ``arguments``; the key "*" holds the positional arguments of a variadic one."""
    return function(*arguments.pop("*", ()), **arguments)


def differences(correct, wrong, path="output"):
    """Where ``wrong`` is not close to ``correct`` (rtol 1e-6, atol 1e-9), or NaN where the
    correct value is finite; an empty list means the two agree everywhere."""
    if dataclasses.is_dataclass(correct):
        if type(wrong) is not type(correct):
            return [f"{path}: {type(wrong).__name__} instead of {type(correct).__name__}"]
        return [d for field in dataclasses.fields(correct)
                for d in differences(getattr(correct, field.name), getattr(wrong, field.name),
                                     f"{path}.{field.name}")]
    if isinstance(correct, dict):
        if not isinstance(wrong, dict) or wrong.keys() != correct.keys():
            return [f"{path}: keys differ"]
        return [d for key in correct for d in differences(correct[key], wrong[key], f"{path}[{key!r}]")]
    if isinstance(correct, (tuple, list)):
        if not isinstance(wrong, (tuple, list)) or len(wrong) != len(correct):
            return [f"{path}: not a sequence of length {len(correct)}"]
        return [d for i, (c, w) in enumerate(zip(correct, wrong))
                for d in differences(c, w, f"{path}[{i}]")]
    if correct is None or wrong is None:
        return [] if correct is wrong else [f"{path}: None vs not None"]
    correct, wrong = np.asarray(correct), np.asarray(wrong)
    if correct.shape != wrong.shape:
        return [f"{path}: shape {wrong.shape} instead of {correct.shape}"]
    if not (np.issubdtype(correct.dtype, np.inexact) or np.issubdtype(wrong.dtype, np.inexact)):
        return [] if np.array_equal(correct, wrong) else [f"{path}: values differ"]
    if (np.isnan(wrong) & np.isfinite(correct)).any():
        return [f"{path}: NaN where the correct value is finite"]
    if not np.allclose(correct, wrong, rtol=1e-6, atol=1e-9, equal_nan=True):
        return [f"{path}: values differ"]
    return []


def arguments_for(name):
    """The argument builder for twin ``name``: its own (here, or in ARGUMENTS_OF of the file
    of hand-written checks of its module), else the default of the function it shadows."""
    import importlib
    if name in TWIN_ARGUMENTS:
        return TWIN_ARGUMENTS[name]
    for module in TWIN_MODULES:
        own = getattr(importlib.import_module(f"tests.solutions.twins.test_{module}"),
                      "ARGUMENTS_OF", {})
        if name in own:
            return own[name]
    return ARGUMENTS[TWINS[name].shadows]


# --- each generated twin makes exactly its one mistake -------------------------------------
# Hand-written wrong computations, in plain NumPy on the same arguments as the twin: a twin
# must give exactly these numbers (so it makes its mistake and no other).

def _softmax(x, axis=-1):
    """Softmax by hand; a slice with every entry −∞ (fully masked) gives zeros, as the key's."""
    top = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(top), 0.0, top))
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _masked(scores, mask):
    return np.where(mask, scores, -np.inf)


def _scores(a):
    return a["Q"] @ np.swapaxes(a["K"], -1, -2)


def _sdpa_by_hand(a, scale, mask="given", axis=-1, values="V"):
    m = a["mask"] if isinstance(mask, str) else mask
    s = _scores(a) * scale
    w = _softmax(s if m is None else _masked(s, m), axis)
    return w @ a[values]


def _tril(L, S, k=0):
    return np.tril(np.ones((L, S), dtype=bool), k=k)


def _layer_norm(x, norm, axis=-1, ddof=None):
    mu = x.mean(axis=axis, keepdims=True)
    if ddof is None:
        return norm["gamma"] * (x - mu) / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-5) + norm["beta"]
    return norm["gamma"] * (x - mu) / (x.std(axis=-1, ddof=1, keepdims=True) + 1e-5) + norm["beta"]


def _encoder_by_hand(a, add_norm):
    x, p = a["x"], a["params"]
    h = add_norm(x, solutions.multi_head_attention(x, x, x, p["self_attn"], HEADS, a["mask"])[0], p["norm1"])
    return add_norm(h, solutions.ffn(h, **p["ffn"]), p["norm2"])


def _decoder_by_hand(a, add_norm, self_mask="given"):
    y, m, p = a["y"], a["memory"], a["params"]
    mask = a["self_mask"] if isinstance(self_mask, str) else self_mask
    h1 = add_norm(y, solutions.multi_head_attention(y, y, y, p["self_attn"], HEADS, mask)[0], p["norm1"])
    h2 = add_norm(h1, solutions.multi_head_attention(h1, m, m, p["cross_attn"], HEADS)[0], p["norm2"])
    return add_norm(h2, solutions.ffn(h2, **p["ffn"]), p["norm3"])


ADD_NORMS = {
    "no_residual": lambda x, out, n: _layer_norm(out, n),
    "no_layer_norm": lambda x, out, n: x + out,
    "norm_over_tokens": lambda x, out, n: _layer_norm(x + out, n, axis=-2),
    "norm_unbiased_std": lambda x, out, n: _layer_norm(x + out, n, ddof=1),
}


def _mha_by_hand(a, scale_of_d_head, mask):
    p, h = a["params"], a["num_heads"]
    q, k, v = (x @ p[f"W_{n}"] + p[f"b_{n}"] for x, n in
               ((a["query"], "Q"), (a["key"], "K"), (a["value"], "V")))
    heads = []
    for i in range(h):
        d = q.shape[-1] // h
        qi, ki = q[..., i * d:(i + 1) * d], k[..., i * d:(i + 1) * d]
        dv = v.shape[-1] // h
        s = qi @ np.swapaxes(ki, -1, -2) * scale_of_d_head(d)
        heads.append(_softmax(s if mask is None else _masked(s, mask)) @ v[..., i * dv:(i + 1) * dv])
    return np.concatenate(heads, axis=-1) @ p["W_O"] + p["b_O"]


def _per_pair_ce(a, log=np.log):
    z, y = a["logits"], a["labels"]
    p = _softmax(z)
    return -log(p[np.arange(len(y)), y])


def _nsp_z(a, pool):
    return pool(a["C"] @ a["W_pool"] + a["b_pool"]) @ a["W_cls"] + a["b_cls"]


def _split_by_hand(x, h, order):
    B_, L_, d = x.shape
    if order == "reshape":
        return x.reshape(B_, h, L_, d // h)
    if order == "no_swap":
        return x.reshape(B_, L_, h, d // h)
    return np.stack([x[..., i::h] for i in range(h)], axis=1)


def _additive_by_hand(s, H, W, U, v):
    return np.tanh((s @ W.T)[..., None, :] + H @ U) @ v


# Each module of generated twins has its own file of hand-written checks (a HAND_WRITTEN dict
# and the same equality test), beside the ones here.
TWIN_MODULES = ("attention", "layers", "bert", "alignment", "gradients", "decoding", "inspection")
# the modules of solutions/twins/ whose twins are generated (the core ones are checked here)
GENERATED_MODULES = ("attention", "attention_masks", "layers", "layers_stack", "bert", "alignment", "gradients", "decoding",
                     "inspection")


def check_twin(name, hand_written, twin_arguments=None):
    """The twin ``name`` gives what ``hand_written`` (arguments → the wrong value, written
    from the lecture's formula with the mistake in it) gives, on the default arguments of
    the function it shadows (or ``twin_arguments()``)."""
    twin = TWINS[name]
    build_arguments = twin_arguments or arguments_for(name)
    arguments = build_arguments()
    expected = hand_written({k: v for k, v in build_arguments().items()
                                   if k not in ("mask",) or twin.shadows != "causal_attention"})
    with np.errstate(all="ignore"):
        got = call(twin.function, arguments)
    if twin.shadows == "multi_head_attention":
        got = got[0]                      # (output, weights): the output carries the mistake
    assert not differences(expected, got), differences(expected, got)
