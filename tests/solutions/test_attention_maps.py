"""Inside the shipped reverse model: its answer, and every head's weights on the way."""

from pathlib import Path

import numpy as np
import pytest

from solutions.attention_maps import attention_maps
from solutions.checkpoint import load_model
from solutions.toy_tasks import ToyTask

MODELS = Path(__file__).resolve().parents[2] / "problem_bank" / "models"


@pytest.fixture(scope="module")
def reverse():
    return load_model(MODELS / "reverse.json")[0]


def test_the_reverse_model_reverses_and_every_map_is_a_distribution(reverse):
    maps = attention_maps(reverse, ToyTask("reverse"), "31415")
    assert maps.source == list("31415") and maps.output == [*"51413", "<eos>"]
    assert maps.decoder_input == ["<bos>", *"51413"]
    kinds = [(m.layer, m.kind) for m in maps.maps]
    assert len(maps.maps) == 16 and kinds.count(("decoder.0", "cross")) == 4
    for m in maps.maps:
        assert m.weights.shape == (len(m.rows), len(m.cols))
        np.testing.assert_allclose(m.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
        if m.layer.startswith("decoder") and m.kind == "self":      # causal: no look ahead
            assert not np.triu(m.weights, 1).any()


def test_the_reverse_models_cross_attention_runs_along_the_anti_diagonal(reverse):
    maps = attention_maps(reverse, ToyTask("reverse"), "2718281")
    cross = np.mean([m.weights for m in maps.maps if m.kind == "cross"], axis=0)
    L = len(maps.source)
    for t in range(L):                       # the step that writes answer token t reads L − 1 − t
        assert abs(int(np.argmax(cross[t])) - (L - 1 - t)) <= 1, (t, cross[t].round(2))


@pytest.mark.parametrize("text", ["12", "123456789", "12a4", ""])
def test_an_input_the_task_does_not_take_is_refused(reverse, text):
    with pytest.raises(ValueError, match="give 3 to 8 digits"):
        attention_maps(reverse, ToyTask("reverse"), text)
