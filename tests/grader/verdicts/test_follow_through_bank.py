"""Follow-through on the REAL bank templates (issue 36, "Follow-through pays the very
misconception a part exists to catch"): the student answers of the issue replayed on the
bank's own records, several seeds each, and judged as ``grader.run.grading`` judges them
(``problem_verdicts`` then ``carried``).

"Carried consistently" is built with ``bench.credit.carry``: every later step is the part's
own ``follow`` recipe run on the student's earlier answers, exactly what follow-through
credit checks. The mistakes are the records' own stored twins (``record["twins"]``) or
lookalikes wherever the bank has one, not re-derived by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench import credit
from formats import key_shape as shape
from formats.serialize import decode_names, from_jsonable
from grader.verdicts.follow_through import FOLLOW_THROUGH, FOLLOW_WITHHELD, carried
from grader.verdicts.parts import PASSED, problem_verdicts
from solutions.attention import scaled_dot_product_attention
from synthetic import mistakes as corpus

SEEDS = range(5)


def _record(template: str, seed: int) -> dict:
    record = corpus.record(template, seed)
    assert record is not None, (template, seed)
    return record


def _stored(record: dict, name: str, field: str = "twins") -> dict:
    """part → value that the record's stored mistake ``name`` gives (decoded)."""
    assert name in record.get(field, {}), f"{record['template']} no longer stores {name} in {field}"
    return {part: np.asarray(v, dtype=float) for part, v in from_jsonable(record[field][name]).items()}


def _lists(record: dict, part: str, name: str) -> bool:
    grading = next(g for g in shape.gradings(record) if shape.part_id(g) == part)
    return name in grading.get("misconceptions", ())


def _judge(record: dict, root: str, value, later: list[str]) -> tuple[dict, dict]:
    """(values, verdicts): right everywhere, ``value`` at ``root``, each later step carried by
    its recipe; verdicts as the grader gives them, follow-through applied."""
    values = credit.carry(record, root, value, later)
    own = problem_verdicts(record, values, {}, {})
    return values, carried(record, values, own)


def _total(verdicts: dict) -> tuple[float, float]:
    return sum(v.score for v in verdicts.values()), sum(v.max_score for v in verdicts.values())


# --- 1. why_sqrt_dk: variance = d_k (σ² left out), then std = 1 ------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_why_sqrt_dk_unit_variance_then_std_one_earns_no_follow_through(seed):
    record = _record("why_sqrt_dk", seed)
    twin = _stored(record, "dot_product_moments_unit_variances")
    assert _lists(record, "variance", "dot_product_moments_unit_variances")
    assert _lists(record, "std", "dot_product_moments_unit_variances")
    values, verdicts = _judge(record, "variance", twin["variance"], ["std"])
    names = shape.answer_names(record)
    assert float(values[names["std"]]) == pytest.approx(1.0)        # "std = 1", as the scale intends
    assert np.allclose(values[names["std"]], twin["std"])
    assert verdicts["variance"].score == 0
    assert verdicts["variance"].misconception == "dot_product_moments_unit_variances"
    std = verdicts["std"]
    assert std.score == 0 and std.status != PASSED                   # was 1/1 "correct given your variance"
    assert not std.message.startswith(FOLLOW_THROUGH)
    assert std.misconception == "dot_product_moments_unit_variances"


@pytest.mark.parametrize("seed", SEEDS)
def test_why_sqrt_dk_zero_variance_and_zero_std_carry_nothing_forward(seed):
    record = _record("why_sqrt_dk", seed)
    values, verdicts = _judge(record, "variance", np.float64(0.0), ["std"])
    assert float(values[shape.answer_names(record)["std"]]) == 0.0   # consistent: sqrt(0 / d_k)
    assert verdicts["variance"].score == 0
    assert verdicts["std"].score == 0 and FOLLOW_WITHHELD in verdicts["std"].message


# --- 2. causal_mask_by_hand: blocked scores set to 0 instead of −∞ ---------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_causal_mask_blocked_scores_zero_carried_to_weights_earns_nothing(seed):
    record = _record("causal_mask_by_hand", seed)
    twin = _stored(record, "sdpa_mask_with_zero")
    assert _lists(record, "weights", "sdpa_mask_with_zero")
    later = credit.chains(record)["exp_scores"]
    assert "weights" in later
    values, verdicts = _judge(record, "exp_scores", twin["exp_scores"], later)
    assert np.allclose(values[shape.answer_names(record)["weights"]], twin["weights"], atol=1e-9)
    assert verdicts["exp_scores"].misconception == "sdpa_mask_with_zero"
    weights = verdicts["weights"]
    assert weights.score == 0 and weights.max_score == 2             # was 2/2
    assert weights.misconception == "sdpa_mask_with_zero"
    assert not weights.message.startswith(FOLLOW_THROUGH)
    score, top = _total(verdicts)
    # the whole masking misconception costs exp_scores' 1 and the weights' 2 (was 1 point)
    assert top - score == verdicts["exp_scores"].max_score + weights.max_score


# --- 3. sdpa_four_tokens: 1/√d_k forgotten, carried consistently -----------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_sdpa_four_tokens_no_scale_carried_through_loses_weights_and_output(seed):
    record = _record("sdpa_four_tokens", seed)
    twin = _stored(record, "sdpa_no_scale")
    later = ["weights", "output"]
    assert all(_lists(record, p, "sdpa_no_scale") for p in later)
    values, verdicts = _judge(record, "scaled_scores", twin["scaled_scores"], later)
    names = shape.answer_names(record)
    for part in later:                                   # carried consistently = the twin itself
        assert np.allclose(values[names[part]], twin[part], atol=1e-9)
    assert verdicts["raw_scores"].status == PASSED
    for part in later:
        v = verdicts[part]
        assert v.score == 0, (part, v.message)
        assert v.misconception == "sdpa_no_scale"
        assert not v.message.startswith(FOLLOW_THROUGH)
    score, top = _total(verdicts)
    assert top - score > 1                               # was 1 of 6


# --- 4. bahdanau_step_by_hand: exactly uniform weights, context = mean of H -------------------

def _check_uniform(record: dict, values: dict, verdicts: dict):
    twin = _stored(record, "bahdanau_step_uniform_weights")
    H = np.asarray(decode_names(record["givens"])["H"], dtype=float)
    names = shape.answer_names(record)
    assert np.allclose(values[names["weights"]], 1.0 / len(H))
    assert np.allclose(values[names["context"]], H.mean(axis=0))
    assert np.allclose(twin["weights"], values[names["weights"]])
    assert np.allclose(twin["context"], H.mean(axis=0))
    for part in ("weights", "context"):
        assert _lists(record, part, "bahdanau_step_uniform_weights")
        v = verdicts[part]
        assert v.score == 0, (part, v.message)             # was 4/4 for the two parts
        assert v.misconception == "bahdanau_step_uniform_weights"
        assert not v.message.startswith(FOLLOW_THROUGH)


@pytest.mark.parametrize("seed", SEEDS)
def test_bahdanau_uniform_weights_with_the_mean_of_h_earn_nothing_and_are_named(seed):
    record = _record("bahdanau_step_by_hand", seed)
    twin = _stored(record, "bahdanau_step_uniform_weights")
    values, verdicts = _judge(record, "weights", twin["weights"], ["context"])
    _check_uniform(record, values, verdicts)
    score, top = _total(verdicts)
    assert top - score == 4


@pytest.mark.parametrize("seed", SEEDS)
def test_bahdanau_zero_pre_activations_carried_to_uniform_weights_earn_nothing(seed):
    # the garbage student: pre = 0 → scores 0 → weights 1/S → context = mean of H
    record = _record("bahdanau_step_by_hand", seed)
    later = credit.chains(record)["pre"]
    assert later == ["scores", "weights", "context"]
    pre = np.zeros_like(np.asarray(decode_names(record["answers"])["pre"], dtype=float))
    values, verdicts = _judge(record, "pre", pre, later)
    _check_uniform(record, values, verdicts)
    assert verdicts["scores"].score == 0 and FOLLOW_WITHHELD in verdicts["scores"].message
    score, top = _total(verdicts)
    assert score == 0                                    # was 6 of 7


# --- 5. dog_ran_fast: an honest slip (W X for X W) carried consistently ----------------------

DOG_CHAIN = ["raw_scores", "scaled_scores", "row_sums", "weights", "output"]


def _dog_student(record: dict, projections) -> dict:
    """A student right everywhere who puts ``projections`` in and then works Part 2 right on
    their own Q, K, V — with the reference attention (``solutions``), not the template's
    recipes, so that a chain the recipes do not cover still counts as carried."""
    answers = decode_names(record["answers"])
    Q, K, V = (np.asarray(m, dtype=float) for m in projections)
    with np.errstate(all="ignore"):
        steps = scaled_dot_product_attention(Q, K, V, return_steps=True)
    mine = {p: np.asarray(v, dtype=float) for p, v in answers.items()}
    mine |= {"projections": np.asarray(projections, dtype=float), "raw_scores": steps.raw_scores,
             "scaled_scores": steps.scaled_scores, "row_sums": steps.row_sums[:, 0],
             "weights": steps.weights, "output": steps.output}
    names = shape.answer_names(record)
    return {names[p]: v for p, v in mine.items()}


def _verdicts(record: dict, values: dict) -> dict:
    return carried(record, values, problem_verdicts(record, values, {}, {}))


@pytest.mark.parametrize("seed", SEEDS)
def test_dog_ran_fast_w_x_for_x_w_carried_keeps_the_chain_and_beats_garbage(seed):
    record = _record("dog_ran_fast", seed)
    givens = decode_names(record["givens"])
    slip = _stored(record, "linear_weight_first", "lookalikes")["projections"]
    by_hand = np.stack([givens[w] @ givens["X"] for w in ("W_Q", "W_K", "W_V")]).astype(float)
    assert np.allclose(slip, by_hand)                    # the stored mistake is [W_Q X, W_K X, W_V X]
    verdicts = _verdicts(record, _dog_student(record, slip))
    assert verdicts["projections"].score == 0
    assert verdicts["projections"].misconception == "linear_weight_first"
    for part in DOG_CHAIN:                               # each step read the student's own Q, K, V
        v = verdicts[part]
        assert v.score == v.max_score and v.message.startswith(FOLLOW_THROUGH), (part, v.message)
    score, top = _total(verdicts)
    assert top == 13 and score >= 12                     # was 9 of 13
    expected = decode_names(record["answers"])["projections"]
    for kind in credit.GARBAGE:                          # zeros, constant, support, one-hot
        garbage = credit.first_step(kind, expected, seed)
        if garbage is not None:
            assert score > _total(_verdicts(record, _dog_student(record, garbage)))[0], kind   # zeros had 12


@pytest.mark.parametrize("seed", SEEDS)
def test_dog_ran_fast_recipes_carry_the_chain_from_the_projections_as_the_reference_does(seed):
    record = _record("dog_ran_fast", seed)
    slip = _stored(record, "linear_weight_first", "lookalikes")["projections"]
    later = credit.chains(record).get("projections", [])
    assert later == DOG_CHAIN                            # raw_scores and output read the student's Q, K, V
    by_recipe = credit.carry(record, "projections", slip, later)
    by_reference = _dog_student(record, slip)
    for name, value in by_reference.items():
        assert np.allclose(by_recipe[name], value), name


# --- one explanation: a withheld step names the carried mistake alone ---------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_a_step_withheld_for_its_own_mistake_gives_one_explanation(seed):
    """dog_ran_fast's implied_ran from unscaled slide scores: alone, its value is one that
    several mistakes give ("… different mistakes give this value"); carried, the mistake is
    known, so the feedback names it once instead of offering a list and then naming it."""
    record = _record("dog_ran_fast", seed)
    twin = _stored(record, "sdpa_no_scale")
    assert _lists(record, "implied_ran", "sdpa_no_scale")
    _, verdicts = _judge(record, "slide_scaled", twin["slide_scaled"], ["implied_ran"])
    implied = verdicts["implied_ran"]
    assert implied.score == 0 and implied.misconception == "sdpa_no_scale"
    assert implied.message.count(FOLLOW_WITHHELD) == 1
    assert "different mistakes give this value" not in implied.message
    assert "cannot be told apart" not in implied.message
