"""Training the toy models: Adam by hand, the teacher-forced batches, held-out sequences never
trained on, the shipped models' held-out exact match, and retraining that reproduces them."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from solutions.checkpoint import load_model, weights_digest
from solutions.optim import Adam
from solutions.toy_tasks import BOS, EOS, PAD, ToyTask, batch_of, held_out, random_sequences
from solutions.training import RECIPES, Recipe, exact_match, train

MODELS = Path(__file__).resolve().parents[2] / "problem_bank" / "models"


def test_adam_takes_the_hand_computed_steps():
    w = {"w": np.array([1.0, -2.0])}
    adam = Adam(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)
    adam.step(w, {"w": np.array([0.5, -4.0])})
    # t = 1: m̂ = g, v̂ = g², so the step is lr · g / (|g| + ε): lr against the gradient's sign
    np.testing.assert_allclose(w["w"], [1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4.0 / (4.0 + 1e-8)], rtol=1e-15)
    adam.step(w, {"w": np.array([1.0, 0.0])})
    m = 0.9 * 0.1 * np.array([0.5, -4.0]) + 0.1 * np.array([1.0, 0.0])
    v = 0.99 * 0.01 * np.array([0.25, 16.0]) + 0.01 * np.array([1.0, 0.0])
    m_hat, v_hat = m / (1 - 0.9 ** 2), v / (1 - 0.99 ** 2)
    before = np.array([1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4.0 / (4.0 + 1e-8)])
    np.testing.assert_allclose(w["w"], before - 0.1 * m_hat / (np.sqrt(v_hat) + 1e-8), rtol=1e-14)


def test_the_rate_warms_up_then_falls_to_zero_and_never_below():
    adam = Adam(lr=1.0, warmup=4, steps=10)
    rates = []
    for _ in range(13):
        rates.append(adam.rate())
        adam.t += 1
    np.testing.assert_allclose(rates, [0.25, 0.5 * 0.9, 0.75 * 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0, 0, 0])


def test_a_batch_reads_bos_and_the_answer_and_is_scored_on_the_answer_and_eos():
    batch = batch_of(ToyTask("reverse", 2, 4), [(1, 2, 3), (7, 0)])
    np.testing.assert_array_equal(batch.src, [[4, 5, 6, 0], [10, 3, 0, 0]])
    np.testing.assert_array_equal(batch.src_lengths, [3, 2])
    np.testing.assert_array_equal(batch.tgt, [[BOS, 6, 5, 4, PAD], [BOS, 3, 10, PAD, PAD]])
    np.testing.assert_array_equal(batch.targets, [[6, 5, 4, EOS, PAD], [3, 10, EOS, PAD, PAD]])
    answer = ~np.isin(batch.targets[:, :-1], (PAD, EOS))   # the decoder input: the targets shifted right
    np.testing.assert_array_equal(batch.tgt[:, 1:][answer], batch.targets[:, :-1][answer])


def test_held_out_sequences_are_distinct_and_never_trained_on():
    task = ToyTask("sort")
    kept = held_out(task)
    assert len(kept) == len(set(kept)) == 500
    assert held_out(task) == kept                          # seeded
    drawn = random_sequences(task, np.random.default_rng(0), 20_000, frozenset(kept))
    assert not set(drawn) & set(kept)
    assert all(task.min_len <= len(s) <= task.max_len for s in drawn)


def test_no_more_than_half_of_a_tasks_sequences_is_held_out():
    with pytest.raises(ValueError, match="over half of the 110"):
        held_out(ToyTask("copy", 1, 2))
    assert len(held_out(ToyTask("copy", 1, 2), n=55)) == 55


def test_a_task_refuses_lengths_beyond_twelve_tokens():
    with pytest.raises(ValueError, match="at most 12 tokens"):
        ToyTask("copy", 3, 12)
    with pytest.raises(ValueError, match="no toy task"):
        ToyTask("add")


def test_training_is_deterministic_from_its_seed():
    recipe = replace(RECIPES["copy"], steps=5)
    first, again = train(recipe), train(recipe)
    assert weights_digest(first.weights) == weights_digest(again.weights)
    assert weights_digest(train(replace(recipe, seed=1)).weights) != weights_digest(first.weights)


def test_an_untrained_model_gets_almost_nothing_right():
    recipe = RECIPES["reverse"]
    assert exact_match(train(replace(recipe, steps=1)), recipe.toy_task()) < 0.05


def test_the_shipped_models_weigh_under_a_megabyte_together():
    assert sorted(p.stem for p in MODELS.glob("*.npz")) == sorted(RECIPES)
    assert sum(p.stat().st_size for p in MODELS.iterdir()) <= 1_000_000


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_shipped_model_answers_99_percent_of_held_out_sequences(name):
    model, described = load_model(MODELS / f"{name}.json")
    assert Recipe(**described["recipe"]) == RECIPES[name]
    assert exact_match(model, RECIPES[name].toy_task()) >= 0.99


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_retraining_reproduces_the_shipped_weights(name):
    model, described = load_model(MODELS / f"{name}.json")
    again = train(RECIPES[name])
    if weights_digest(again.weights) != described["digest"]:     # another BLAS may round otherwise
        for weight, value in model.weights.items():
            np.testing.assert_allclose(again.weights[weight], value, rtol=0, atol=1e-6, err_msg=weight)
