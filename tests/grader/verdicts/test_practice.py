"""Practice verdicts (grader.verdicts.practice): a practice variant's answers judged by the
grader's own functions — right, a named mistake, right given the student's earlier answer —
and the same verdict the grader gives the same answers in a graded record."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exercises.course.bank import load_bank
from exercises.practice.variants import practice_variants
from formats.serialize import decode_names
from grader.verdicts.follow_through import FOLLOW_THROUGH, carried
from grader.verdicts.parts import FAILED, MISSING, PASSED, problem_verdicts
from grader.verdicts.practice import judge, practice_record
from synthetic import mistakes as corpus


@pytest.fixture(scope="module")
def sdpa():
    template = load_bank()[0]["sdpa_four_tokens"]
    drawn = practice_variants(template, 1, start=4)[0]
    return drawn.variant, practice_record(drawn.variant.record())


def test_right_answers_pass_and_a_missing_part_is_missing(sdpa):
    variant, record = sdpa
    answers = dict(variant.answers)
    del answers["output"]
    verdicts = judge(record, answers)
    assert [verdicts[p].status for p in ("raw_scores", "scaled_scores", "weights")] == [PASSED] * 3
    assert verdicts["output"].status == MISSING


def test_a_listed_mistake_is_named_with_its_explanation(sdpa):
    variant, record = sdpa
    unscaled = variant.answers["raw_scores"].astype(float)            # the scale left out
    verdict = judge(record, {**variant.answers, "scaled_scores": unscaled})["scaled_scores"]
    assert verdict.status == FAILED and verdict.misconception == "sdpa_no_scale"
    assert "matches a known mistake" in verdict.message


def test_a_slip_carried_forward_is_right_given_the_earlier_answer(sdpa):
    variant, record = sdpa
    slip = variant.answers["raw_scores"].astype(float).copy()
    slip[0, 0] += 1.0
    scaled = slip / np.sqrt(np.asarray(variant.values["Q"]).shape[-1])
    verdicts = judge(record, {**variant.answers, "raw_scores": slip, "scaled_scores": scaled})
    assert verdicts["raw_scores"].status == FAILED
    assert verdicts["scaled_scores"].score > 0 and verdicts["scaled_scores"].message.startswith(FOLLOW_THROUGH)


def test_implement_and_free_response_problems_are_not_typed_answers():
    bank = load_bank()[0]
    for tid in ("implement_masked_attention", "bottleneck_free_response"):
        record = {"template": tid, "kind": bank[tid].kind}
        with pytest.raises(ValueError, match="practise it in a notebook"):
            practice_record(record)


NUMERIC = sorted(t for t, ms in corpus.by_template().items()
                 if any(m.kind == corpus.NUMERIC for m in ms))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(NUMERIC), st.integers(0, 5), st.data())
def test_practice_and_graded_verdicts_agree_on_the_synthetic_mistakes(template_id, seed, data):
    """Every synthetic mistake's answers, judged as practice and as the grader judges a graded
    record of the same variant: the same score, status and named mistake, part by part."""
    record = corpus.record(template_id, seed)
    if record is None or record["kind"] != "numeric":
        return
    mistakes = [m for m in corpus.by_template()[template_id] if m.kind == corpus.NUMERIC]
    mistake = data.draw(st.sampled_from(mistakes))
    wrong = corpus.answer(mistake, record)
    if wrong is None:
        return
    answers = {**decode_names(record["answers"]), mistake.part: wrong}
    values = {record["answer_names"][p]: v for p, v in answers.items()}
    graded = carried(record, values, problem_verdicts(record, values, {}, {}))
    practised = judge(practice_record({k: v for k, v in record.items() if k != "answer_names"}), answers)
    for part, verdict in graded.items():
        mine = practised[part]
        assert (mine.score, mine.status, mine.misconception) == (verdict.score, verdict.status,
                                                                 verdict.misconception), part
