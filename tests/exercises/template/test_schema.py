"""Loading templates (``exercises.template.schema``): part ids and tolerances, checked on load with
file:line. (The fixtures of tests/fixtures/bad_templates/ are in test_bad_templates.py.)"""


import textwrap

import numpy as np
import pytest

from exercises.template.model import TemplateError
from exercises.variant.draw import make_variant
from tests.exercises.templates import inline, line_of, numeric


# --- part ids and tolerances ---------------------------------------------------------------------

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


# --- the names a text reads: checked once, on load, at the text's own line -------------------

TEXTS = """
    id: texts
    title: Texts
    objective: scaling
    kind: numeric
    parameters:
      d_k: {dist: choice, values: [4, 16]}
    derived:
      root: sqrt(d_k)
    prompt: |
      With $d_k = {{ d_k }}$:
      {% for i in range(2) %}{{ i }}{% endfor %} {{ zip([1], [2]) | list }}
      PROMPT
    parts:
      - {id: ans, answer: root, points: 1, prompt: "PART"}
    solution: >
      SOLUTION
"""


def _texts(prompt="{{ root }}", part="{{ ans }} of {{ answers.ans }}", solution="{{ givens }}"):
    return TEXTS.replace("PROMPT", prompt).replace("PART", part).replace("SOLUTION", solution)


def test_texts_reading_parameters_derived_values_part_ids_and_loop_names_load():
    variant = make_variant(inline(_texts()), 0)
    assert "01 [(1, 2)]" in variant.prompt()


@pytest.mark.parametrize("prompt, part, solution, where, key, name, hint", [
    ("{{ dk }}", "{{ ans }}", "x", "{{ dk }}", "prompt", "dk", "d_k"),
    ("{{ root }}", "{{ anss }}", "x", "prompt: \"{{ anss }}\"", "parts[0].prompt", "anss", "ans"),
    ("{{ root }}", "{{ ans }}", "{{ roots }}", "solution: >", "solution", "roots", "root"),
])
def test_an_unknown_name_in_a_text_is_one_load_error_at_its_line(prompt, part, solution, where,
                                                                 key, name, hint):
    source = _texts(prompt, part, solution)
    with pytest.raises(TemplateError) as caught:
        inline(source)
    # a folded text (>) is joined into one line: its first line is the one named
    line = line_of(source, where) + (1 if where.endswith(">") else 0)
    assert caught.value.errors == [
        f"inline.yaml:{line}: {key}: unknown name '{name}' in the text (a text can use the "
        f"parameters, the derived values and the part ids); did you mean '{hint}'?"]


def test_an_option_text_cannot_read_a_part_id_and_says_so():
    source = CHOICE_TOLERANCE.replace("TOP", "").replace("PART", "").replace(
        '{text: "b"}', '{text: "b"}\n          - "{{ pick }} again"')
    with pytest.raises(TemplateError) as caught:
        inline(source)
    assert caught.value.errors == [
        f"inline.yaml:{line_of(source, 'again')}: parts[0].options[2]: unknown name 'pick' in the "
        f"text (an option can use the parameters and the derived values)"]


def test_a_text_that_does_not_compile_is_a_load_error_at_its_line():
    source = _texts(prompt="{{ root | nosuchfilter }}")
    with pytest.raises(TemplateError) as caught:
        inline(source)
    assert caught.value.errors == [
        f"inline.yaml:{line_of(source, 'nosuchfilter')}: prompt: TemplateAssertionError: No filter "
        f"named 'nosuchfilter'."]


def test_a_broken_parameter_used_in_a_text_is_reported_once():
    source = _texts(prompt="{{ np }}").replace("  d_k: {dist", "  np: 3\n      d_k: {dist")
    with pytest.raises(TemplateError) as caught:
        inline(source)
    assert [p.split(": ")[1] for p in caught.value.errors] == ["parameters.np"]


def test_a_build_names_the_unknown_name_once_not_once_per_student(tmp_path, monkeypatch):
    from exercises.course.assignment import AssignmentError, load_assignment
    (tmp_path / "texts.yaml").write_text(textwrap.dedent(_texts(prompt="{{ dk }}")), encoding="utf-8")
    (tmp_path / "hw.yaml").write_text("id: hw\ntitle: HW\nsecret: {env: ATTNKIT_SECRET}\n"
                                      "problems:\n  - template: texts.yaml\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssignmentError) as caught:
        load_assignment(tmp_path / "hw.yaml")
    assert len(caught.value.errors) == 1
    assert caught.value.errors[0].startswith("texts.yaml:13: prompt: unknown name 'dk'")
