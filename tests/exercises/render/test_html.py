"""HTML for printed problem sets: MathML from the bank's LaTeX, safe Markdown, SVG heatmaps,
and a page that needs nothing from the network. Real markdown-it and latex2mathml, no mocks."""

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from exercises.course.bank import load_bank

from exercises.variant.draw import make_variant
from exercises.render.html import (answer_box, code_block, escape, heatmap_svg, markdown_to_html,
                                   math_to_html, page)

VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}
FORBIDDEN = ("<script src", "<link", "http://", "https://", "@import", "@font-face", "url(")


class TagBalance(HTMLParser):
    """Fails on an end tag that does not close the innermost open element."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open = []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes {self.open[-3:]}"
        self.open.pop()


def assert_balanced(fragment: str):
    checker = TagBalance()
    checker.feed(fragment)
    checker.close()
    assert checker.open == [], f"left open: {checker.open}"


def outside_math_and_code(fragment: str) -> str:
    return re.sub(r"<math\b.*?</math>|<code>.*?</code>", "", fragment, flags=re.S)


# --- Markdown and math ------------------------------------------------------------------------

def test_inline_and_block_math_become_mathml():
    out = markdown_to_html("Scores $S = QK^\\top$ here.\n\n$$\\frac{1}{\\sqrt{d_k}}$$\n")
    assert '<math display="inline">' in out and "<msup>" in out
    assert '<math display="block">' in out and "<mfrac>" in out and "<msqrt>" in out
    assert "$" not in out
    assert_balanced(out)


def test_double_dollar_inside_a_paragraph_is_display_math_without_a_div_in_p():
    out = markdown_to_html("For the first row:\n$$Z_{1} = 0.5(1) + 0.5(3) \\approx 2$$\nand so on.")
    assert '<math display="block">' in out and "<div" not in out
    assert_balanced(out)


def test_bmatrix_converts_to_a_table():
    out = markdown_to_html("$$A = \\begin{bmatrix} 1 & -2 \\\\ 0.5 & 3 \\end{bmatrix}$$")
    assert "<mtable>" in out and out.count("<mtr>") == 2 and out.count("<mtd>") == 4
    assert "&amp;" not in out and "math-text" not in out


def test_mathml_names_no_namespace_url():
    # HTML5 needs no xmlns on <math>, and a page must not mention any URL.
    assert "http" not in math_to_html("x^2") and "xmlns" not in math_to_html("x^2")


def test_pipe_table_becomes_a_table():
    out = markdown_to_html("| | a | b |\n|---|---:|---:|\n| **q** | 1 | −2 |\n")
    assert "<table>" in out and "<th" in out and "<td" in out and "<strong>q</strong>" in out
    assert_balanced(out)


def test_raw_html_is_escaped():
    out = markdown_to_html('<script>alert("x")</script>\n\nText <b onclick="x">bold</b>')
    assert "<script" not in out and "<b " not in out
    assert "&lt;script&gt;" in out


def test_tags_inside_math_text_are_escaped():
    # latex2mathml unescapes its own output, which would turn \text{<bos>} into a tag.
    out = markdown_to_html("$\\text{<bos> & <eos>} + a < b$")
    assert "<bos>" not in out and "&lt;bos&gt;" in out and "&amp;" in out and "&#x0003C;" in out
    assert_balanced(out)


def test_math_cannot_link_or_style():
    out = markdown_to_html("$\\href{javascript:alert(1)}{x} + \\style{background:url(x)}{y}$")
    assert "href" not in out and "javascript" not in out and "style" not in out


def test_dollar_in_code_stays_literal():
    out = markdown_to_html("Use `cost = $5 + $6` or\n\n```\nprint('$x$')\n```\n")
    assert "<code>cost = $5 + $6</code>" in out
    assert "print('$x$')" in out
    assert "<math" not in out


def test_images_are_not_fetched():
    out = markdown_to_html("![attention map](https://example.org/a.png)")
    assert "<img" not in out and "example.org" not in out and "attention map" in out


@pytest.mark.parametrize("latex", [
    "\\left( x",              # latex2mathml: ExtraLeftOrMissingRightError
    "\\begin{bmatrix} 1 & 2",  # MissingEndError
    "\\ensuremath{x}",         # unknown command, kept as "\ensuremath" text
])
def test_what_latex2mathml_cannot_convert_falls_back_to_text(latex):
    out = markdown_to_html(f"Here: ${latex}$.")
    assert '<span class="math-text">' in out and "<math" not in out
    assert "$" not in out and "\\" not in out


def test_fallback_text_is_readable_unicode():
    out = markdown_to_html("$\\sqrt{d_k} \\cdot \\left( x$")
    assert '<span class="math-text">√d_k · ( x</span>' in out


def test_a_math_span_longer_than_the_limit_is_shown_as_its_text():
    # latex2mathml's cost grows with the square of unclosed \text{ groups (0.07 s for 8 000
    # characters, 0.7 s for 32 000): 3 MB of them in one span would take hours to convert.
    from exercises.render.html import MAX_MATH
    latex = "\\text{<b>" * 300_000
    out = markdown_to_html(f"${latex}$")
    assert "<math" not in out and '<span class="math-text">' in out
    assert "<b>" not in out and out.count("\\text{&lt;b&gt;") == 300_000
    short = "\\text{" * 10 + "x"                                # within the limit: converted
    assert len(short) < MAX_MATH and "<math" in markdown_to_html(f"${short}$")


_OLD_TEXT_GROUP = re.compile(r"\\text\{((?:[^{}]|\{[^{}]*\})*)\}")   # what the scan replaces


def test_text_groups_are_unescaped_as_the_regex_did_in_linear_time():
    from exercises.render.html import _TEXT_ESCAPE, _unescape_text_groups
    rng = np.random.default_rng(1)
    pieces = ["\\text{", "{", "}", "a", "\\%", "\\_", " "]
    for _ in range(3000):
        latex = "".join(rng.choice(pieces, size=rng.integers(0, 12)))
        expected = _OLD_TEXT_GROUP.sub(lambda m: r"\text{" + _TEXT_ESCAPE.sub(r"\1", m[1]) + "}", latex)
        assert _unescape_text_groups(latex) == expected, latex
    # Unclosed groups, and groups that stop at a second level of braces, 2.4 MB of them.
    for unit in ("\\text{{x}", "\\text{a\\text{x}", "\\text{\\%"):
        latex = unit * (2_400_000 // len(unit))
        assert len(_unescape_text_groups(latex)) <= len(latex)


@pytest.mark.parametrize("latex, expected", [
    ("x = −3", "<mo>&#x02212;</mo>"),                    # `num`'s minus: an operator, not a letter
    ("\\arg\\max_j s_j", "<mo>arg</mo>"),                 # \arg is unknown to latex2mathml
    ("\\text{50\\% of } n", "<mtext>50%&#x000A0;of&#x000A0;</mtext>"),
    ("x \\in \\R^n", "&#x0211D;"),
])
def test_latex_rewritten_before_converting(latex, expected):
    out = math_to_html(latex)
    assert expected in out and "math-text" not in out


# --- the whole bank ---------------------------------------------------------------------------

BANK, _ = load_bank()


def variant_texts(variant):
    template = variant.template
    yield "prompt", variant.prompt("markdown")
    for part in template.parts:
        yield f"parts.{part.id}.prompt", variant.part_prompt(part)
        if getattr(part, "rubric", None):
            yield f"parts.{part.id}.rubric", variant.rubric_text(part)
    for part_id, options in variant.options.items():
        for i, option in enumerate(options):
            yield f"parts.{part_id}.options[{i}]", option["text"]
            yield f"parts.{part_id}.options[{i}].feedback", option["feedback"]
    yield "solution", variant.solution("markdown")


@pytest.mark.parametrize("template_id", sorted(BANK))
def test_every_bank_text_converts_to_mathml(template_id):
    fallbacks, dollars = [], []
    for seed in range(5):
        for where, text in variant_texts(make_variant(BANK[template_id], seed)):
            out = markdown_to_html(text)
            assert_balanced(out)
            fallbacks += [(seed, where, m) for m in re.findall(r'class="math-text[^"]*">([^<]*)', out)]
            if "$" in outside_math_and_code(out):
                dollars.append((seed, where))
    assert not dollars, f"raw $ left in {dollars[:5]}"
    assert not fallbacks, f"fell back to text: {fallbacks[:5]}"


# --- heatmap ----------------------------------------------------------------------------------

def test_heatmap_is_deterministic_with_one_rect_per_cell():
    m = np.random.default_rng(0).random((4, 5))
    svg = heatmap_svg(m, ["the", "cat", "sat", "<eos>"], list("abcde"), title="weights")
    assert svg == heatmap_svg(m.copy(), ["the", "cat", "sat", "<eos>"], list("abcde"), title="weights")
    assert svg.count("<rect") == 20
    assert f"{m[0, 0]:.2f}" in svg and "&lt;eos&gt;" in svg and "<title>weights</title>" in svg
    assert_balanced(svg)


def test_heatmap_masked_cells_show_minus_infinity():
    m = np.array([[0.3, -np.inf], [np.nan, -1.25]])
    svg = heatmap_svg(m)
    assert svg.count("−∞") == 1 and "NaN" in svg and "−1.25" in svg and "nan" not in svg
    assert svg.count('fill="#d9d9d9"') == 2  # grey and hatched, not the colour of a value


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (20, 20)])
def test_heatmap_shapes(shape):
    m = np.arange(np.prod(shape), dtype=float).reshape(shape)
    svg = heatmap_svg(m)
    assert svg.count("<rect") == m.size
    assert_balanced(svg)


def test_heatmap_takes_a_vector_as_one_row_and_rejects_bad_labels():
    assert heatmap_svg([1.0, 2.0, 3.0]).count("<rect") == 3
    with pytest.raises(ValueError):
        heatmap_svg(np.ones((2, 2)), row_labels=["only one"])
    with pytest.raises(ValueError):
        heatmap_svg(np.ones((2, 2, 2)))


def test_heatmap_of_values_whose_range_overflows_a_double_is_drawn():
    # 1e308 − (−1e308) is ∞ in floating point: the scale used to be NaN, and int(NaN) raised.
    m = np.array([[1e308, -1e308, 0, 1]] * 4)
    svg = heatmap_svg(m)
    fills = re.findall(r'<rect[^>]*fill="(#[0-9a-f]{6})"', svg)
    assert len(fills) == 16 and "#d9d9d9" not in fills           # every cell a colour of the scale
    assert fills[0] == "#08306b" and fills[1] == "#f7fbff"        # the largest darkest, the smallest lightest
    assert_balanced(svg)


@pytest.mark.parametrize("t", [float("nan"), -1.0, 2.0, float("inf"), -float("inf"), 0.0, 1.0, 0.5])
def test_colour_is_a_colour_of_the_scale_for_any_t(t):
    from exercises.render.html import _BLUES, _colour
    rgb = _colour(t)
    assert all(isinstance(x, int) and 0 <= x <= 255 for x in rgb)
    if not 0.0 < t < 1.0:
        assert rgb in (_BLUES[0], _BLUES[-1])


def test_heatmap_text_contrasts_with_its_cell():
    svg = heatmap_svg([[0.0, 1.0]])
    light, dark = re.findall(r'<rect[^>]*fill="(#[0-9a-f]{6})"[^>]*/><text[^>]*fill="(#[0-9a-f]{6})"', svg)
    assert light[1] == "#000000" and dark[1] == "#ffffff"


# --- page and helpers -------------------------------------------------------------------------

def test_page_is_self_contained_and_balanced():
    body = (markdown_to_html("# Problem 1\n\nCompute $\\text{softmax}(x)$.\n\n| a | b |\n|---|---|\n| 1 | 2 |")
            + answer_box(4) + '<div class="page-break"></div>'
            + heatmap_svg([[1.0, -np.inf]]) + code_block("if a < b and c > d:\n    x = '$'"))
    doc = page("Set <A> & answers", body)
    for forbidden in FORBIDDEN:
        assert forbidden not in doc, forbidden
    assert "<script" not in doc
    assert doc.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in doc
    assert "<title>Set &lt;A&gt; &amp; answers</title>" in doc
    for css in ("@page", ".page-break", ".answer-box", ".math-text"):
        assert css in doc
    assert_balanced(doc)


def test_helpers_escape():
    assert escape('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    assert code_block("<b>$x$</b>") == "<pre><code>&lt;b&gt;$x$&lt;/b&gt;</code></pre>\n"
    box = answer_box(3)
    assert box.count('class="answer-line"') == 3 and 'class="answer-box"' in box
    with pytest.raises(ValueError):
        answer_box(0)


def test_math_is_drawn_first_with_the_math_font_debian_installs():
    """Headless Chromium on Debian stretches a tall matrix's brackets only with a MATH font it
    has: DejaVu Math TeX Gyre (fonts-dejavu-extra) comes first, the others after it."""
    css = re.search(r"<style>(.*)</style>", page("t", "<p>x</p>"), re.S)[1]
    stack = re.search(r"(?m)^math \{ font-family: ([^;]+);", css)[1]
    fonts = [f.strip().strip('"') for f in stack.split(",")]
    assert fonts[0] == "DejaVu Math TeX Gyre"
    assert fonts[-1] == "math" and {"STIX Two Math", "Cambria Math"} <= set(fonts)


def test_a_heatmap_numbers_rows_and_columns_from_0_as_numpy_and_the_prompts_do():
    from exercises.render.html import heatmap_svg
    svg = heatmap_svg(np.arange(6.0).reshape(2, 3) * 1.5)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert texts == ["0", "1", "2", "0", "0.00", "1.50", "3.00", "1", "4.50", "6.00", "7.50"]
