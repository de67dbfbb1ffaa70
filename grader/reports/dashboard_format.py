"""The small pieces of HTML every section of the dashboard (``grader.reports.dashboard``) is
made of: a figure rounded for the eye (its exact value kept for a script), a count with its
noun, key figures as a list, a share as a bar."""

from __future__ import annotations

from exercises.render.html import escape

from grader.store.grades import score_text

# Colours: bars ≥ 3:1 against white.
BAR, OTHER_BAR = "#2166ac", "#6b6b6b"


def points_text(x) -> str:
    return score_text(float(x))


def number_text(x, decimals: int = 2) -> str:
    return "–" if x is None else f"{x:.{decimals}f}"


def p_value_text(x) -> str:
    if x is None:
        return "–"
    return f"{x:.1e}" if 0 < x < 0.001 else f"{x:.3f}"


def count_of(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def number_cell(x, decimals: int = 2) -> str:
    """A table cell holding a figure: shown rounded, with the exact value kept in
    ``data-value`` (what a script or a test reads)."""
    value = "" if x is None else repr(float(x))
    return f'<td class="num" data-value="{value}">{number_text(x, decimals)}</td>'


def figure_list(pairs) -> str:
    """Key figures as a description list: (name, value) pairs."""
    return ('<dl class="figures">' + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>"
                                            for k, v in pairs) + "</dl>")


def share_bar(share: float | None, colour: str = BAR, width: int = 140) -> str:
    """A share 0…1 as a horizontal bar and its percentage as text (what a screen reader reads;
    the bar itself is hidden from it)."""
    if share is None:
        return "–"
    share = min(max(float(share), 0.0), 1.0)
    length = round(share * (width - 1), 1)
    return (f'<span class="bar"><svg aria-hidden="true" width="{width}" height="16" viewBox="0 0 {width} 16">'
            f'<rect x="0.5" y="2.5" width="{width - 1}" height="12" fill="#ffffff" stroke="#767676"/>'
            f'<rect x="0.5" y="2.5" width="{length}" height="12" fill="{colour}"/>'
            f'</svg><span class="share">{share:.0%}</span></span>')
