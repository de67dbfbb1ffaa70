"""Rendering template text: Jinja2 in a sandbox, so text shows values and never changes
them, writes files, draws random numbers or grows without bound; a prompt that tries is a
TemplateError naming file:line."""


import numpy as np
import pytest

from exercises.template.texts import RenderError, format_points, render
from exercises.template.model import TemplateError
from exercises.variant.draw import make_variant
from tests.exercises.templates import fast, inline, line_of


# --- the Jinja sandbox ---------------------------------------------------------------------------

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


def test_a_text_that_reads_no_name_is_rendered_once(monkeypatch):
    from exercises.template import texts as module
    calls = []
    real = module._rendered
    monkeypatch.setattr(module, "_rendered", lambda *a: calls.append(a) or real(*a))
    module._constant_text.cache_clear()
    source = "Constant {{ 3 * 2 }} text {% for i in range(2) %}{{ i }}{% endfor %}, once.\n"
    first = render(source, {"Q": 1.0})
    assert render(source, {"Q": 2.0}) == first == "Constant 6 text 01, once."
    assert [c[1] for c in calls].count(source) == 1
    # a text reading a value is rendered with the values each time
    assert render("{{ Q }}", {"Q": 1.0}) == "1.0" and render("{{ Q }}", {"Q": 2.0}) == "2.0"


def test_a_constant_text_that_fails_fails_every_time():
    for _ in range(2):
        with pytest.raises(RenderError, match="ZeroDivisionError"):
            render("{{ 1 / 0 }} and no name", _context())


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


# --- points as people write them -----------------------------------------------------------------

@pytest.mark.parametrize("points, text", [
    (2, "2"), (2.0, "2"), (2.5, "2.5"), (0.25, "0.25"), (0.1 + 0.2, "0.3"), (5 / 3, "5/3"),
    (10 / 3, "10/3"), (1 / 6, "1/6"), (3 * (1 / 3), "1"), (1 / 13, "0.08"), (1.234567, "1.23"),
    (0, "0"),
])
def test_points_are_shown_whole_as_short_decimals_or_as_fractions(points, text):
    assert format_points(points) == text
