"""Misconceptions a synthetic submission can reproduce: the numeric twins the key stores, and
implement twins as textual edits of the reference code (``CODE_EDITS``)."""

from __future__ import annotations

import re

from formats import key_shape as shape

# Implement twins as textual edits of the reference code: (regex, replacement) applied in
# order; a twin is reproducible on a function when every regex matches. The tests run each
# edited function on the key's hidden cases and compare with the key's twin outputs.

# A softmax that, like the kit's, gives zeros for a fully masked slice instead of NaN: the
# twins that can mask a whole row or column are built on it.
_SAFE_SOFTMAX = (
    (r"(?m)^([ \t]*)scores = scores - scores\.max\(axis=(-?\d), keepdims=True\)(.*)$",
     r"\1row_max = scores.max(axis=\2, keepdims=True)\n"
     r"\1scores = scores - np.where(np.isneginf(row_max), 0.0, row_max)\3"),
    (r"(?m)^([ \t]*)weights = weights / weights\.sum\(axis=(-?\d), keepdims=True\)(.*)$",
     r"\1total = weights.sum(axis=\2, keepdims=True)\n"
     r"\1weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)\3"),
)
_WHERE_MASK = r"np\.where\(mask, scores, -np\.inf\)"
_MERGE_BY_RESHAPE = (
    (r"(?m)^[ \t]*heads = np\.swapaxes\(heads, -2, -3\).*\n", ""),
    (r"heads\.reshape\(\*heads\.shape\[:-2\], -1\)", "heads.reshape(*heads.shape[:-3], heads.shape[-2], -1)"),
)

CODE_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "sdpa_no_scale": ((r" / np\.sqrt\(d_k\)", ""),),
    "sdpa_divide_by_d_k": ((r"np\.sqrt\(d_k\)", "d_k"),),
    "sdpa_scale_by_sqrt_seq_len": ((r"np\.sqrt\(d_k\)", "np.sqrt(K.shape[-2])"),),
    "sdpa_softmax_over_queries": ((r"\.max\(axis=-1", ".max(axis=-2"), (r"\.sum\(axis=-1", ".sum(axis=-2"),
                                  *_SAFE_SOFTMAX),
    "sdpa_mask_after_softmax": (
        (r"(?m)^[ \t]*if mask is not None:\n[ \t]*scores = " + _WHERE_MASK + r".*\n", ""),
        (r"(?m)^([ \t]*)(weights = weights / weights\.sum\(axis=-1, keepdims=True\).*)$",
         r"\1\2\n\1if mask is not None:\n\1    weights = weights * mask"),
    ),
    "sdpa_mask_with_zero": ((_WHERE_MASK, "np.where(mask, scores, 0.0)"),),
    "sdpa_inverted_mask": ((_WHERE_MASK, "np.where(mask, -np.inf, scores)"), *_SAFE_SOFTMAX),
    "sdpa_no_max_subtraction": ((r"(?m)^[ \t]*scores = scores - scores\.max\(axis=-1, keepdims=True\).*\n", ""),),
    "sdpa_multiply_by_sqrt_d_k": ((r" / np\.sqrt\(d_k\)", " * np.sqrt(d_k)"),),
    "sdpa_scale_after_softmax": (
        (r" / np\.sqrt\(d_k\)", ""),
        (r"(?m)^([ \t]*)(weights = weights / weights\.sum\(axis=-1, keepdims=True\).*)$",
         r"\1\2\n\1weights = weights / np.sqrt(d_k)"),
    ),
    "sdpa_unnormalised": (
        (r"(?m)^[ \t]*scores = scores - scores\.max\(axis=-1, keepdims=True\).*\n", ""),
        (r"(?m)^[ \t]*weights = weights / weights\.sum\(axis=-1, keepdims=True\).*\n", ""),
    ),
    "sdpa_scores_transposed": ((r"Q @ np\.swapaxes\(K, -1, -2\)", "K @ np.swapaxes(Q, -1, -2)"),),
    "sdpa_k_not_transposed": ((r"Q @ np\.swapaxes\(K, -1, -2\)", "Q @ K"),),
    "sdpa_values_from_keys": ((r"return weights @ V", "return weights @ K"),),
    "sdpa_softmax_over_all_entries": ((r"\.max\(axis=-1", ".max(axis=(-2, -1)"),
                                      (r"\.sum\(axis=-1", ".sum(axis=(-2, -1)")),
    "sdpa_mask_ignored": ((r"(?m)^[ \t]*if mask is not None:\n[ \t]*scores = " + _WHERE_MASK + r".*\n", ""),),
    "sdpa_mask_transposed": ((_WHERE_MASK, "np.where(np.swapaxes(np.broadcast_to(mask, scores.shape), -1, -2), "
                                           "scores, -np.inf)"), *_SAFE_SOFTMAX),
    "causal_attention_unmasked": ((r"(?m)^[ \t]*scores = " + _WHERE_MASK + r".*\n", ""),),
    "causal_attention_triu": ((r"np\.tril\(", "np.triu("), *_SAFE_SOFTMAX),
    "causal_attention_mask_with_zero": ((_WHERE_MASK, "np.where(mask, scores, 0.0)"),),
    "bahdanau_step_no_tanh": ((r"np\.tanh\((decoder \+ encoder)\)", r"(\1)"),),
    "bahdanau_step_unnormalised": (
        (r"(?m)^([ \t]*)(e = np\.tanh\(decoder \+ encoder\) @ v.*)$", r"\1\2\n\1raw_scores = e"),
        (r"\(weights\[\.\.\., None, :\] @ H\)", "(raw_scores[..., None, :] @ H)"),
    ),
    "softmax_backward_diagonal_only": (
        (r"p \* \(dp - np\.sum\(dp \* p, axis=-1, keepdims=True\)\)", "dp * p * (1 - p)"),),
    "mha_scale_by_d_model": ((r"np\.sqrt\(d_k\)", "np.sqrt(query.shape[-1])"),),
    "mha_no_output_projection": (
        (r"(?m)^([ \t]*)out = concat @ params\[\"W_O\"\]\n[ \t]*return .*$", r"\1return concat"),),
    "mha_merge_without_transpose": _MERGE_BY_RESHAPE,
    "mha_split_without_transpose": (
        (r"(?m)^([ \t]*)x = x\.reshape\(\*lead, L, num_heads, d // num_heads\)\n[ \t]*return np\.swapaxes\(x, -2, -3\)",
         r"\1return x.reshape(*lead, num_heads, L, d // num_heads)"),
        *_MERGE_BY_RESHAPE,
    ),
    # implement_decode_step (its reference code: problem_bank/implement_decode_step.yaml)
    "decode_step_top_left_mask": ((r", k=S - L\)", ")"),),
    "decode_step_cache_not_extended": ((r"return weights @ V, \(K, V\)", "return weights @ V, (K_cache, V_cache)"),),
    "decode_step_no_scale": ((r" / np\.sqrt\(q\.shape\[-1\]\)", ""),),
    "decode_step_unmasked": ((r"(?m)^[ \t]*scores = np\.where\(mask, scores, -np\.inf\).*\n", ""),),
    "decode_step_appended_after_use": (
        (r"(?m)^([ \t]*)L, S = q\.shape\[0\], K\.shape\[0\].*$",
         r"\1L, S = q.shape[0], K_cache.shape[0]\n\1if S == 0:\n\1    return np.zeros((L, V.shape[-1])), (K, V)"),
        (r"q @ K\.T", "q @ K_cache.T"),
        (r"(?m)^[ \t]*scores = np\.where\(mask, scores, -np\.inf\).*\n", ""),
        (r"return weights @ V, \(K, V\)", "return weights @ V_cache, (K, V)"),
    ),
}


def edit_code(source: str, twin: str) -> str | None:
    """``source`` (an implement answer) with the mistake ``twin`` made in it, or None when
    the edit does not apply to this code."""
    for pattern, replacement in CODE_EDITS.get(twin, ()):
        source, count = re.subn(pattern, replacement, source)
        if not count:
            return None
    return source if twin in CODE_EDITS else None


def diagnosable_misconceptions(key: dict) -> list[str]:
    """The twins some part of the assignment diagnoses and a submission can reproduce: every
    numeric twin the key stores, and implement twins that have a code edit. In problem order."""
    names: list[str] = []
    for pid in shape.problem_order(key):
        for entry in key["students"].values():      # in the key's order, every variant
            record = shape.problem_record(entry, pid)
            if not record:
                continue
            stored = record.get("twins", {})
            if shape.kind(record) == shape.IMPLEMENT:
                wanted = [t for t in record.get("misconceptions", ()) if t in CODE_EDITS]
            else:
                wanted = [t for g in shape.gradings(record) for t in g.get("misconceptions", ())]
            for t in wanted:
                if t in stored and t not in names:
                    names.append(t)
    return names
