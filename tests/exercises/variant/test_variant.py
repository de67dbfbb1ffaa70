"""Variants: reproducible bit for bit, checked before anyone sees them ("check the checkers"),
their records in the answer key, and their rendering. (compare() and the JSON form of values
are tested with their modules, in tests/formats/.)"""

import json
import math
import os
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import solutions
from exercises.template.model import TemplateError
from exercises.template.schema import load_template
from exercises.variant.evaluation import VariantError
from exercises.variant.twin_values import too_close_to
from exercises.variant.draw import make_variant
from formats.compare import compare
from formats import serialize
from exercises.course.bank import template_files
from exercises.template.expressions import Scope
from exercises.template.texts import RenderError, format_number, latex_to_text, render
from tests.exercises.templates import inline, line_of, numeric

REPO = Path(__file__).resolve().parents[3]
BANK = REPO / "problem_bank"
BANK_FILES = sorted(template_files([BANK]))
BANK_TEMPLATES = ("sdpa_four_tokens", "implement_masked_attention", "alignment_learnable")


def bank(name: str):
    return load_template(BANK / f"{name}.yaml", display=f"problem_bank/{name}.yaml")


def record_json(variant) -> str:
    return serialize.canonical_json(variant.record())


# --- reproducibility -----------------------------------------------------------------------------

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
    code = ("import json\nfrom exercises.template.schema import load_template\n"
            "from exercises.variant.draw import make_variant\n"
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


# --- the JSON answer key of a variant ------------------------------------------------------------

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


def test_a_given_mapping_with_number_keys_is_a_template_error():
    source = numeric("x: {dist: normal}\n", "x", "table: \"{1: x}\"\n", "givens: [x, table]\n")
    message = _template_error(source)
    assert "givens" in message and "table" in message


def test_a_given_mapping_with_a_float_key_round_trips_through_a_variant():
    source = numeric("x: {dist: normal}\n", "x", "table: '{\"float\": 1.5, \"x\": x}'\n",
                     "givens: [x, table]\n")
    v = make_variant(inline(source), 0)
    record = json.loads(json.dumps(v.record()))
    givens = serialize.decode_names(record["givens"])
    assert givens["table"] == {"float": 1.5, "x": v.values["x"]}


@pytest.mark.parametrize("path", BANK_FILES, ids=lambda p: p.stem)
def test_every_bank_record_round_trips_exactly(path):
    template = load_template(path, display=f"problem_bank/{path.name}")
    v = make_variant(template, 0)
    record = json.loads(json.dumps(v.record(), allow_nan=False))
    givens = serialize.decode_names(record["givens"])
    answers = serialize.decode_names(record["answers"])
    assert givens.keys() == v.givens.keys()
    assert answers.keys() == v.answers.keys()
    for name, value in v.givens.items():
        assert serialize.same_value(givens[name], value), name
    for name, value in v.answers.items():
        assert serialize.same_value(answers[name], value), name
    for case, stored in zip(v.tests, record["tests"]):
        args = serialize.decode_names(stored["args"])
        assert all(serialize.same_value(args[k], a) for k, a in case.args.items())
        assert serialize.same_value(serialize.from_jsonable(stored["expected"]), case.expected)
    # twins and look-alikes (stored packed: only the kit reads them), as the variant has them
    for field, kept in (("twins", v.twins), ("lookalikes", v.lookalikes)):
        stored = serialize.decode_names(record.get(field, {}))
        assert stored.keys() == kept.keys(), field
        for name, value in kept.items():
            assert serialize.same_value(stored[name], _as_stored(value)), (field, name)
    listed = [a for a in _stored_arrays([record["tests"], record["twins"], record.get("lookalikes")])
              if "array" in a and a["dtype"] == "float64"]
    assert not listed, "a float64 array of a twin or hidden case was stored as a list"


@pytest.mark.parametrize("name", ["dog_ran_fast", "why_sqrt_dk", "causal_mask_by_hand"])
def test_the_follow_recipes_validation_worked_out_are_the_records(name):
    """Validation keeps the recipes it checked for the record: the same as worked out anew,
    and the same as an unvalidated variant's record works out itself."""
    from exercises.template import follow

    v = make_variant(bank(name), 3)
    assert v.record()["follow"] and v.record()["follow"] == follow.follow_record(v)
    fresh = make_variant(bank(name), 3, validate=False)
    assert fresh.attempts == v.attempts     # the same draw (seed 3: validation redraws nothing)
    assert fresh.record()["follow"] == v.record()["follow"]


def _stored_arrays(stored):
    if isinstance(stored, dict):
        if "dtype" in stored:
            return [stored]
        return [a for x in stored.values() for a in _stored_arrays(x)]
    if isinstance(stored, list):
        return [a for x in stored for a in _stored_arrays(x)]
    return []


def _as_stored(value):
    """A twin's value as the key gives it back: tuples as lists, float arrays as float64."""
    if isinstance(value, dict):
        return {k: _as_stored(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_stored(x) for x in value]
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    return value


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
    twin = solutions.TWINS["sdpa_mask_with_zero"].function
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


# --- implement problems --------------------------------------------------------------------------

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
        twin = solutions.TWINS[name].function

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


# --- choice problems -----------------------------------------------------------------------------

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


# --- rendering -----------------------------------------------------------------------------------

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


# --- determinism: seeded randomness only ---------------------------------------------------------

RNG_TEMPLATE = """
    id: variance
    title: Variance of dot products
    objective: scaling
    kind: numeric
    parameters:
      d_k: {dist: choice, values: [4, 8]}
    derived:
      v: DRAW
    prompt: "With d_k = {{ d_k }}, estimate the variance."
    parts:
      - id: est
        answer: "v[0]"
        points: 1
        atol: 0.5
"""


def test_a_reference_that_draws_without_rng_is_a_template_error_with_file_and_line():
    source = RNG_TEMPLATE.replace("DRAW", "dot_product_variance(d_k, num_samples=200)")
    template = inline(source)
    with pytest.raises(TemplateError) as caught:
        make_variant(template, 0)
    message = str(caught.value)
    assert message.startswith(f"inline.yaml:{line_of(source, '  v: ')}: derived.v"), message
    assert "pass the variant's generator" in message


def test_a_reference_that_draws_with_rng_is_reproducible():
    template = inline(RNG_TEMPLATE.replace("DRAW", "dot_product_variance(d_k, num_samples=200, rng=rng)"))
    a, b = make_variant(template, 3), make_variant(template, 3)
    assert a.digest == b.digest
    assert a.answers == b.answers
    # pickled and reloaded (a fresh compile of every expression): still the same draws
    assert make_variant(pickle.loads(pickle.dumps(template)), 3).digest == a.digest
    # the draws depend on the variant's seed
    assert len({make_variant(template, s).answers["est"] for s in range(4)}) > 1


TWO_DRAWS = """
    id: two_draws
    title: Two estimates
    objective: scaling
    kind: numeric
    parameters:
      d_k: {dist: choice, values: [4, 8]}
    derived:
      a: FIRST
      b: SECOND
    prompt: "Two estimates for d_k = {{ d_k }}."
    parts:
      - {id: first, answer: "a[0]", points: 1, atol: 0.5}
      - {id: second, answer: "b[0]", points: 1, atol: 0.5}
"""


def test_two_uses_of_rng_in_different_expressions_get_different_streams():
    template = inline(TWO_DRAWS.replace("FIRST", "dot_product_variance(d_k, num_samples=50, rng=rng)")
                      .replace("SECOND", "dot_product_variance(d_k, 50, rng=rng)"))
    v, w = make_variant(template, 1), make_variant(template, 1)
    assert v.digest == w.digest
    assert v.answers["first"] != v.answers["second"]


def test_two_uses_of_rng_with_the_same_text_get_different_streams():
    """Two derived values written the same way are two uses of rng, in two places: each must
    get its own stream (the same seed still gives the same variant)."""
    draw = "dot_product_variance(d_k, num_samples=50, rng=rng)"
    template = inline(TWO_DRAWS.replace("FIRST", draw).replace("SECOND", draw))
    v, w = make_variant(template, 1), make_variant(template, 1)
    assert v.digest == w.digest
    assert v.answers["first"] != v.answers["second"], (
        "two independent estimates came out identical: both uses of rng share one stream")


def test_two_uses_of_rng_in_one_expression_get_different_streams():
    template = inline(RNG_TEMPLATE.replace("DRAW", json.dumps(
        "[dot_product_variance(d_k, 50, rng=rng)[0], dot_product_variance(d_k, 50, rng=rng)[0]]")))
    v, w = make_variant(template, 2), make_variant(template, 2)
    assert v.digest == w.digest
    assert v.values["v"][0] != v.values["v"][1]


FREE_RESPONSE = """
    id: why_scale
    title: Why scale
    objective: scaling
    kind: free_response
    parameters:
      d_k: {dist: choice, values: [16, 64, 256]}
    prompt: "Why divide the scores by the square root of {{ d_k }}?"
    parts:
      - id: why
        points: 2
        rubric: "Full marks: the dot products have variance {{ d_k }}, so dividing by {{ sqrt(d_k) | num }} restores variance 1."
"""


def test_a_rubric_is_rendered_with_the_variants_numbers_and_recorded():
    template = inline(FREE_RESPONSE)
    rubrics = set()
    for seed in range(6):
        v = make_variant(template, seed)
        d_k = v.values["d_k"]
        expected = (f"Full marks: the dot products have variance {d_k}, so dividing by "
                    f"{int(math.isqrt(d_k))} restores variance 1.")
        record = v.record()
        assert record["rubric"]["why"]["guide"] == expected
        assert record["rubric"]["why"]["items"] == []
        assert v.rubric_text(template.parts[0]) == expected
        assert record["digest"] == make_variant(template, seed).record()["digest"]
        rubrics.add(expected)
    assert len(rubrics) > 1


def test_a_rubric_with_an_unknown_name_is_a_template_error():
    with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parts\[0\]\.rubric: unknown "
                                            r"name 'd_kk' .*did you mean 'd_k'\?$"):
        inline(FREE_RESPONSE.replace("{{ d_k }},", "{{ d_kk }},"))


# --- the misconception margin: twins must lie outside twice the tolerance ------------------------

def test_too_close_uses_twice_the_tolerance():
    expected = np.array([[1.0, 2.0]])
    inside_twice = expected + np.array([[0.15, 0.0]])   # outside 1× atol, inside 2×
    outside_twice = expected + np.array([[0.25, 0.0]])
    assert not compare(inside_twice, expected, 0.0, 0.1).ok
    assert too_close_to(inside_twice, expected, 0.0, 0.1)
    assert not too_close_to(outside_twice, expected, 0.0, 0.1)
    # rtol doubles too
    assert too_close_to(np.array([1.15]), np.array([1.0]), 0.1, 0.0)
    assert not too_close_to(np.array([1.25]), np.array([1.0]), 0.1, 0.0)


MARGIN = """
    id: margin
    title: A twin near the answer
    objective: scaling
    kind: numeric
    parameters:
      a: {dist: choice, values: VALUES}
    derived:
      Q: array([[a, 0, 0, 0]])
      K: array([[1, 0, 0, 0]])
      steps: scaled_dot_product_attention(Q, K, array([[1.0]]), return_steps=True)
    prompt: "Scale the score {{ a }}."
    sampling: {max_attempts: 20}
    parts:
      - id: scaled
        answer: steps.scaled_scores
        points: 1
        rtol: 0
        atol: 0.3
        misconceptions: [sdpa_divide_by_d_k]
"""
# d_k = 4: the reference gives a/2, the twin a/4. For a = 2 they differ by 0.5: outside
# atol = 0.3 but inside 2·atol = 0.6, so the variant must be redrawn. For a = 4: 1.0 apart.


def test_a_twin_outside_the_tolerance_but_inside_twice_it_is_redrawn():
    template = inline(MARGIN.replace("VALUES", "[2, 4]"))
    rejected = Counter()
    for seed in range(10):
        v = make_variant(template, seed)
        assert v.values["a"] == 4
        rejected += v.rejections
    assert rejected["misconception sdpa_divide_by_d_k is within twice the tolerance of the "
                    "answer to part scaled"] > 0


def test_a_twin_always_inside_twice_the_tolerance_gives_no_variant():
    template = inline(MARGIN.replace("VALUES", "[2]"))
    # the twin's answer is outside the plain tolerance ...
    twin = solutions.TWINS["sdpa_divide_by_d_k"].function
    Q, K = np.array([[2.0, 0, 0, 0]]), np.array([[1.0, 0, 0, 0]])
    wrong = twin(Q, K, np.array([[1.0]]), return_steps=True).scaled_scores
    right = solutions.scaled_dot_product_attention(Q, K, np.array([[1.0]]), return_steps=True).scaled_scores
    assert not compare(wrong, right, 0.0, 0.3).ok
    # ... but a grader-accepted answer could still be nearer the twin: no valid variant
    with pytest.raises(VariantError, match="within twice the tolerance"):
        make_variant(template, 0)


def test_every_sdpa_four_tokens_variant_keeps_its_twins_beyond_twice_the_tolerance():
    template = bank("sdpa_four_tokens")
    checked = 0
    for seed in range(30):
        v = make_variant(template, seed)
        Q, K, V = v.values["Q"], v.values["K"], v.values["V"]
        for part in template.parts:
            for name in part.misconceptions:
                twin = solutions.TWINS[name].function
                steps = twin(Q, K, V, return_steps=True)
                wrong = part.answer.evaluate(Scope(values={**v.values, "steps": steps}, strict=False))
                result = compare(wrong, v.answers[part.id], 2 * part.rtol, 2 * part.atol)
                assert not result.ok, (seed, part.id, name)
                checked += 1
    assert checked == 30 * sum(len(p.misconceptions) for p in template.parts) > 0


# --- template bugs are TemplateError with file:line ----------------------------------------------

def _template_error(source: str, seed: int = 0) -> str:
    template = inline(source)
    with pytest.raises(TemplateError) as caught:
        make_variant(template, seed)
    message = str(caught.value)
    assert message.startswith("inline.yaml:"), message
    return message


@pytest.mark.parametrize("constraint, derived", [("x > 0", ""), ("y > 0", "y: x * 2\n")])
def test_a_constraint_that_gives_an_array_is_a_template_error(constraint, derived):
    source = numeric("x: {dist: normal, shape: [3]}\n", "sum(x)", derived,
                     f"constraints:\n  - {constraint}\n")
    message = _template_error(source)
    assert message.startswith(f"inline.yaml:{line_of(source, '  - ' + constraint)}: constraints[0]: ")
    assert "all(" in message and "any(" in message


CHOICE_WITH_ANSWER = """
    id: pick
    title: Pick
    objective: scaling
    kind: choice
    parameters:
      n: {dist: choice, values: [2, 3, 4]}
    prompt: "How many heads?"
    parts:
      - id: heads
        points: 1
        answer: ANSWER
        options: OPTIONS
"""


@pytest.mark.parametrize("answer", ["str(n)", "n"])
def test_literal_options_with_an_answer_expression_pick_the_matching_option(answer):
    template = inline(CHOICE_WITH_ANSWER.replace("ANSWER", answer).replace("OPTIONS", '["2", "3", "4"]'))
    seen = set()
    for seed in range(8):
        v = make_variant(template, seed)
        shown = v.options["heads"]
        assert sorted(o["text"] for o in shown) == ["2", "3", "4"]
        assert shown[v.answers["heads"]]["text"] == str(v.values["n"])
        seen.add(v.values["n"])
    assert len(seen) > 1


def test_an_options_expression_with_one_option_is_a_template_error():
    source = CHOICE_WITH_ANSWER.replace("ANSWER", "str(n)").replace("OPTIONS", '"[str(n)]"')
    message = _template_error(source)
    assert "parts[0].options" in message


def test_an_answer_that_is_not_an_option_is_a_template_error():
    source = CHOICE_WITH_ANSWER.replace("ANSWER", "str(n + 10)").replace("OPTIONS", '["2", "3", "4"]')
    assert "parts[0].answer" in _template_error(source)


def test_a_constant_list_of_lists_of_words_stays_a_list():
    source = numeric('words: [["the", "dog"], ["a", "cat"]]\nn: {dist: choice, values: [2, 3]}\n',
                     "n", prompt="{{ words[1] | words }}")
    template = inline(source)
    v = make_variant(template, 0)
    assert v.values["words"] == [["the", "dog"], ["a", "cat"]]
    assert isinstance(v.givens["words"], list)
    assert "cat" in v.prompt()
    record = json.loads(json.dumps(v.record()))
    assert serialize.decode_names(record["givens"])["words"] == [["the", "dog"], ["a", "cat"]]


def test_numeric_checks_on_a_text_answer_are_a_template_error():
    source = numeric("words: {dist: sentence}\n", "join(words)", part="checks: [finite]\n")
    message = _template_error(source)
    assert "parts[0].checks" in message


@pytest.mark.parametrize("shape", ["[inf]", "[.inf]", '"[inf, 2]"', "[-1]"])
def test_an_infinite_or_negative_shape_is_a_template_error(shape):
    source = numeric(f"x: {{dist: normal, shape: {shape}}}\n", "sum(x)")
    message = _template_error(source)
    assert message.startswith(f"inline.yaml:{line_of(source, 'x: {dist')}: parameters.x: "), message


@pytest.mark.parametrize("answer, derived", [
    ("None", ""),
    ('d["a"]', 'd: "dict(a=None)"\n'),
])
def test_an_answer_that_is_none_is_a_template_error(answer, derived):
    source = numeric("x: {dist: normal}\n", answer, derived)
    message = _template_error(source)
    assert message.startswith(f"inline.yaml:{line_of(source, '- id: ans')}: parts[0].answer"), message
    assert "None" in message


# --- fully masked rows in an additive float mask -------------------------------------------------

ADDITIVE = """
    id: additive
    title: An additive mask
    objective: multihead_masking
    kind: numeric
    parameters:
      Q: {dist: int_matrix, shape: [3, 2], low: -2, high: 2}
      keep: {dist: integers, low: 0, high: HIGH, shape: [3, 3]}
    derived:
      mask: where(as_bool(keep), 0.0, FILL)
      steps: scaled_dot_product_attention(Q, Q, Q, mask=mask, return_steps=True)
    givens: [Q, keep]
    prompt: Compute the masked attention weights.
    parts:
      - {id: weights, answer: steps.weights, points: 1, atol: 0.001}
"""


@pytest.mark.parametrize("fill", ["-inf", "-1e9"])
def test_a_fully_masked_row_of_an_additive_mask_forces_a_redraw(fill):
    template = inline(ADDITIVE.replace("HIGH", "1").replace("FILL", fill))
    rejected = Counter()
    for seed in range(12):
        v = make_variant(template, seed)
        mask = v.values["mask"]
        assert mask.dtype.kind == "f"
        assert (mask > -1e4).any(axis=-1).all()
        rejected += v.rejections
    assert rejected["a fully masked row in the mask of scaled_dot_product_attention()"] > 0


def test_an_always_fully_masked_additive_mask_gives_no_variant():
    source = ADDITIVE.replace("HIGH", "0").replace("FILL", "-inf") + "    sampling: {max_attempts: 5}\n"
    with pytest.raises(VariantError, match="fully masked row"):
        make_variant(inline(source), 0)


def test_fully_masked_additive_rows_are_kept_when_allowed():
    source = ADDITIVE.replace("HIGH", "1").replace("FILL", "-inf")
    template = inline(source + "    sampling: {allow_fully_masked_rows: true}\n")
    variants = [make_variant(template, seed) for seed in range(12)]
    assert any(not (v.values["mask"] > -np.inf).any(axis=-1).all() for v in variants)
    assert all(not v.rejections for v in variants)
    always = inline(ADDITIVE.replace("HIGH", "0").replace("FILL", "-inf")
                    + "    sampling: {max_attempts: 5, allow_fully_masked_rows: true}\n")
    assert make_variant(always, 0).answers["weights"].shape == (3, 3)


# --- a twin that raises forces a redraw ----------------------------------------------------------

def test_a_twin_that_raises_forces_a_redraw():
    """softmax_axis_1 cannot run on a 1-D vector (there is no axis 1): such a variant could
    never diagnose it, so it is redrawn until the input is batched."""
    template = inline("""
        id: raising_twin
        title: Softmax of a batch
        objective: scaling
        kind: numeric
        parameters:
          batched: {dist: choice, values: [true, false]}
          x: {dist: normal, shape: "[2, 3, 4] if batched else [4]", decimals: 1}
        derived:
          p: softmax(x)
        prompt: "Compute the softmax of {{ x | flat }} along the last axis."
        parts:
          - {id: probs, answer: p, points: 1, atol: 0.001, misconceptions: [softmax_axis_1]}
    """)
    with pytest.raises(Exception):
        solutions.TWINS["softmax_axis_1"].function(np.zeros(4))
    rejected = Counter()
    for seed in range(10):
        v = make_variant(template, seed)
        assert v.values["batched"] is True
        rejected += v.rejections
    raising = [r for r in rejected if r.startswith("misconception softmax_axis_1 raises ")]
    assert raising and sum(rejected[r] for r in raising) > 0


# --- twins on hidden cases: read-only views, copies only where needed (issue 19) -------------

def test_a_function_run_on_a_case_never_changes_it_and_writers_get_copies():
    import numpy as np
    from exercises.variant.evaluation import TestCase
    from exercises.variant.twin_values import _called

    case = TestCase("basic", 0, {"Q": np.arange(4.0), "n": 2}, None)

    def writes(Q, n):
        Q *= n                       # in place, as a student's function may
        return Q.sum()

    def returns_its_argument(Q, n):
        return Q

    assert _called(writes, case) == 12.0
    assert _called(writes, case) == 12.0                     # the case itself is untouched
    assert case.args["Q"].tolist() == [0.0, 1.0, 2.0, 3.0] and case.args["Q"].flags.writeable
    out = _called(returns_its_argument, case)
    assert out.flags.writeable and not np.shares_memory(out, case.args["Q"])


def test_a_case_with_a_list_argument_is_called_on_copies():
    from exercises.variant.evaluation import TestCase
    from exercises.variant.twin_values import _called

    case = TestCase("basic", 0, {"lengths": [3, 1]}, None)

    def appends(lengths):
        lengths.append(0)
        return len(lengths)

    assert _called(appends, case) == 3 and _called(appends, case) == 3
    assert case.args["lengths"] == [3, 1]


def test_values_only_the_texts_read_are_worked_out_once_the_draw_is_kept(monkeypatch):
    from exercises.variant import draw as variant_module
    from exercises.variant.evaluation import Evaluator
    template = bank("why_sqrt_dk")
    now, later = variant_module._derived_now_and_later(template)
    assert "sim" in {d.name for d in later} and "sim" not in {d.name for d in now}
    assert {"moments", "steps", "p_top"} <= {d.name for d in now}      # answers read them
    derived = Counter()
    real = Evaluator.derive

    def counting(self, values, scope, key, cached=None):
        derived.update(d.name for d in values)
        return real(self, values, scope, key, cached)

    monkeypatch.setattr(Evaluator, "derive", counting)
    seed = next(s for s in range(50) if make_variant(template, s).attempts >= 3)
    derived.clear()
    v = make_variant(template, seed)
    assert derived["sim"] == 1 and derived["moments"] >= 2          # the redrawn draws made no sim
    assert {"sim", "ratio_mant", "j_raw"} <= set(v.values)
    assert "sim" in template.solution and v.solution()              # which the solution reads


@pytest.mark.parametrize("name, seed, part", [("bahdanau_step_by_hand", 63, "pre"),
                                              ("dog_ran_fast", None, "raw_scores")])
def test_a_chain_never_starts_from_a_degenerate_answer(name, seed, part):
    """A draw whose correct answer at a part a recipe follows from is all zeros or has flat
    rows is drawn again: there, any answer of that form would be "consistent" with every
    later step (bahdanau seed 63 drew pre = [[0.4, 0.4], [0, 2.4], [1.2, 0]])."""
    from exercises.template import follow
    from formats.degenerate import forms

    template = bank(name)
    if seed is None:                        # the first seed of the first 200 that drew one
        seed = next(s for s in range(200) if any("would be trivial" in r for r in make_variant(template, s).rejections))
    v = make_variant(template, seed)
    assert any(r.startswith(f"the answer to part {part} has flat rows") for r in v.rejections), v.rejections
    spec = next(p for p in template.parts if p.id == part)
    assert forms(v.answers[part], spec.rtol, spec.atol) == ()
    assert follow.trivial_source(template, v.answers) is None
    flat = {**v.answers, part: np.ones_like(np.asarray(v.answers[part], dtype=float))}
    assert follow.trivial_source(template, flat).startswith(f"the answer to part {part} has flat rows")
