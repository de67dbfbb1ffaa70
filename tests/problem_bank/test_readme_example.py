"""problem_bank/README.md's examples are real: an instructor copying them gets valid templates."""

from __future__ import annotations

import re
from pathlib import Path

from exercises.bank import validate_template
from exercises.schema import TemplateError, load_template, parse_template
from exercises.yaml_lines import load_yaml

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
        assert err.problems == [shown]
    else:
        raise AssertionError("the unknown distribution was accepted")
