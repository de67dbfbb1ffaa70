"""Self-contained HTML for printed problem sets and answer keys: no JavaScript, no CDN.

- ``markdown_to_html``: the ``markdown`` rendering of a text (CommonMark, pipe tables,
  ``$…$``/``$$…$$``) as an HTML fragment; math becomes MathML, which every current browser
  draws on its own. What latex2mathml cannot convert is shown as the Unicode text of
  ``latex_to_text`` in ``<span class="math-text">``, so a page never shows raw ``$…$``.
- ``heatmap_svg``: an attention matrix as an inline SVG with the numbers in the cells.
- ``page``: a full HTML5 document with print CSS (A4, ``.page-break``, ``.answer-box``).
- ``escape``, ``answer_box``, ``code_block``: small pieces for callers building a page.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from xml.etree.ElementTree import Element, tostring

import numpy as np
from latex2mathml.converter import convert_to_element
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from exercises.template.texts import format_number, latex_to_text


def escape(text) -> str:
    """``text`` safe as HTML element content and as a quoted attribute value."""
    return html.escape(str(text), quote=True)


def code_block(code: str) -> str:
    return f"<pre><code>{escape(code)}</code></pre>\n"


def answer_box(lines: int) -> str:
    """Blank ruled space for a handwritten answer. Ruled with borders, not a background,
    because browsers leave backgrounds out when printing unless asked."""
    if int(lines) < 1:
        raise ValueError(f"an answer box needs at least one line, not {lines}")
    ruled = '<div class="answer-line"></div>' * int(lines)
    return f'<div class="answer-box">{ruled}</div>\n'


# --------------------------------------------------------------------------- math


# LaTeX that latex2mathml reads differently from TeX, rewritten before converting.
_REWRITES = (
    ("−", "-"),                        # the Unicode minus of `num` would become an <mi> letter
    (r"\arg", r"\operatorname{arg}"),  # unknown to latex2mathml (it knows \argmax only)
    (r"\R", r"\mathbb{R}"), (r"\N", r"\mathbb{N}"),
)
_TEXT_ESCAPE = re.compile(r"\\([%$&#_{}])")  # \% inside \text{…} is kept with its backslash
_TEXT_OPEN = "\\text{"
# Beyond this many characters a math span is shown as its text, not converted: latex2mathml's
# cost grows with the square of some inputs (unclosed \text{ groups: 0.07 s for 8 000
# characters, 0.7 s for 32 000), so a student's 64 KB in one $…$ could take a minute, and
# megabytes hours. Within the limit a span costs at most a tenth of a second; the limit leaves
# room for an answer vector of 400 numbers as a bmatrix.
MAX_MATH = 8000
# MathML attributes that would link, style or load something: a printed page needs none.
_DROPPED_ATTRIBUTES = {"href", "style", "src", "xmlns"}


def _prepare_latex(latex: str) -> str:
    for old, new in _REWRITES:
        boundary = r"(?![A-Za-z])" if old[-1].isalpha() else ""
        latex = re.sub(re.escape(old) + boundary, lambda _m, new=new: new, latex)
    return _unescape_text_groups(latex)


def _text_group_end(latex: str, start: int) -> int:
    """Where the ``\\text{…}`` whose content starts at ``start`` closes (the index of its
    ``}``; one level of inner braces allowed), or -1. Stops at the first brace that cannot
    belong to it, so every character is looked at a bounded number of times."""
    depth, i = 0, start
    while i < len(latex):
        c = latex[i]
        if c == "{":
            if depth:
                return -1        # a second level: not a text group
            depth = 1
        elif c == "}":
            if not depth:
                return i
            depth = 0
        i += 1
    return -1


def _unescape_text_groups(latex: str) -> str:
    """Each ``\\text{…}`` with its ``\\%``-style escapes undone (latex2mathml keeps the
    backslash). A scan, not a backtracking regex: an unclosed group is skipped past its
    opening, and the scan goes on from there, so the cost is linear in ``latex``."""
    out, pos = [], 0
    while (found := latex.find(_TEXT_OPEN, pos)) >= 0:
        start = found + len(_TEXT_OPEN)
        end = _text_group_end(latex, start)
        if end < 0:
            out.append(latex[pos:start])
            pos = start
            continue
        out += [latex[pos:start], _TEXT_ESCAPE.sub(r"\1", latex[start:end]), "}"]
        pos = end + 1
    out.append(latex[pos:])
    return "".join(out)


class _Unsupported(ValueError):
    pass


def _clean(element: Element) -> None:
    """Drop unsafe attributes; a command latex2mathml does not know stays as ``\\name``
    text in the tree, which is a conversion failure, not something to print."""
    for node in element.iter():
        for name in list(node.attrib):
            if name in _DROPPED_ATTRIBUTES or name.startswith("on"):
                del node.attrib[name]
        if "\\" in (node.text or ""):
            raise _Unsupported(node.text)


# latex2mathml writes symbols as the text "&#x2212;" and unescapes its whole output, which
# would also let a "<" from \text{<bos>} through as a tag. Escaping ourselves and then
# restoring only numeric character references keeps its symbols and escapes everything else.
_ESCAPED_REFERENCE = re.compile(r"&amp;(#x[0-9A-Fa-f]+;|#[0-9]+;)")


def _serialise(element: Element) -> str:
    return _ESCAPED_REFERENCE.sub(r"&\1", tostring(element, encoding="unicode"))


# Spans up to this long are cached: the bank's own, repeated on every page; a student's long
# one is converted each time rather than kept.
_CACHED = 256


def math_to_html(latex: str, display: bool = False) -> str:
    """One math expression as a ``<math>`` element, or as Unicode text when it cannot be (or
    is longer than ``MAX_MATH``: latex2mathml's cost grows faster than its input)."""
    if len(latex) > MAX_MATH:
        return _as_text(escape(latex), display)
    return _cached_math(latex, display) if len(latex) <= _CACHED else _converted(latex, display)


@lru_cache(maxsize=4096)  # a bank repeats the same $\sqrt{d_k}$ many times
def _cached_math(latex: str, display: bool) -> str:
    return _converted(latex, display)


def _converted(latex: str, display: bool) -> str:
    try:
        element = convert_to_element(_prepare_latex(latex), xmlns="",
                                     display="block" if display else "inline")
        _clean(element)
        return _serialise(element)
    except Exception:  # noqa: BLE001 — latex2mathml raises many unrelated error types
        return _as_text(escape(latex_to_text(f"${latex}$").strip()), display)


def _as_text(shown_html: str, display: bool) -> str:
    kind = "math-text math-display" if display else "math-text"
    return f'<span class="{kind}">{shown_html}</span>'


# ----------------------------------------------------------------------- markdown


def _math_rule(display: bool, block: bool = False):
    def rule(_renderer, tokens, idx, _options, _env):
        rendered = math_to_html(tokens[idx].content.strip(), display)
        return f'<div class="math-block">{rendered}</div>\n' if block else rendered
    return rule


def _image_as_text(renderer, tokens, idx, options, env):
    alt = renderer.renderInlineAsText(tokens[idx].children or [], options, env)
    return f'<span class="image-omitted">[image: {escape(alt)}]</span>'


def _markdown() -> MarkdownIt:
    # html=False: a tag written in a template is shown as text, never passed through.
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    # An image would be fetched from wherever it points: a self-contained page shows its alt text.
    md.add_render_rule("image", _image_as_text)
    # double_inline: solutions write $$…$$ on a line inside a paragraph, too.
    md.use(dollarmath_plugin, double_inline=True, allow_labels=False)
    md.add_render_rule("math_inline", _math_rule(display=False))
    md.add_render_rule("math_inline_double", _math_rule(display=True))
    md.add_render_rule("math_block", _math_rule(display=True, block=True))
    return md


_MD = _markdown()


def markdown_to_html(text: str) -> str:
    """Markdown with ``$…$`` math (the ``markdown`` render format) as an HTML fragment."""
    return _MD.render(text or "")


# ------------------------------------------------------------------------ heatmap


# ColorBrewer "Blues": light to dark blue, even steps in lightness, prints well in grey.
_BLUES = ((247, 251, 255), (222, 235, 247), (198, 219, 239), (158, 202, 225), (107, 174, 214),
          (66, 146, 198), (33, 113, 181), (8, 81, 156), (8, 48, 107))
_CHAR = 7          # px per character at the label and cell font size, for layout only
_CELL_H = 26


def _colour(t: float) -> tuple[int, int, int]:
    """The scale at t in 0…1, interpolated between its neighbouring stops; any other t
    (below, above, NaN) is the nearest end, so no value can stop a page being drawn."""
    t = min(max(float(t), 0.0), 1.0) if t == t else 0.0
    k = min(int(t * (len(_BLUES) - 1)), len(_BLUES) - 2)
    f = t * (len(_BLUES) - 1) - k
    return tuple(round(a + (b - a) * f) for a, b in zip(_BLUES[k], _BLUES[k + 1]))


def _ink(rgb) -> str:
    """Black text on light cells, white on dark ones (relative luminance, roughly)."""
    luminance = (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255
    return "#000000" if luminance > 0.5 else "#ffffff"


def _cell_text(x: float) -> str:
    return "NaN" if np.isnan(x) else format_number(x, 2)


def _scale(m: np.ndarray) -> np.ndarray:
    """Each finite value's place between the smallest and the largest, 0…1 (0 where not
    finite). Halved before subtracting: the range of two finite doubles (1e308 − −1e308)
    can overflow to ∞, and ∞/∞ is NaN; half of it cannot."""
    finite = np.isfinite(m)
    if not finite.any():
        return np.zeros_like(m)
    low, high = m[finite].min(), m[finite].max()
    if low == high:
        return np.zeros_like(m)
    with np.errstate(all="ignore"):      # the non-finite cells, replaced below
        span = high - low
        t = (m - low) / span if np.isfinite(span) else (m / 2 - low / 2) / (high / 2 - low / 2)
    return np.where(finite, np.clip(np.nan_to_num(t), 0.0, 1.0), 0.0)


def _scale_between(m: np.ndarray, low: float, high: float) -> np.ndarray:
    """Each finite value's place between ``low`` and ``high``, clipped to 0…1 (0 where not finite)."""
    with np.errstate(all="ignore"):
        t = (m - low) / (high - low)
    return np.where(np.isfinite(m), np.clip(np.nan_to_num(t), 0.0, 1.0), 0.0)


def _labels(labels, n: int, axis: str) -> list[str]:
    labels = [str(i) for i in range(n)] if labels is None else [str(x) for x in labels]   # as NumPy indexes
    if len(labels) != n:
        raise ValueError(f"{len(labels)} {axis} labels for {n} {axis}s")
    return labels


def _hatch(left: int, top: int, w: int) -> str:
    """Diagonal lines every 8 px across one cell, cut to its edges (no clipPath: its id
    would clash between two heatmaps on one page)."""
    lines = []
    for d in range(-_CELL_H + 4, w, 8):  # the line from (d, bottom) to (d + H, top)
        s0, s1 = max(0.0, -d / _CELL_H), min(1.0, (w - d) / _CELL_H)
        x0, y0 = left + d + s0 * _CELL_H, top + _CELL_H * (1 - s0)
        x1, y1 = left + d + s1 * _CELL_H, top + _CELL_H * (1 - s1)
        lines.append(f'<line x1="{x0:g}" y1="{y0:g}" x2="{x1:g}" y2="{y1:g}"/>')
    return f'<g stroke="#a6a6a6" stroke-width="1">{"".join(lines)}</g>'


def _cell(x: float, t: float, left: int, top: int, w: int) -> str:
    if np.isfinite(x):
        rgb = _colour(t)
        fill, ink, hatch = "#{:02x}{:02x}{:02x}".format(*rgb), _ink(rgb), ""
    else:  # −∞ (masked), +∞ or NaN: grey and hatched, so it never reads as a small value
        fill, ink, hatch = "#d9d9d9", "#000000", _hatch(left, top, w)
    return (f'<rect x="{left}" y="{top}" width="{w}" height="{_CELL_H}" fill="{fill}" '
            f'stroke="#ffffff"/>{hatch}'
            f'<text x="{left + w // 2}" y="{top + _CELL_H // 2 + 4}" fill="{ink}">'
            f'{escape(_cell_text(x))}</text>')


def heatmap_svg(matrix, row_labels=None, col_labels=None, title: str = "", value_range=None) -> str:
    """A 2-D array as an inline SVG heatmap: numbers to 2 decimals in the cells, rows and
    columns labelled (0, 1, … by default: NumPy's indices, as the prompts number them). The
    colours span the matrix's own smallest to largest value, or ``value_range`` (low, high):
    attention weights on 0…1, say, so two maps' colours compare. The same input always gives
    the same bytes."""
    m = np.asarray(matrix, dtype=float)
    m = m.reshape(1, -1) if m.ndim < 2 else m
    if m.ndim != 2 or m.size == 0:
        raise ValueError(f"a heatmap needs a non-empty 2-D array, not shape {np.shape(matrix)}")
    rows, cols = _labels(row_labels, m.shape[0], "row"), _labels(col_labels, m.shape[1], "column")
    longest = max(len(_cell_text(x)) for x in m.flat)
    w = max(44, _CHAR * longest + 10)
    label_w = _CHAR * max(map(len, rows)) + 10
    slanted = _CHAR * max(map(len, cols)) > w - 4  # long column labels are drawn at 45°
    head = (_CHAR * max(map(len, cols)) * 3 // 4 + 14) if slanted else 20
    title_h = 22 if title else 0
    left0, top0 = label_w, title_h + head
    width, height = left0 + w * m.shape[1] + (head if slanted else 4), top0 + _CELL_H * m.shape[0] + 4
    t = _scale(m) if value_range is None else _scale_between(m, *value_range)
    # No xmlns: inline in HTML the parser knows <svg>, and the page names no URL at all.
    parts = [f'<svg class="heatmap" role="img" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'font-family="sans-serif" font-size="11" text-anchor="middle">']
    if title:
        parts.append(f'<title>{escape(title)}</title>'
                     f'<text x="{width // 2}" y="15" font-size="13" font-weight="bold">{escape(title)}</text>')
    for j, label in enumerate(cols):
        x = left0 + j * w + w // 2
        if slanted:
            parts.append(f'<text x="{x}" y="{top0 - 6}" text-anchor="start" '
                         f'transform="rotate(-45 {x} {top0 - 6})">{escape(label)}</text>')
        else:
            parts.append(f'<text x="{x}" y="{top0 - 6}">{escape(label)}</text>')
    for i, label in enumerate(rows):
        top = top0 + i * _CELL_H
        parts.append(f'<text x="{left0 - 6}" y="{top + _CELL_H // 2 + 4}" text-anchor="end">'
                     f'{escape(label)}</text>')
        parts.extend(_cell(m[i, j], t[i, j], left0 + j * w, top, w) for j in range(m.shape[1]))
    parts.append("</svg>")
    return "".join(parts)


# --------------------------------------------------------------------------- page

# First in the math font stack: DejaVu Math TeX Gyre, which Debian and Ubuntu install with
# fonts-dejavu-extra. Without an OpenType MATH font Chromium (headless too, printing to PDF)
# draws the brackets of a tall matrix at text size. STIX Two Math (macOS), Cambria Math
# (Windows) and Latin Modern Math follow, then the browser's own.

PAGE_CSS = """
@page { size: A4; margin: 18mm 16mm 20mm; }
html { font-family: "Charter", "Georgia", "Times New Roman", serif; font-size: 11pt;
       line-height: 1.45; color: #000; background: #fff; }
body { max-width: 46em; margin: 1.5em auto; padding: 0 1em; }
h1, h2, h3 { font-family: "Helvetica Neue", "Arial", sans-serif; line-height: 1.2;
             break-after: avoid; page-break-after: avoid; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; } h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #888; padding: 0.2em 0.55em; }
td { font-variant-numeric: tabular-nums; }
thead th { background: #f0f0f0; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.6em 0.8em;
      white-space: pre-wrap; font-size: 0.9em; }
code { font-family: "DejaVu Sans Mono", "Consolas", "Menlo", monospace; }
math { font-family: "DejaVu Math TeX Gyre", "STIX Two Math", "Cambria Math", "Latin Modern Math",
       math; font-size: 1.05em; }
math[display="block"], .math-block { margin: 0.5em 0; overflow-x: auto; overflow-y: hidden; }
@media print { math[display="block"], .math-block { overflow: visible; } }
.math-text { font-style: italic; white-space: pre-wrap; }
.math-display { display: block; margin: 0.5em 0 0.5em 2em; }
svg.heatmap { max-width: 100%; height: auto; display: block; margin: 0.6em 0; }
.answer-box { border: 1px solid #444; padding: 0 0.6em 0.6em; margin: 0.6em 0 1.2em; }
.answer-line { height: 2.2em; border-bottom: 1px solid #aaa; }
.page-break { break-before: page; page-break-before: always; }
table, pre, svg, .answer-box, .math-block, math[display="block"] {
  break-inside: avoid; page-break-inside: avoid; }
@media print {
  body { max-width: none; margin: 0; padding: 0; }
  thead th, pre { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def page(title: str, body_html: str, lang: str = "en") -> str:
    """A whole HTML5 document around ``body_html``, with its CSS inline and nothing
    fetched from anywhere: it opens and prints the same offline."""
    return (f'<!DOCTYPE html>\n<html lang="{escape(lang)}">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{escape(title)}</title>\n<style>{PAGE_CSS}</style>\n</head>\n'
            f'<body>\n{body_html}\n</body>\n</html>\n')
