"""Regression tests for the template engine's hardening fixes: the Jinja sandbox, seeded
randomness, the misconception margin, tolerant visible checks, compare(), template bugs as
TemplateError with file:line, size limits, masked rows, twins that raise, pickling, the JSON
answer key, part ids and the CLI's argument checks."""

import json
import math
import pickle
import textwrap
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import solutions
from exercises.schema import TemplateError, load_template, parse_template
from exercises.variant import VariantError, make_variant
from formats.compare import compare
from formats import serialize
from exercises.bank import template_files
from exercises.checks import CHECKS
from exercises.distributions import DISTRIBUTIONS
from exercises.expressions import ExpressionError, Scope, parse
from exercises.render import RenderError, render
from exercises.variant import _too_close
from exercises.yaml_lines import YAMLError, load_yaml

REPO = Path(__file__).resolve().parents[2]
BANK = REPO / "problem_bank"
BANK_FILES = sorted(template_files([BANK]))


def inline(source: str):
    return parse_template(load_yaml(textwrap.dedent(source)), "inline.yaml")


def line_of(source: str, needle: str) -> int:
    """1-based line of the first line of the (dedented) YAML that contains ``needle``."""
    lines = textwrap.dedent(source).splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def bank(name: str):
    return load_template(BANK / f"{name}.yaml", display=f"problem_bank/{name}.yaml")


def numeric(parameters: str, answer: str = "1.0", derived: str = "", extra: str = "",
            prompt: str = "Compute it.", part: str = "") -> str:
    """A small numeric template; ``parameters``/``derived`` are YAML mapping bodies."""
    source = ("id: probe\ntitle: Probe\nobjective: scaling\nkind: numeric\n"
              f"parameters:\n{textwrap.indent(textwrap.dedent(parameters), '  ')}")
    if derived:
        source += f"derived:\n{textwrap.indent(textwrap.dedent(derived), '  ')}"
    source += f"prompt: {json.dumps(prompt)}\n"
    source += f"parts:\n  - id: ans\n    answer: {json.dumps(answer)}\n    points: 1\n"
    source += textwrap.indent(textwrap.dedent(part), "    ")
    return source + textwrap.dedent(extra)


def fast(seconds: float = 2.0):
    """Context manager asserting the block finishes within ``seconds``."""
    class _Fast:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            elapsed = time.perf_counter() - self.start
            assert elapsed < seconds, f"took {elapsed:.2f} s (limit {seconds} s)"
            return False
    return _Fast()


# --- 1. the Jinja sandbox ------------------------------------------------------------------------

def _context():
    return {"Q": np.arange(4.0).reshape(2, 2), "answers": {"weights": 1.0},
            "words": ["the", "dog", "ran"], "x": np.float64(2.5)}


@pytest.mark.parametrize("source", [
    '{{ Q.fill(7) }}',
    '{{ answers.update({"weights": 99}) }}',
    '{{ words.reverse() }}',
    '{{ words.append(1) }}',
    '{{ words.pop() }}',
    '{{ x.fill(0) }}',
])
def test_text_cannot_change_values(source):
    context = _context()
    with pytest.raises(RenderError):
        render(source, context)
    with pytest.raises(RenderError):
        render(source, context, "text")
    assert np.array_equal(context["Q"], np.arange(4.0).reshape(2, 2))
    assert context["answers"] == {"weights": 1.0}
    assert context["words"] == ["the", "dog", "ran"]
    assert context["x"] == 2.5


@pytest.mark.parametrize("method", ["tofile", "dump"])
def test_text_cannot_write_files(tmp_path, method):
    context = _context()
    target = tmp_path / f"leak_{method}"
    with pytest.raises(RenderError):
        render(f'{{{{ Q.{method}("{target}") }}}}', context)
    with pytest.raises(RenderError):
        render(f'{{{{ x.{method}("{target}") }}}}', context)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []
    assert np.array_equal(context["Q"], np.arange(4.0).reshape(2, 2))


def test_text_can_read_array_attributes():
    context = _context()
    assert render("{{ Q.shape }}", context) == "(2, 2)"
    assert render("{{ Q.ndim }}", context) == "2"
    assert render("{{ Q.T | matrix }}", context) == render("{{ Q | matrix }}",
                                                          {"Q": context["Q"].T})
    assert render("{{ Q.T[0][1] | num }}", context) == "2"
    assert render("{{ Q.size }}", context) == "4"


def test_random_filter_and_lipsum_are_unavailable():
    with pytest.raises(RenderError):
        render("{{ words | random }}", _context())
    with pytest.raises(RenderError):
        render("{{ lipsum() }}", _context())
    with pytest.raises(RenderError):
        render("{{ lipsum(1) }}", _context(), "text")


@pytest.mark.parametrize("source", [
    "{% for i in range(10**10) %}x{% endfor %}",
    '{{ "a" * 10**9 }}',
    '{{ 10**9 * "a" }}',
    "{{ 2 ** 100000000 }}",
])
def test_huge_text_is_refused_quickly(source):
    with fast(2.0):
        with pytest.raises(RenderError):
            render(source, _context())


@pytest.mark.parametrize("source", ["{{ 1 / 0 }}", "{{ 1 // 0 }}", "{{ 3 % 0 }}"])
def test_a_division_by_zero_in_text_is_a_render_error(source):
    with pytest.raises(RenderError, match="ZeroDivisionError"):
        render(source, _context())


def test_a_prompt_that_calls_fill_is_a_template_error_naming_file_and_prompt():
    source = """
        id: fill_prompt
        title: Fill
        objective: self_attention
        kind: numeric
        parameters:
          Q: {dist: int_matrix, shape: [2, 2]}
        prompt: "Before {{ Q.fill(0) }} after"
        parts:
          - {id: total, answer: sum(Q), points: 1}
    """
    template = inline(source)
    with pytest.raises(TemplateError) as caught:
        make_variant(template, 0)
    message = str(caught.value)
    assert message.startswith(f"inline.yaml:{line_of(source, 'prompt:')}: prompt: "), message
    # rendering the prompt of an unvalidated variant fails the same way and leaves Q alone
    v = make_variant(template, 0, validate=False)
    before = v.values["Q"].copy()
    assert np.any(before != 0)
    with pytest.raises(RenderError):
        v.prompt()
    assert np.array_equal(v.values["Q"], before)
    assert np.array_equal(v.givens["Q"], before)


# --- 2. determinism: seeded randomness only --------------------------------------------------------

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
        assert record["rubrics"] == {"why": expected}
        assert v.rubric(template.parts[0]) == expected
        assert record["digest"] == make_variant(template, seed).record()["digest"]
        rubrics.add(expected)
    assert len(rubrics) > 1


def test_a_rubric_with_an_unknown_name_is_a_template_error():
    template = inline(FREE_RESPONSE.replace("{{ d_k }},", "{{ d_kk }},"))
    with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parts\[0\]\.rubric: "):
        make_variant(template, 0)


# --- 3. the misconception margin: twins must lie outside twice the tolerance ----------------------

def test_too_close_uses_twice_the_tolerance():
    expected = np.array([[1.0, 2.0]])
    inside_twice = expected + np.array([[0.15, 0.0]])   # outside 1× atol, inside 2×
    outside_twice = expected + np.array([[0.25, 0.0]])
    assert not compare(inside_twice, expected, 0.0, 0.1).ok
    assert _too_close(inside_twice, expected, 0.0, 0.1)
    assert not _too_close(outside_twice, expected, 0.0, 0.1)
    # rtol doubles too
    assert _too_close(np.array([1.15]), np.array([1.0]), 0.1, 0.0)
    assert not _too_close(np.array([1.25]), np.array([1.0]), 0.1, 0.0)


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
    twin = solutions.MISCONCEPTIONS["sdpa_divide_by_d_k"].function
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
                twin = solutions.MISCONCEPTIONS[name].function
                steps = twin(Q, K, V, return_steps=True)
                wrong = part.answer.evaluate(Scope(values={**v.values, "steps": steps}, strict=False))
                result = compare(wrong, v.answers[part.id], 2 * part.rtol, 2 * part.atol)
                assert not result.ok, (seed, part.id, name)
                checked += 1
    assert checked == 30 * sum(len(p.misconceptions) for p in template.parts) > 0


# --- 4. visible checks honour the part's tolerance ------------------------------------------------

def _weights_part():
    template = bank("sdpa_four_tokens")
    part = next(p for p in template.parts if p.id == "weights")
    assert part.checks, "the weights part has visible checks"
    return template, part


def _assert_line(part, name, argument, answer):
    return CHECKS[name].code("weights", argument, part.atol, part.rtol, n=np.shape(answer)[-1])


@pytest.mark.parametrize("seed", range(6))
def test_a_rounded_answer_the_grader_accepts_passes_every_visible_check(seed):
    template, part = _weights_part()
    v = make_variant(template, seed)
    rounded = np.round(v.answers["weights"], 2)
    assert compare(rounded, v.answers["weights"], part.rtol, part.atol).ok  # the grader accepts
    for name, argument in part.checks:
        assert argument is None
        assert CHECKS[name].test(rounded, None, part.atol, part.rtol) is None, name
        exec(_assert_line(part, name, None, rounded), {"np": np, "weights": rounded})


def test_a_row_summing_to_0_9_fails_the_check_and_its_assert_line():
    template, part = _weights_part()
    v = make_variant(template, 0)
    bad = np.round(v.answers["weights"], 2)
    bad[1] = bad[1] * (0.9 / bad[1].sum())
    assert abs(bad[1].sum() - 0.9) < 1e-12
    assert CHECKS["rows_sum_to_one"].test(bad, None, part.atol, part.rtol)
    with pytest.raises(AssertionError, match="must sum to 1"):
        exec(_assert_line(part, "rows_sum_to_one", None, bad), {"np": np, "weights": bad})


# --- 5. compare() ---------------------------------------------------------------------------------

@pytest.mark.parametrize("actual, expected", [
    (np.array(["a", "b"]), np.array([1.0, 2.0])),
    (np.array([1, "x"], dtype=object), np.array([1.0, 2.0])),
    (np.array([1 + 1j, 2]), np.array([1.0, 2.0])),
    (np.array([1 + 0j, 2 + 0j]), np.array([1.0, 2.0])),
    (1 + 0j, 1.0),
    (1 + 2j, 1.0),
    (True, 1),
    (np.array([True, False]), np.array([1, 0])),
    (10 ** 400, 2.5),
    ([1, "a"], [1.0, 2.0]),
    ("1.0", 1.0),
    (None, 1.0),
    ({"a": 1.0}, 1.0),
])
def test_odd_values_fail_with_a_message(actual, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(actual, expected, 1e-3, 1e-3)
    assert not result.ok
    assert result.reason


def test_integers_are_compared_exactly_whatever_the_tolerance():
    assert not compare(1_000_005, 1_000_000, rtol=1e-3).ok
    assert not compare(np.array([1_000_005]), np.array([1_000_000]), rtol=1e-3, atol=10).ok
    assert "exactly" in compare(1_000_005, 1_000_000, rtol=1e-3).reason
    assert compare(1_000_000, 1_000_000, rtol=1e-3).ok
    # a float answer with the same tolerance is compared approximately
    assert compare(1_000_005.0, 1_000_000.0, rtol=1e-3).ok


def test_dicts_are_compared_key_by_key():
    expected = {"loss": 1.0, "weights": np.array([0.25, 0.75])}
    assert compare({"loss": 1.0000001, "weights": np.array([0.25, 0.75])}, expected).ok
    wrong = compare({"loss": 1.0, "weights": np.array([0.5, 0.5])}, expected)
    assert not wrong.ok and wrong.reason.startswith("weights: ")
    missing = compare({"loss": 1.0}, expected)
    assert not missing.ok and "keys" in missing.reason
    assert not compare([1.0, np.array([0.25, 0.75])], expected).ok


@pytest.mark.parametrize("actual, expected", [
    (0.0, -math.inf),
    (-1e9, -math.inf),
    (np.array([[0.0, 1.0]]), np.array([[-np.inf, 1.0]])),
])
def test_a_finite_value_where_minus_inf_is_expected_fails(actual, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(actual, expected)
    assert not result.ok
    assert "inf" in result.reason


@pytest.mark.parametrize("value", [
    -math.inf,
    np.array([-np.inf, 0.5]),
    np.array([[-np.inf, 0.5], [0.25, -np.inf]]),
    [-math.inf, 1.0],
])
def test_minus_inf_matches_minus_inf_without_warnings(value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(value, value)
    assert result.ok, result.reason


def test_plus_inf_where_minus_inf_is_expected_fails():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not compare(math.inf, -math.inf).ok
        assert not compare(np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])).ok


# --- 6. template bugs are TemplateError with file:line --------------------------------------------

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


CHOICE = """
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
    template = inline(CHOICE.replace("ANSWER", answer).replace("OPTIONS", '["2", "3", "4"]'))
    seen = set()
    for seed in range(8):
        v = make_variant(template, seed)
        shown = v.options["heads"]
        assert sorted(o["text"] for o in shown) == ["2", "3", "4"]
        assert shown[v.answers["heads"]]["text"] == str(v.values["n"])
        seen.add(v.values["n"])
    assert len(seen) > 1


def test_an_options_expression_with_one_option_is_a_template_error():
    source = CHOICE.replace("ANSWER", "str(n)").replace("OPTIONS", '"[str(n)]"')
    message = _template_error(source)
    assert "parts[0].options" in message


def test_an_answer_that_is_not_an_option_is_a_template_error():
    source = CHOICE.replace("ANSWER", "str(n + 10)").replace("OPTIONS", '["2", "3", "4"]')
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


# --- 7. size limits -----------------------------------------------------------------------------

def test_nested_comprehensions_share_one_budget():
    with fast(2.0):
        with pytest.raises(ExpressionError, match="comprehensions of more than"):
            parse("[[j for j in range(400)] for i in range(400)]").evaluate(Scope(values={}))
    assert len(parse("[[j for j in range(100)] for i in range(100)]").evaluate(Scope(values={}))) == 100


@pytest.mark.parametrize("source", [
    "ones((20000, 20000))",
    "zeros([20000, 20000])",
    "full((20000, 20000), 1.0)",
    "eye(20000)",
    "arange(3e9)",
    "arange(0, 3e9, 1)",
    "arange(3000000000)",
    "[[j for j in range(1000)] for i in range(1000)]",
])
def test_huge_values_in_a_template_are_template_errors_quickly(source):
    template = inline(numeric("n: {dist: choice, values: [2, 3]}\n", "n",
                              f"big: {json.dumps(source)}\n"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: derived\.big: "):
            make_variant(template, 0)


def test_integers_with_a_huge_range_are_fast():
    template = inline(numeric("k: {dist: integers, low: 0, high: 2000000000}\n"
                              "ks: {dist: integers, low: -2000000000, high: 2000000000, shape: [3]}\n",
                              "k"))
    with fast(2.0):
        values = [make_variant(template, seed).values["k"] for seed in range(5)]
    assert all(0 <= k <= 2_000_000_000 for k in values)
    assert len(set(values)) > 1


def test_integers_with_exclude_and_a_huge_range_is_a_template_error_quickly():
    template = inline(numeric("k: {dist: integers, low: 0, high: 2000000000, exclude: [1]}\n", "k"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parameters\.k: "):
            make_variant(template, 0)
    with fast(2.0):
        with pytest.raises(ValueError):
            DISTRIBUTIONS["integers"].sample(np.random.default_rng(0), low=0,
                                             high=2_000_000_000, exclude=[1])


def test_a_huge_permutation_is_a_template_error_quickly():
    template = inline(numeric("order: {dist: permutation, n: 1000000000}\n", "1.0"))
    with fast(2.0):
        with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: parameters\.order: "):
            make_variant(template, 0)


def test_a_long_expression_is_refused():
    long = "[" + "1, " * 666 + "1]"   # 2001 characters, flat
    assert len(long) == 2001
    with pytest.raises(ExpressionError, match="at most 2000"):
        parse(long)
    ok = "[" + "1, " * 665 + "111]"   # 2000 characters
    assert len(ok) == 2000
    assert len(parse(ok).evaluate(Scope(values={}))) == 666
    with pytest.raises(TemplateError, match=r"^inline\.yaml:\d+: derived\.big: .*at most 2000"):
        inline(numeric("n: 2\n", "n", f"big: {json.dumps(long)}\n"))


@pytest.mark.parametrize("source", ["-" * 70 + "1", "[" * 70 + "]" * 70, "not " * 70 + "x",
                                    "f(" * 70 + ")" * 70])
def test_a_deeply_nested_expression_is_refused(source):
    with fast(2.0):
        with pytest.raises(ExpressionError):
            parse(source)


def test_yaml_aliases_are_refused_with_the_line(tmp_path):
    text = textwrap.dedent("""\
        id: alias
        title: Alias
        objective: scaling
        kind: numeric
        parameters:
          a: &x [1, 2]
          b: *x
        prompt: hi
        parts:
          - {id: ans, answer: 1.0, points: 1}
    """)
    with pytest.raises(YAMLError) as caught:
        load_yaml(text)
    assert caught.value.line == 7
    assert "alias" in str(caught.value).lower()
    path = tmp_path / "alias.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TemplateError, match=r"^alias\.yaml:7: .*alias"):
        load_template(path, display="alias.yaml")


def test_a_billion_laughs_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 10)]
    with fast(2.0):
        with pytest.raises(YAMLError):
            load_yaml("\n".join(lines) + "\n")


# --- 8. fully masked rows in an additive float mask -----------------------------------------------

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


# --- 9. a twin that raises forces a redraw ---------------------------------------------------------

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
        solutions.MISCONCEPTIONS["softmax_axis_1"].function(np.zeros(4))
    rejected = Counter()
    for seed in range(10):
        v = make_variant(template, seed)
        assert v.values["batched"] is True
        rejected += v.rejections
    raising = [r for r in rejected if r.startswith("misconception softmax_axis_1 raises ")]
    assert raising and sum(rejected[r] for r in raising) > 0


# --- 10. pickling -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", BANK_FILES, ids=lambda p: p.stem)
def test_every_bank_template_pickles_and_gives_the_same_variants(path):
    template = load_template(path, display=f"problem_bank/{path.name}")
    clone = pickle.loads(pickle.dumps(template))
    assert make_variant(clone, 0).digest == make_variant(template, 0).digest
    # a clone that was never evaluated before pickling
    fresh = pickle.loads(pickle.dumps(load_template(path, display=f"problem_bank/{path.name}")))
    assert make_variant(fresh, 1).digest == make_variant(template, 1).digest


# --- 11. the JSON answer key -----------------------------------------------------------------------

def _through_json(value):
    return serialize.from_jsonable(json.loads(json.dumps(serialize.to_jsonable(value))))


@pytest.mark.parametrize("value", [
    {"float": 1.5},
    {"float": "-inf"},
    {"dict": {"x": 1}},
    {"array": [1, 2], "dtype": "int64", "shape": [2]},
    [{"float": 1.5}, {"dict": 2}],
])
def test_user_mappings_that_look_like_our_tags_round_trip_as_mappings(value):
    back = _through_json(value)
    assert serialize.same_value(back, value)
    assert isinstance(back, type(value))


@pytest.mark.parametrize("value", [{1: 2}, {("a",): 1}, {"ok": {2.5: 1}}, [{None: 1}]])
def test_non_text_keys_are_not_serializable(value):
    with pytest.raises(serialize.NotSerializable):
        serialize.to_jsonable(value)


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


# --- 12. part ids and tolerances -------------------------------------------------------------------

@pytest.mark.parametrize("pid", ["rng", "answers", "options", "givens", "result", "inf", "pi"])
def test_reserved_part_ids_are_load_errors(pid):
    source = numeric("x: {dist: normal}\n", "x").replace("id: ans", f"id: {pid}")
    with pytest.raises(TemplateError) as caught:
        inline(source)
    assert str(caught.value).startswith(f"inline.yaml:{line_of(source, 'id: ' + pid)}: parts[0].id: ")
    assert "reserved" in str(caught.value)


@pytest.mark.parametrize("pid", ["dot", "softmax"])
def test_a_part_id_may_be_a_function_name(pid):
    source = numeric("x: {dist: normal, shape: [3]}\n", "dot(x, x)",
                     extra="constraints:\n  - ID >= 0\n  - dot(x, x) == ID\n",
                     prompt="The answer is {{ ID | num(3) }}.").replace("ID", pid)
    source = source.replace("id: ans", f"id: {pid}")
    v = make_variant(inline(source), 0)
    assert v.answers[pid] == pytest.approx(float(np.dot(v.values["x"], v.values["x"])))
    assert v.prompt().startswith("The answer is ")


def test_top_level_tolerances_are_the_default_of_numeric_parts():
    template = inline(numeric("x: {dist: normal}\n", "x",
                              extra="  - {id: other, answer: 2 * x, points: 1, atol: 0.5}\n"
                                    "atol: 0.25\nrtol: 0.001\n"))
    tolerances = {p.id: (p.atol, p.rtol) for p in template.parts}
    assert tolerances == {"ans": (0.25, 0.001), "other": (0.5, 0.001)}
    grading = {g["id"]: (g["atol"], g["rtol"]) for g in make_variant(template, 0).record()["grading"]}
    assert grading == tolerances


CHOICE_TOLERANCE = """
    id: tol_choice
    title: Choice
    objective: scaling
    kind: choice
    TOP
    prompt: Pick one.
    parts:
      - id: pick
        points: 1
        PART
        options:
          - {text: "a", correct: true}
          - {text: "b"}
"""


@pytest.mark.parametrize("top, part, key", [
    ("atol: 0.1", "", "atol"),
    ("rtol: 0.1", "", "rtol"),
    ("", "checks: [finite]", "parts[0].checks"),
    ("", "atol: 0.1", "parts[0].atol"),
    ("", "misconceptions: [sdpa_no_scale]", "parts[0].misconceptions"),
])
def test_tolerances_and_checks_on_a_choice_template_are_load_errors(top, part, key):
    source = CHOICE_TOLERANCE.replace("TOP", top).replace("PART", part)
    with pytest.raises(TemplateError) as caught:
        inline(source)
    needle = top or part
    assert f"inline.yaml:{line_of(source, needle)}: {key}: " in str(caught.value)


def test_the_choice_template_without_tolerances_loads():
    make_variant(inline(CHOICE_TOLERANCE.replace("TOP", "").replace("PART", "")), 0)


# --- 13. the command line refuses impossible counts -----------------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["preview", "sdpa_four_tokens", "--seed", "-1"], "--seed"),
    (["bank", "validate", "--seeds", "0"], "--seeds"),
    (["bank", "validate", "--first-seed", "-3"], "--first-seed"),
])
def test_the_cli_refuses_negative_seeds_and_zero_counts(argv, option, capsys):
    from attnkit.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and f"argument {option}" in err and "must be at least" in err
