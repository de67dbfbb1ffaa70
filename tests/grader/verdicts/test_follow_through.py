"""Follow-through credit: a step done right on the student's own wrong earlier answers earns
its points (times the template's ``follow_credit``), step by step along a chain; a recipe
that does not reproduce the answer is refused when the template is loaded or built."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from exercises.course.assignment import load_assignment
from exercises.template.model import TemplateError
from exercises.variant.draw import make_variant
from formats.serialize import from_jsonable
from grader.verdicts.follow_through import FOLLOW_THROUGH, carried
from grader.verdicts.parts import FAILED, PARTIAL, PASSED, problem_verdicts
from solutions import softmax

from tests.exercises.templates import inline

CHAIN = """
id: chain
title: Attention by hand
objective: self_attention
kind: numeric
{credit}
parameters:
  d_k: {{dist: choice, values: [2, 3, 4]}}
  Q: {{dist: int_matrix, shape: [3, d_k], low: -1, high: 2}}
  K: {{dist: int_matrix, shape: [3, d_k], low: -1, high: 2}}
  V: {{dist: int_matrix, shape: [3, 2], low: 0, high: 4}}
derived:
  steps: scaled_dot_product_attention(Q, K, V, return_steps=True)
constraints:
  - expr: max(abs(steps.raw_scores)) <= 6
    why: small exponentials
prompt: Attention on three tokens.
parts:
  - id: raw_scores
    answer: steps.raw_scores
    points: 1
    atol: 1e-9
  - id: scaled_scores
    answer: steps.scaled_scores
    points: 1
    atol: 0.005
    follow: raw_scores / sqrt(d_k)
    misconceptions: [sdpa_no_scale]
  - id: weights
    answer: steps.weights
    points: 2
    atol: 0.005
    follow: softmax(scaled_scores)
    misconceptions: [sdpa_no_scale]
  - id: output
    answer: steps.output
    points: 2
    atol: 0.01
    follow: {output_follow}
"""


def chain(credit: str = "", output_follow: str = "weights @ V"):
    return inline(CHAIN.format(credit=credit, output_follow=output_follow))


def grade(record: dict, values: dict) -> dict:
    """What grader.run.grading does with one problem's values: the verdicts, then the credit."""
    return carried(record, values, problem_verdicts(record, values, {}, {}))


def record_of(template, seed=3) -> dict:
    v = make_variant(template, seed)
    record = v.record()
    record["answer_names"] = {p.id: p.id for p in template.parts}
    return record


def correct(record) -> dict:
    return {p: from_jsonable(v) for p, v in record["answers"].items()}


def test_the_key_keeps_each_recipe_with_the_values_it_reads():
    record = record_of(chain())
    assert set(record["follow"]) == {"scaled_scores", "weights", "output"}
    assert record["follow"]["scaled_scores"]["parts"] == ["raw_scores"]
    assert set(record["follow"]["scaled_scores"]["values"]) == {"d_k"}
    assert set(record["follow"]["output"]["values"]) == {"V"}
    assert record["follow_credit"] == 1.0


def test_a_step_right_on_the_students_own_wrong_answer_earns_its_points_along_the_chain():
    record = record_of(chain())
    values = correct(record)
    values["scaled_scores"] = values["scaled_scores"].copy()
    values["scaled_scores"][0, 0] += 1.0                          # an arithmetic slip: (b) wrong
    values["weights"] = softmax(values["scaled_scores"])          # (c) right from their (b)
    values["output"] = values["weights"] @ np.asarray(from_jsonable(record["follow"]["output"]["values"]["V"]))
    verdicts = grade(record, values)
    assert verdicts["raw_scores"].status == PASSED
    assert verdicts["scaled_scores"].status == FAILED and verdicts["scaled_scores"].misconception is None
    for part, points in (("weights", 2.0), ("output", 2.0)):
        v = verdicts[part]
        assert (v.status, v.score) == (PASSED, points), v.message
        assert v.message.startswith(FOLLOW_THROUGH) and "correct given your" in v.message


def test_a_wrong_step_on_top_of_a_wrong_answer_earns_nothing():
    record = record_of(chain())
    values = correct(record)
    values["scaled_scores"] = values["raw_scores"] + 1.0
    values["weights"] = softmax(values["scaled_scores"]) + 0.1    # wrong even given their (b)
    values["output"] = values["weights"] @ np.ones((3, 2))
    verdicts = grade(record, values)
    assert verdicts["weights"].status == FAILED and not verdicts["weights"].message.startswith(FOLLOW_THROUGH)
    assert verdicts["output"].status == FAILED


def test_a_wrong_step_on_right_answers_is_simply_wrong():
    record = record_of(chain())
    values = correct(record)
    values["weights"] = softmax(values["raw_scores"])             # wrong, and (b) was right
    verdicts = grade(record, values)
    assert verdicts["scaled_scores"].status == PASSED
    assert verdicts["weights"].status == FAILED and not verdicts["weights"].message.startswith(FOLLOW_THROUGH)


def test_the_credit_is_the_templates_share_and_an_assignment_may_change_it(tmp_path):
    record = record_of(chain(credit="follow_credit: 0.5"))
    values = correct(record)
    values["scaled_scores"] = values["scaled_scores"].copy()
    values["scaled_scores"][0, 0] += 1.0
    values["weights"] = softmax(values["scaled_scores"])
    v = grade(record, values)["weights"]
    assert (v.status, v.score, v.max_score) == (PARTIAL, 1.0, 2.0) and "50%" in v.message
    (tmp_path / "chain.yaml").write_text(textwrap.dedent(CHAIN.format(credit="", output_follow="weights @ V")))
    (tmp_path / "hw.yaml").write_text("id: hw\ntitle: HW\nsecret: {env: S}\nproblems:\n"
                                      "  - template: chain.yaml\n    follow_credit: 0.25\n")
    (problem,) = load_assignment(tmp_path / "hw.yaml").problems
    assert problem.template.follow_credit == 0.25


def test_an_answer_of_another_shape_is_not_recomputed():
    record = record_of(chain())
    values = correct(record)
    values["scaled_scores"] = np.ones((2, 2))                     # not even the expected shape
    values["weights"] = softmax(values["scaled_scores"])
    verdicts = grade(record, values)
    assert verdicts["weights"].status == FAILED and not verdicts["weights"].message.startswith(FOLLOW_THROUGH)


def test_carried_changes_nothing_without_recipes():
    verdicts = {"a": object()}
    assert carried({"answers": {}}, {}, verdicts) is verdicts


@pytest.mark.parametrize("follow, message", [
    ("weights @ K", "does not give the part's answer from the correct answers of weights"),
    ("V + 0", "reads none of them"),
])
def test_a_recipe_that_does_not_reproduce_the_answer_is_refused(follow, message):
    with pytest.raises(TemplateError, match=message):
        make_variant(chain(output_follow=follow), 3)


def test_a_recipe_reading_a_later_part_or_an_unknown_name_is_refused_at_load():
    with pytest.raises(TemplateError, match="unknown name 'output'"):
        inline(CHAIN.format(credit="", output_follow="weights @ V").replace(
            "follow: raw_scores / sqrt(d_k)", "follow: output / sqrt(d_k)"))


def test_no_follow_through_on_another_students_notebook_or_edited_givens():
    """grade_values with follow=False (what the grader passes for a handin flagged
    wrong-student, wrong-variant or givens-edited) gives the chain no credit."""
    from grader.run.graded import FOLLOW_WITHHELD, grade_values
    assert {"wrong-student", "wrong-variant", "givens-edited"} <= FOLLOW_WITHHELD
    record = record_of(chain())
    values = correct(record)
    values["scaled_scores"] = values["scaled_scores"].copy()
    values["scaled_scores"][0, 0] += 1.0
    values["weights"] = softmax(values["scaled_scores"])
    entry = {"problems": {"chain": record}}
    kept = grade_values(entry, {"chain": values}, {}, {}, {}).verdicts
    withheld = grade_values(entry, {"chain": values}, {}, {}, {}, follow=False).verdicts
    assert kept[("chain", "weights")].status == PASSED
    assert withheld[("chain", "weights")].status == FAILED and withheld[("chain", "weights")].score == 0.0


# --- credit that cannot be gamed -------------------------------------------------------------

def _carried_from(record, part: str, value) -> dict:
    """Right answers, ``value`` at ``part``, every later step worked from it (the recipes)."""
    values = correct(record)
    values[part] = np.asarray(value, dtype=float)
    d_k = float(from_jsonable(record["follow"]["scaled_scores"]["values"]["d_k"]))
    V = np.asarray(from_jsonable(record["follow"]["output"]["values"]["V"]))
    if part == "raw_scores":
        values["scaled_scores"] = values["raw_scores"] / np.sqrt(d_k)
    if part in ("raw_scores", "scaled_scores"):
        values["weights"] = softmax(values["scaled_scores"])
    values["output"] = values["weights"] @ V
    return values


@pytest.mark.parametrize("garbage, words", [
    (lambda e: np.zeros_like(e), "is all zeros"),
    (lambda e: np.full_like(e, 2.0), "all the entries of each row equal"),
    (lambda e: 100 * np.eye(len(e)), "a single entry that is not zero"),
    (lambda e: np.where(np.tril(np.ones_like(e)) > 0, 3.0, 0.0), "the same number in every entry"),
])
def test_a_degenerate_first_step_earns_nothing_down_the_whole_chain(garbage, words):
    record = record_of(chain())
    values = _carried_from(record, "raw_scores", garbage(correct(record)["raw_scores"]))
    verdicts = grade(record, values)
    for part in ("scaled_scores", "weights", "output"):
        v = verdicts[part]
        assert v.status == FAILED and v.score == 0.0, (part, v.message)
    assert "No follow-through:" in verdicts["scaled_scores"].message
    assert words in verdicts["scaled_scores"].message and "`raw_scores`" in verdicts["scaled_scores"].message
    assert words in verdicts["output"].message        # told down the chain, from where it started


def test_an_honest_slip_carried_forward_earns_the_later_steps():
    record = record_of(chain())
    raw = correct(record)["raw_scores"].copy()
    raw[1, 0] += 1.0
    verdicts = grade(record, _carried_from(record, "raw_scores", raw))
    assert verdicts["raw_scores"].status == FAILED
    assert all(verdicts[p].status == PASSED and verdicts[p].message.startswith(FOLLOW_THROUGH)
               for p in ("scaled_scores", "weights", "output"))


def test_a_part_that_lists_the_carried_mistake_gives_no_follow_through():
    """Forgetting 1/√d_k is what weights and output (which list sdpa_no_scale) exist to catch:
    carrying it forward is the mistake, not a step done right."""
    record = record_of(chain())
    values = _carried_from(record, "scaled_scores", correct(record)["raw_scores"] * 1.0)
    verdicts = grade(record, values)
    for part in ("weights",):
        v = verdicts[part]
        assert (v.status, v.score, v.misconception) == (FAILED, 0.0, "sdpa_no_scale"), v.message
        assert not v.message.startswith(FOLLOW_THROUGH)


def test_the_carried_answer_is_judged_against_the_twins_the_part_lists():
    """output lists no twin in CHAIN: the forgotten scale carried into it earns its step. Once
    it lists sdpa_no_scale, it earns nothing and names the mistake, even where the key stores
    no output for that twin (so the part's own value could not name it)."""
    record = record_of(chain())
    values = _carried_from(record, "scaled_scores", correct(record)["raw_scores"] * 1.0)
    out = grade(record, values)["output"]
    assert out.status == PASSED and out.message.startswith(FOLLOW_THROUGH)
    listed = dict(record, grading=[dict(g, misconceptions=["sdpa_no_scale"]) if g["id"] == "output" else g
                                   for g in record["grading"]])
    twins = {name: {"dict": {p: v for p, v in stored["dict"].items() if p != "output"}}
             for name, stored in record["twins"].items()}
    listed["twins"], listed["lookalikes"] = twins, {}
    out = grade(listed, values)["output"]
    assert (out.status, out.score, out.misconception) == (FAILED, 0.0, "sdpa_no_scale"), out.message
    assert "No follow-through:" in out.message and "the very mistake this step checks for" in out.message
