"""A trained model on disk: ``NAME.npz`` (its named float64 weights) beside ``NAME.json`` (its
config, the recipe that trained it, the weights' digest, what it scored). The digest is of the
weights themselves (names, shapes, bytes), not of the file, so a re-save keeps it."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .model import Transformer, TransformerConfig


def weights_digest(weights: dict[str, np.ndarray]) -> str:
    """sha256 over every weight, in name order: its name, shape and float64 bytes."""
    h = hashlib.sha256()
    for name in sorted(weights):
        value = np.ascontiguousarray(weights[name], dtype="<f8")
        h.update(f"{name}{value.shape}".encode())
        h.update(value.tobytes())
    return "sha256:" + h.hexdigest()


def save_model(model: Transformer, path: Path, meta: dict) -> dict:
    """Write ``path`` (.npz) and its .json beside it; the .json holds ``meta``, the config and
    the digest. Returns what the .json holds."""
    path = Path(path).with_suffix(".npz")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **model.weights)
    described = {**meta, "config": asdict(model.config), "digest": weights_digest(model.weights),
                 "parameters": int(sum(w.size for w in model.weights.values()))}
    path.with_suffix(".json").write_text(json.dumps(described, indent=2) + "\n", encoding="utf-8")
    return described


def load_model(path: Path) -> tuple[Transformer, dict]:
    """The model saved at ``path`` (.npz or .json) and its description; ValueError when the
    weights are not the ones the description's digest names."""
    path = Path(path)
    described = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    with np.load(path.with_suffix(".npz"), allow_pickle=False) as data:
        weights = {name: data[name] for name in data.files}
    if weights_digest(weights) != described.get("digest"):
        raise ValueError(f"{path.with_suffix('.npz')}: the weights are not those of its .json "
                         f"(digest {weights_digest(weights)}, expected {described.get('digest')})")
    return Transformer(TransformerConfig(**described["config"]), weights), described


