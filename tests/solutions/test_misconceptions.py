"""The misconception registry: every twin is well-formed and really differs from the answer key."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import solutions
from solutions import MISCONCEPTIONS, get_misconception, misconceptions_for

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


# One argument builder per shadowed function. Builders are called once per call, so a function
# that mutates its arguments cannot leak into the other's inputs.
def large_score_sdpa_args():
    """Scores in the thousands: only an unshifted softmax overflows."""
    return {**sdpa_args(), "Q": 40 * sdpa_args()["Q"], "K": 40 * sdpa_args()["K"]}


# Twins whose mistake needs special inputs to show (the default is ARGUMENTS[shadows]).
TWIN_ARGUMENTS = {"sdpa_no_max_subtraction": large_score_sdpa_args}

WORDPIECE_VOCAB = ["[UNK]", "un", "##aff", "##able", "play", "##ing", "ing", "p", "##l", "##a",
                   "##y", "##i", "##n", "##g", "a", "##ff"]

ARGUMENTS = {
    "scaled_dot_product_attention": sdpa_args,
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
}


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


TWIN_NAMES = list(MISCONCEPTIONS)

# Bug in solutions/misconceptions.py: `from . import layer_norm` binds the *function*
# solutions.layer_norm (solutions/__init__.py rebinds the name before misconceptions is
# imported), so layer_norm.layer_norm(...) inside the twin raises AttributeError.
SDPA_TWIN_NAMES = [m.name for m in misconceptions_for("scaled_dot_product_attention")]


def test_registry_has_at_least_15_uniquely_named_twins():
    assert len(MISCONCEPTIONS) >= 15
    assert all(name == twin.name for name, twin in MISCONCEPTIONS.items())
    assert len({twin.function for twin in MISCONCEPTIONS.values()}) == len(MISCONCEPTIONS)


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_shadows_a_public_solutions_function_and_is_documented(name):
    twin = MISCONCEPTIONS[name]
    assert not twin.shadows.startswith("_")
    assert callable(getattr(solutions, twin.shadows))
    assert callable(twin.function)
    for text in (twin.summary, twin.explanation, twin.code):
        assert isinstance(text, str) and text.strip()


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_has_the_parameter_names_of_the_function_it_shadows(name):
    twin = MISCONCEPTIONS[name]
    correct = getattr(solutions, twin.shadows)
    assert (list(inspect.signature(twin.function).parameters)
            == list(inspect.signature(correct).parameters))


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_differs_from_the_correct_function(name):
    twin = MISCONCEPTIONS[name]
    build_arguments = TWIN_ARGUMENTS.get(name, ARGUMENTS[twin.shadows])
    correct_output = getattr(solutions, twin.shadows)(**build_arguments())
    twin_output = twin.function(**build_arguments())
    assert differences(correct_output, twin_output), f"{name} agrees with {twin.shadows}"


def test_comparison_treats_equal_outputs_as_equal():
    # Guards the test above: differences() must not report a difference that is not there.
    for shadows, build_arguments in ARGUMENTS.items():
        function = getattr(solutions, shadows)
        assert differences(function(**build_arguments()), function(**build_arguments())) == [], shadows


@pytest.mark.parametrize("name", SDPA_TWIN_NAMES)
def test_attention_twin_steps_end_in_its_plain_output(name):
    twin = MISCONCEPTIONS[name].function
    steps = twin(**sdpa_args(), return_steps=True)
    assert isinstance(steps, solutions.AttentionSteps)
    np.testing.assert_allclose(steps.output, twin(**sdpa_args()), rtol=1e-12, atol=0)


def test_unknown_misconception_raises_key_error_listing_known_names():
    with pytest.raises(KeyError) as excinfo:
        get_misconception("softmax_upside_down")
    message = str(excinfo.value)
    assert "softmax_upside_down" in message
    assert all(name in message for name in MISCONCEPTIONS)


def test_get_misconception_returns_the_registered_twin():
    assert get_misconception("sdpa_no_scale") is MISCONCEPTIONS["sdpa_no_scale"]


def test_misconceptions_for_causal_mask_returns_both_causal_twins_in_order():
    assert [m.name for m in misconceptions_for("causal_mask")] == [
        "causal_mask_triu", "causal_mask_no_diagonal"]


def test_misconceptions_for_a_function_without_twins_is_empty():
    assert misconceptions_for("merge_heads") == []


@pytest.mark.parametrize("name", ["sdpa_mask_with_zero", "sdpa_mask_after_softmax",
                                  "sdpa_inverted_mask"])
def test_masking_twins_read_the_minus_1e9_fill_as_blocked(name):
    # The Annotated Transformer's additive fill is −1e9, not −inf: a twin must still see a mask.
    args = sdpa_args()
    args["mask"] = np.where(args["mask"], 0.0, -1e9)
    correct = solutions.scaled_dot_product_attention(**args)
    twin = MISCONCEPTIONS[name].function(**args)
    assert differences(correct, twin)
    unmasked = solutions.scaled_dot_product_attention(**dict(args, mask=None))
    assert differences(unmasked, twin)
