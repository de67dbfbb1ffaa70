"""Hidden inputs stay hidden (grader.verdicts.hidden): a message or an answer that echoes a student's
hidden test inputs is masked before it is recorded; ordinary messages are left alone."""

import numpy as np
import pytest

from formats.serialize import encode_names
from grader.verdicts.parts import code
from grader.run.graded import grade_values
from grader.verdicts.hidden import HiddenInputs, may_hold_numbers

RNG = np.random.default_rng(7)
Q, K = RNG.normal(size=(2, 4, 8)), RNG.normal(size=(2, 3, 8))
ENTRY = {"problems": {"implement": {"kind": "implement", "function": "f", "rtol": 1e-5, "atol": 1e-8,
                                    "grading": [], "tests": [
    {"args": encode_names({"Q": Q, "K": K, "lengths": np.array([3, 2])})}]}}}


@pytest.fixture(scope="module")
def hidden():
    return HiddenInputs(ENTRY)


@pytest.mark.parametrize("echo", [
    repr(Q[0, 0]), str(Q[1]), " ".join(f"{x:.3f}" for x in Q[0, 1, :4]),
    ", ".join(f"{-x:.5e}" for x in K[0, 0, :3]), str(list(np.round(K[1, 2], 4))),
])
def test_an_echo_of_the_hidden_inputs_is_masked(hidden, echo):
    text = f"ValueError: bad input {echo}"
    assert hidden.holds(text) and may_hold_numbers(text)
    masked = hidden.mask(text)
    assert masked.endswith("(numbers of the hidden test inputs are not shown)")
    for x in np.abs(np.concatenate([Q.ravel(), K.ravel()])):
        assert f"{x:.3f}" not in masked


@pytest.mark.parametrize("text", [
    "operands could not be broadcast together with shapes (2,4,8) (2,3,8)",
    "ValueError: lengths 3 2 out of range 100 200 300",      # whole numbers are no secret
    f"one echo {Q[0, 0, 0]:.4f} and two of mine: 0.12345 1.98765",   # fewer than three: chance
    "",
])
def test_ordinary_messages_are_left_alone(hidden, text):
    assert hidden.mask(text) == text


def test_an_answer_array_of_hidden_inputs_is_not_kept():
    verdicts = grade_values({"problems": {**ENTRY["problems"], "p": {
        "kind": "numeric", "answer_names": {"w": "w", "t": "t"}, "answers": encode_names({"w": np.eye(4), "t": "x"}),
        "grading": [{"id": "w", "points": 1.0, "rtol": 1e-5, "atol": 1e-8},
                    {"id": "t", "points": 1.0, "rtol": 0, "atol": 0}]}}},
                            {"p": {"w": Q[0], "t": str(Q[1])}}, {}, {}, {})
    assert verdicts.answers[("p", "w")] == {"omitted": "the answer holds values of the hidden test inputs: not kept"}
    assert verdicts.answers[("p", "t")] == {"omitted": "the answer holds numbers of the hidden test inputs: not kept"}


def test_many_long_numbers_cost_linear_time(hidden):
    text = "9" * 1_000_000 + " 1.2345" * 100_000          # no int() of a million digits, no backtracking
    assert hidden.mask(text) == text


@pytest.mark.parametrize("text, span", [
    ("plain", "`plain`"), ("has `one` tick", "``has `one` tick``"), ("`edge`", "`` `edge` ``"),
    ("**bold** [link](x) $x^2$", "`**bold** [link](x) $x^2$`"), ("", ""),
])
def test_student_text_becomes_a_code_span(text, span):
    assert code(text) == span


def test_a_part_that_passed_keeps_its_answer_whatever_numbers_it_holds():
    """A right answer is not an echo (and a correct submission never gathers the inputs):
    here the expected value happens to be hidden inputs themselves, and it is kept."""
    record = {"kind": "numeric", "answer_names": {"w": "w"}, "answers": encode_names({"w": Q[0]}),
              "grading": [{"id": "w", "points": 1.0, "rtol": 1e-5, "atol": 1e-8}]}
    graded = grade_values({"problems": {**ENTRY["problems"], "p": record}}, {"p": {"w": Q[0]}}, {}, {}, {})
    assert graded.verdicts[("p", "w")].passed
    assert graded.answers[("p", "w")]["shape"] == [4, 8]
