"""Plausible mistakes in the families on why scores are scaled by 1/√d_k (the variance, the
saturation question) and on the causal and padding masks, for each part."""

from __future__ import annotations

import numpy as np

from .mistakes_base import blocked, choice_mistake, lower, mistake, softmax

# --- why_sqrt_dk -------------------------------------------------------------------------------

WHY = "why_sqrt_dk"
PAIR = np.array([110.0, 58.0])


def _var(g):
    return g.d_k * g.var_q * g.var_k


@mistake(WHY, "variance", "the standard deviation √(d_k σ_q² σ_k²) given for the variance", accept=["dot_product_moments_std_for_variance"])
def why_variance_std(g):
    return float(np.sqrt(_var(g)))


@mistake(WHY, "variance", "σ_q² σ_k²: one product's variance, the sum over the d_k terms forgotten", accept=["dot_product_moments_one_term"])
def why_variance_one(g):
    return float(g.var_q * g.var_k)


@mistake(WHY, "variance", "d_k: the unit-variance result, σ_q² and σ_k² ignored",
         accept=["dot_product_moments_unit_variances"])
def why_variance_unit(g):
    return float(g.d_k)


@mistake(WHY, "variance", "d_k (σ_q² + σ_k²): the variances added instead of multiplied",
         accept=["dot_product_moments_variances_added"])
def why_variance_added(g):
    return float(g.d_k * (g.var_q + g.var_k))


@mistake(WHY, "std", "σ_q² σ_k²: the scaled score's variance given for its standard deviation",
         accept=["dot_product_moments_std_not_rooted"])
def why_std_variance(g):
    return float(g.var_q * g.var_k)


@mistake(WHY, "std", "√(d_k σ_q² σ_k²): the raw score's standard deviation, the scale forgotten",
         accept=["dot_product_moments_std_unscaled"])
def why_std_raw(g):
    return float(np.sqrt(_var(g)))


@mistake(WHY, "std", "1: what the scale is meant to give, whatever the variances",
         accept=["dot_product_moments_unit_variances"])
def why_std_one(g):
    return 1.0


@mistake(WHY, "scaled_row", "divided by √(2 d_k): all 2d_k components counted", accept=["sdpa_scale_by_sqrt_2d_k"])
def why_scaled_two_dk(g):
    return np.asarray(g.scores, dtype=float) / np.sqrt(2 * g.d_k)


@mistake(WHY, "scaled_row", "divided by d_k", accept=["sdpa_divide_by_d_k"])
def why_scaled_by_dk(g):
    return np.asarray(g.scores, dtype=float) / g.d_k


@mistake(WHY, "max_scaled", "the largest weight with the scale 1/d_k", accept=["sdpa_divide_by_d_k"])
def why_max_scaled_by_dk(g):
    return float(softmax(np.asarray(g.scores, dtype=float) / g.d_k).max())


@mistake(WHY, "max_scaled", "the largest exponential exp(max s/√d_k), not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def why_max_scaled_not_normalised(g):
    return float(np.exp(np.asarray(g.scores, dtype=float) / np.sqrt(g.d_k)).max())


@mistake(WHY, "grad_scaled", "p(1 − p) with the unscaled p", accept=["sdpa_no_scale"])
def why_grad_scaled_unscaled_p(g):
    p = softmax(np.asarray(g.scores, dtype=float)).max()
    return float(p * (1 - p))


@mistake(WHY, "grad_scaled", "1 − p instead of p(1 − p)", accept=["softmax_backward_no_outer_p", "softmax_jacobian_no_outer_p"])
def why_grad_scaled_missing_p(g):
    return float(1 - softmax(np.asarray(g.scores, dtype=float) / np.sqrt(g.d_k)).max())


@mistake(WHY, "grad_unscaled", "the scaled softmax's p(1 − p) given for the unscaled one")
def why_grad_unscaled_scaled(g):
    p = softmax(np.asarray(g.scores, dtype=float) / np.sqrt(g.d_k)).max()
    return float(p * (1 - p))


@mistake(WHY, "pair_ratio_unscaled", "110/58: the ratio of the scores, not of their exponentials")
def why_pair_ratio_of_scores(g):
    return float(PAIR[0] / PAIR[1])


@mistake(WHY, "pair_ratio_unscaled", "exp(52/√768): the scaled ratio given for the unscaled one")
def why_pair_ratio_scaled(g):
    return float(np.exp((PAIR[0] - PAIR[1]) / np.sqrt(768)))


@mistake(WHY, "pair_weight_unscaled", "110/(110 + 58): normalised without the exponentials")
def why_pair_weight_linear(g):
    return float(PAIR[0] / PAIR.sum())


@mistake(WHY, "pair_weight_scaled", "scaled by the per-head √64 instead of the slide's √768",
         accept=["sdpa_scale_by_sqrt_head_dim"])
def why_pair_weight_per_head(g):
    return float(softmax(PAIR / 8.0)[0])


@mistake(WHY, "pair_weight_scaled", "divided by 768 instead of √768", accept=["sdpa_divide_by_d_k"])
def why_pair_weight_by_768(g):
    return float(softmax(PAIR / 768.0)[0])


@mistake(WHY, "pair_weight_scaled", "exp(110/√768) alone, not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def why_pair_weight_not_normalised(g):
    return float(np.exp(PAIR[0] / np.sqrt(768)))


# --- causal_mask_by_hand -----------------------------------------------------------------------

CAUSAL = "causal_mask_by_hand"


def _pad_length(g) -> int:
    return g.number(r"padded with `<PAD>` to \$S = (\d+)\$", "padding")


def _padded_sequence(g) -> int:
    return g.number(r"Sequence (\d+) of the batch", "combined")


def _scaled(g):
    return g.Q @ g.K.T / np.sqrt(g.Q.shape[1])


@mistake(CAUSAL, "causal", "tril with k=1: each token also sees the next one",
         accept=["causal_mask_shifted_by_one"])
def causal_mask_off_by_one(g):
    return lower(len(g.Q), k=1)


@mistake(CAUSAL, "causal", "triu: the future kept, the past blocked", accept=["causal_mask_triu"])
def causal_mask_upper(g):
    return np.triu(np.ones((len(g.Q), len(g.Q)), dtype=bool))


@mistake(CAUSAL, "causal", "every entry True: no mask at all",
         accept=["causal_attention_unmasked", "causal_mask_all_visible"])
def causal_mask_all_true(g):
    return np.ones((len(g.Q), len(g.Q)), dtype=bool)


@mistake(CAUSAL, "exp_scores", "the exponentials of the unmasked scores (mask forgotten)",
         accept=["causal_attention_unmasked", "sdpa_mask_after_softmax", "sdpa_mask_ignored", "causal_attention_mask_after_softmax"])
def causal_exp_unmasked(g):
    return np.exp(_scaled(g))


@mistake(CAUSAL, "exp_scores", "the mask off by one (tril k=1) before the exponentials",
         accept=["causal_mask_shifted_by_one", "causal_attention_mask_shifted_by_one"])
def causal_exp_off_by_one(g):
    return np.exp(blocked(_scaled(g), lower(len(g.Q), k=1)))


@mistake(CAUSAL, "exp_scores", "the unscaled scores masked and exponentiated", accept=["sdpa_no_scale", "causal_attention_no_scale"])
def causal_exp_unscaled(g):
    return np.exp(blocked(g.Q @ g.K.T, lower(len(g.Q))))


@mistake(CAUSAL, "exp_scores", "blocked scores set to 0 before exp (so exp gives 1)",
         accept=["sdpa_mask_with_zero", "causal_attention_mask_with_zero"])
def causal_exp_zero_fill(g):
    return np.exp(blocked(_scaled(g), lower(len(g.Q)), 0.0))


@mistake(CAUSAL, "weights", "the softmax of the unmasked scores", accept=["causal_attention_unmasked", "sdpa_mask_ignored"])
def causal_weights_unmasked(g):
    return softmax(_scaled(g))


@mistake(CAUSAL, "weights", "the mask off by one (tril k=1)",
         accept=["causal_mask_shifted_by_one", "causal_attention_mask_shifted_by_one"])
def causal_weights_off_by_one(g):
    return softmax(blocked(_scaled(g), lower(len(g.Q), k=1)))


@mistake(CAUSAL, "weights", "masked, but the exponentials not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def causal_weights_not_normalised(g):
    return np.exp(blocked(_scaled(g), lower(len(g.Q))))


@mistake(CAUSAL, "weights", "masked softmax of the unscaled scores", accept=["sdpa_no_scale", "causal_attention_no_scale"])
def causal_weights_unscaled(g):
    return softmax(blocked(g.Q @ g.K.T, lower(len(g.Q))))


@mistake(CAUSAL, "weights", "the mask transposed (triu): each token attends to itself and the future",
         accept=["causal_attention_triu", "causal_mask_triu"])
def causal_weights_upper(g):
    return softmax(blocked(_scaled(g), lower(len(g.Q)).T))


@mistake(CAUSAL, "padding", "the padding mask inverted (True on the padding)",
         accept=["padding_mask_inverted"])
def causal_padding_inverted(g):
    return np.arange(_pad_length(g))[None, :] >= np.asarray(g.lengths)[:, None]


@mistake(CAUSAL, "padding", "positions up to and including the length kept (off by one)",
         accept=["padding_mask_includes_first_pad"])
def causal_padding_off_by_one(g):
    return np.arange(_pad_length(g))[None, :] <= np.asarray(g.lengths)[:, None]


@mistake(CAUSAL, "combined", "only the causal mask: the padding forgotten", accept=["combine_masks_first_only"])
def causal_combined_causal_only(g):
    return lower(_pad_length(g))


@mistake(CAUSAL, "combined", "only the padding mask: the causal mask forgotten", accept=["combine_masks_last_only"])
def causal_combined_padding_only(g):
    S, n = _pad_length(g), g.lengths[_padded_sequence(g)]
    return np.repeat((np.arange(S) < n)[None, :], S, axis=0)


@mistake(CAUSAL, "combined", "the padding applied to the query rows instead of the key columns",
         accept=["padding_mask_on_query_rows"])
def causal_combined_padding_on_rows(g):
    S, n = _pad_length(g), g.lengths[_padded_sequence(g)]
    return lower(S) & (np.arange(S) < n)[:, None]


@mistake(CAUSAL, "combined", "the masks combined with OR instead of AND",
         accept=["combine_masks_or"])
def causal_combined_or(g):
    S, n = _pad_length(g), g.lengths[_padded_sequence(g)]
    return lower(S) | (np.arange(S) < n)[None, :]


# --- scaling_saturation (choice) -----------------------------------------------------------------

SAT = "scaling_saturation"


@choice_mistake(SAT, "weights", "the weights thought to even out as the scores grow")
def saturation_weights_uniform(g):
    return g.letter("weights", "uniform")


@choice_mistake(SAT, "gradients", "the gradients thought to explode with the scores")
def saturation_gradients_explode(g):
    return g.letter("gradients", "explodes")


@choice_mistake(SAT, "fix", "√L (the number of keys) chosen as the scale", accept=["sdpa_scale_by_sqrt_seq_len"])
def saturation_fix_sqrt_L(g):
    return g.letter("fix", "number of keys")


@choice_mistake(SAT, "fix", "d_k (the variance) chosen as the scale", accept=["sdpa_divide_by_d_k"])
def saturation_fix_variance(g):
    return g.letter("fix", "the variance of the raw scores")
