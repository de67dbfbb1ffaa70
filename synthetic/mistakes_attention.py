"""Plausible mistakes in the by-hand self-attention families: the scale, the softmax, the
transpose and the masks, as a demanding lecturer would list them for each part."""

from __future__ import annotations

import numpy as np

from .mistakes_base import (attention, blocked, choice_mistake, lower, mistake, softmax)

# --- sdpa_four_tokens ------------------------------------------------------------------------

T4 = "sdpa_four_tokens"


def _raw(g):
    return g.Q @ g.K.T


@mistake(T4, "raw_scores", "KQᵀ instead of QKᵀ: rows are keys, columns queries",
         accept=["sdpa_scores_transposed"])
def sdpa4_raw_transposed(g):
    return g.K @ g.Q.T


@mistake(T4, "raw_scores", "Q K instead of Q Kᵀ (possible only when d_k = 4, a square K)",
         accept=["sdpa_k_not_transposed"])
def sdpa4_raw_no_transpose(g):
    return g.Q @ g.K if g.K.shape[0] == g.Q.shape[1] else None


@mistake(T4, "scaled_scores", "divided by √d_v instead of √d_k",
         accept=["sdpa_scale_by_sqrt_d_v"])
def sdpa4_scaled_sqrt_dv(g):
    return _raw(g) / np.sqrt(g.V.shape[1])


@mistake(T4, "scaled_scores", "divided by √L (the number of tokens, 4) instead of √d_k",
         accept=["sdpa_scale_by_sqrt_seq_len"])
def sdpa4_scaled_sqrt_L(g):
    return _raw(g) / np.sqrt(len(g.K))


@mistake(T4, "scaled_scores", "divided by d_k instead of √d_k", accept=["sdpa_divide_by_d_k"])
def sdpa4_scaled_by_dk(g):
    return _raw(g) / g.d_k


@mistake(T4, "scaled_scores", "multiplied by √d_k instead of divided",
         accept=["sdpa_multiply_by_sqrt_d_k"])
def sdpa4_scaled_times_sqrt_dk(g):
    return _raw(g) * np.sqrt(g.d_k)


@mistake(T4, "weights", "the scale applied after the softmax: softmax(QKᵀ)/√d_k",
         accept=["sdpa_scale_after_softmax"])
def sdpa4_weights_scale_after_softmax(g):
    return softmax(_raw(g)) / np.sqrt(g.d_k)


@mistake(T4, "weights", "the exponentials exp(S/√d_k) not normalised by their row sums",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def sdpa4_weights_not_normalised(g):
    return np.exp(_raw(g) / np.sqrt(g.d_k))


@mistake(T4, "weights", "the softmax over each column (the queries) instead of each row",
         accept=["sdpa_softmax_over_queries", "softmax_axis_0"])
def sdpa4_weights_over_columns(g):
    return softmax(_raw(g) / np.sqrt(g.d_k), axis=0)


@mistake(T4, "weights", "softmax of the raw scores, the scale forgotten", accept=["sdpa_no_scale"])
def sdpa4_weights_no_scale(g):
    return softmax(_raw(g))


@mistake(T4, "weights", "softmax(QKᵀ/√L), L = 4 tokens", accept=["sdpa_scale_by_sqrt_seq_len"])
def sdpa4_weights_sqrt_L(g):
    return softmax(_raw(g) / np.sqrt(len(g.K)))


@mistake(T4, "output", "keys blended instead of values: A K",
         accept=["sdpa_values_from_keys"])
def sdpa4_output_blends_keys(g):
    return attention(g.Q, g.K, g.V)[0] @ g.K


@mistake(T4, "output", "Aᵀ V: the weights transposed before the blend", accept=["sdpa_weights_transposed"])
def sdpa4_output_weights_transposed(g):
    return attention(g.Q, g.K, g.V)[0].T @ g.V


@mistake(T4, "output", "exp(S/√d_k) V: the exponentials not normalised",
         accept=["sdpa_unnormalised"])
def sdpa4_output_not_normalised(g):
    return np.exp(_raw(g) / np.sqrt(g.d_k)) @ g.V


@mistake(T4, "output", "Z with the scale 1/√L (L = 4 tokens)", accept=["sdpa_scale_by_sqrt_seq_len"])
def sdpa4_output_sqrt_L(g):
    return softmax(_raw(g) / np.sqrt(len(g.K))) @ g.V


@mistake(T4, "output", "Z with the scale 1/√d_v", accept=["sdpa_scale_by_sqrt_d_v"])
def sdpa4_output_sqrt_dv(g):
    return softmax(_raw(g) / np.sqrt(g.V.shape[1])) @ g.V


# --- dog_ran_fast ------------------------------------------------------------------------------

DOG = "dog_ran_fast"


def _dog_qkv(g):
    return g.X @ g.W_Q, g.X @ g.W_K, g.X @ g.W_V


def _dog_scores(g):
    Q, K, _ = _dog_qkv(g)
    return Q @ K.T


@mistake(DOG, "slide_scaled", "divided by the per-head √64 = 8 instead of the slide's √768",
         accept=["sdpa_scale_by_sqrt_head_dim"])
def dog_slide_per_head_scale(g):
    return np.asarray(g.slide_raw, dtype=float) / 8.0


@mistake(DOG, "slide_scaled", "divided by d_k = 768 instead of √768", accept=["sdpa_divide_by_d_k"])
def dog_slide_by_768(g):
    return np.asarray(g.slide_raw, dtype=float) / 768.0


@mistake(DOG, "slide_scaled_head", "still divided by √768 (the model width) for one 64-wide head",
         accept=["mha_scale_by_d_model", "sdpa_scale_by_sqrt_model_dim"])
def dog_head_by_sqrt_d_model(g):
    return np.asarray(g.slide_raw, dtype=float) / np.sqrt(768)


@mistake(DOG, "slide_scaled_head", "divided by 64 instead of √64", accept=["sdpa_divide_by_d_k"])
def dog_head_by_64(g):
    return np.asarray(g.slide_raw, dtype=float) / 64.0


@mistake(DOG, "z_the", "only the dominant term 0.99 × 3.0 kept")
def dog_z_the_top_term(g):
    w, v = np.asarray(g.slide_weights)[0], np.asarray(g.v_d1)
    k = int(np.argmax(w))
    return float(w[k] * v[k])


@mistake(DOG, "z_the", "the mean of the weighted terms instead of their sum")
def dog_z_the_mean(g):
    return float(np.mean(np.asarray(g.slide_weights)[0] * np.asarray(g.v_d1)))


def _implied(g, scale, inverted=False):
    raw = np.asarray(g.slide_raw, dtype=float) * scale
    gap = raw[0] - raw[1] if inverted else raw[1] - raw[0]
    return float(np.asarray(g.slide_weights)[0][0] * np.exp(gap))


@mistake(DOG, "implied_ran", "the ratio inverted: 0.99 · exp(s_The,The − s_The,ran)")
def dog_implied_inverted(g):
    return _implied(g, 1 / np.sqrt(768), inverted=True)


@mistake(DOG, "implied_ran", "the unscaled scores in the ratio: 0.99 · exp(58 − 110)", accept=["sdpa_no_scale"])
def dog_implied_unscaled(g):
    return _implied(g, 1.0)


@mistake(DOG, "implied_ran", "the per-head scale √64 in the ratio",
         accept=["sdpa_scale_by_sqrt_head_dim"])
def dog_implied_per_head(g):
    return _implied(g, 1 / 8.0)


@mistake(DOG, "ran_self", "the lecture's slip: 0.38 (the weight on \"The\") read as ran's self-weight")
def dog_ran_self_lecture_slip(g):
    return float(np.asarray(g.slide_weights)[1][0])


@mistake(DOG, "ran_self", "the column of \"dog\" read (off by one)")
def dog_ran_self_off_by_one(g):
    return float(np.asarray(g.slide_weights)[1][1])


@mistake(DOG, "projections", "W X instead of X W for each projection", accept=["linear_weight_first"])
def dog_projections_swapped(g):
    return [g.W_Q @ g.X, g.W_K @ g.X, g.W_V @ g.X]


@mistake(DOG, "raw_scores", "Q K instead of Q Kᵀ (square, so the shapes do not complain)",
         accept=["sdpa_k_not_transposed"])
def dog_raw_no_transpose(g):
    Q, K, _ = _dog_qkv(g)
    return Q @ K


@mistake(DOG, "raw_scores", "Qᵀ K: the transpose on the wrong factor", accept=["sdpa_q_transposed"])
def dog_raw_q_transposed(g):
    Q, K, _ = _dog_qkv(g)
    return Q.T @ K


@mistake(DOG, "scaled_scores", "multiplied by √d_k instead of divided",
         accept=["sdpa_multiply_by_sqrt_d_k"])
def dog_scaled_times(g):
    return _dog_scores(g) * 2.0


@mistake(DOG, "row_sums", "row sums of the weights (always 1) instead of the exponentials")
def dog_row_sums_of_weights(g):
    return softmax(_dog_scores(g) / 2.0).sum(axis=1)


@mistake(DOG, "row_sums", "column sums of exp(S/√d_k) instead of row sums",
         accept=["sdpa_softmax_over_queries", "softmax_axis_0", "sdpa_scores_transposed"])
def dog_row_sums_columns(g):
    return np.exp(_dog_scores(g) / 2.0).sum(axis=0)


@mistake(DOG, "row_sums", "row sums of exp of the unscaled scores", accept=["sdpa_no_scale"])
def dog_row_sums_unscaled(g):
    return np.exp(_dog_scores(g)).sum(axis=1)


@mistake(DOG, "weights", "exp(S/√d_k) not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def dog_weights_not_normalised(g):
    return np.exp(_dog_scores(g) / 2.0)


@mistake(DOG, "weights", "softmax(QK/√d_k): K not transposed",
         accept=["sdpa_k_not_transposed"])
def dog_weights_no_transpose(g):
    Q, K, _ = _dog_qkv(g)
    return softmax(Q @ K / 2.0)


@mistake(DOG, "output", "A K: the keys blended instead of the values",
         accept=["sdpa_values_from_keys"])
def dog_output_blends_keys(g):
    Q, K, V = _dog_qkv(g)
    return attention(Q, K, V)[0] @ K


@mistake(DOG, "output", "A X: the embeddings blended instead of the values")
def dog_output_blends_embeddings(g):
    Q, K, V = _dog_qkv(g)
    return attention(Q, K, V)[0] @ g.X


@mistake(DOG, "output", "V A instead of A V (the shapes fit: 4 × 4)", accept=["sdpa_values_times_weights"])
def dog_output_v_a(g):
    Q, K, V = _dog_qkv(g)
    return V @ attention(Q, K, V)[0]


# --- bank_contextual ---------------------------------------------------------------------------

BANK = "bank_contextual"


def _bank_row(g, X):
    q = X[2] @ g.W_Q
    return q, (X @ g.W_K) @ q, X @ g.W_V


@mistake(BANK, "q_bank", "bank's query taken with W_K instead of W_Q")
def bank_query_with_wk(g):
    return g.X_1[2] @ g.W_K


@mistake(BANK, "scores_1", "the keys taken with W_Q: q_bank · q_j")
def bank_scores_keys_with_wq(g):
    return (g.X_1 @ g.W_Q) @ (g.X_1[2] @ g.W_Q)


@mistake(BANK, "scores_1", "the static similarity x_bank · x_j, no projections")
def bank_scores_static(g):
    return g.X_1 @ g.X_1[2]


@mistake(BANK, "weights_1", "divided by √5 (the sentence length) instead of √d_k",
         accept=["sdpa_scale_by_sqrt_seq_len"])
def bank_weights_sqrt_len(g):
    return softmax(_bank_row(g, g.X_1)[1] / np.sqrt(5))


@mistake(BANK, "weights_1", "the exponentials not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def bank_weights_not_normalised(g):
    return np.exp(_bank_row(g, g.X_1)[1] / np.sqrt(2))


@mistake(BANK, "weights_1", "the scale applied after the softmax",
         accept=["sdpa_scale_after_softmax"])
def bank_weights_scale_after(g):
    return softmax(_bank_row(g, g.X_1)[1]) / np.sqrt(2)


@mistake(BANK, "weights_2", "bank left out of its own softmax (weight 0 on itself)")
def bank_weights_without_self(g):
    s = _bank_row(g, g.X_2)[1] / np.sqrt(2)
    return softmax(blocked(s, np.arange(5) != 2))


@mistake(BANK, "weights_2", "softmax of the unscaled scores", accept=["sdpa_no_scale"])
def bank_weights_2_no_scale(g):
    return softmax(_bank_row(g, g.X_2)[1])


@mistake(BANK, "z_1", "bank left out of its own softmax, carried into its output")
def bank_z_without_self(g):
    _, s, V = _bank_row(g, g.X_1)
    return softmax(blocked(s / np.sqrt(2), np.arange(5) != 2)) @ V


@mistake(BANK, "z_2", "the raw scores softmaxed without the scale, then blended", accept=["sdpa_no_scale"])
def bank_z_2_no_scale(g):
    _, s, V = _bank_row(g, g.X_2)
    return softmax(s) @ V


@mistake(BANK, "weights_1", "the softmax's exponentials divided by the largest, not the sum")
def bank_weights_over_max(g):
    e = np.exp(_bank_row(g, g.X_1)[1] / np.sqrt(2))
    return e / e.max()


@mistake(BANK, "z_1", "the keys blended instead of the values",
         accept=["sdpa_values_from_keys"])
def bank_z_blends_keys(g):
    _, s, _ = _bank_row(g, g.X_1)
    return softmax(s / np.sqrt(2)) @ (g.X_1 @ g.W_K)


@mistake(BANK, "z_1", "the raw scores used as weights (no softmax)", accept=["sdpa_raw_scores_as_weights"])
def bank_z_raw_weights(g):
    _, s, V = _bank_row(g, g.X_1)
    return s @ V


@mistake(BANK, "z_2", "the mean of the values (uniform weights)", accept=["sdpa_uniform_weights"])
def bank_z_uniform(g):
    return (g.X_2 @ g.W_V).mean(axis=0)


@mistake(BANK, "z_2", "the static embedding's value v_bank alone")
def bank_z_own_value(g):
    return g.X_2[2] @ g.W_V


@mistake(BANK, "top_1", "bank itself counted among the words (its own weight is the largest)")
def bank_top_includes_self(g):
    return g.words_1[int(np.argmax(_bank_row(g, g.X_1)[1]))]


@mistake(BANK, "differs", "the query q_bank named as what differs")
def bank_differs_query(g):
    return "q_bank"


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


# --- multihead_perspectives --------------------------------------------------------------------

PERSP = "multihead_perspectives"


def _heads(g, scale=1 / np.sqrt(2), width=2):
    """Per head (columns 2h, 2h+1 of the one-hot projections): (weights, output)."""
    out = []
    for h in range(2):
        cols = slice(width * h, width * h + width)
        Q, K, V = g.W_Q[:, cols], g.W_K[:, cols], g.W_V[:, cols]
        A = softmax(Q @ K.T * scale)
        out.append((A, A @ V))
    return out


def _concat(g):
    return np.concatenate([Z for _, Z in _heads(g)], axis=1)


@mistake(PERSP, "attends", "the argmax taken down each column (over the queries) instead of along each row", accept=["mha_weights_read_by_column"])
def persp_attends_over_queries(g):
    return np.stack([A.argmax(axis=0) for A, _ in _heads(g)])


@mistake(PERSP, "attends", "the keys ranked on V's columns instead of the weights: argmax of each head's values")
def persp_attends_values(g):
    return np.stack([g.W_V[:, 2 * h:2 * h + 2].sum(axis=1).argmax() * np.ones(4, dtype=int) for h in range(2)])


@mistake(PERSP, "weights_0", "head 0's scores not divided by √d_head = √2", accept=["sdpa_no_scale"])
def persp_weights_no_scale(g):
    return _heads(g, scale=1.0)[0][0]


@mistake(PERSP, "weights_0", "head 0's scores divided by √4 (the model width) instead of √2",
         accept=["sdpa_scale_by_sqrt_seq_len", "sdpa_divide_by_d_k"])
def persp_weights_model_width(g):
    return _heads(g, scale=1 / 2)[0][0]


@mistake(PERSP, "weights_0", "one head over all four columns instead of head 0's two", accept=["split_heads_full_width"])
def persp_weights_whole_width(g):
    return softmax(g.W_Q @ g.W_K.T / 2)


@mistake(PERSP, "concat", "the heads averaged instead of concatenated, ½(Z_0 + Z_1)", accept=["merge_heads_averaged"])
def persp_concat_averaged(g):
    (_, Z0), (_, Z1) = _heads(g)
    return (Z0 + Z1) / 2


@mistake(PERSP, "concat", "the heads placed in the opposite order, [Z_1 | Z_0]", accept=["merge_heads_reversed"])
def persp_concat_swapped(g):
    (_, Z0), (_, Z1) = _heads(g)
    return np.concatenate([Z1, Z0], axis=1)


@mistake(PERSP, "output", "W_O left out: the concatenation taken as the output", accept=["linear_skipped"])
def persp_output_no_w_o(g):
    return _concat(g)


@mistake(PERSP, "output", "W_O applied first: W_O [Z_0 | Z_1]", accept=["linear_weight_first"])
def persp_output_w_o_first(g):
    return g.W_O @ _concat(g)


@mistake(PERSP, "from_head_1", "the whole output entry (0, 0), both heads together", accept=["head_projection_full_width"])
def persp_share_whole_entry(g):
    return float(_concat(g)[0] @ g.W_O[:, 0])


@mistake(PERSP, "from_head_1", "head 0's share instead of head 1's", accept=["head_projection_numbered_from_one"])
def persp_share_head_0(g):
    return float(_concat(g)[0, 0:2] @ g.W_O[0:2, 0])


@mistake(PERSP, "from_head_1", "head 1's columns times W_O's first two rows (the rows of head 0)")
def persp_share_wrong_rows(g):
    return float(_concat(g)[0, 2:4] @ g.W_O[0:2, 0])
