"""Plausible mistakes in the by-hand self-attention families (four tokens, "The dog ran
fast", the contextual "bank"): the scale, the softmax, the transpose and what is blended,
as a demanding lecturer would list them for each part."""

from __future__ import annotations

import numpy as np

from .mistakes_base import attention, blocked, mistake, softmax

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
