"""One mistake, one name: twins that are the same student error seen at different levels.

A mistake can be registered more than once: as a twin of the small function where it is
made (``causal_mask_all_visible``: a mask with every entry True) and as a twin of the larger
one that calls it (``sdpa_mask_ignored``, ``causal_attention_unmasked``: attention without
the mask). Where a student's answer matches two twins of one group, it is one error and the
feedback names it once — by the first of them the part lists — instead of offering "either
… or …" between two codes for the same thing. Twins of different groups stay alternatives.

Only the names are kept here (no import of the twins), so any layer may read the groups.
"""

from __future__ import annotations

GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(g) for g in (
    # no mask at all (the mask built all True, or never applied)
    {"causal_mask_all_visible", "sdpa_mask_ignored", "causal_attention_unmasked",
     "mha_mask_ignored", "decoder_layer_no_causal_mask", "bahdanau_step_mask_ignored"},
    # True read as "blocked" (PyTorch's attn_mask / key_padding_mask convention)
    {"sdpa_inverted_mask", "causal_mask_inverted", "causal_attention_inverted_mask",
     "mha_inverted_mask", "padding_mask_inverted"},
    # the upper triangle: each token sees the future (triu, or tril transposed)
    {"causal_mask_triu", "causal_attention_triu", "sdpa_mask_transposed"},
    {"causal_mask_no_diagonal", "causal_attention_mask_no_diagonal"},
    {"causal_mask_shifted_by_one", "causal_attention_mask_shifted_by_one"},
    {"sdpa_mask_with_zero", "causal_attention_mask_with_zero", "bahdanau_step_mask_with_zero"},
    {"sdpa_mask_after_softmax", "causal_attention_mask_after_softmax", "bahdanau_step_mask_after_softmax"},
    {"bahdanau_step_without_state", "additive_score_without_state"},
    {"sdpa_mask_added", "causal_attention_mask_added"},
    {"padding_mask_on_query_rows", "combine_masks_padding_on_query_rows"},
    {"sdpa_no_scale", "causal_attention_no_scale", "mha_no_scale"},
    {"sdpa_divide_by_d_k", "mha_divide_by_d_head"},
    {"sdpa_softmax_over_queries", "causal_attention_softmax_over_queries", "softmax_axis_0"},
    {"sdpa_unnormalised", "softmax_unnormalised", "bahdanau_step_exp_not_normalised"},
    {"sdpa_no_max_subtraction", "causal_attention_no_max_subtraction",
     "softmax_no_max_subtraction", "bahdanau_step_no_max_subtraction"},
    {"sdpa_softmax_over_all_entries", "softmax_over_all_entries"},
    {"sdpa_softmax_axis_1", "softmax_axis_1"},
    {"mha_interleaved_heads", "split_heads_interleaved_columns", "encoder_layer_interleaved_heads",
     "decoder_layer_interleaved_heads"},
    {"mha_split_without_transpose", "split_heads_without_transpose"},
    {"mha_merge_without_transpose", "merge_heads_without_transpose"},
    {"mha_no_output_projection", "encoder_layer_no_output_projection",
     "decoder_layer_no_output_projection"},
    {"layer_norm_over_tokens", "encoder_layer_norm_over_tokens", "decoder_layer_norm_over_tokens"},
    {"layer_norm_unbiased_std", "encoder_layer_norm_unbiased_std", "decoder_layer_norm_unbiased_std"},
    {"bahdanau_step_no_tanh", "additive_score_no_tanh"},
    {"bahdanau_step_no_v", "additive_score_no_v"},
    {"bahdanau_step_sigmoid", "additive_score_sigmoid"},
    {"bahdanau_step_tanh_after_v", "additive_score_tanh_after_v"},
    {"bahdanau_step_W_transposed", "additive_score_W_transposed"},
))

_GROUP_OF: dict[str, frozenset[str]] = {}
for _group in GROUPS:
    for _name in _group:
        if _name in _GROUP_OF:
            raise ValueError(f"twin {_name!r} is in two same-error groups")
        _GROUP_OF[_name] = _group


def same_error(a: str, b: str) -> bool:
    """Are the twins ``a`` and ``b`` one student error (or the same name)?"""
    return a == b or (a in _GROUP_OF and b in _GROUP_OF.get(a, ()))


def one_name_per_error(names) -> list[str]:
    """``names`` in order, each error once: a later name of an earlier name's group is dropped."""
    kept: list[str] = []
    for name in names:
        if not any(same_error(name, k) for k in kept):
            kept.append(name)
    return kept
