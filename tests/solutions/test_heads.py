"""What a trained model's heads learned (solutions/heads.py): the maps of its own answer, the
pattern a map follows, a head ablated, and the KL divergence — checked against hand-made maps,
hand computations and the model's own forward pass."""

from pathlib import Path

import numpy as np
import pytest

from solutions.attention_maps import attention_maps
from solutions.checkpoint import load_model
from solutions.heads import (PATTERNS, ablate_head, head_ablated_output, head_maps, kl_divergence,
                             mirrored_position, model_answer, pattern_scores, strongest_keys,
                             teacher_forced_probs)
from solutions.toy_tasks import EOS, ToyTask

MODELS = Path(__file__).resolve().parents[2] / "problem_bank" / "models"


@pytest.fixture(scope="module")
def reverse():
    return load_model(MODELS / "reverse.json")[0]


@pytest.fixture(scope="module")
def copy():
    return load_model(MODELS / "copy.json")[0]


def test_head_maps_are_the_maps_of_the_models_own_answer(reverse):
    maps = head_maps(reverse, [3, 1, 4, 1, 5])
    assert list(maps.answer) == [5 + 3, 1 + 3, 4 + 3, 1 + 3, 3 + 3, EOS]
    assert list(maps.tgt) == [1, *maps.answer[:-1]]
    assert maps.encoder.shape == (2, 4, 5, 5) and maps.self.shape == (1, 4, 6, 6)
    assert maps.cross.shape == (1, 4, 6, 5)
    shown = attention_maps(reverse, ToyTask("reverse"), "31415").maps  # the page's maps: the same
    np.testing.assert_array_equal(shown[-1].weights, maps.cross[0, 3])
    for stack in (maps.encoder, maps.self, maps.cross):
        np.testing.assert_allclose(stack.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    assert not np.triu(maps.self[0], 1).any()


def test_model_answer_stops_at_eos(copy):
    assert list(model_answer(copy, [9, 0, 2])) == [12, 3, 5, EOS]


def _one_hot_map(L, S, key_of):
    W = np.full((L, S), 0.0)
    for i in range(L):
        W[i, key_of(i)] = 1.0
    return W


@pytest.mark.parametrize("kind, key_of, pattern", [
    ("self", lambda i: max(i - 1, 0), 0), ("self", lambda i: i, 1), ("self", lambda i: 0, 2),
    ("cross", lambda i: min(i, 4), 1), ("cross", lambda i: max(4 - i, 0), 3), ("cross", lambda i: 0, 2),
])
def test_a_clean_map_scores_1_on_its_own_pattern(kind, key_of, pattern):
    L = 6
    W = _one_hot_map(L, L if kind == "self" else 5, key_of)
    scores = pattern_scores(W, kind)
    assert scores[pattern] == 1.0 and PATTERNS[pattern]
    assert np.nanmax(np.delete(scores, pattern)) < 1.0
    assert np.isnan(scores[3]) == (kind == "self")


def test_pattern_scores_by_hand():
    W = np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]])
    # rows 1 and 2: previous (0.5 + 0.3) / 2, same (0.5 + 0.5) / 2, first (0.5 + 0.2) / 2
    np.testing.assert_allclose(pattern_scores(W, "self")[:3], [0.4, 0.5, 0.35], rtol=0, atol=1e-15)


def test_the_reverse_models_cross_heads_follow_the_mirrored_position(reverse):
    maps = head_maps(reverse, [2, 7, 1, 8, 2, 8])
    for h in range(4):
        assert np.argmax(pattern_scores(maps.cross[0, h], "cross")) == 3


def test_strongest_keys_and_the_mirrored_position():
    W = np.array([[0.1, 0.9], [0.7, 0.3]])
    assert list(strongest_keys(W)) == [1, 0]
    assert [mirrored_position(t, 5) for t in range(5)] == [4, 3, 2, 1, 0]


def test_ablating_a_head_zeroes_its_share_of_the_concatenation(copy):
    """ablate_head zeroes W_O's rows; head_ablated_output zeroes the head's entries of o: the
    same product, and the other heads' rows and the bias are untouched."""
    ablated = ablate_head(copy, "cross", 2)
    name = "decoder.layers.0.cross_attn.W_O"
    before, after = copy.weights[name], ablated.weights[name]
    assert not after[16:24].any() and np.array_equal(np.delete(after, range(16, 24), 0),
                                                      np.delete(before, range(16, 24), 0))
    assert all(np.array_equal(ablated.weights[k], v) for k, v in copy.weights.items() if k != name)
    o = np.random.default_rng(0).standard_normal((3, 32))
    np.testing.assert_allclose(head_ablated_output(o, before, 2, 8), o @ after, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="'self' or 'cross'"):
        ablate_head(copy, "encoder", 0)
    with pytest.raises(ValueError, match="head 4 of 4"):
        ablate_head(copy, "self", 4)


def test_ablating_every_cross_head_leaves_the_decoder_blind_to_the_source(copy):
    """With all four cross heads zeroed the prediction no longer depends on the input."""
    blind = copy
    for h in range(4):
        blind = ablate_head(blind, "cross", h)
    answer = model_answer(copy, [1, 2, 3, 4])
    p = teacher_forced_probs(blind, [1, 2, 3, 4], answer)
    q = teacher_forced_probs(blind, [9, 8, 7, 6], answer)
    np.testing.assert_allclose(p, q, rtol=0, atol=1e-12)
    assert teacher_forced_probs(copy, [1, 2, 3, 4], answer)[np.arange(5), answer].min() > 0.9


def test_kl_divergence_by_hand():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.25, 0.5])
    assert kl_divergence(p, q) == pytest.approx(np.log(2), abs=1e-15)
    assert kl_divergence(q, q) == 0.0
    assert kl_divergence(q, p + 1e-300) > 0
