"""The lecture's Section 4 walkthrough ("The dog ran fast"), printed step by step.

The slide's own numbers are truncated 768-dimensional values that cannot be reproduced, so, as
the lecture's Step 3b does, the mechanism is shown in full on a small fully specified example
with d_k = 4; then the slide's own arithmetic (110/√768, 58/√768, Z_The,1) is checked.
"""

from __future__ import annotations

import numpy as np

import solutions

TOKENS = ["The", "dog", "ran", "fast"]

# Step 1: one 4-dimensional embedding per token (small integers so every product is by hand).
X = np.array([[1, 0, 1, 0],
              [0, 2, 0, 1],
              [1, 1, 1, 0],
              [0, 1, 0, 2]], dtype=float)
# Step 2: the learned projections, in the lecture's Q = X·W_Q layout (d_model × d_k).
W_Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 1], [0, 1, 1, 0]], dtype=float)
W_K = np.array([[2, -1, 0, 0], [2, -1, 1, 0], [-1, 2, -1, 0], [0, 0, -1, 2]], dtype=float)
W_V = np.array([[2, 0, 0, 1], [0, 1, 1, 0], [1, 0, 2, 0], [0, 2, 0, 1]], dtype=float)


def _matrix(title: str, m: np.ndarray, rows=TOKENS, cols=None, fmt="{:8.4f}") -> str:
    cols = cols or [f"d{j + 1}" for j in range(m.shape[1])]
    head = " " * 7 + "".join(f"{c:>8}" for c in cols)
    body = [f"{r:>6} " + "".join(fmt.format(v) for v in row) for r, row in zip(rows, m)]
    return "\n".join([title, head, *body])


def lecture_walkthrough() -> str:
    """The whole walkthrough as text, every number computed by ``solutions``."""
    Q, K, V = (solutions.linear(X, W) for W in (W_Q, W_K, W_V))
    steps = solutions.scaled_dot_product_attention(Q, K, V, return_steps=True)
    d_k = Q.shape[-1]
    out = [
        'Scaled dot-product self-attention on "The dog ran fast"  (d_k = 4, toy numbers)',
        "",
        _matrix("Step 1  embeddings X", X, fmt="{:8.0f}"),
        "",
        _matrix("Step 2  Q = X·W_Q", Q, fmt="{:8.0f}"),
        _matrix("        K = X·W_K", K, fmt="{:8.0f}"),
        _matrix("        V = X·W_V", V, fmt="{:8.0f}"),
        "",
        _matrix("Step 3  raw scores QKᵀ  (row = query, column = key)", steps.raw_scores,
                cols=TOKENS, fmt="{:8.0f}"),
        f"        scale: ÷ √d_k = ÷ {np.sqrt(d_k):g}",
        _matrix("        scaled scores QKᵀ/√d_k", steps.scaled_scores, cols=TOKENS),
        _matrix("        exp(scaled score)", steps.exp_scores, cols=TOKENS, fmt="{:8.2f}"),
        "        row sums: " + "  ".join(f"{t} {s:.2f}" for t, s in zip(TOKENS, steps.row_sums[:, 0])),
        _matrix("        softmax weights (each row sums to 1)", steps.weights, cols=TOKENS),
        "",
        _matrix("Step 4  Z = weights · V  (contextual embeddings)", steps.output),
        "",
        "The slide's own numbers (768-dimensional, one head):",
        f"  √768 = {np.sqrt(768):.2f};  110/√768 = {110 / np.sqrt(768):.2f};  "
        f"58/√768 = {58 / np.sqrt(768):.2f}",
        f"  Z_The,1 = 0.99·3.0 + 0.0004·1.4 + 0.0003·5.4 + 0.0005·0.6 = "
        f"{np.dot([0.99, 0.0004, 0.0003, 0.0005], [3.0, 1.4, 5.4, 0.6]):.3f}",
        "  (Slip in the lecture text: row \"ran\" is 0.38/0.269/0.094/0.25 over The/Dog/ran/fast,",
        "   so its self-weight is 0.094, not 0.38. BERT-base has 12 heads of d_k = 64: √d_k = 8.)",
    ]
    return "\n".join(out)
