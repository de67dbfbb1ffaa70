"""Loading templates (``exercises.schema``): part ids and tolerances, checked on load with
file:line. (The fixtures of tests/fixtures/bad_templates/ are in test_bad_templates.py.)"""


import numpy as np
import pytest

from exercises.schema import TemplateError
from exercises.variant import make_variant
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
