"""Variants: reproducible bit for bit, checked before anyone sees them ("check the checkers"),
and the pieces they are built from: the exact JSON answer key, compare() and rendering."""

import json
import math
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import solutions
from exercises.schema import TemplateError, load_template, parse_template
from exercises.variant import VariantError, make_variant
from formats.compare import compare
from formats import serialize
from exercises.expressions import Scope
from exercises.render import RenderError, format_number, latex_to_text, render
from exercises.yaml_lines import load_yaml

REPO = Path(__file__).resolve().parents[2]
BANK = REPO / "problem_bank"
BANK_TEMPLATES = ("sdpa_four_tokens", "implement_masked_attention", "alignment_learnable")


def inline(source: str):
    return parse_template(load_yaml(textwrap.dedent(source)), "inline.yaml")


def bank(name: str):
    return load_template(BANK / f"{name}.yaml", display=f"problem_bank/{name}.yaml")


def record_json(variant) -> str:
    return serialize.canonical_json(variant.record())


# --- reproducibility ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", BANK_TEMPLATES)
def test_same_seed_gives_the_identical_record_and_digest(name):
    template = bank(name)
    a, b = make_variant(template, 11), make_variant(template, 11)
    assert record_json(a) == record_json(b)
    assert a.digest == b.digest
    assert a.record()["digest"] == serialize.digest({k: v for k, v in a.record().items()
                                                     if k != "digest"})
    assert a.prompt() == b.prompt() and a.solution() == b.solution()


def test_the_digest_is_the_same_in_another_process():
    """No dependence on hash randomisation, import order or process state."""
    template = bank("sdpa_four_tokens")
    here = {seed: make_variant(template, seed).digest for seed in (0, 7)}
    code = ("import json\nfrom exercises.schema import load_template\n"
            "from exercises.variant import make_variant\n"
            "t = load_template('problem_bank/sdpa_four_tokens.yaml', "
            "display='problem_bank/sdpa_four_tokens.yaml')\n"
            "print(json.dumps({s: make_variant(t, s).digest for s in (0, 7)}))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert {int(k): v for k, v in json.loads(out).items()} == here


def test_different_seeds_give_different_givens():
    template = bank("sdpa_four_tokens")
    givens = {serialize.canonical_json(serialize.to_jsonable(make_variant(template, s).givens))
              for s in range(8)}
    assert len(givens) == 8


def test_the_record_holds_givens_answers_and_seed():
    template = bank("sdpa_four_tokens")
    v = make_variant(template, 3)
    record = v.record()
    assert record["template"] == "sdpa_four_tokens" and record["seed"] == "3"
    assert set(record["givens"]) == set(template.givens)
    assert set(record["answers"]) == {p.id for p in template.parts}
    for part_id, answer in v.answers.items():
        assert serialize.same_value(serialize.from_jsonable(record["answers"][part_id]), answer)


# --- the JSON answer key round-trips exactly ----------------------------------------------------

def _roundtrip(value):
    text = serialize.canonical_json(serialize.to_jsonable(value))
    return serialize.from_jsonable(json.loads(text))


@pytest.mark.parametrize("value", [
    np.array([[1.5, -np.inf], [np.nan, 0.1 + 0.2]]),
    np.array([np.inf, -np.inf, np.nan]),
    np.array([[True, False], [False, True]]),
    np.array([[1, -2], [3, 2 ** 40]], dtype=np.int64),
    np.array(-0.0),
    np.array(np.pi),
    np.zeros((2, 0, 3)),
    np.random.default_rng(0).normal(size=(4, 5)) * 1e-7,
])
def test_arrays_round_trip_bit_for_bit(value):
    back = _roundtrip(value)
    assert back.shape == value.shape and back.dtype == value.dtype
    if value.dtype == np.float64:  # bit for bit, NaN and the sign of zero included
        assert np.array_equal(back.view(np.uint64), value.view(np.uint64))
    else:
        assert np.array_equal(back, value)
    assert serialize.same_value(back, value)


@pytest.mark.parametrize("value", [
    1.0, 0.1, -2.5e-300, 3, True, False, "−inf as text", "inf", ["the", "dog"], [1, 2.5],
    [np.array([1, 2]), "x", [np.array([True])]],
])
def test_plain_values_round_trip(value):
    assert serialize.same_value(_roundtrip(value), value)


def test_mappings_round_trip():
    back = _roundtrip({"W_Q": np.eye(2), "n": 3})
    assert set(back) == {"W_Q", "n"} and back["n"] == 3
    assert serialize.same_value(back["W_Q"], np.eye(2))


@pytest.mark.parametrize("value", [-math.inf, math.inf, math.nan, [0.5, -math.inf]])
def test_non_finite_python_floats_round_trip(value):
    """−inf is a legal answer (a masked score); it must come back as a float, not as text."""
    back = _roundtrip(value)
    assert serialize.same_value(back, value), f"{value!r} came back as {back!r}"


def test_a_minus_inf_scalar_answer_is_accepted():
    """The README allows −inf in answers; the JSON round-trip check must not reject it."""
    template = inline("""
        id: masked_score
        title: A blocked score
        objective: multihead_masking
        kind: numeric
        parameters:
          s: {dist: integers, low: 1, high: 3}
        prompt: What does a blocked score of {{ s }} become before the softmax?
        parts:
          - {id: blocked, answer: -inf if s > 0 else 0.0, points: 1}
    """)
    v = make_variant(template, 0)
    assert v.answers["blocked"] == -math.inf
    assert serialize.from_jsonable(v.record()["answers"]["blocked"]) == -math.inf


def test_same_value_is_strict_about_dtype_and_shape():
    assert not serialize.same_value(np.array([1, 2]), np.array([1.0, 2.0]))
    assert not serialize.same_value(np.zeros((2, 1)), np.zeros(2))
    assert serialize.same_value(np.array([np.nan]), np.array([np.nan]))
    assert not serialize.same_value(1, 1.0)
    assert serialize.same_value(math.nan, math.nan)


def test_unstorable_values_are_refused():
    with pytest.raises(serialize.NotSerializable, match="dtype complex128"):
        serialize.to_jsonable(np.array([1j]))
    with pytest.raises(serialize.NotSerializable, match="a object cannot be stored"):
        serialize.to_jsonable(object())


def test_a_given_that_the_answer_key_cannot_store_is_a_template_error():
    """Validation must catch what record() would choke on later (building the answer key)."""
    template = inline("""
        id: steps_as_given
        title: The whole steps object shown as a given
        objective: self_attention
        kind: numeric
        parameters:
          Q: {dist: int_matrix, shape: [2, 2]}
        derived:
          steps: scaled_dot_product_attention(Q, Q, Q, return_steps=True)
        givens: [Q, steps]
        prompt: Compute the weights.
        parts:
          - {id: weights, answer: steps.weights, points: 1}
    """)
    with pytest.raises(TemplateError, match="inline.yaml"):
        make_variant(template, 0)


# --- misconception twins must be caught ----------------------------------------------------------

TWIN_NEEDS_A_MASK = """
    id: twin_needs_mask
    title: Masked weights
    objective: multihead_masking
    kind: numeric
    parameters:
      L: {dist: choice, values: [3, 4]}
      use_mask: {dist: choice, values: [true, false]}
      Q: {dist: int_matrix, shape: [L, 2], low: -2, high: 2}
    derived:
      mask: causal_mask(L) if use_mask else None
      steps: scaled_dot_product_attention(Q, Q, Q, mask=mask, return_steps=True)
    givens: [Q]
    prompt: Compute the attention weights of $Q$ with itself{{ " under a causal mask" if use_mask }}.
    parts:
      - id: weights
        answer: steps.weights
        points: 1
        atol: 0.001
        misconceptions: [sdpa_mask_with_zero]
"""


def test_a_twin_that_coincides_without_a_mask_forces_a_redraw():
    template = inline(TWIN_NEEDS_A_MASK)
    twin = solutions.MISCONCEPTIONS["sdpa_mask_with_zero"].function
    rejected = Counter()
    for seed in range(12):
        v = make_variant(template, seed)
        assert v.values["use_mask"] is True  # without a mask the twin is the reference
        Q, mask = v.values["Q"], v.values["mask"]
        wrong = twin(Q, Q, Q, mask=mask, return_steps=True).weights
        assert not compare(wrong, v.answers["weights"], rtol=1e-5, atol=0.001).ok
        rejected += v.rejections
    assert rejected["misconception sdpa_mask_with_zero is within twice the tolerance of the answer to part weights"] > 0


FULLY_MASKED = """
    id: random_mask
    title: A random mask
    objective: multihead_masking
    kind: numeric
    parameters:
      Q: {dist: int_matrix, shape: [3, 2], low: -2, high: 2}
      keep: {dist: integers, low: 0, high: 1, shape: [3, 3]}
    derived:
      mask: as_bool(keep)
      steps: scaled_dot_product_attention(Q, Q, Q, mask=mask, return_steps=True)
    prompt: Compute the masked attention weights.
    parts:
      - {id: weights, answer: steps.weights, points: 1, atol: 0.001}
"""


def test_fully_masked_rows_cause_redraws():
    template = inline(FULLY_MASKED)
    rejected = Counter()
    for seed in range(12):
        v = make_variant(template, seed)
        assert v.values["mask"].any(axis=-1).all()
        rejected += v.rejections
    assert rejected["a fully masked row in the mask of scaled_dot_product_attention()"] > 0


def test_fully_masked_rows_are_kept_when_allowed():
    template = inline(FULLY_MASKED + "    sampling: {allow_fully_masked_rows: true}\n")
    variants = [make_variant(template, seed) for seed in range(12)]
    assert any(not v.values["mask"].any(axis=-1).all() for v in variants)
    assert all(not v.rejections for v in variants)


def test_near_ties_in_argmax_cause_redraws():
    template = inline("""
        id: which_token
        title: Which token wins?
        objective: self_attention
        kind: numeric
        parameters:
          x: {dist: integers, low: 0, high: 2, shape: [4]}
        derived:
          best: argmax(x)
        prompt: Which position has the largest score in {{ x | flat }}?
        parts:
          - {id: which, answer: best, points: 1}
    """)
    rejected = Counter()
    for seed in range(12):
        v = make_variant(template, seed)
        x = v.values["x"]
        top, second = np.sort(x)[-1], np.sort(x)[-2]
        assert top - second >= 1
        assert v.answers["which"] == int(np.argmax(x))
        rejected += v.rejections
    assert rejected["near-tie in argmax(): the two best values are closer than 0.01"] > 0


def test_constraints_hold_in_every_variant():
    template = bank("sdpa_four_tokens")
    for seed in range(6):
        v = make_variant(template, seed)
        assert np.max(np.abs(v.values["steps"].raw_scores)) <= 6


def test_a_reference_function_raising_is_a_template_error_with_file_and_line():
    """K's width does not match Q's: a template bug, reported with file:line, not a crash."""
    template = inline("""
        id: shapes_disagree
        title: Mismatched shapes
        objective: self_attention
        kind: implement
        function: {name: attention, signature: "(Q, K, V)"}
        reference: scaled_dot_product_attention
        prompt: Write attention(Q, K, V).
        tests:
          - family: basic
            points: 1
            parameters:
              Q: {dist: normal, shape: [3, 2]}
              K: {dist: normal, shape: [3, 5]}
            args: {Q: Q, K: K, V: K}
        solution: |
          ```python
          def attention(Q, K, V):
              return Q
          ```
    """)
    with pytest.raises(TemplateError) as caught:
        make_variant(template, 0)
    assert str(caught.value).startswith("inline.yaml:")
    assert "tests[0]" in str(caught.value)


# --- implement problems ----------------------------------------------------------------------------

IMPLEMENT = """
    id: implement_softmax
    title: Implement a stable softmax
    objective: scaling
    kind: implement
    function: {name: stable_softmax, signature: "(x, axis=-1)"}
    reference: softmax
    misconceptions: [softmax_no_max_subtraction, softmax_axis_1]
    prompt: Write `stable_softmax(x, axis=-1)`.
    tests:
      - family: rows
        points: 1
        cases: 3
        parameters:
          n: {dist: integers, low: 2, high: 4}
          x: {dist: normal, shape: [n, 3]}
        args: {x: x}
      - family: batched
        points: 1
        cases: 1
        parameters:
          x: {dist: normal, shape: [2, 3, 4]}
        args: {x: x}
      - family: large
        points: 2
        cases: 2
        parameters:
          x: {dist: normal, shape: [3, 4], std: 400}
        args: {x: x}
    solution: |
      ```python
      def stable_softmax(x, axis=-1):
          e = np.exp(x - x.max(axis=axis, keepdims=True))
          return e / e.sum(axis=axis, keepdims=True)
      ```
"""


def _check_hidden_tests(template, variant):
    assert Counter(c.family for c in variant.tests) == {f.family: f.cases for f in template.tests}
    for family in template.tests:
        indexes = [c.index for c in variant.tests if c.family == family.family]
        assert indexes == list(range(family.cases))
    reference = solutions.__dict__[template.reference]
    for case in variant.tests:
        result = reference(**case.args)
        got = result if template.output is None else template.output.evaluate(
            Scope(values={"result": result}))
        assert compare(got, case.expected, template.rtol, template.atol).ok
    for name in template.misconceptions:
        twin = solutions.MISCONCEPTIONS[name].function

        def fails(case):
            try:
                with np.errstate(all="ignore"):
                    wrong = twin(**case.args)
            except Exception:  # noqa: BLE001 — raising is failing
                return True
            return not compare(wrong, case.expected, template.rtol, template.atol).ok
        assert any(fails(case) for case in variant.tests), name


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_inline_implement_hidden_tests(seed):
    template = inline(IMPLEMENT)
    v = make_variant(template, seed)
    _check_hidden_tests(template, v)
    assert [c.family for c in v.tests] == ["rows"] * 3 + ["batched"] + ["large"] * 2
    assert len({c.args["x"].tobytes() for c in v.tests}) == 6  # each case sampled afresh
    record = v.record()
    assert len(record["tests"]) == 6
    assert serialize.same_value(serialize.from_jsonable(record["tests"][5]["args"]["x"]),
                                v.tests[5].args["x"])


@pytest.mark.parametrize("seed", [0, 5])
def test_bank_implement_hidden_tests(seed):
    template = bank("implement_masked_attention")
    _check_hidden_tests(template, make_variant(template, seed))


def test_a_twin_that_passes_every_hidden_case_forces_a_redraw():
    """On 2-D input softmax over axis 1 *is* the right softmax: without the batched family
    the twin passes every hidden case, so no variant can diagnose it."""
    source = IMPLEMENT.replace("[softmax_no_max_subtraction, softmax_axis_1]", "[softmax_axis_1]")
    source = source.replace("shape: [2, 3, 4]", "shape: [3, 4]") + "    sampling: {max_attempts: 5}\n"
    template = inline(source)
    with pytest.raises(VariantError) as caught:
        make_variant(template, 0)
    assert str(caught.value) == (
        "inline.yaml: implement_softmax: no valid variant in 5 draws for seed 0; most common "
        "rejections: misconception softmax_axis_1 passes every hidden test (5×)")


# --- choice problems -------------------------------------------------------------------------------

CHOICE = """
    id: why_scale
    title: Why scale?
    objective: scaling
    kind: choice
    prompt: Why is $QK^\\top$ divided by $\\sqrt{d_k}$?
    parts:
      - id: why
        points: 1
        options:
          - {text: "so that the weights sum to 1", feedback: "the softmax does that"}
          - {text: "to keep the variance of the scores near 1", correct: true}
          - {text: "to make attention causal", feedback: "that is the mask's job"}
          - {text: "to save memory", feedback: "no"}
"""
CORRECT = "to keep the variance of the scores near 1"


def test_choice_options_are_shuffled_per_seed_and_the_correct_one_tracked():
    template = inline(CHOICE)
    orders, positions = set(), set()
    for seed in range(16):
        v = make_variant(template, seed)
        shown = v.options["why"]
        texts = [o["text"] for o in shown]
        assert sorted(texts) == sorted(o.text for o in template.parts[0].options)
        assert shown[v.answers["why"]]["text"] == CORRECT
        for o in shown:  # feedback travels with its option
            original = next(p for p in template.parts[0].options if p.text == o["text"])
            assert o["feedback"] == original.feedback
        assert make_variant(template, seed).options == v.options  # reproducible
        orders.add(tuple(texts))
        positions.add(v.answers["why"])
    assert len(orders) > 4 and positions == {0, 1, 2, 3}


def test_choice_without_shuffle_keeps_the_written_order():
    template = inline(CHOICE.replace("        points: 1\n", "        points: 1\n        shuffle: false\n"))
    v = make_variant(template, 3)
    assert [o["text"] for o in v.options["why"]][1] == CORRECT
    assert v.answers["why"] == 1


def test_choice_options_from_an_expression():
    template = bank("alignment_learnable")
    for seed in range(6):
        v = make_variant(template, seed)
        for part in template.parts:
            texts = [o["text"] for o in v.options[part.id]]
            assert len(set(texts)) == len(texts)
            assert 0 <= v.answers[part.id] < len(texts)


# --- compare ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("actual, expected, reason", [
    (np.zeros((2, 3)), np.zeros((3, 2)), "wrong shape: expected (3, 2), got (2, 3)"),
    ([1.0, 2.0, 3.0], np.zeros(2), "wrong shape: expected (2,), got (3,)"),
    (np.array([1.0, np.nan]), np.array([1.0, 2.0]), "1 entries are NaN"),
    (np.array([np.inf, 1.0]), np.array([1.0, 1.0]), "1 entries are ±inf"),
    (np.array([-np.inf, 1.0]), np.array([0.0, 1.0]), "1 entries are ±inf"),
    ("abc", np.array([1.0]), "expected a number or an array, got str"),
    (None, 1.0, "expected a number or an array, got NoneType"),
    ({"a": 1}, 1.0, "expected a number or an array, got dict"),
    (3, "dog", "got 3, which is not the expected text"),  # never reveals the expected text
    (["dog"], ["the", "dog"], "expected a list of 2 items"),
    (["the", "cat"], ["the", "dog"], "item 1: got 'cat', which is not the expected text"),
    (np.array([2, 0]), np.array([True, False]), "expected True/False (or 1/0) entries"),
    (np.array([0, 0]), np.array([True, False]), "1 of 2 entries differ"),
    (np.array([1.0, 2.1]), np.array([1.0, 2.0]),
     "1 of 2 entries outside tolerance (largest error 0.1; allowed 0.01 + 0·|expected|)"),
    (2.1, 2.0, "outside tolerance (largest error 0.1; allowed 0.01 + 0·|expected|)"),
])
def test_compare_failure_messages(actual, expected, reason):
    result = compare(actual, expected, rtol=0, atol=0.01)
    assert not result.ok
    assert result.reason == reason


def test_compare_passes():
    assert compare(np.array([1.0, 2.0 + 0.005]), np.array([1.0, 2.0]), rtol=0, atol=0.01).ok
    assert compare([1, 0], np.array([True, False])).ok
    assert compare(np.array([-np.inf, 0.5]), np.array([-np.inf, 0.5])).ok  # masked scores
    assert compare(" dog ", "dog").ok
    assert compare(["the", 1.0], ["the", 1.0 + 1e-9]).ok
    assert compare([[1, 2], [3, 4]], np.array([[1.0, 2.0], [3.0, 4.0]])).ok
    # the boundary is inclusive: |a − e| ≤ atol + rtol·|e|
    assert compare(1.5, 1.0, rtol=0.25, atol=0.25).ok
    assert not compare(1.5 + 1e-9, 1.0, rtol=0.25, atol=0.25).ok


def test_compare_reports_the_largest_error():
    result = compare(np.array([1.0, 2.5, 3.1]), np.array([1.0, 2.0, 3.0]), rtol=0, atol=0.01)
    assert result.max_error == pytest.approx(0.5)
    assert compare(np.array([np.nan]), np.array([1.0])).max_error == math.inf


def test_compare_is_exact_for_integers():
    """compare's contract: 'exact equality for integers, booleans and text'. A parameter
    count off by 5 in a million is wrong, whatever rtol says."""
    assert not compare(1_000_005, 1_000_000).ok
    assert not compare(np.array([3, 1_000_005]), np.array([3, 1_000_000])).ok
    assert compare(np.array([3, 7]), np.array([3, 7])).ok


# --- rendering ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("latex, text", [
    (r"$\sqrt{d_k}$", "√d_k"),
    (r"$\sqrt{d_k + 1}$", "√(d_k + 1)"),
    (r"$QK^\top$", "QKᵀ"),
    (r"$K^T$", "Kᵀ"),
    (r"$W^{-1}$", "W⁻¹"),
    (r"$\frac{QK^\top}{\sqrt{d_k}}$", "QKᵀ/√d_k"),
    (r"$\alpha + \beta \cdot \gamma$", "α + β · γ"),
    (r"$\theta \in \mathbb{R}$", "θ ∈ ℝ"),
    (r"$\text{softmax}(x) \le 1$", "softmax(x) ≤ 1"),
    (r"$$e^{-\infty} = 0$$", "e^(−∞) = 0"),
    (r"$\Sigma_{i} \times \lambda$", "Σ_i × λ"),
    ("no maths here", "no maths here"),
])
def test_text_mode_latex_conversion(latex, text):
    assert latex_to_text(latex) == text


def test_render_text_and_markdown():
    X = np.array([[1.0, -2.0], [3.5, 4.0]])
    assert render("{{ X | matrix }}", {"X": X}, "markdown") == \
        r"\begin{bmatrix} 1 & -2 \\ 3.5 & 4 \end{bmatrix}"
    assert render("{{ X | matrix }}", {"X": X}, "text") == "\n    [   1  −2 ]\n    [ 3.5   4 ]\n"
    assert render("$d_k = {{ d | tex }}$, $\\sqrt{d_k}$", {"d": -4}, "text") == "d_k = −4, √d_k"
    assert render("{{ w | words }}", {"w": ["the", "dog"]}) == "“the dog”"
    assert render("{{ x | num(2) }}|{{ x | tex(2) }}", {"x": -0.5}, "markdown") == "−0.50|-0.50"
    assert render("", {}) == ""


@pytest.mark.parametrize("source, message", [
    ("{{ nope }}", "UndefinedError: 'nope' is undefined"),
    ("{{ x.nope }}", "UndefinedError: 'int object' has no attribute 'nope'"),
    ("{% for w in words %}{{ w }}{% endfor %}", "UndefinedError: 'words' is undefined"),
    ("{{ x.__class__ }}", "SecurityError: access to attribute '__class__' of 'int' object is unsafe."),
    ("{{ x | nosuchfilter }}", "TemplateAssertionError: No filter named 'nosuchfilter'. "
                               "(line 1 of the text)"),
])
def test_render_errors_instead_of_blanks(source, message):
    with pytest.raises(RenderError) as caught:
        render(source, {"x": 1})
    assert str(caught.value) == message


@pytest.mark.parametrize("value, decimals, text", [
    (-2, None, "−2"), (0.5, None, "0.5"), (1 / 3, None, "0.3333"), (1 / 3, 2, "0.33"),
    (-math.inf, None, "−∞"), (1e-5, None, "1.00e−05"), (True, None, "True"), (4.0, None, "4"),
])
def test_format_number(value, decimals, text):
    assert format_number(value, decimals) == text


def test_variant_prompt_and_solution_render_in_both_formats():
    v = make_variant(bank("sdpa_four_tokens"), 2)
    words = v.values["words"]
    assert f"“{' '.join(words)}”" in v.prompt()
    text = v.prompt("text")
    assert "$" not in text and "√d_k" in text and "\\" not in text
    assert r"\sqrt{d_k}" in v.prompt("markdown")
    # The solution shows the reference's steps: the weights appear, to 4 decimals, in both.
    first_weight = f"{v.answers['weights'][0, 0]:.4f}"
    assert first_weight in v.solution("markdown") and first_weight in v.solution("text")
    assert "$" not in v.solution("text") and "\\begin" not in v.solution("text")
