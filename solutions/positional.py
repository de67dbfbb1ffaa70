"""Token embeddings and sinusoidal positional encodings (Vaswani et al. 2017, §3.4–3.5)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float


def positional_encoding(L: int, d_model: int) -> np.ndarray:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).

    Shape (L, d_model); positions start at 0, so PE[0] = [0, 1, 0, 1, …]. Columns 2i and 2i+1
    share one frequency. d_model must be even.
    """
    if L < 1 or d_model < 2 or d_model % 2:
        raise ValueError(f"positional_encoding: expected L ≥ 1 and an even d_model ≥ 2, "
                         f"got L={L}, d_model={d_model}")
    pos = np.arange(L)[:, None]
    two_i = np.arange(0, d_model, 2)[None, :]
    angle = pos / 10000.0 ** (two_i / d_model)
    pe = np.empty((L, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def embed(tokens, table) -> np.ndarray:
    """Embedding lookup scaled by √d_model: E[tokens] · √d_model.

    Shapes: tokens (...) integer ids, table (V, d_model) → (..., d_model).
    """
    tokens = np.asarray(tokens)
    table = as_float(table, "table")
    if table.ndim != 2:
        raise ValueError(f"table: expected shape (V, d_model), got {table.shape}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens: expected integer token ids, got dtype {tokens.dtype}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= table.shape[0]):
        raise ValueError(f"tokens: ids must lie in [0, V={table.shape[0]}), "
                         f"got range [{tokens.min()}, {tokens.max()}]")
    out = np.take(table, tokens, axis=0)     # always a copy (table[t] of one id is a view)
    out *= np.sqrt(table.shape[1])           # so the scale is applied in its own memory
    return out


class EmbedCache(NamedTuple):
    """What ``embed_backward`` needs: the token ids (...) and the table's shape (V, d_model)."""
    tokens: np.ndarray
    table_shape: tuple[int, int]


def embed_forward(tokens, table) -> tuple[np.ndarray, EmbedCache]:
    """``embed``, returning ``(out, cache)`` for ``embed_backward``."""
    return embed(tokens, table), EmbedCache(np.asarray(tokens), np.shape(table))


def embed_backward(dout, cache) -> np.ndarray:
    """dE[v] = √d_model · Σ of dout over every position holding token v (a token used twice
    gets both gradients). Shapes: dout (..., d_model) → dE (V, d_model)."""
    V, d = cache.table_shape
    dtable = np.zeros((V, d))
    np.add.at(dtable, cache.tokens.reshape(-1), np.reshape(dout, (-1, d)))
    dtable *= np.sqrt(d)
    return dtable
