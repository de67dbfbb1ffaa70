"""A trained model on disk: saved and loaded whole, its digest of the weights not the file."""

import json

import numpy as np
import pytest

import solutions
from solutions.checkpoint import load_model, save_model, weights_digest


def small():
    config = solutions.TransformerConfig(5, 6, d_model=4, num_heads=2, d_ff=8, num_encoder_layers=1,
                                         num_decoder_layers=1, tie_output=True)
    return solutions.Transformer.from_seed(config, seed=0)


def test_a_saved_model_loads_with_the_same_weights_and_config(tmp_path):
    model = small()
    described = save_model(model, tmp_path / "m.npz", {"name": "m"})
    loaded, read = load_model(tmp_path / "m.json")
    assert read == described and read["config"]["tie_output"] is True
    assert loaded.config == model.config
    for name, value in model.weights.items():
        np.testing.assert_array_equal(loaded.weights[name], value)
    assert described["parameters"] == sum(v.size for v in model.weights.values())


def test_the_digest_is_of_the_weights_not_of_the_file(tmp_path):
    model = small()
    first = save_model(model, tmp_path / "a.npz", {})["digest"]
    assert save_model(model, tmp_path / "b.npz", {})["digest"] == first
    changed = model.named_weights()
    changed["generator.b"][0] += 1e-12
    assert weights_digest(changed) != first


def test_weights_that_are_not_the_described_ones_are_refused(tmp_path):
    model = small()
    save_model(model, tmp_path / "m.npz", {})
    described = json.loads((tmp_path / "m.json").read_text())
    described["digest"] = "sha256:" + "0" * 64
    (tmp_path / "m.json").write_text(json.dumps(described))
    with pytest.raises(ValueError, match="not those of its .json"):
        load_model(tmp_path / "m.npz")
