"""The shared loading of instructors' files (``exercises.template.loading``): one YAML loader for
templates and assignment specs, whose bad syntax, empty file or non-mapping top level is one
'file:line: message'; and LoadErrors, the collector of 'file:line: key: message' lines.
(Rosters are CSV: they share only the way a file is shown in messages.)"""

from pathlib import Path

import pytest

from exercises.course.assignment import AssignmentError, load_assignment
from exercises.template.loading import (LoadErrors, describe, key_path, parse_yaml_file, require_mapping,
                                        shown_path)
from exercises.template.model import TemplateError
from exercises.template.schema import load_template, parse_template
from exercises.template.yaml_lines import LineDict, load_yaml
from formats.textfile import InputError

TEMPLATE = "a template is a mapping of keys (id, title, …)"
ASSIGNMENT = "an assignment is a mapping of keys (id, title, secret, problems, …)"
BAD_SYNTAX = "id: x\ntitle: [unclosed\n"
SYNTAX_MESSAGE = ("invalid YAML: expected ',' or ']', but got '<stream end>' "
                  "(while parsing a flow sequence)")


def _load(loader, error, text: str, tmp_path, monkeypatch) -> list[str]:
    monkeypatch.chdir(tmp_path)
    Path("f.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(error) as caught:
        loader("f.yaml")
    return caught.value.errors


LOADERS = [pytest.param(load_template, TemplateError, TEMPLATE, id="template"),
           pytest.param(load_assignment, AssignmentError, ASSIGNMENT, id="assignment")]


@pytest.mark.parametrize("loader, error, expected", LOADERS)
def test_a_syntax_error_is_one_problem_at_its_line(loader, error, expected, tmp_path, monkeypatch):
    assert _load(loader, error, BAD_SYNTAX, tmp_path, monkeypatch) == [f"f.yaml:3: {SYNTAX_MESSAGE}"]


@pytest.mark.parametrize("loader, error, expected", LOADERS)
@pytest.mark.parametrize("text, got", [("- id: x\n- id: y\n", "a list"), ("just text\n", "str 'just text'"),
                                       ("42\n", "int 42")], ids=["list", "text", "number"])
def test_a_top_level_that_is_not_a_mapping_is_one_problem_at_line_1(loader, error, expected, text, got,
                                                                  tmp_path, monkeypatch):
    assert _load(loader, error, text, tmp_path, monkeypatch) == [f"f.yaml:1: {expected}, got {got}"]


@pytest.mark.parametrize("loader, error, expected", LOADERS)
def test_an_empty_file_is_one_problem(loader, error, expected, tmp_path, monkeypatch):
    assert _load(loader, error, "# only a comment\n", tmp_path, monkeypatch) == ["f.yaml: the file is empty"]


def test_parse_yaml_file_raises_the_callers_error():
    class SpecError(InputError):
        pass

    with pytest.raises(SpecError) as caught:
        parse_yaml_file(BAD_SYNTAX, "spec.yaml", SpecError, "a spec is a mapping")
    assert caught.value.errors == [f"spec.yaml:3: {SYNTAX_MESSAGE}"]
    with pytest.raises(SpecError) as caught:
        parse_yaml_file("[1, 2]\n", "spec.yaml", SpecError, "a spec is a mapping")
    assert caught.value.errors == ["spec.yaml:1: a spec is a mapping, got a list"]
    data = parse_yaml_file("a: 1\nb: [2]\n", "spec.yaml", SpecError, "a spec is a mapping")
    assert isinstance(data, LineDict) and data == {"a": 1, "b": [2]} and data.line_of("b") == 2


def test_parse_template_refuses_data_that_is_not_a_mapping_like_the_loader():
    with pytest.raises(TemplateError) as caught:
        parse_template(load_yaml("- 1\n"), "inline.yaml")
    assert caught.value.errors == [f"inline.yaml:1: {TEMPLATE}, got a list"]
    with pytest.raises(TemplateError) as caught:
        require_mapping(None, "inline.yaml", TemplateError, TEMPLATE)
    assert caught.value.errors == [f"inline.yaml:1: {TEMPLATE}, got nothing"]


def test_load_problems_are_file_line_key_message():
    load = LoadErrors("t.yaml")
    load.error(4, "parts[0].answer", "required")
    load.error(0, "id", "no line known")
    load.error(2, "", "no key")
    data = load_yaml("points: many\ntitle: 3\nextra: 1\n")
    assert load.number(data, "points", "points", 1.0) == 1.0
    assert load.text(data, "title", "title") is None
    load.keys(data, {"points": "required", "title": "optional", "id": "required"}, "")
    assert load.errors == [
        "t.yaml:4: parts[0].answer: required",
        "t.yaml: id: no line known",
        "t.yaml:2: no key",
        "t.yaml:1: points: expected a number, got str 'many'",
        "t.yaml:2: title: expected text, got int 3",
        "t.yaml:3: extra: unknown key 'extra' (expected one of: points, title, id)",
        "t.yaml:1: id: required",
    ]


def test_key_path_and_describe():
    assert key_path("", "id") == "id"
    assert key_path("parts[0]", "answer") == "parts[0].answer"
    assert describe(load_yaml("a: 1\n")) == "a mapping"
    assert describe(load_yaml("- 1\n")) == "a list"
    assert describe(None) == "nothing"
    assert describe(2.5) == "float 2.5"


def test_shown_path_is_relative_to_the_working_folder_when_inside_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert shown_path(tmp_path / "sub" / "f.yaml") == str(Path("sub") / "f.yaml")
    outside = tmp_path.parent / "elsewhere.yaml"
    assert shown_path(outside) == str(outside)
