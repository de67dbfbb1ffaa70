"""Attention masks.

Convention (as ``torch.nn.functional.scaled_dot_product_attention``): a **boolean mask means
True = may attend**. An **additive float mask** holds 0 where attention is allowed and −inf
where it is not, and is added to the scores before the softmax. Masks broadcast over the
score matrix ``(..., L, S)``: rows are queries, columns are keys.
"""

from __future__ import annotations

import numpy as np


def causal_mask(L: int, S: int | None = None) -> np.ndarray:
    """(L, S) bool, True where key j ≤ query i: the lower-triangular reveal.

    Query i may attend to positions 0..i only. With S ≠ L the triangle is top-left aligned,
    like PyTorch's ``is_causal``. Default S = L (decoder self-attention).
    """
    S = L if S is None else S
    if L < 1 or S < 1:
        raise ValueError(f"causal_mask: expected L ≥ 1 and S ≥ 1, got L={L}, S={S}")
    return np.tril(np.ones((L, S), dtype=bool))


def padding_mask(lengths, S: int) -> np.ndarray:
    """(B, 1, S) bool, True for the first ``lengths[b]`` keys of sequence b.

    ``lengths``: (B,) true lengths; positions at or beyond them are <PAD> and may not be
    attended to. The middle axis of size 1 broadcasts over the L query rows.
    """
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths: expected a (B,) integer array, got shape {lengths.shape} "
                         f"and dtype {lengths.dtype}")
    if (lengths < 0).any() or (lengths > S).any():
        raise ValueError(f"lengths: every length must lie in [0, S={S}], got {lengths.tolist()}")
    return (np.arange(S) < lengths[:, None])[:, None, :]


def combine_masks(*masks) -> np.ndarray:
    """Logical AND of boolean masks: a position is visible only if every mask allows it.

    Example: ``combine_masks(causal_mask(L), padding_mask(lengths, L))`` → (B, L, L).
    """
    if not masks:
        raise ValueError("combine_masks: expected at least one mask")
    arrays = [np.asarray(m) for m in masks]
    for i, m in enumerate(arrays):
        if m.dtype != bool:
            raise ValueError(f"combine_masks: mask {i} has dtype {m.dtype}, expected bool")
    return np.logical_and.reduce(np.broadcast_arrays(*arrays))


def additive_mask(mask) -> np.ndarray:
    """Boolean mask (True = may attend) → float mask: 0.0 where allowed, −inf where blocked."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"additive_mask: expected a bool mask, got dtype {mask.dtype}")
    return np.where(mask, 0.0, -np.inf)


def check_mask_shape(mask: np.ndarray, scores_shape: tuple[int, ...]) -> None:
    """Raise ValueError unless ``mask`` broadcasts onto scores of shape (..., L, S).

    The key axis must match S exactly and the query axis must be L or 1, so a mask built for
    the wrong sequence length is an error, not a silent broadcast.
    """
    L, S = scores_shape[-2:]
    ok = (mask.ndim >= 1 and mask.shape[-1] == S
          and (mask.ndim == 1 or mask.shape[-2] in (1, L))
          and mask.ndim <= len(scores_shape))
    if ok:
        try:
            ok = np.broadcast_shapes(mask.shape, scores_shape) == tuple(scores_shape)
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(f"mask: expected a shape broadcastable to the scores (..., L={L}, S={S}) "
                         f"with last axis S={S}, got {mask.shape}")


def apply_mask(scores: np.ndarray, mask) -> np.ndarray:
    """Scores with blocked positions set to −inf (bool mask) or the float mask added.

    Shapes: ``scores`` (..., L, S); ``mask`` broadcastable to it (see ``check_mask_shape``).
    """
    if mask is None:
        return scores
    mask = np.asarray(mask)
    check_mask_shape(mask, scores.shape)
    if mask.dtype == bool:
        return np.where(mask, scores, -np.inf)
    if not np.issubdtype(mask.dtype, np.floating):
        raise ValueError(f"mask: expected bool (True = may attend) or a float additive mask, "
                         f"got dtype {mask.dtype}")
    return scores + mask
