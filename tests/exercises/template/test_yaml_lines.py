"""YAML with line numbers: only the safe subset, and no aliases (a billion laughs is refused
quickly, and a template that uses an alias is a TemplateError at its line)."""

import textwrap

import pytest

from exercises.template.model import TemplateError
from exercises.template.schema import load_template
from exercises.template.yaml_lines import YAMLError, load_yaml
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


# --- an unclosed quote is reported where it opened ---------------------------------------------

@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_unclosed_quote_is_reported_at_the_line_it_opened_not_at_the_end(quote):
    text = f"id: q\ntitle: {quote}Unclosed\nkind: numeric\nprompt: hi\nparts: []\n"
    with pytest.raises(YAMLError) as caught:
        load_yaml(text)
    assert caught.value.line == 2          # PyYAML's own mark is the end of the file (line 6)
    assert caught.value.message == (f"invalid YAML: the quote {quote} opened on this line is "
                                    f"never closed (YAML found the end of the file first)")


def test_an_unclosed_quote_closed_by_a_later_one_is_reported_where_it_opened(tmp_path):
    text = 'id: q\ntitle: "Unclosed\nkind: numeric\nprompt: "hi"\nparts: []\n'
    with pytest.raises(YAMLError) as caught:
        load_yaml(text)
    # YAML reads "Unclosed\nkind: numeric\nprompt: " as one text and fails after it, on line 4
    assert caught.value.line == 2
    assert caught.value.message.startswith('invalid YAML: the quote " opened on this line is not '
                                           'closed on it: YAML reads on to the next ", on line 4, '
                                           'and then fails there: ')
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TemplateError, match=r'^q\.yaml:2: invalid YAML: the quote " opened'):
        load_template(path, display="q.yaml")


def test_a_quoted_text_over_several_lines_is_still_fine_and_other_errors_keep_their_line():
    assert load_yaml('title: "one\n  two"\nkind: numeric\n') == {"title": "one two", "kind": "numeric"}
    with pytest.raises(YAMLError) as caught:
        load_yaml('title: "one\n  two"\nparameters: {x: 1\nkind: numeric\n')
    assert caught.value.line == 4 and "flow mapping" in caught.value.message
