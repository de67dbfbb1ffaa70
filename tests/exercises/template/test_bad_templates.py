"""Every malformed template in tests/fixtures/bad_templates/ fails with one exact message.

Each fixture has exactly one flaw. Most are caught when the file is loaded
(``load_template`` → TemplateError, one ``file:line: key: message`` line); two load fine and
fail only when a variant is made (an unsatisfiable constraint, a misspelt name in the
prompt); and two are fine alone but share an id, which the bank refuses.

Messages are compared in full, with the file shown as ``bad_templates/NAME``, so a change of
wording, line or key is a visible, reviewed change.
"""

from collections import Counter
from pathlib import Path

import pytest

from exercises.course.bank import BankError, load_bank
from exercises.template.model import TemplateError
from exercises.template.schema import load_template
from exercises.variant.evaluation import VariantError
from exercises.variant.draw import make_variant

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BAD = FIXTURES / "bad_templates"

_KEYS = ("id, title, objective, kind, prompt, parameters, derived, constraints, givens, parts, "
         "function, reference, output, tests, misconceptions, rtol, atol, solution, sampling, "
         "tags, notes, follow_credit, claims, model")

# file → the one problem load_template reports.
LOAD_ERRORS = {
    "bad_yaml_syntax.yaml":
        "bad_templates/bad_yaml_syntax.yaml:7: invalid YAML: expected ',' or '}', but got ':' "
        "(while parsing a flow mapping)",
    "key_given_twice.yaml":
        "bad_templates/key_given_twice.yaml:5: kind: key given twice (first on line 4)",
    "unknown_top_level_key.yaml":
        f"bad_templates/unknown_top_level_key.yaml:10: soluton: unknown key 'soluton' "
        f"(expected one of: {_KEYS}); did you mean 'solution'?",
    # The README promises this exact message, suggestion included.
    "unknown_distribution.yaml":
        "bad_templates/unknown_distribution.yaml:7: parameters.d_k: unknown distribution 'randn' "
        "(expected one of: integers, int_matrix, choice, uniform, normal, sentence, permutation); "
        "did you mean 'normal'?",
    "unknown_reference_function.yaml":
        "bad_templates/unknown_reference_function.yaml:8: derived.steps: unknown function "
        "'scaled_dot_attention' (not a built-in and not a reference function in solutions); "
        "did you mean 'scaled_dot_product_attention'?",
    "name_used_before_definition.yaml":
        "bad_templates/name_used_before_definition.yaml:6: parameters.Q.shape[1]: unknown name "
        "'width' in 'width' (names must be defined above this line)",
    "unknown_misconception.yaml":
        "bad_templates/unknown_misconception.yaml:14: parts[0].misconceptions[0]: unknown "
        "misconception 'sdpa_no_scaling' (see 'attnkit misconceptions'); did you mean "
        "'sdpa_no_scale'?",
    "misconception_not_called.yaml":
        "bad_templates/misconception_not_called.yaml:12: parts[0].misconceptions[0]: "
        "'sdpa_no_scale' is a twin of scaled_dot_product_attention(), which this template "
        "never calls",
    "missing_points.yaml":
        "bad_templates/missing_points.yaml:9: parts[0].points: required",
    "points_not_a_number.yaml":
        "bad_templates/points_not_a_number.yaml:11: parts[0].points: expected a number, "
        "got str 'lots'",
    "sampling_not_a_number.yaml":
        "bad_templates/sampling_not_a_number.yaml:8: sampling.max_attempts: expected a whole "
        "number, got str 'lots'",
    "invalid_id.yaml":
        "bad_templates/invalid_id.yaml:1: id: 'SDPA-Mini' is not a valid id "
        "(lower-case letters, digits, _)",
    "unknown_objective.yaml":
        "bad_templates/unknown_objective.yaml:3: objective: unknown objective 'transformers' "
        "(expected one of: contextual, bahdanau, self_attention, scaling, multihead_masking, bert)",
    "unknown_kind.yaml":
        "bad_templates/unknown_kind.yaml:4: kind: unknown kind 'essay' "
        "(expected one of: numeric, implement, choice, free_response)",
    "choice_two_correct.yaml":
        "bad_templates/choice_two_correct.yaml:9: parts[0].options: exactly one option must "
        "have 'correct: true' (found 2)",
    "numeric_without_answer.yaml":
        "bad_templates/numeric_without_answer.yaml:9: parts[0].answer: required for a numeric part",
    "implement_without_tests.yaml":
        "bad_templates/implement_without_tests.yaml:1: tests: required for an implement problem",
    "argument_not_in_signature.yaml":
        "bad_templates/argument_not_in_signature.yaml:13: tests[0].args.mask: attention(Q, K, V) "
        "has no parameter 'mask'",
    "dunder_attribute.yaml":
        "bad_templates/dunder_attribute.yaml:8: derived.cls: attribute '__class__' is not "
        "allowed in expression 'x.__class__'",
    "reserved_name.yaml":
        "bad_templates/reserved_name.yaml:6: parameters.softmax: 'softmax' is reserved "
        "(a built-in, a reference function or a name the notebook defines)",
    "notebook_name.yaml":
        "bad_templates/notebook_name.yaml:6: parameters.answered: 'answered' is reserved "
        "(a built-in, a reference function or a name the notebook defines)",
    "implement_without_reference_code.yaml":
        "bad_templates/implement_without_reference_code.yaml:14: solution: an implement problem "
        "needs its reference code, def attention(...), in a ```python block of its solution "
        "(the instructor notebook runs it)",
    "unknown_check.yaml":
        "bad_templates/unknown_check.yaml:12: parts[0].checks[0]: unknown check 'rows_sum_to_1' "
        "(expected one of: finite, rows_sum_to_one, nonnegative, probabilities, masked_zero, "
        "lower_triangular, integer_valued)",
    "empty.yaml":
        "bad_templates/empty.yaml: the file is empty",
    "not_utf8.yaml":
        "bad_templates/not_utf8.yaml: not UTF-8 text (byte 23)",
}

# file → (exception, message) from make_variant(template, seed=0): these load fine.
VARIANT_ERRORS = {
    "unsatisfiable_constraint.yaml": (
        VariantError,
        "bad_templates/unsatisfiable_constraint.yaml: unsatisfiable_constraint: no valid variant "
        "in 20 draws for seed 0; most common rejections: constraint 'x > 10' (x is at most 3) (20×)"),
}
# The misspelt name in a prompt is found when the template loads, at the line of the text
# where it is used (the prompt starts on line 7, {{ dk }} is on its second line).
LOAD_ERRORS["undefined_name_in_prompt.yaml"] = (
    "bad_templates/undefined_name_in_prompt.yaml:9: prompt: unknown name 'dk' in the text (a "
    "text can use the parameters, the derived values and the part ids); did you mean 'd_k'?")

DUPLICATES = ("duplicate_id_a.yaml", "duplicate_id_b.yaml")
DUPLICATE_ERROR = ("bad_templates/duplicate_id_b.yaml:1: id: duplicate id 'duplicate_id' "
                   "(also in bad_templates/duplicate_id_a.yaml:1)")


def _load(name: str):
    return load_template(BAD / name, display=f"bad_templates/{name}")


def test_every_fixture_has_an_expected_error():
    on_disk = {p.name for p in BAD.glob("*.yaml")}
    expected = set(LOAD_ERRORS) | set(VARIANT_ERRORS) | set(DUPLICATES)
    assert on_disk == expected
    assert len(on_disk) >= 14


@pytest.mark.parametrize("name", sorted(LOAD_ERRORS))
def test_load_error_is_exact(name):
    with pytest.raises(TemplateError) as caught:
        _load(name)
    assert caught.value.errors == [LOAD_ERRORS[name]]
    assert str(caught.value) == LOAD_ERRORS[name]


@pytest.mark.parametrize("name", sorted(VARIANT_ERRORS))
def test_variant_error_is_exact(name):
    template = _load(name)  # loads: the flaw only shows when a variant is made
    error, message = VARIANT_ERRORS[name]
    with pytest.raises(error) as caught:
        make_variant(template, 0)
    assert str(caught.value) == message


def test_unsatisfiable_constraint_counts_every_rejected_draw():
    template = _load("unsatisfiable_constraint.yaml")
    assert template.max_attempts == 20
    with pytest.raises(VariantError) as caught:
        make_variant(template, 5)
    assert caught.value.rejections == Counter({"constraint 'x > 10' (x is at most 3)": 20})
    assert "for seed 5;" in str(caught.value)


def test_an_undefined_prompt_name_is_one_load_error_not_one_per_variant(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    templates, problems = load_bank(["bad_templates/undefined_name_in_prompt.yaml"], keep_going=True)
    assert templates == {}
    assert problems == [LOAD_ERRORS["undefined_name_in_prompt.yaml"]]


def test_duplicate_ids_are_refused_by_the_bank(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    for name in DUPLICATES:  # each one alone is a valid template
        assert make_variant(load_template(BAD / name), 0).template.id == "duplicate_id"
    with pytest.raises(BankError) as caught:
        load_bank([f"bad_templates/{n}" for n in DUPLICATES])
    assert caught.value.errors == [DUPLICATE_ERROR]


def test_duplicate_ids_keep_going_keeps_the_first(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    templates, problems = load_bank([f"bad_templates/{n}" for n in DUPLICATES], keep_going=True)
    assert problems == [DUPLICATE_ERROR]
    assert list(templates) == ["duplicate_id"]
    assert templates["duplicate_id"].title.endswith("(a)")


def test_the_whole_corpus_as_a_bank_reports_every_load_error(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    templates, problems = load_bank(["bad_templates"], keep_going=True)
    assert sorted(templates) == ["duplicate_id", "unsatisfiable_constraint"]
    failing_files = sorted(p.split(":")[0] for p in problems)
    assert failing_files == sorted([f"bad_templates/{n}" for n in LOAD_ERRORS]
                                   + ["bad_templates/duplicate_id_b.yaml"])


def test_bank_error_without_keep_going_lists_all_problems(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    with pytest.raises(BankError) as caught:
        load_bank(["bad_templates"])
    assert DUPLICATE_ERROR in caught.value.errors
    assert LOAD_ERRORS["unknown_kind.yaml"] in caught.value.errors
    assert str(caught.value) == "\n".join(caught.value.errors)
