"""The trusted side's judgement of a part: scores, precise messages, and the diagnosis of
misconceptions on real variants of the bank (each twin's own wrong value, as stored in the
key, must be named as that twin)."""

import numpy as np
import pytest

from exercises.course.bank import load_bank

from exercises.variant.draw import make_variant

from exercises.variant.seeds import variant_seed
from formats.compare import compare
from formats.serialize import decode_names, from_jsonable, same_value
from grader.verdicts.parts import (FAILED, MANUAL, MISSING, PARTIAL, PASSED, CaseOutcome, Missing,
                                   MAX_ALTERNATIVES, choice_part, diagnoses, implement_family, numeric_part,
                                   problem_verdicts)
from solutions import TWINS
from solutions.same_error import same_error

SECRET = b"a test course secret of 32 bytes"


@pytest.fixture(scope="module")
def records():
    """template id → its key record for one student (answer names = part ids)."""
    templates, _ = load_bank()
    out = {}
    for tid, t in sorted(templates.items()):
        record = make_variant(t, variant_seed(SECRET, "hw", "s1", tid)).record()
        record["answer_names"] = {p.id: p.id for p in t.parts if t.kind in ("numeric", "choice")}
        out[tid] = record
    return out


GRADING = {"id": "w", "points": 2.0, "rtol": 1e-5, "atol": 1e-3, "misconceptions": []}
EXPECTED = np.array([[0.7, 0.3], [0.25, 0.75]])


def test_a_right_answer_earns_the_points_within_tolerance():
    v = numeric_part(GRADING, EXPECTED, EXPECTED + 0.0009, {}, "w")
    assert (v.score, v.status, v.message) == (2.0, PASSED, "")


@pytest.mark.parametrize("value, message", [
    (Missing(), "`w` is not defined: your answer cell did not assign it."),
    (Missing("the cell raised NameError on line 2: name 'Q' is not defined"),
     "`w` is not defined: your answer cell did not assign it (the cell raised NameError on line "
     "2: name 'Q' is not defined)."),
    (np.ones(4), "`w`: wrong shape: expected (2, 2), got (4,)."),
    (np.array([[np.nan, 0.3], [0.25, 0.75]]), "`w`: 1 entries are NaN. Look for a division by zero, the "
     "log of 0, or an exp that overflowed (subtract each row's largest entry before exp)."),
    ("0.7", "`w`: expected a number or an array, got str."),
    (EXPECTED + 0.01, "`w`: 4 of 4 entries outside tolerance (allowed 0.001 + 1e-05·|expected|)."),
    (EXPECTED.T, "`w`: 2 of 4 entries outside tolerance (allowed 0.001 + 1e-05·|expected|). "
                 "Its transpose is right: rows and columns are swapped."),
])
def test_a_wrong_answer_is_told_exactly_what_is_wrong(value, message):
    v = numeric_part(GRADING, EXPECTED, value, {}, "w")
    assert v.score == 0 and v.message == message
    assert v.status == (MISSING if isinstance(value, Missing) else FAILED)


def test_the_size_of_the_error_never_gives_the_expected_number_away():
    v = numeric_part({**GRADING, "points": 1.0}, 16.0, 1.0, {}, "std")
    assert v.message == "`std`: outside tolerance (allowed 0.001 + 1e-05·|expected|)."
    assert "15" not in v.message and "16" not in v.message


def test_an_object_that_cannot_cross_the_boundary_is_named():
    from grader.sandbox.frames import Unsupported
    v = numeric_part(GRADING, EXPECTED, Unsupported("function"), {}, "w")
    assert v.message == "`w` is a function; expected an array of shape (2, 2)."


def test_a_value_matching_a_twin_names_the_mistake():
    twins = {"sdpa_no_scale": EXPECTED * 0 + 0.5}
    v = numeric_part({**GRADING, "misconceptions": ["sdpa_no_scale"]}, EXPECTED,
                     np.full((2, 2), 0.5), twins, "w")
    m = TWINS["sdpa_no_scale"]
    assert v.misconception == "sdpa_no_scale" and v.score == 0
    assert m.summary in v.message and m.explanation in v.message


def test_every_numeric_twin_of_the_bank_is_diagnosed_on_its_own_wrong_value(records):
    diagnosed = set()
    for tid, record in records.items():
        if record["kind"] != "numeric":
            continue
        answers = decode_names(record["answers"])
        for name, by_part in record["twins"].items():
            wrong = from_jsonable(by_part)
            for part, value in wrong.items():
                values = {**answers, part: value}
                verdict = problem_verdicts(record, values, {}, {})[part]
                assert verdict.status == FAILED, (tid, name, part)
                if verdict.misconception is None:
                    # ambiguous on this variant: offered as one of (at most two) alternatives,
                    # or — where more mistakes give this value — none is asserted
                    if "either" in verdict.message:
                        assert TWINS[name].summary in verdict.message, (tid, name, part)
                    else:
                        assert "known mistake" not in verdict.message, (tid, name, part)
                    continue
                # The named twin gives this same wrong value (two twins may coincide on a part).
                named = from_jsonable(record["twins"][verdict.misconception])[part]
                assert same_value(named, value) or compare(named, value, 1e-9, 1e-9).ok
                diagnosed.add(verdict.misconception)
    assert len(diagnosed) >= 10, sorted(diagnosed)


def test_every_implement_twin_of_the_bank_is_diagnosed_from_its_outputs(records):
    diagnosed = set()
    for tid, record in records.items():
        if record["kind"] != "implement":
            continue
        for name, outputs in record["twins"].items():
            outcomes = {i: (CaseOutcome(True, from_jsonable(out)) if out is not None
                            else CaseOutcome(False, error="ValueError: boom"))
                        for i, out in enumerate(outputs)}
            verdicts = problem_verdicts(record, {}, outcomes, {})
            failed = [v for v in verdicts.values() if v.status != PASSED]
            assert failed, (tid, name)
            if all(out is not None for out in outputs):
                for v in failed:
                    if v.misconception is None:    # ambiguous on this variant: an alternative
                        assert "either" in v.message and TWINS[name].summary in v.message
                    else:                          # by its own code or its error's other one
                        assert same_error(v.misconception, name), (tid, name, failed)
                        diagnosed.add(name)
    assert len(diagnosed) >= 5


def test_the_reference_answers_pass_every_part(records):
    for tid, record in records.items():
        if record["kind"] == "implement":
            outcomes = {i: CaseOutcome(True, from_jsonable(t["expected"]))
                        for i, t in enumerate(record["tests"])}
            verdicts = problem_verdicts(record, {}, outcomes, {})
        elif record["kind"] == "choice":
            letters = {p: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i] for p, i in decode_names(record["answers"]).items()}
            verdicts = problem_verdicts(record, letters, {}, {})
        elif record["kind"] == "numeric":
            verdicts = problem_verdicts(record, decode_names(record["answers"]), {}, {})
        else:
            verdicts = problem_verdicts(record, {}, {}, {g["id"]: "my answer" for g in record["grading"]})
            assert {v.status for v in verdicts.values()} == {MANUAL}
            continue
        assert all(v.status == PASSED for v in verdicts.values()), (tid, verdicts)
        assert sum(v.score for v in verdicts.values()) == pytest.approx(
            sum(g["points"] for g in record["grading"]))


OPTIONS = [{"text": "15%", "feedback": ""}, {"text": "80%", "feedback": "That is the [MASK] share."},
           {"text": "10%", "feedback": ""}]
CHOICE = {"id": "c", "points": 1.0}


@pytest.mark.parametrize("value, status, message", [
    ("A", PASSED, ""),
    (" a ", PASSED, ""),
    ("B", FAILED, "B is not right. That is the [MASK] share."),
    ("D", FAILED, "`c` should be one of the letters A, B, C (as text, e.g. \"A\"); it is text 'D'."),
    (np.array(0), FAILED, "`c` should be one of the letters A, B, C (as text, e.g. \"A\"); it is a number."),
    (Missing(), MISSING, "`c` is not defined: your answer cell did not assign it."),
    # hedges: matched as substrings of "ABC" they were accepted and read as their first letter
    ("ABC", FAILED, "`c` should be one of the letters A, B, C (as text, e.g. \"A\"); it is text 'ABC'."),
    ("AB", FAILED, "`c` should be one of the letters A, B, C (as text, e.g. \"A\"); it is text 'AB'."),
    ("", FAILED, "`c` should be one of the letters A, B, C (as text, e.g. \"A\"); it is text ''."),
])
def test_choices(value, status, message):
    v = choice_part(CHOICE, OPTIONS, 0, value, "c")
    assert (v.status, v.message) == (status, message)


def _array(rows):
    return {"array": rows, "dtype": "float64", "shape": [len(rows), len(rows[0])]}


def test_implement_families_earn_points_per_case():
    family = {"family": "basic", "points": 2.0, "cases": 2}
    cases = [{"family": "basic", "index": 0, "position": 3, "expected": _array([[1.0, 2.0]])},
             {"family": "basic", "index": 1, "position": 4, "expected": _array([[3.0, 4.0]])}]
    half = {3: CaseOutcome(True, np.array([[1.0, 2.0]])), 4: CaseOutcome(False, error="TypeError: nope")}
    v = implement_family(family, cases, half, "f", 1e-6, 1e-9, {}, ())
    assert (v.score, v.status) == (1.0, PARTIAL)
    assert v.message == "`f` fails 1 of 2 hidden `basic` cases: case 2: raised `TypeError: nope`."
    none = implement_family(family, cases, {}, "f", 1e-6, 1e-9, {}, ())
    assert (none.score, none.status) == (0.0, FAILED)
    assert "case 1: was never run (an earlier crash)" in none.message
    tuple_out = {3: CaseOutcome(True, [np.array([[1.0, 2.0]]), np.zeros(2)]),
                 4: CaseOutcome(True, np.array([[3.0, 4.0]]))}
    assert "case 1: returned 2 values, expected 1" in implement_family(
        family, cases, tuple_out, "f", 1e-6, 1e-9, {}, ()).message


def test_a_grader_bug_on_one_problem_costs_only_that_problem(records):
    from grader.run.graded import grade_values
    good = records["why_sqrt_dk"]
    broken = {**records["dog_ran_fast"], "answers": {}}       # a key entry the checks cannot read
    graded = grade_values({"problems": {"scaling": good, "walk": broken}},
                          {"scaling": decode_names(good["answers"])}, {}, {}, {})
    statuses = {k: v.status for k, v in graded.verdicts.items()}
    assert {s for (pid, _), s in statuses.items() if pid == "scaling"} == {PASSED}
    errors = [v for (pid, _), v in graded.verdicts.items() if pid == "walk"]
    assert errors and all(v.status == "error" and v.message.startswith("internal grader error: KeyError")
                          for v in errors)


def test_a_huge_boolean_answer_is_refused_by_its_shape_before_any_copy():
    """Boolean answers were converted to float64 before their shape was checked against each
    twin's: four 30-million-entry answers from two students took the grader from 69 MB to
    850 MB. The comparison and the diagnosis must not copy the student's array at all."""
    import tracemalloc

    huge = np.zeros(30_000_000, dtype=bool)
    grading = {**GRADING, "misconceptions": ["sdpa_no_scale", "sdpa_softmax_over_queries"]}
    twins = {"sdpa_no_scale": EXPECTED + 1, "sdpa_softmax_over_queries": EXPECTED * 2}
    tracemalloc.start()
    try:
        verdict = numeric_part(grading, EXPECTED, huge, twins, "w")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert verdict.status == FAILED and verdict.message == "`w`: wrong shape: expected (2, 2), got (30000000,)."
    assert peak < 1_000_000, peak           # a float64 copy would be 240 MB


@pytest.mark.parametrize("value, words", [
    (np.zeros((3, 3)), "It is all zeros: did the cell compute the value"),
    (np.full((3, 3), 0.25), "It has all the entries of each row equal: the answer's rows are not like that"),
    (np.eye(3), "It has, in every row, a single entry that is not zero"),
    (np.full((3, 3), np.nan), "are NaN. Look for a division by zero"),
])
def test_a_degenerate_answer_no_twin_explains_gets_a_plain_hint(value, words):
    expected = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
    grading = {"id": "w", "points": 1, "rtol": 0.0, "atol": 0.005}
    v = numeric_part(grading, expected, value, {}, "weights")
    assert v.status == FAILED and words in v.message, v.message


def test_an_ordinary_wrong_answer_gets_no_degenerate_hint():
    expected = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.3, 0.1]])
    grading = {"id": "w", "points": 1, "rtol": 0.0, "atol": 0.005}
    v = numeric_part(grading, expected, expected[::-1].copy(), {}, "weights")
    assert v.status == FAILED and " It " not in v.message.split(".", 1)[1]


def test_two_codes_of_one_error_are_one_name():
    # no causal mask at all: the mask built all True, or the mask never applied
    twins = {"sdpa_mask_ignored": np.full((2, 2), 0.5), "causal_mask_all_visible": np.full((2, 2), 0.5)}
    names = ["sdpa_mask_ignored"]
    v = numeric_part({**GRADING, "misconceptions": names}, EXPECTED, np.full((2, 2), 0.5),
                     lambda: ({"sdpa_mask_ignored": twins["sdpa_mask_ignored"]},
                              {"causal_mask_all_visible": twins["causal_mask_all_visible"]}), "w")
    assert v.misconception == "sdpa_mask_ignored" and "either" not in v.message


def test_two_different_mistakes_are_offered_and_more_name_none():
    value = np.full((2, 2), 0.5)
    two = {"sdpa_no_scale": value, "sdpa_divide_by_d_k": value}
    assert diagnoses(value, two, list(two), 1e-5, 1e-3) == ["sdpa_no_scale", "sdpa_divide_by_d_k"]
    many = {**two, "sdpa_multiply_by_sqrt_d_k": value}
    assert len(many) > MAX_ALTERNATIVES
    assert diagnoses(value, many, list(many), 1e-5, 1e-3) == []
    v = numeric_part({**GRADING, "misconceptions": list(many)}, EXPECTED, value, many, "w")
    assert v.misconception is None and "either" not in v.message and "known mistake" not in v.message
    assert "3 different mistakes give this value" in v.message       # and no guess is recorded
    assert TWINS["sdpa_no_scale"].summary in v.message


def _family(n):
    family = {"family": "basic", "points": 1.0, "cases": n}
    cases = [{"family": "basic", "index": i, "position": i, "expected": _array([[1.0, 0.0]])}
             for i in range(n)]
    return family, cases


def test_an_implement_twin_must_explain_every_case_not_one_saturated_one():
    family, cases = _family(1)
    wrong = np.array([[0.9, 0.1]])
    outcomes = {0: CaseOutcome(True, wrong), 1: CaseOutcome(True, np.array([[0.5, 0.5]]))}
    # the twin gives the student's value on the failed case, but not on the other one
    twins = {"sdpa_no_scale": [_array(wrong), _array(np.array([[0.2, 0.8]]))]}
    v = implement_family(family, cases, outcomes, "f", 1e-6, 1e-9, twins, ["sdpa_no_scale"])
    assert v.misconception is None
    twins = {"sdpa_no_scale": [_array(wrong), _array(np.array([[0.5, 0.5]]))]}
    v = implement_family(family, cases, outcomes, "f", 1e-6, 1e-9, twins, ["sdpa_no_scale"])
    assert v.misconception == "sdpa_no_scale"


def test_a_twin_that_raises_is_matched_by_code_that_raises_there_and_nan_by_a_blocked_row():
    family, cases = _family(2)
    outcomes = {0: CaseOutcome(True, np.array([[1.0, 0.0]])), 1: CaseOutcome(False, error="ValueError: shapes")}
    twins = {"causal_attention_square_mask": [_array(np.array([[1.0, 0.0]])), None]}
    v = implement_family(family, cases, outcomes, "f", 1e-6, 1e-9, twins, list(twins))
    assert v.misconception == "causal_attention_square_mask"
    returns = {**outcomes, 1: CaseOutcome(True, np.array([[0.3, 0.7]]))}
    assert implement_family(family, cases, returns, "f", 1e-6, 1e-9, twins, list(twins)).misconception is None
    # a row with nothing to attend to: NaN in plain NumPy where the twin (as the reference) gives 0
    nan = {0: CaseOutcome(True, np.array([[np.nan, np.nan]])), 1: CaseOutcome(True, np.array([[0.3, 0.7]]))}
    zero = {"causal_attention_bottom_right": [_array(np.array([[0.0, 0.0]])), _array(np.array([[0.3, 0.7]]))]}
    assert implement_family(family, cases, nan, "f", 1e-6, 1e-9, zero, list(zero)).misconception == \
        "causal_attention_bottom_right"


def test_a_mistake_is_explained_once_and_later_families_point_to_it(records):
    record = next(r for r in records.values() if r["kind"] == "implement"
                  and "causal_attention_triu" in r.get("twins", {}))
    outputs = record["twins"]["causal_attention_triu"]
    outcomes = {i: (CaseOutcome(True, from_jsonable(out)) if out is not None else CaseOutcome(False, error="ValueError: x"))
                for i, out in enumerate(outputs)}
    named = [(f, v) for f, v in problem_verdicts(record, {}, outcomes, {}).items()
             if v.misconception == "causal_attention_triu"]
    assert len(named) >= 2
    m = TWINS["causal_attention_triu"]
    assert m.explanation in named[0][1].message
    for _, v in named[1:]:
        assert m.explanation not in v.message and f"(explained under `{named[0][0]}`)" in v.message
