"""The instructors' dashboard: the whole class on one self-contained page
(``attnkit report --dashboard`` → ``reports/dashboard.html``).

What an instructor looks at after grading, in one place: the score distribution, the item
analysis (``grader.reports.item_analysis``) with its dubious items flagged, how often each diagnosed
misconception cost a part, the members of each pool of templates side by side with their
fairness test, the answer forensics (``grader.forensics.flags``) and, for the by-hand matrix parts,
the commonest wrong matrix beside the expected one.

The page is for instructors only: it names students and repeats forensic evidence, so it is
written under ``reports/`` and never among the students' ``feedback/`` pages. It opens from
disk and makes no request at all: CSS inline, charts as inline SVG, no script, no link out of
the page (only its own ``#`` anchors), and a Content-Security-Policy that would block anything
else. Everything a student or a roster controls (names, ids, answers, messages) is escaped
with ``exercises.render.html.escape``. Like every report, the page is a function of the gradebook and
the key alone: drawing it twice gives the same bytes.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from solutions import MISCONCEPTIONS

from exercises.render.html import PAGE_CSS
from exercises.render.html import escape, heatmap_svg
from formats.compare import within
from formats.deadline import Deadline
from formats.key_shape import assignment_id, assignment_title, entry_for, gradings, head_problems, problem_record
from formats.serialize import decode_names
from formats.textfile import write_atomic

from grader.reports.feedback_page import as_array, decoded_answer, labels_for, markdown_html, word_lists
from grader.forensics.flags import class_forensics, flags_of
from grader.store.gradebook import Gradebook, omitted_reason
from grader.store.grades import GRADED, class_grades, score_text
from grader.reports.item_analysis import HIGH_FACILITY, LOW_DISCRIMINATION, LOW_FACILITY, wrong_answers
from grader.reports.summary import summary_json

MATRIX_PARTS = 4          # by-hand matrix parts drawn (those most often wrong)
MAX_SIDE = 8              # rows and columns of a matrix drawn; a larger one is cut to its corner
TOP_FLAGS = 40            # forensic flags listed (the least likely to be coincidence first)
MESSAGE_CHARS = 300       # of a grader's message quoted beside a matrix

# The CSP the page carries: nothing may load, connect or run; inline styles only.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

# Beside the feedback pages' CSS (exercises.render.html): a wider page, and the marks of this one.
# Colours: text contrast ≥ 7:1 on white or on the flag's tint; bars ≥ 3:1 against white.
DASHBOARD_CSS = """
body.dashboard { max-width: 76em; }
.dashboard table { font-size: 0.92em; }
.dashboard th[scope=row] { text-align: left; font-weight: normal; }
.dashboard td.num { text-align: right; }
.dashboard .problem-row th, .dashboard .problem-row td { font-weight: bold; background: #f7f7f7; }
.dashboard .part-row th { padding-left: 1.6em; }
.dashboard tr.flagged th, .dashboard tr.flagged td { background: #fff1e0; }
.dashboard .flag { color: #7a1600; font-weight: bold; }
.dashboard ul.flags { margin: 0; padding-left: 1.1em; color: #7a1600; }
.dashboard .warning { border: 2px solid #a31500; background: #fff1e0; color: #3d0800;
                      padding: 0.4em 0.9em; margin: 0.8em 0; }
.dashboard .warning strong { color: #a31500; }
.dashboard dl.figures { display: flex; flex-wrap: wrap; gap: 0.4em 1.8em; margin: 0.6em 0; }
.dashboard dl.figures div { display: flex; gap: 0.4em; }
.dashboard dl.figures dt { font-weight: bold; }
.dashboard dl.figures dd { margin: 0; font-variant-numeric: tabular-nums; }
.dashboard nav ul { display: flex; flex-wrap: wrap; gap: 0.3em 1.4em; list-style: none; padding: 0; }
.dashboard a { color: #0b4f8a; }
.dashboard .pair { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.dashboard .pair figure { margin: 0; }
.dashboard figcaption { font-size: 0.9em; font-weight: bold; }
.dashboard .quote { border-left: 3px solid #767676; padding-left: 0.7em; color: #222; }
.dashboard .quote p { margin: 0.2em 0; }
.dashboard section.part { border-top: 1px solid #ccc; margin-top: 1em; }
.dashboard .muted { color: #444; }
.dashboard .bar { white-space: nowrap; }
.dashboard .bar svg { vertical-align: middle; margin-right: 0.4em; }
.dashboard td.evidence { max-width: 34em; }
.dashboard table.flags code, .dashboard table.flag-kinds code { white-space: nowrap; }
"""

_FOREGROUND, _BAR, _OTHER_BAR, _MEAN, _MEDIAN = "#000000", "#2166ac", "#6b6b6b", "#a31500", "#000000"

_KINDS = {"other-variant": "the value is a classmate's expected answer (or a classmate's mistake), "
                           "not the student's own",
          "shared-wrong": "the same wrong numbers as a classmate's, on a different variant",
          "similar-code": "implement code much like a classmate's"}


# ------------------------------------------------------------------------------- entry points


def dashboard_html(gradebook: Gradebook, key: dict, deadline: Deadline | None = None,
                   grades=None, found=None, summary: dict | None = None) -> str:
    """The dashboard of the class as one HTML document (see the module's docstring).
    ``grades``, ``found`` (``class_forensics``) and ``summary``: what the caller has already."""
    grades = class_grades(gradebook, key, deadline) if grades is None else grades
    found = class_forensics(gradebook, key, grades, deadline) if found is None else found
    if summary is None:
        summary = summary_json(gradebook, key, deadline, grades=grades, flags=flags_of(found))
    sections = [("distribution", "Score distribution", lambda: _distribution(summary)),
                ("items", "Item analysis", lambda: _items(summary)),
                ("misconceptions", "Misconceptions per problem", lambda: _misconceptions(summary)),
                ("pools", "Pools of templates", lambda: _pools(summary)),
                ("forensics", "Answer forensics", lambda: _forensics(found, summary)),
                ("matrices", "The commonest wrong matrices",
                 lambda: _matrices(gradebook, key, grades, summary))]
    title = f"{assignment_title(key, default=assignment_id(key))} — instructors' dashboard"
    body = [_header(title, summary), _navigation(sections)]
    body += [_section(anchor, heading, make) for anchor, heading, make in sections]
    return _document(title, "\n".join(body))


def write_dashboard(gradebook: Gradebook, key: dict, path: str | Path, deadline: Deadline | None = None,
                    **known) -> Path:
    """``path`` (reports/dashboard.html), written atomically: an interrupted report never
    leaves half a page where the last whole one was. ``known``: as ``dashboard_html``'s."""
    path = Path(path)
    write_atomic(path, dashboard_html(gradebook, key, deadline, **known).encode("utf-8", errors="replace"))
    return path


# ------------------------------------------------------------------------------- page frame


def _document(title: str, body: str) -> str:
    """A whole HTML5 document: the feedback pages' CSS and this page's, inline; a CSP that
    forbids every request, so nothing slipped into the page could load or send anything."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="robots" content="noindex">\n<title>{escape(title)}</title>\n'
            f'<style>{PAGE_CSS}{DASHBOARD_CSS}</style>\n</head>\n'
            f'<body class="dashboard">\n<main>\n{body}\n</main>\n</body>\n</html>\n')


def _header(title: str, summary: dict) -> str:
    """The title, who the page is for, and how many submissions it is about."""
    c = summary["counts"]
    waiting = (f" {_counted(c['manual_parts'], 'part')} still to grade by hand count 0 in the totals "
               "and are left out of the item analysis." if c["manual_parts"] else "")
    return (f"<h1>{escape(title)}</h1>"
            f'<p class="warning"><strong>For instructors only.</strong> This page names students and '
            f"shows forensic evidence: keep it out of anything students can see.</p>"
            f"<p>{_counted(c['students'], 'student')}: {c['graded']} graded, {c['missing']} missing, "
            f"{c['error']} with errors; {_points(summary['assignment']['points'])} points.{waiting}</p>")


def _navigation(sections) -> str:
    """Links to the page's own sections (the only links it has)."""
    items = "".join(f'<li><a href="#{anchor}">{escape(heading)}</a></li>' for anchor, heading, _ in sections)
    return f'<nav aria-label="Sections"><ul>{items}</ul></nav>'


def _section(anchor: str, heading: str, make) -> str:
    """One section; one that cannot be drawn says so and costs the page nothing else."""
    try:
        content = make()
    except Exception as err:  # noqa: BLE001 — one section must not cost the instructor the page
        content = f"<p><em>This section could not be drawn ({escape(type(err).__name__)}: {escape(err)}).</em></p>"
    return f'<section id="{anchor}" aria-labelledby="{anchor}-h"><h2 id="{anchor}-h">{escape(heading)}</h2>{content}</section>'


# ------------------------------------------------------------------------------- numbers


def _points(x) -> str:
    return score_text(float(x))


def _number(x, decimals: int = 2) -> str:
    return "–" if x is None else f"{x:.{decimals}f}"


def _p_value(x) -> str:
    if x is None:
        return "–"
    return f"{x:.1e}" if 0 < x < 0.001 else f"{x:.3f}"


def _counted(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _cell(x, decimals: int = 2) -> str:
    """A table cell holding a figure: shown rounded, with the exact value kept in
    ``data-value`` (what a script or a test reads)."""
    value = "" if x is None else repr(float(x))
    return f'<td class="num" data-value="{value}">{_number(x, decimals)}</td>'


def _figures(pairs) -> str:
    """Key figures as a description list: (name, value) pairs."""
    return ('<dl class="figures">' + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>"
                                            for k, v in pairs) + "</dl>")


# ------------------------------------------------------------------------------- 1. distribution


def _graded_totals(summary: dict) -> list[float]:
    return [float(s["total"]) for s in summary["students"] if s["status"] == GRADED]


def _bin_width(top: float) -> float:
    """A round bin width (1, 2, 2.5 or 5 times a power of ten) giving at most 15 bins."""
    if top <= 0:
        return 1.0
    rough = top / 15
    power = 10 ** math.floor(math.log10(rough))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= rough)


def _bins(totals: list[float], max_points: float) -> list[tuple[float, float, int]]:
    """(from, to, count) over 0 … the assignment's points; the last bin holds its top."""
    top = max([max_points, *totals, 0.0])
    width = _bin_width(top)
    n = max(1, math.ceil(top / width - 1e-9))
    counts = Counter(min(int(t // width), n - 1) for t in totals if t >= 0)
    return [(i * width, (i + 1) * width, counts[i]) for i in range(n)]


def _distribution(summary: dict) -> str:
    """The graded students' totals: figures, a histogram and the histogram as a table."""
    totals = _graded_totals(summary)
    if not totals:
        return "<p>No graded submission yet.</p>"
    max_points = float(summary["assignment"]["points"])
    mean, median = summary["totals"]["mean"], summary["totals"]["median"]
    sd = statistics.stdev(totals) if len(totals) > 1 else None
    figures = _figures([("Graded", str(len(totals))), ("Mean", _number(mean)), ("Median", _number(median)),
                        ("SD", _number(sd)), ("Lowest", _points(min(totals))), ("Highest", _points(max(totals))),
                        ("Out of", _points(max_points))])
    bins = _bins(totals, max_points)
    rows = "".join(f'<tr><th scope="row">{_points(lo)} – {_points(hi)}</th><td class="num">{n}</td></tr>'
                   for lo, hi, n in bins)
    table = ("<details><summary>The histogram as a table</summary><table><thead><tr><th scope=\"col\">Total"
             f"</th><th scope=\"col\">Students</th></tr></thead><tbody>{rows}</tbody></table></details>")
    return figures + _histogram_svg(bins, mean, median, sd, len(totals)) + table


def _histogram_svg(bins, mean, median, sd, n: int) -> str:
    """The bins as bars, with the mean and the median marked; <title> and <desc> say it in words."""
    width, height, left, right, top, bottom = 720, 280, 44, 16, 44, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    highest = max(c for _, _, c in bins) or 1
    lo, hi = bins[0][0], bins[-1][1]

    def x(value):
        return left + (value - lo) / (hi - lo) * plot_w

    bar_w = plot_w / len(bins)
    parts = [f'<svg class="chart" role="img" aria-labelledby="hist-title hist-desc" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             '<title id="hist-title">Score distribution of the graded students</title>',
             f'<desc id="hist-desc">{n} graded students; mean {_number(mean)}, median {_number(median)}, '
             f'SD {_number(sd)}. Students per total: '
             + "; ".join(f"{_points(a)} to {_points(b)}: {c}" for a, b, c in bins) + ".</desc>"]
    for i, (a, b, c) in enumerate(bins):
        h = c / highest * plot_h
        bx = left + i * bar_w
        if c:
            parts.append(f'<rect x="{bx + 1:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" '
                         f'height="{h:.1f}" fill="{_BAR}"/>')
            inside = h >= 20            # a tall bar has its count inside, clear of the mean's line
            parts.append(f'<text x="{bx + bar_w / 2:.1f}" y="{top + plot_h - h + (15 if inside else -4):.1f}" '
                         f'text-anchor="middle" fill="{"#ffffff" if inside else _FOREGROUND}">{c}</text>')
    step = 1 if len(bins) <= 12 else 2
    for i in range(0, len(bins) + 1, step):
        edge = lo + i * (hi - lo) / len(bins)
        parts.append(f'<text x="{x(edge):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                     f'fill="{_FOREGROUND}">{_points(edge)}</text>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
                 f'stroke="{_FOREGROUND}"/>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle" '
                 f'fill="{_FOREGROUND}">total points</text>')
    parts.append(f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" fill="{_FOREGROUND}" '
                 f'transform="rotate(-90 12 {top + plot_h / 2})">students</text>')
    # the mean's and the median's labels above the bars, each on the side away from the other
    marks = [(mean, _MEAN, "", "mean"), (median, _MEDIAN, "5 3", "median")]
    for i, (value, colour, dash, label) in enumerate(marks):
        if value is None:
            continue
        other = marks[1 - i][0]
        left_side = other is not None and (value < other or (value == other and i == 0))
        parts.append(f'<line x1="{x(value):.1f}" y1="{top - 12}" x2="{x(value):.1f}" y2="{top + plot_h}" '
                     f'stroke="{colour}" stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        parts.append(f'<text x="{x(value) + (-4 if left_side else 4):.1f}" y="{top - 16}" '
                     f'text-anchor="{"end" if left_side else "start"}" fill="{colour}" '
                     f'font-weight="bold">{label} {_number(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------- 2. item analysis


def _items(summary: dict) -> str:
    """α and its companions, then a row per problem followed by its parts; dubious items
    marked in the row and with the flags' own words."""
    items = summary.get("item_analysis")
    if not items or items["students"] < 2:
        return "<p>Item statistics need at least two graded submissions.</p>"
    a = items["assignment"]
    alpha = _number(a["alpha"]) + ("" if a["se"] is None else f" ± {_number(a['se'])} (SE)")
    figures = _figures([("Cronbach's α", alpha), ("Error ratio", _number(a["error_ratio"])),
                        ("SEM", "–" if a["sem"] is None else f"{_number(a['sem'])} points"),
                        ("Items", str(a["items"])), ("Students", str(items["students"])),
                        ("Dubious items", str(items["flagged"]))])
    rows = []
    for problem in items["problems"]:
        rows.append(_item_row(problem, "problem-row"))
        rows += [_item_row(p, "part-row") for p in items["parts"] if p["problem"] == problem["problem"]]
    table = ('<table class="items"><caption>Per problem (bold) and per part: facility, SD (as shares of the '
             "item's points), discrimination (item–rest correlation) and discriminative efficiency</caption>"
             "<thead><tr>" + "".join(f'<th scope="col">{h}</th>' for h in
                                     ("Item", "Points", "n", "Facility", "SD", "Discrimination",
                                      "Efficiency", "Flags")) + f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    legend = (f"<p class=\"muted\">An item is flagged as dubious when its facility is below {LOW_FACILITY:g} or "
              f"above {HIGH_FACILITY:g}, or its discrimination is below {LOW_DISCRIMINATION:g} (Moodle's quiz "
              "statistics).</p>")
    waiting = ""
    if items.get("waiting"):
        names = ", ".join(f"{w['problem']}/{w['part']}{_member(w)}" for w in items["waiting"])
        waiting = f"<p>Left out until graded by hand: {escape(names)}.</p>"
    return figures + table + legend + waiting


def _member(x: dict) -> str:
    """" (template)" for an item or part of one pool member, else ""."""
    return f" ({x['template']})" if x.get("template") else ""


def _item_row(x: dict, kind: str) -> str:
    name = (x["problem"] if x["part"] is None else x["part"]) + _member(x)
    flagged = bool(x["flags"])
    mark = '<span class="flag" aria-hidden="true">⚠ </span>' if flagged else ""
    flags = ('<ul class="flags">' + "".join(f"<li>{escape(f)}</li>" for f in x["flags"]) + "</ul>"
             if flagged else "")
    where = escape(x["problem"] + ("" if x["part"] is None else "/" + x["part"]) + _member(x))
    return (f'<tr class="{kind}{" flagged" if flagged else ""}" data-item="{where}">'
            f'<th scope="row">{mark}{escape(name)}</th><td class="num">{_points(x["max_score"])}</td>'
            f'<td class="num">{x["n"]}</td>{_cell(x["facility"])}{_cell(x["sd"])}'
            f'{_cell(x["discrimination"])}{_cell(x["efficiency"])}'
            f'<td>{"<span class=flag>dubious:</span>" if flagged else ""}{flags}</td></tr>')


# ------------------------------------------------------------------------------- 3. misconceptions


def _misconceptions(summary: dict) -> str:
    """Per problem, a table of its wrong parts: each misconception's share of the wrong
    answers as a bar, and the share no misconception explains."""
    data = summary["misconceptions_by_part"]
    titles = {p["id"]: p.get("title", p["id"]) for p in summary["problems"]}
    problems = list(dict.fromkeys(d["problem"] for d in data))
    out = []
    for pid in problems:
        parts = [d for d in data if d["problem"] == pid and d["wrong"]]
        if not parts:
            continue
        bodies = "".join(_misconception_rows(d) for d in parts)
        out.append(f"<h3>{escape(titles.get(pid, pid))} <small>({escape(pid)})</small></h3>"
                   '<table class="misconceptions"><thead><tr><th scope="col">Part</th>'
                   '<th scope="col">Wrong</th><th scope="col">Misconception</th><th scope="col">Students</th>'
                   '<th scope="col">Share of the wrong answers</th></tr></thead>' + bodies + "</table>")
    if not out:
        return "<p>No graded part was answered wrong.</p>"
    return ("<p class=\"muted\">A part counts as wrong for a graded student who earned less than its full "
            "points, a grader's hand grade or override counted (parts waiting for a hand grade are left out); "
            "the wrong matrices below count the same. Grey: wrong answers no misconception explains.</p>"
            + "".join(out))


def _misconception_rows(d: dict) -> str:
    """One part's rows: its misconceptions, then what none of them explains."""
    rows = [(f"<code>{escape(m['code'])}</code>" + (f"<br><small>{escape(m['summary'])}</small>"
                                                     if m.get("summary") else ""),
             m["count"], m["share_of_wrong"], _BAR) for m in d["misconceptions"]]
    unexplained = d["wrong"] - d["explained"]
    if unexplained:
        rows.append(("<em>no misconception named</em>", unexplained, unexplained / d["wrong"], _OTHER_BAR))
    head = (f'<th scope="rowgroup" rowspan="{len(rows)}">{escape(d["part"] + _member(d))}</th>'
            f'<td class="num" rowspan="{len(rows)}">{d["wrong"]}</td>')
    cells = [f'<td>{what}</td><td class="num">{count}</td><td>{_bar(share, colour)}</td>'
             for what, count, share, colour in rows]
    return "<tbody>" + "".join(f"<tr>{head if i == 0 else ''}{c}</tr>" for i, c in enumerate(cells)) + "</tbody>"


def _bar(share: float | None, colour: str = _BAR, width: int = 140) -> str:
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


# ------------------------------------------------------------------------------- 4. pools


def _pools(summary: dict) -> str:
    """Each pool's members side by side, and its fairness test; a flagged test as a warning."""
    pools = summary.get("pools") or []
    if not pools:
        return "<p>No pools: every problem is one template for the whole class.</p>"
    return "".join(_pool(p) for p in pools)


def _pool(pool: dict) -> str:
    members = pool.get("members", [])
    fairness = pool.get("fairness") or {}
    rows = "".join(
        f'<tr{" class=flagged" if m.get("template") == fairness.get("lowest") and fairness.get("flag") else ""}>'
        f'<th scope="row"><code>{escape(m.get("template", ""))}</code></th><td>{escape(m.get("title", ""))}</td>'
        f'<td class="num">{m.get("students", 0)}</td><td class="num">{m.get("graded", 0)}</td>'
        f'{_cell(m.get("mean"))}{_cell(m.get("sd"))}{_cell(m.get("facility"))}{_cell(m.get("discrimination"))}'
        f'<td>{_bar(m.get("facility"))}</td></tr>' for m in members)
    table = ('<table class="pool"><thead><tr>' + "".join(
        f'<th scope="col">{h}</th>' for h in ("Template", "Title", "Students", "Graded", "Mean", "SD",
                                              "Facility", "Discrimination", "Facility (bar)"))
             + f"</tr></thead><tbody>{rows}</tbody></table>")
    return (f"<h3>Problem {escape(pool.get('problem', ''))}: {escape(pool.get('title', ''))} "
            f"<small>({_counted(len(members), 'template')})</small></h3>" + _fairness(fairness) + table)


def _fairness(f: dict) -> str:
    if not f:
        return "<p>No fairness test for this pool.</p>"
    test = (f"{escape(f.get('test', 'test'))}: statistic {_number(f.get('statistic'))}"
            + ("" if f.get("df") is None else f", df {escape(f['df'])}") + f", p = {_p_value(f.get('p_value'))}"
            + ("" if not f.get("lowest") else f"; lowest: <code>{escape(f['lowest'])}</code>"))
    message = escape(f.get("message", ""))
    if f.get("flag"):
        return (f'<div class="warning fairness"><p><strong>⚠ Fairness warning:</strong> {message}</p>'
                f"<p>{test}</p></div>")
    return f"<p>Fairness: {message} <span class=\"muted\">({test})</span></p>"


# ------------------------------------------------------------------------------- 5. forensics


def _forensics(result, summary: dict) -> str:
    """``grader.forensics.flags``' flags (``result``, or the exception it raised): how many of each
    kind, then the least likely to be coincidence. Names and evidence are the students' text:
    escaped."""
    if isinstance(result, Exception):
        raise result
    flags = result["flags"]
    intro = (f"<p class=\"muted\">Over {_counted(result['students'], 'student')}: answers that are a "
             "classmate's, not the student's own (attnkit forensics). Evidence to look at, not a verdict.</p>")
    if not flags:
        return intro + "<p>No answer was flagged.</p>"
    kinds = Counter(f["kind"] for f in flags)
    students = {k: len({f["student"] for f in flags if f["kind"] == k}) for k in kinds}
    counts = "".join(f'<tr><th scope="row"><code>{escape(k)}</code></th><td class="num">{n}</td>'
                     f'<td class="num">{students[k]}</td><td>{escape(_KINDS.get(k, ""))}</td></tr>'
                     for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    names = {s["id"]: s["name"] for s in summary["students"]}
    cases = _cases(flags)
    top = cases[:TOP_FLAGS]
    rows = "".join(_case_row(c, names) for c in top)
    more = (f"<p>… and {_counted(len(cases) - len(top), 'more case')} (attnkit forensics --json).</p>"
            if len(cases) > len(top) else "")
    return (intro + '<table class="flag-kinds"><thead><tr><th scope="col">Kind</th><th scope="col">Flags</th>'
            f'<th scope="col">Students</th><th scope="col">What it means</th></tr></thead><tbody>{counts}</tbody></table>'
            f"<h3>The {_counted(len(top), 'case')} least likely to be coincidence</h3>"
            "<p class=\"muted\">A case is one student's flags of one kind with the same classmates; "
            "sorted by the smallest p_coincidence among its flags.</p>"
            '<table class="flags"><thead><tr>' + "".join(
                f'<th scope="col">{h}</th>' for h in ("Student", "Name", "Kind", "With", "Parts",
                                                      "p (coincidence)", "Evidence (the strongest flag)"))
            + f"</tr></thead><tbody>{rows}</tbody></table>" + more)


def _partners(f: dict) -> tuple[str, ...]:
    partners = f.get("with") or []
    return tuple(map(str, partners if isinstance(partners, (list, tuple)) else [partners]))


def _cases(flags: list[dict]) -> list[list[dict]]:
    """The flags grouped by (student, kind, classmates), each group's flags by p_coincidence,
    the groups by their smallest p_coincidence (then by how many parts they hold)."""
    groups: dict[tuple, list[dict]] = {}
    for f in flags:
        groups.setdefault((f["student"], f["kind"], _partners(f)), []).append(f)
    cases = [sorted(g, key=lambda f: (f["p_coincidence"], f["problem"], f["part"])) for g in groups.values()]
    return sorted(cases, key=lambda g: (g[0]["p_coincidence"], -len(g), g[0]["student"], g[0]["kind"]))


def _case_row(case: list[dict], names: dict) -> str:
    first = case[0]
    parts = ", ".join(f"{f['problem']}/{f['part']}" for f in case[:6]) + (", …" if len(case) > 6 else "")
    return (f'<tr class="forensic-flag"><th scope="row">{escape(first["student"])}</th>'
            f'<td>{escape(names.get(first["student"], ""))}</td><td><code>{escape(first["kind"])}</code></td>'
            f'<td>{escape(", ".join(_partners(first)))}</td>'
            f'<td>{len(case)}: {escape(parts)}</td><td class="num">{_p_value(first["p_coincidence"])}</td>'
            f'<td class="evidence">{escape(first.get("evidence", ""))}{_follow_note(case)}</td></tr>')


def _follow_note(case: list[dict]) -> str:
    """The follow-through parts that rest on a case's answers, named (``forensics.follow_through_note``)."""
    from grader.forensics.flags import follow_through_note
    notes = dict.fromkeys(n for n in map(follow_through_note, case) if n)
    return "".join(f'<br><span class="follow-through">{escape(n)}</span>' for n in notes)


# ------------------------------------------------------------------------------- 6. wrong matrices


@dataclass(frozen=True)
class Mistake:
    """The commonest mistake on one matrix part: what it is, who made it, and one of them."""

    problem: str
    part: str
    label: str                    # the misconception's code, or the shape of the error
    named: bool                   # a diagnosed misconception (not just the error's shape)
    students: tuple[str, ...]     # who made it
    wrong: int                    # students who got the part wrong at all
    student: str                  # the one shown
    answer: object                # their wrong answer (decoded)
    expected: object              # their expected answer, from the key
    message: str                  # the grader's message to them
    commonest: str | None = None  # the commonest mistake when it cannot be drawn (this one is)
    template: str | None = None   # a pool's member (its parts are its own)

    @property
    def where(self) -> str:
        return f"{self.problem}[{self.template}]/{self.part}" if self.template else f"{self.problem}/{self.part}"


def _record(key: dict, student: str, problem: str) -> dict:
    return problem_record(entry_for(key, student) or {}, problem, {})


def _expected(record: dict, part: str):
    answers = record.get("answers", {})
    return decode_names({part: answers[part]})[part] if part in answers else None


def _grading(record: dict, part: str) -> dict:
    return next((g for g in gradings(record, []) if g.get("id") == part), {})


def _matrix(value) -> np.ndarray | None:
    """``value`` as a 2-D array of numbers (booleans as 0/1) with both sides above 1, else None."""
    array = as_array(value)
    if array is None or array.ndim != 2 or min(array.shape) < 2 or array.dtype.kind not in "biuf":
        return None
    return array.astype(float)


def _matrix_parts(key: dict, students: list[str]) -> list[tuple[str, str | None, str]]:
    """(problem, template, part) of every numeric part whose expected answer is a matrix, in
    the assignment's order; ``template`` names a pool's member (None for a plain problem),
    read from the first student whose variant has it."""
    out = []
    for problem in head_problems(key):
        pid = problem["id"]
        members = [m["template"] for m in problem["pool"]] if problem.get("pool") else [None]
        for template in members:
            record = next((r for r in (_record(key, s, pid) for s in students)
                           if r and (template is None or r.get("template") == template)), {})
            if record.get("kind") == "numeric":
                out += [(pid, template, g["id"]) for g in gradings(record, [])
                        if _matrix(_expected(record, g["id"])) is not None]
    return out


def _error_shape(answer, expected, rtol: float, atol: float) -> str:
    """What kind of wrong a wrong matrix is, for an answer no misconception explains: the
    groups "most common" is counted in when every student has different numbers."""
    e = np.asarray(expected, dtype=float)
    a = as_array(answer)
    if a is None or a.dtype.kind not in "biuf":
        return "not an array of numbers"
    a = a.astype(float)
    if not np.isfinite(a).all():
        return "NaN or infinite entries"
    if a.shape != e.shape:
        if a.shape == e.T.shape and within(a, e.T, rtol, atol):
            return "rows and columns swapped (the transpose of the expected matrix)"
        return "the right entries in the wrong shape" if a.size == e.size and within(
            a.reshape(e.shape), e, rtol, atol) else "the wrong shape"
    if within(a, e.T, rtol, atol):
        return "rows and columns swapped (the transpose of the expected matrix)"
    if within(-a, e, rtol, atol):
        return "the signs flipped"
    nonzero = np.abs(e) > atol
    if nonzero.any():
        factor = float(np.median(a[nonzero] / e[nonzero]))
        if factor not in (0.0, 1.0) and within(a, factor * e, rtol, atol):
            return "a constant factor off"
    wrong = int((np.abs(a - e) > atol + rtol * np.abs(e)).sum())
    return "one entry wrong" if wrong == 1 else "a few entries wrong" if wrong <= max(2, e.size // 4) \
        else "most entries wrong"


def _commonest_mistake(gradebook: Gradebook, key: dict, problem: str, template: str | None, part: str,
                       counted: dict, wrong: list[str]) -> Mistake | None:
    """The answers of the students who got the part wrong (``wrong``: the summary's, as the
    misconception table counts them) grouped by the misconception diagnosed (or, lacking
    one, by the shape of the error); the largest group that can be drawn, and one of its
    students."""
    counted = {sid: counted[sid] for sid in wrong if sid in counted}
    groups: dict[tuple[bool, str], list] = {}
    for _, r in sorted(gradebook.part_results(assignment_id(key), problem, part, handins=counted),
                       key=lambda hr: hr[1].student):
        record = _record(key, r.student, problem)
        expected = _expected(record, part)
        if r.answer is None or omitted_reason(r.answer) is not None or _matrix(expected) is None:
            continue
        answer = decoded_answer(r.answer)
        if r.status == "passed":            # the automatic grader passed it; a grader did not
            label = (False, "points taken off by a grader")
        elif r.misconception:
            label = (True, r.misconception)
        else:
            g = _grading(record, part)
            label = (False, _error_shape(answer, expected, float(g.get("rtol", 1e-5)), float(g.get("atol", 1e-8))))
        groups.setdefault(label, []).append((r, answer, expected))
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), not kv[0][0], kv[0][1]))
    for (named, label), members in ranked:
        drawable = next((m for m in members if _matrix(m[1]) is not None), None)
        if drawable is None:
            continue
        r, answer, expected = drawable
        first = ranked[0][0]
        commonest = None if (named, label) == first else f"{first[1]} ({_counted(len(ranked[0][1]), 'student')})"
        return Mistake(problem, part, label, named, tuple(m[0].student for m in members), len(wrong), r.student,
                       answer, expected, r.message or "", commonest, template)
    return None


def _matrices(gradebook: Gradebook, key: dict, grades, summary: dict) -> str:
    """For the by-hand matrix parts most often wrong (wrong as the misconception table counts
    it: ``item_analysis.got_wrong``), the commonest mistake: one student's wrong matrix
    beside their own expected one."""
    counted = {s.id: s.handin for s in grades if s.status == GRADED and s.handin}
    parts = _matrix_parts(key, sorted(counted) or [s.id for s in grades])
    if not parts:
        return "<p>The assignment has no by-hand matrix part.</p>"
    wrong = wrong_answers(summary["students"])
    chosen = sorted((p for p in parts if wrong.get(p)), key=lambda p: -len(wrong[p]))[:MATRIX_PARTS]
    mistakes = [m for m in (_commonest_mistake(gradebook, key, *where, counted, wrong[where]) for where in chosen)
                if m]
    if not mistakes:
        return "<p>No by-hand matrix part has a wrong matrix to show.</p>"
    names = {s.id: s.name for s in grades}
    intro = (f"<p class=\"muted\">The {_counted(len(mistakes), 'matrix part')} most often wrong. Every student has "
             "their own numbers, so \"commonest\" is the commonest <em>mistake</em>: the misconception the grader "
             "diagnosed, or else the kind of error. One student who made it is shown, beside their own expected "
             f"matrix (at most {MAX_SIDE}×{MAX_SIDE} entries of each).</p>")
    return intro + "".join(_mistake_html(m, key, names) for m in mistakes)


def _mistake_html(m: Mistake, key: dict, names: dict) -> str:
    if m.named:
        summary = MISCONCEPTIONS[m.label].summary if m.label in MISCONCEPTIONS else ""
        what = f"misconception <code>{escape(m.label)}</code>" + (f": {escape(summary)}" if summary else "")
    else:
        what = f"no misconception named; {escape(m.label)}"
    made = (f"{_counted(len(m.students), 'student')} of the {m.wrong} who got this part wrong made this "
            f"mistake ({escape(', '.join(m.students[:12]))}{', …' if len(m.students) > 12 else ''}).")
    note = (f"<p class=\"muted\">The commonest mistake, {escape(m.commonest)}, has no matrix to draw; the "
            "commonest one that has is shown.</p>" if m.commonest else "")
    who = m.student + (f" ({names[m.student]})" if names.get(m.student) else "")
    words = word_lists(_record(key, m.student, m.problem))
    message = m.message if len(m.message) <= MESSAGE_CHARS else m.message[:MESSAGE_CHARS] + "…"
    # as their feedback page shows it: Markdown without raw HTML or links (feedback_page.markdown_html)
    quote = (f'<div class="quote"><p><small>The grader told them:</small></p>{markdown_html(message)}</div>'
             if message else "")
    return (f'<section class="part" aria-label="{escape(m.where)}">'
            f"<h3>{escape(m.where)}: {what}</h3><p>{made}</p>{note}"
            f'<div class="pair">{_figure(m.answer, f"Wrong: {who}’s answer", words)}'
            f'{_figure(m.expected, f"Expected on {m.student}’s variant", words)}</div>'
            f"{quote}</section>")


def _figure(value, caption: str, words) -> str:
    """A matrix as a heatmap in a <figure>, cut to MAX_SIDE × MAX_SIDE; the SVG carries the
    caption as its <title> and its numbers row by row as its <desc> (its text equivalent)."""
    array = _matrix(value)
    shown = array[:MAX_SIDE, :MAX_SIDE]
    cut = shown.shape != array.shape
    rows, cols = (None, None) if cut else labels_for(array.shape, list(words))
    note = (f"<br><small>(the first {shown.shape[0]}×{shown.shape[1]} of {array.shape[0]}×{array.shape[1]})</small>"
            if cut else "")
    desc = "; ".join(f"row {i + 1}: " + ", ".join(f"{x:.3g}" for x in row) for i, row in enumerate(shown))
    svg = heatmap_svg(shown, rows, cols)
    opening = svg.index(">") + 1            # the <svg …> tag holds no ">" inside it
    svg = (svg[:opening] + f"<title>{escape(caption)}</title><desc>{escape(desc)}</desc>" + svg[opening:])
    return f"<figure>{svg}<figcaption>{escape(caption)}{note}</figcaption></figure>"
