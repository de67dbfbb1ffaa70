"""The trained toy models a template may read (``model: NAME``): where their files are, and
each one loaded once per process, its weights checked against the digest its .json records.

A template names a model; the name resolves to ``models/NAME.json`` beside the template file,
then to the bank's ``problem_bank/models/NAME.json``. Expressions read the loaded model as the
name ``model`` (``exercises.template.expressions``); the weights never enter a variant's
values, a notebook or the key — only what the reference computes from them does. The model's
digest joins the template's ``source_digest``, so new weights make a built key stale.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

BANK_MODELS = Path(os.environ.get("ATTNKIT_BANK") or Path(__file__).resolve().parents[2] / "problem_bank") / "models"


def model_path(name: str, beside: str | Path | None = None) -> Path:
    """A trained model's .json: ``name`` as a path when it names a file, else
    ``models/name.json`` beside ``beside`` (a template file) when there is one, else the
    bank's ``BANK_MODELS/name.json``."""
    given = Path(name)
    if given.suffix in (".json", ".npz") or given.exists() or len(given.parts) > 1:
        return given.with_suffix(".json")
    if beside is not None:
        local = Path(beside).resolve().parent / "models" / f"{name}.json"
        if local.is_file():
            return local
    return BANK_MODELS / f"{name}.json"


def known_models() -> list[str]:
    return sorted(p.stem for p in BANK_MODELS.glob("*.json"))


def recorded_digest(path: Path) -> str:
    """The weights' digest a model's .json records (ValueError naming the file if it cannot
    be read or has none)."""
    try:
        digest = json.loads(Path(path).read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError) as err:
        raise ValueError(f"{path}: cannot read the model's description: {err}") from None
    if not isinstance(digest, str):
        raise ValueError(f"{path}: the model's description records no digest")
    return digest


@functools.lru_cache(maxsize=8)
def load(path: str, digest: str):
    """The model at ``path`` whose weights have ``digest`` (what the template recorded when it
    was loaded); ValueError if the files changed since."""
    from solutions.checkpoint import load_model

    model, described = load_model(Path(path))
    if described["digest"] != digest:
        raise ValueError(f"{path}: the model changed since its template was loaded "
                         f"(digest {described['digest']}, expected {digest})")
    return model
