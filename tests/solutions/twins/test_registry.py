"""The misconception registry: every twin is well-formed and really differs from the answer key."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import solutions
from solutions import TWINS, get_twin, twins_for

from tests.solutions.twins.cases import (ADD_NORMS, ARGUMENTS, B, D_K, D_MODEL, GENERATED_MODULES, HEADS, L, S,
                                         TWIN_MODULES, _additive_by_hand, _decoder_by_hand, _encoder_by_hand,
                                         _layer_norm, _masked, _mha_by_hand, _nsp_z, _per_pair_ce, _scores,
                                         _sdpa_by_hand, _softmax, _split_by_hand, _tril, arguments_for, call,
                                         check_twin, differences, sdpa_args)


TWIN_NAMES = list(TWINS)

# Bug in solutions/twins/core_layers.py: `from . import layer_norm` binds the *function*
# solutions.layer_norm (solutions/__init__.py rebinds the name before misconceptions is
# imported), so layer_norm.layer_norm(...) inside the twin raises AttributeError.
SDPA_TWIN_NAMES = [m.name for m in twins_for("scaled_dot_product_attention")]


def test_registry_has_at_least_15_uniquely_named_twins():
    assert len(TWINS) >= 15
    assert all(name == twin.name for name, twin in TWINS.items())
    assert len({twin.function for twin in TWINS.values()}) == len(TWINS)


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_shadows_a_public_solutions_function_and_is_documented(name):
    twin = TWINS[name]
    assert not twin.shadows.startswith("_")
    assert callable(getattr(solutions, twin.shadows))
    assert callable(twin.function)
    for text in (twin.summary, twin.explanation, twin.code):
        assert isinstance(text, str) and text.strip()


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_has_the_parameter_names_of_the_function_it_shadows(name):
    twin = TWINS[name]
    correct = getattr(solutions, twin.shadows)
    assert (list(inspect.signature(twin.function).parameters)
            == list(inspect.signature(correct).parameters))


# twins whose mistake gives the right numbers where it runs at all (an (L, L) mask for L ≠ S)
ONLY_RAISES = {"causal_attention_square_mask"}


@pytest.mark.parametrize("name", TWIN_NAMES)
def test_twin_differs_from_the_correct_function(name):
    twin = TWINS[name]
    if name in ONLY_RAISES:       # right where it runs: its mistake is an error elsewhere
        with pytest.raises(ValueError):
            call(twin.function, ARGUMENTS[twin.shadows]())
        return
    build_arguments = arguments_for(name)
    correct_output = call(getattr(solutions, twin.shadows), build_arguments())
    twin_output = call(twin.function, build_arguments())
    assert differences(correct_output, twin_output), f"{name} agrees with {twin.shadows}"


def test_comparison_treats_equal_outputs_as_equal():
    # Guards the test above: differences() must not report a difference that is not there.
    for shadows, build_arguments in ARGUMENTS.items():
        function = getattr(solutions, shadows)
        assert differences(call(function, build_arguments()),
                           call(function, build_arguments())) == [], shadows


@pytest.mark.parametrize("name", SDPA_TWIN_NAMES)
def test_attention_twin_steps_end_in_its_plain_output(name):
    twin = TWINS[name].function
    build_arguments = arguments_for(name)
    steps = twin(**build_arguments(), return_steps=True)
    assert isinstance(steps, solutions.AttentionSteps)
    np.testing.assert_allclose(steps.output, twin(**build_arguments()), rtol=1e-12, atol=0)


def test_unknown_misconception_raises_key_error_listing_known_names():
    with pytest.raises(KeyError) as excinfo:
        get_twin("softmax_upside_down")
    message = str(excinfo.value)
    assert "softmax_upside_down" in message
    assert all(name in message for name in TWINS)


def test_get_misconception_returns_the_registered_twin():
    assert get_twin("sdpa_no_scale") is TWINS["sdpa_no_scale"]


def test_misconceptions_for_causal_mask_returns_the_causal_twins_in_order():
    assert [m.name for m in twins_for("causal_mask")] == [
        "causal_mask_triu", "causal_mask_no_diagonal", "causal_mask_shifted_by_one",
        "causal_mask_all_visible", "causal_mask_inverted"]


def test_misconceptions_for_a_function_without_twins_is_empty():
    assert twins_for("relu") == []


@pytest.mark.parametrize("name", ["sdpa_mask_with_zero", "sdpa_mask_after_softmax",
                                  "sdpa_inverted_mask"])
def test_masking_twins_read_the_minus_1e9_fill_as_blocked(name):
    # The Annotated Transformer's additive fill is −1e9, not −inf: a twin must still see a mask.
    args = sdpa_args()
    args["mask"] = np.where(args["mask"], 0.0, -1e9)
    correct = solutions.scaled_dot_product_attention(**args)
    twin = TWINS[name].function(**args)
    assert differences(correct, twin)
    unmasked = solutions.scaled_dot_product_attention(**dict(args, mask=None))
    assert differences(unmasked, twin)


HAND_WRITTEN = {
    "sdpa_multiply_by_sqrt_d_k": lambda a: _sdpa_by_hand(a, np.sqrt(D_K)),
    "sdpa_softmax_over_all_entries": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), axis=(1, 2)),
    "sdpa_scale_after_softmax": lambda a: _softmax(_masked(_scores(a), a["mask"])) / np.sqrt(D_K) @ a["V"],
    "sdpa_unnormalised": lambda a: np.exp(_masked(_scores(a) / np.sqrt(D_K), a["mask"])) @ a["V"],
    "sdpa_scores_transposed": lambda a: _softmax(_masked(a["K"] @ np.swapaxes(a["Q"], -1, -2)
                                                         / np.sqrt(D_K), a["mask"])) @ a["V"],
    "sdpa_k_not_transposed": lambda a: _softmax(_masked(a["Q"] @ a["K"] / np.sqrt(S), a["mask"])) @ a["V"],
    "sdpa_values_from_keys": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), values="K"),
    "sdpa_mask_ignored": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=None),
    "sdpa_mask_transposed": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=np.swapaxes(a["mask"], 1, 2)),
    "causal_attention_no_scale": lambda a: _sdpa_by_hand(a, 1.0, mask=_tril(L, S)),
    "causal_attention_mask_after_softmax": lambda a: (_softmax(_scores(a) / np.sqrt(D_K)) * _tril(L, S)) @ a["V"],
    "causal_attention_inverted_mask": lambda a: np.nan_to_num(
        _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=~_tril(L, S))),
    "causal_attention_softmax_over_queries": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=_tril(L, S), axis=-2),
    "causal_attention_no_max_subtraction": lambda a: (
        (e := np.exp(_masked(_scores(a) / np.sqrt(D_K), _tril(L, S)))) / e.sum(-1, keepdims=True)) @ a["V"],
    "causal_mask_inverted": lambda a: np.triu(np.ones((L, S), dtype=bool), k=1),
    "padding_mask_includes_first_pad": lambda a: np.array([[j <= n for j in range(S)] for n in [2, 5, 3]])[:, None],
    "padding_mask_drops_last_token": lambda a: np.array([[j < n - 1 for j in range(S)] for n in [2, 5, 3]])[:, None],
    "padding_mask_inverted": lambda a: np.array([[j >= n for j in range(S)] for n in [2, 5, 3]])[:, None],
    "padding_mask_on_query_rows": lambda a: np.array([[j < n for j in range(S)] for n in [2, 5, 3]])[:, :, None],
    "combine_masks_or": lambda a: _tril(S, S)[None] | (np.arange(S) < np.array([2, 4])[:, None])[:, None, :],
    "softmax_axis_0": lambda a: _softmax(a["x"], axis=0),
    "softmax_over_all_entries": lambda a: np.exp(a["x"] - a["x"].max()) / np.exp(a["x"] - a["x"].max()).sum(),
    "softmax_unnormalised": lambda a: np.exp(a["x"]),
    "log_softmax_base_10": lambda a: np.log10(_softmax(a["x"])),
    "log_softmax_without_normaliser": lambda a: a["x"],
    "softmax_backward_no_sum_term": lambda a: a["cache"] * a["dp"],
    "softmax_backward_sum_over_axis_0": lambda a: a["cache"] * (a["dp"] - (a["dp"] * a["cache"]).sum(0)),
    "softmax_backward_sum_over_all_entries": lambda a: a["cache"] * (a["dp"] - (a["dp"] * a["cache"]).sum()),
    "additive_score_W_transposed": lambda a: _additive_by_hand(a["s"], a["H"], a["W"], a["U"], a["v"]),
    "bahdanau_step_W_transposed": lambda a: solutions.AlignmentStep(
        _additive_by_hand(a["s_prev"], a["H"], a["W"], a["U"], a["v"]),
        w := _softmax(_additive_by_hand(a["s_prev"], a["H"], a["W"], a["U"], a["v"])),
        (w[..., None, :] @ a["H"])[..., 0, :]),
    "content_score_without_s_norm": lambda a: np.einsum("bn,bsn->bs", a["s"], a["H"]) / np.linalg.norm(a["H"], axis=-1),
    "mha_mask_ignored": lambda a: _mha_by_hand(a, lambda d: 1 / np.sqrt(d), None),
    "mha_inverted_mask": lambda a: _mha_by_hand(a, lambda d: 1 / np.sqrt(d), ~a["mask"]),
    "split_heads_without_transpose": lambda a: _split_by_hand(a["x"], HEADS, "reshape"),
    "split_heads_no_swap": lambda a: _split_by_hand(a["x"], HEADS, "no_swap"),
    "split_heads_interleaved_columns": lambda a: _split_by_hand(a["x"], HEADS, "interleaved"),
    "merge_heads_without_transpose": lambda a: a["x"].reshape(B, L, HEADS * D_K),
    "merge_heads_averaged": lambda a: a["x"].mean(axis=1),
    "merge_heads_concatenated_on_token_axis": lambda a: np.concatenate([a["x"][:, i] for i in range(HEADS)], axis=1),
    "mha_param_count_no_output_projection": lambda a: 3 * 512 * 512 + 3 * 512,
    "mha_param_count_per_head": lambda a: 8 * (4 * 512 * 512 + 4 * 512),
    "mha_param_count_no_bias": lambda a: 4 * 512 * 512,
    "positional_encoding_omitted": lambda a: np.zeros((S, D_MODEL)),
    **{f"encoder_layer_{w}": (lambda w: lambda a: _encoder_by_hand(a, ADD_NORMS[w]))(w) for w in ADD_NORMS},
    **{f"decoder_layer_{w}": (lambda w: lambda a: _decoder_by_hand(a, ADD_NORMS[w]))(w) for w in ADD_NORMS},
    "decoder_layer_no_causal_mask": lambda a: _decoder_by_hand(a, lambda x, out, n: _layer_norm(x + out, n), None),
    "nsp_head_no_pooler": lambda a: a["C"] @ a["W_cls"] + a["b_cls"],
    "nsp_head_pooler_no_tanh": lambda a: _nsp_z(a, lambda h: h),
    "nsp_loss_labels_swapped": lambda a: _per_pair_ce({**a, "labels": 1 - a["labels"]}).mean(),
    "nsp_loss_summed": lambda a: _per_pair_ce(a).sum(),
    "nsp_loss_base_10": lambda a: _per_pair_ce(a, np.log10).mean(),
    "nsp_loss_sigmoid_of_one_logit": lambda a: -np.mean(np.log(np.where(
        a["labels"] == 1, 1 / (1 + np.exp(-a["logits"][:, 1])), 1 - 1 / (1 + np.exp(-a["logits"][:, 1]))))),
    "mlm_loss_summed": lambda a: -sum(np.log(_softmax(a["logits"][b, t]))[a["tokens"][b, t]]
                                      for b, t in zip(*np.nonzero(a["selected"]))),
}


def _only_masked_by_hand(a):
    chosen = solutions.mlm_select(**a)
    selected = chosen.actions == solutions.bert.MASK
    assert selected.sum() < chosen.selected.sum(), "the fixture must have random/unchanged positions"
    return solutions.MLMSelection(chosen.inputs, selected, np.where(selected, a["tokens"], -100),
                                  chosen.actions)


HAND_WRITTEN["mlm_select_only_masked"] = _only_masked_by_hand
HAND_WRITTEN_ARGUMENTS = {
    "causal_attention_no_scale": lambda: sdpa_args() | {"mask": None},
}


def hand_written_everywhere() -> dict:
    import importlib
    checks = dict(HAND_WRITTEN)
    for module in TWIN_MODULES:
        checks.update(importlib.import_module(f"tests.solutions.twins.test_{module}").HAND_WRITTEN)
    return checks


def test_every_twin_added_for_issue_17_has_a_hand_written_check():
    generated = {name for name, m in TWINS.items()
                 if m.function.__module__ in {f"solutions.twins.{m}" for m in GENERATED_MODULES}}
    assert generated, "no generated twin found: are the family modules' names right?"
    checked = hand_written_everywhere().keys()
    assert generated <= checked, sorted(generated - checked)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])


def test_the_scale_family_is_one_definition():
    # Each member of the "another scale" family is sdpa with its own factor, nothing else.
    args = sdpa_args()
    factors = {"sdpa_no_scale": 1.0, "sdpa_divide_by_d_k": 1 / D_K,
               "sdpa_scale_by_sqrt_seq_len": 1 / np.sqrt(S),
               "sdpa_multiply_by_sqrt_d_k": np.sqrt(D_K)}
    for name, factor in factors.items():
        np.testing.assert_allclose(TWINS[name].function(**args),
                                   solutions.scaled_dot_product_attention(**args, scale=factor),
                                   rtol=1e-12, atol=0, err_msg=name)


def test_attnkit_misconceptions_lists_the_new_twins(capsys):
    from attnkit.cli import main
    main(["misconceptions"])
    out = capsys.readouterr().out
    for name in hand_written_everywhere():
        assert name in out, name
