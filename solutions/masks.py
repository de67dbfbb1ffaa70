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
    Every mask must have the same key axis S; query axes must be L or 1.
    """
    if not masks:
        raise ValueError("combine_masks: expected at least one mask")
    arrays = [np.asarray(m) for m in masks]
    for i, m in enumerate(arrays):
        if m.dtype != bool or m.ndim < 1:
            raise ValueError(f"combine_masks: mask {i} must be a bool array (True = may attend), "
                             f"got dtype {m.dtype} and shape {m.shape}")
    key_sizes = {m.shape[-1] for m in arrays}
    query_sizes = {m.shape[-2] for m in arrays if m.ndim >= 2} - {1}
    if len(key_sizes) > 1 or len(query_sizes) > 1:
        raise ValueError(f"combine_masks: masks must share the key axis S and the query axis L "
                         f"(or have 1 there), got shapes {[m.shape for m in arrays]}")
    return np.logical_and.reduce(np.broadcast_arrays(*arrays))


def additive_mask(mask) -> np.ndarray:
    """Boolean mask (True = may attend) → float mask: 0.0 where allowed, −inf where blocked."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise ValueError(f"additive_mask: expected a bool mask, got dtype {mask.dtype}")
    return np.where(mask, 0.0, -np.inf)


def check_mask_shape(mask: np.ndarray, scores_shape: tuple[int, ...]) -> None:
    """Raise ValueError unless ``mask`` fits scores of shape (..., L, S).

    Accepted: (S,) or (L|1, S) for every batch element alike, or a mask with the scores'
    full rank whose axes equal the scores' or are 1. The key axis must be S exactly. A batched
    mask of lower rank is refused rather than broadcast, because its batch axis would silently
    line up with the wrong axis (e.g. a (B, 1, S) padding mask against (B, h, L, S) scores).
    """
    L, S = scores_shape[-2:]
    expected = (f"(S={S},), (L={L} or 1, S={S}) or {tuple(scores_shape)} with 1 allowed on any axis")
    ok = mask.ndim >= 1 and mask.shape[-1] == S and (mask.ndim == 1 or mask.shape[-2] in (1, L))
    if ok and mask.ndim > 2:
        ok = mask.ndim == len(scores_shape) and all(
            m in (1, s) for m, s in zip(mask.shape, scores_shape))
    if not ok:
        raise ValueError(f"mask: expected shape {expected}, got {mask.shape}")


def apply_mask(scores: np.ndarray, mask) -> np.ndarray:
    """Scores with blocked positions set to −inf (bool mask) or the float mask added.

    Shapes: ``scores`` (..., L, S); ``mask`` broadcastable to it (see ``check_mask_shape``).
    """
    if mask is None:
        return scores
    mask = _checked_mask(scores, mask)
    if mask.dtype == bool:
        return np.where(mask, scores, -np.inf)
    return scores + mask


def apply_mask_in_place(scores: np.ndarray, mask) -> np.ndarray:
    """``apply_mask`` overwriting ``scores`` (a float64 array the caller owns). Returns scores."""
    if mask is None:
        return scores
    mask = _checked_mask(scores, mask)
    if mask.dtype == bool:
        np.copyto(scores, -np.inf, where=~mask)
    else:
        scores += mask
    return scores


def _checked_mask(scores: np.ndarray, mask) -> np.ndarray:
    """The mask as an array, after checking its shape against the scores and its values."""
    mask = np.asarray(mask)
    check_mask_shape(mask, scores.shape)
    if mask.dtype == bool:
        return mask
    if not np.issubdtype(mask.dtype, np.floating):
        raise ValueError(f"mask: expected bool (True = may attend) or a float additive mask, "
                         f"got dtype {mask.dtype}")
    if (mask > 0).any() or np.isnan(mask).any():
        raise ValueError("mask: an additive float mask holds 0 (may attend) and −inf (blocked); "
                         "it has positive or NaN entries — a 0/1 mask must be given as bool")
    return mask
