"""What several families of twins share: the score at which an additive mask blocks, a mask as
booleans, and the two factories of a scale mistake (in attention, in multi-head attention)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..attention import attention_shapes, scaled_dot_product_attention, validated_attention
from ..linear import linear
from ..multihead import head_mask, merge_heads, split_heads
from .registry import add_twin


BLOCKED_SCORE = -1e4  # an additive mask at or below this blocks (−inf, or the −1e9 fill)


def bool_mask(mask):
    """A mask as bool, True = may attend; an additive mask blocks where it is ≤ BLOCKED_SCORE."""
    mask = np.asarray(mask)
    return mask if mask.dtype == bool else mask > BLOCKED_SCORE


def scale_twin(name: str, factor: Callable, summary: str, explanation: str, code: str):
    """Register an attention twin that multiplies the scores by ``factor(dims)`` instead of
    1/√d_k; ``dims`` holds L, S, d_k, d_v. One definition for the whole "another scale" family
    (1, 1/d_k, 1/√S, 1/√d_v, √d_k, …), so each member differs only in its factor and words."""
    def function(Q, K, V, mask=None, scale=None, return_steps=False):
        Q, K, V, dims = attention_shapes(Q, K, V)
        return validated_attention(Q, K, V, dims, mask, factor(dims), return_steps)
    return add_twin(name, "scaled_dot_product_attention", function, summary, explanation, code)


def mha_with_scale(query, key, value, params, num_heads, mask, scale):
    heads = [linear(x, params[f"W_{n}"], params.get(f"b_{n}")) for x, n in
             ((query, "Q"), (key, "K"), (value, "V"))]
    steps = scaled_dot_product_attention(
        *(split_heads(h, num_heads) for h in heads), mask=head_mask(mask),
        scale=scale, return_steps=True)
    return merge_heads(steps.output), steps.weights
