"""Named weights: flat ``{"encoder.layers.0.self_attn.W_Q": array}`` ↔ nested dicts."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def subtree(weights: Mapping[str, np.ndarray], prefix: str) -> dict:
    """The weights under ``prefix`` as a nested dict: "self_attn.W_Q" → {"self_attn": {"W_Q": …}}."""
    tree: dict = {}
    for name, value in weights.items():
        if not name.startswith(prefix):
            continue
        *path, leaf = name[len(prefix):].split(".")
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def flatten(tree: Mapping, prefix: str = "") -> dict[str, np.ndarray]:
    """The inverse of ``subtree``: nested dicts → flat dotted names."""
    flat: dict[str, np.ndarray] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
