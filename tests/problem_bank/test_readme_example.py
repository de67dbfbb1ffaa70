"""problem_bank/README.md's examples are real: an instructor copying them gets valid templates."""

from __future__ import annotations

import re
from pathlib import Path

from exercises.course.bank import validate_template
from exercises.template.model import TemplateError
from exercises.template.schema import load_template, parse_template
from exercises.template.yaml_lines import load_yaml

import pytest

README = Path(__file__).resolve().parents[2] / "problem_bank" / "README.md"


def _yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_complete_example_validates_over_50_seeds(tmp_path):
    complete = next(b for b in _yaml_blocks() if b.startswith("id: "))
    path = tmp_path / "sdpa_mini.yaml"
    path.write_text(complete, encoding="utf-8")
    template = load_template(path)
    assert (template.id, template.kind, template.points) == ("sdpa_mini", "numeric", 2)
    report = validate_template(template, seeds=50)
    assert report.failures == [] and report.valid == 50


def test_the_example_error_message_matches_what_the_engine_says(tmp_path):
    shown = re.search(r"(problem_bank/my_family\.yaml:14: parameters\.d_k: .*)",
                      README.read_text(encoding="utf-8"))[1]
    lines = ["id: my_family", "title: t", "objective: scaling", "kind: numeric", "prompt: p",
             "parts:", "  - {id: a, answer: d_k, points: 1}", "", "", "", "", "", "parameters:",
             "  d_k: {dist: randn}"]
    data = load_yaml("\n".join(lines) + "\n")
    try:
        parse_template(data, "problem_bank/my_family.yaml")
    except TemplateError as err:
        assert err.errors == [shown]
    else:
        raise AssertionError("the unknown distribution was accepted")


# --- the rubric examples ----------------------------------------------------------------------

_FREE_HEAD = ("id: r\ntitle: t\nobjective: contextual\nkind: free_response\nprompt: p\n"
              "parameters:\n  word: {dist: choice, values: [bank]}\n  delta: {dist: choice, values: [-1]}\n"
              "derived:\n  cues: '\"river\"'\n")


def test_the_rubric_example_loads_as_described():
    block = next(b for b in _yaml_blocks() if b.startswith("parts:\n  - id: static"))
    rubric = parse_template(load_yaml(_FREE_HEAD + block), "r.yaml").parts[0].rubric
    assert [(i.id, i.points) for i in rubric.items] == [
        ("same_vector", 1), ("context", 1), ("claims_different", -1)]
    assert rubric.item("same_vector").note and (rubric.floor, rubric.ceiling) == (0, 2)


def test_the_deduction_example_starts_full():
    block = next(b for b in _yaml_blocks() if b.startswith("    rubric:\n      start: full"))
    part = "parts:\n  - id: d\n    points: 2\n" + block
    rubric = parse_template(load_yaml(_FREE_HEAD + part), "r.yaml").parts[0].rubric
    assert rubric.start == 2 and rubric.score(["no_units"]) == 1.5


# --- the assignment example, its overrides, and `bank:` -----------------------------------------

BANK = README.parent


def _assignment_block() -> str:
    return next(b for b in _yaml_blocks() if b.startswith("id: attention-hw2"))


def test_the_assignment_example_loads_with_the_overrides_it_describes(tmp_path):
    from exercises.course.assignment import load_assignment
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "my_own.yaml").write_text(
        (BANK / "multihead_shapes.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "hw2.yaml").write_text(_assignment_block(), encoding="utf-8")
    assignment = load_assignment(tmp_path / "hw2.yaml")
    problems = {p.id: p for p in assignment.problems}
    assert list(problems) == ["why_sqrt_dk", "attention_weights", "implement_masked_attention",
                              "bottleneck_free_response", "multihead_shapes"]
    original = load_template(BANK / "why_sqrt_dk.yaml")
    scaled = problems["why_sqrt_dk"].template
    assert scaled.points == 5
    assert [p.points / scaled.points for p in scaled.parts] == \
        pytest.approx([p.points / original.points for p in original.parts])
    weights = {p.id: p for p in problems["attention_weights"].template.parts}["weights"]
    assert (weights.points, weights.atol) == (3, 0.01)
    assert problems["attention_weights"].title == "Attention weights"
    implement = problems["implement_masked_attention"].template
    assert {f.family: f.points for f in implement.tests}["masked"] == 3 and implement.rtol == 1e-4
    static = problems["bottleneck_free_response"].template.parts[0]
    assert static.id == "static" and static.rubric.item("same_vector").points == 2


def test_a_bank_key_replaces_the_built_in_bank_as_the_readme_says(tmp_path, monkeypatch):
    from exercises.course.assignment import AssignmentError, load_assignment
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_bank").mkdir()
    (tmp_path / "my_bank" / "mine.yaml").write_text(
        (BANK / "why_sqrt_dk.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    spec = tmp_path / "hw.yaml"
    spec.write_text("id: hw\ntitle: HW\nsecret: {env: X}\nbank: my_bank\nproblems:\n"
                    "  - template: why_sqrt_dk\n  - template: sdpa_four_tokens\n", encoding="utf-8")
    with pytest.raises(AssignmentError) as caught:
        load_assignment(spec)
    (problem,) = caught.value.errors
    quoted = re.search(r"\(`(unknown template 'sdpa_four_tokens' \(not an id in\s+the bank "
                       r"my_bank), …\)`\)", README.read_text(encoding="utf-8"))[1]
    assert " ".join(quoted.split()) in problem
    spec.write_text(spec.read_text().replace("template: sdpa_four_tokens",
                                             f"template: {BANK / 'sdpa_four_tokens.yaml'}"))
    assert [p.id for p in load_assignment(spec).problems] == ["why_sqrt_dk", "sdpa_four_tokens"]
