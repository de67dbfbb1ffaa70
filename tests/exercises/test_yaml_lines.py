"""YAML with line numbers: only the safe subset, and no aliases (a billion laughs is refused
quickly, and a template that uses an alias is a TemplateError at its line)."""

import textwrap

import pytest

from exercises.schema import TemplateError, load_template
from exercises.yaml_lines import YAMLError, load_yaml
from tests.exercises.templates import fast


# --- size limits ---------------------------------------------------------------------------------

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
