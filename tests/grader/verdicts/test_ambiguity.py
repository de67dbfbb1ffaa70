"""Never a wrong name (issue 17, deliverable 1): the four wrong diagnoses of the trial, each on
real variants of the template where it happened.

Each test makes a student who made a mistake the template does *not* list, on the student's
own variant, and grades it. The old grader named the first listed twin that gave the same
numbers. Now the build's mistake search finds the student's own mistake, so the feedback
names it — or, where a listed twin gives the same numbers, the variant is redrawn at build
time (the build's rejections say so) or graded with "matches … either … or …" and no
misconception. Each test also shows the trap is real on these seeds, so it cannot pass
vacuously.
"""

import numpy as np
import pytest

from exercises.course.bank import load_bank
from exercises.variant.draw import make_variant
from formats.serialize import decode_names
from grader.verdicts.parts import CaseOutcome, problem_verdicts
from solutions import TWINS, scaled_dot_product_attention

SEEDS = range(6)


@pytest.fixture(scope="module")
def templates():
    return load_bank()[0]


def _implement_student(variant, function) -> dict:
    """The outcomes of a student whose function is ``function``, on the variant's hidden cases."""
    with np.errstate(all="ignore"):
        return {i: CaseOutcome(True, function(**case.args)) for i, case in enumerate(variant.tests)}


def _never_wrongly_named(verdicts, wrong: str, right: str) -> bool:
    """No verdict names ``wrong``; one that mentions it offers it as an alternative, beside
    the right mistake. True when ``wrong`` was mentioned at all (the trap was met)."""
    met = False
    right_summary = TWINS[right].summary
    for v in verdicts.values():
        assert v.misconception != wrong, v.message
        if TWINS[wrong].summary in v.message:
            met = True
            assert v.misconception is None and "either" in v.message, v.message
            assert right_summary in v.message, v.message
    return met


def _named_right(verdicts, right: str) -> bool:
    return any(v.misconception == right for v in verdicts.values())


def _redrawn(variant, wrong: str, lookalike: str) -> bool:
    return any(f"{wrong} looks like {lookalike}" in reason for reason in variant.rejections)


def test_a_the_per_head_sqrt_64_is_not_called_no_scale(templates):
    """why_sqrt_dk, the lecture's pair (110, 58) with d_k = 768: scaled by one head's √64
    instead, the two-key softmax gives 0.9985, and unscaled 1.0: the part asks for 3 decimals
    and takes them at ±0.0005, so the two are told apart and √64 is named (at ±0.005, as
    before, they were one value, and the feedback could only offer both)."""
    student = scaled_dot_product_attention(np.array([[1.0]]), np.array([[110.0], [58.0]]),
                                           np.eye(2), scale=1 / 8.0)[0, 0]
    right = "sdpa_scale_by_sqrt_head_dim"
    for seed in SEEDS:
        record = make_variant(templates["why_sqrt_dk"], seed).record()
        values = {**decode_names(record["answers"]), "pair_weight_scaled": student}
        record["answer_names"] = {g["id"]: g["id"] for g in record["grading"]}
        verdicts = problem_verdicts(record, values, {}, {})
        assert verdicts["pair_weight_scaled"].status == "failed"
        _never_wrongly_named(verdicts, "sdpa_no_scale", right)
        assert verdicts["pair_weight_scaled"].misconception == right, seed


def test_b_sqrt_d_v_is_not_called_the_sequence_length(templates):
    """implement_masked_attention: a function scaled by √d_v matches "scaled by √S" on every
    case where d_v = S (the batched family's V has 3 columns, and L = S = 3 happens). A twin
    must behave like the student's function on every case of the problem, so the cases where
    d_v ≠ S tell them apart: √d_v is named."""
    right = "sdpa_scale_by_sqrt_d_v"
    function = TWINS[right].function
    met = named = 0
    for seed in SEEDS:
        variant = make_variant(templates["implement_masked_attention"], seed)
        verdicts = problem_verdicts(variant.record(), {}, _implement_student(variant, function), {})
        met += _never_wrongly_named(verdicts, "sdpa_scale_by_sqrt_seq_len", right)
        met += _redrawn(variant, "sdpa_scale_by_sqrt_seq_len", "sdpa_scale_by_sqrt_d_v")
        named += _named_right(verdicts, right)
    assert named == len(SEEDS)


def test_c_a_mask_shifted_by_one_is_not_called_no_mask(templates):
    """implement_causal_attention: np.tril(…, k=1) on saturated rows (the large_logits
    family) gives the unmasked output wherever every row peaks on the past or the next key.
    The other families tell them apart (a twin must explain every case), so it is named."""
    right = "causal_attention_mask_shifted_by_one"
    function = TWINS[right].function
    named = 0
    for seed in range(12):
        variant = make_variant(templates["implement_causal_attention"], seed)
        verdicts = problem_verdicts(variant.record(), {}, _implement_student(variant, function), {})
        _never_wrongly_named(verdicts, "causal_attention_unmasked", right)
        named += _named_right(verdicts, right)
    assert named == 12


def test_d_sqrt_L_is_not_called_divided_by_d_k(templates):
    """sdpa_four_tokens: four tokens, so √L = 2, and d_k = 2 is one of its choices: dividing
    by √L is then dividing by d_k."""
    twin = TWINS["sdpa_scale_by_sqrt_seq_len"]
    met = 0
    for seed in range(12):
        variant = make_variant(templates["sdpa_four_tokens"], seed)
        values = dict(variant.values)
        with np.errstate(all="ignore"):
            steps = twin.function(values["Q"], values["K"], values["V"], return_steps=True)
        student = {"raw_scores": steps.raw_scores, "scaled_scores": steps.scaled_scores,
                   "weights": steps.weights, "output": steps.output}
        record = variant.record()
        record["answer_names"] = {g["id"]: g["id"] for g in record["grading"]}
        verdicts = problem_verdicts(record, student, {}, {})
        met += _never_wrongly_named(verdicts, "sdpa_divide_by_d_k", twin.name)
        met += _redrawn(variant, "sdpa_divide_by_d_k", "sdpa_scale_by_sqrt_seq_len")
    assert met, "the trap never occurred on these seeds: the test would prove nothing"
