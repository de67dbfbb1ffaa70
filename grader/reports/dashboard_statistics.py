"""The dashboard's sections drawn from the class summary (``grader.reports.summary``) alone:
the score distribution (figures, an SVG histogram and the same as a table), the item
analysis with its dubious items flagged, the misconceptions per problem, and each pool's
members beside its fairness test. Every text a student or a roster controls is escaped."""

from __future__ import annotations

import math
import statistics
from collections import Counter

from exercises.render.html import escape

from grader.reports.dashboard_format import (BAR, OTHER_BAR, count_of, figure_list, number_cell, number_text,
                                             p_value_text, points_text, share_bar)
from grader.reports.item_analysis import HIGH_FACILITY, LOW_DISCRIMINATION, LOW_FACILITY
from grader.store.grades import GRADED

# Text contrast ≥ 7:1 on white.
_FOREGROUND, _MEAN, _MEDIAN = "#000000", "#a31500", "#000000"


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


def distribution_html(summary: dict) -> str:
    """The graded students' totals: figures, a histogram and the histogram as a table."""
    totals = _graded_totals(summary)
    if not totals:
        return "<p>No graded submission yet.</p>"
    max_points = float(summary["assignment"]["points"])
    mean, median = summary["totals"]["mean"], summary["totals"]["median"]
    sd = statistics.stdev(totals) if len(totals) > 1 else None
    figures = figure_list([("Graded", str(len(totals))), ("Mean", number_text(mean)),
                           ("Median", number_text(median)), ("SD", number_text(sd)),
                           ("Lowest", points_text(min(totals))), ("Highest", points_text(max(totals))),
                           ("Out of", points_text(max_points))])
    bins = _bins(totals, max_points)
    rows = "".join(f'<tr><th scope="row">{points_text(lo)} – {points_text(hi)}</th><td class="num">{n}</td></tr>'
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
             f'<desc id="hist-desc">{n} graded students; mean {number_text(mean)}, median {number_text(median)}, '
             f'SD {number_text(sd)}. Students per total: '
             + "; ".join(f"{points_text(a)} to {points_text(b)}: {c}" for a, b, c in bins) + ".</desc>"]
    for i, (a, b, c) in enumerate(bins):
        h = c / highest * plot_h
        bx = left + i * bar_w
        if c:
            parts.append(f'<rect x="{bx + 1:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 2:.1f}" '
                         f'height="{h:.1f}" fill="{BAR}"/>')
            inside = h >= 20            # a tall bar has its count inside, clear of the mean's line
            parts.append(f'<text x="{bx + bar_w / 2:.1f}" y="{top + plot_h - h + (15 if inside else -4):.1f}" '
                         f'text-anchor="middle" fill="{"#ffffff" if inside else _FOREGROUND}">{c}</text>')
    step = 1 if len(bins) <= 12 else 2
    for i in range(0, len(bins) + 1, step):
        edge = lo + i * (hi - lo) / len(bins)
        parts.append(f'<text x="{x(edge):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                     f'fill="{_FOREGROUND}">{points_text(edge)}</text>')
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
                     f'font-weight="bold">{label} {number_text(value)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------------------- 2. item analysis


def items_html(summary: dict) -> str:
    """α and its companions, then a row per problem followed by its parts; dubious items
    marked in the row and with the flags' own words."""
    items = summary.get("item_analysis")
    if not items or items["students"] < 2:
        return "<p>Item statistics need at least two graded submissions.</p>"
    a = items["assignment"]
    alpha = number_text(a["alpha"]) + ("" if a["se"] is None else f" ± {number_text(a['se'])} (SE)")
    figures = figure_list([("Cronbach's α", alpha), ("Error ratio", number_text(a["error_ratio"])),
                        ("SEM", "–" if a["sem"] is None else f"{number_text(a['sem'])} points"),
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
            f'<th scope="row">{mark}{escape(name)}</th><td class="num">{points_text(x["max_score"])}</td>'
            f'<td class="num">{x["n"]}</td>{number_cell(x["facility"])}{number_cell(x["sd"])}'
            f'{number_cell(x["discrimination"])}{number_cell(x["efficiency"])}'
            f'<td>{"<span class=flag>dubious:</span>" if flagged else ""}{flags}</td></tr>')


# ------------------------------------------------------------------------------- 3. misconceptions


def misconceptions_html(summary: dict) -> str:
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
             m["count"], m["share_of_wrong"], BAR) for m in d["misconceptions"]]
    unexplained = d["wrong"] - d["explained"]
    if unexplained:
        rows.append(("<em>no misconception named</em>", unexplained, unexplained / d["wrong"], OTHER_BAR))
    head = (f'<th scope="rowgroup" rowspan="{len(rows)}">{escape(d["part"] + _member(d))}</th>'
            f'<td class="num" rowspan="{len(rows)}">{d["wrong"]}</td>')
    cells = [f'<td>{what}</td><td class="num">{count}</td><td>{share_bar(share, colour)}</td>'
             for what, count, share, colour in rows]
    return "<tbody>" + "".join(f"<tr>{head if i == 0 else ''}{c}</tr>" for i, c in enumerate(cells)) + "</tbody>"


# ------------------------------------------------------------------------------- 4. pools


def pools_html(summary: dict) -> str:
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
        f'{number_cell(m.get("mean"))}{number_cell(m.get("sd"))}{number_cell(m.get("facility"))}'
        f'{number_cell(m.get("discrimination"))}'
        f'<td>{share_bar(m.get("facility"))}</td></tr>' for m in members)
    table = ('<table class="pool"><thead><tr>' + "".join(
        f'<th scope="col">{h}</th>' for h in ("Template", "Title", "Students", "Graded", "Mean", "SD",
                                              "Facility", "Discrimination", "Facility (bar)"))
             + f"</tr></thead><tbody>{rows}</tbody></table>")
    return (f"<h3>Problem {escape(pool.get('problem', ''))}: {escape(pool.get('title', ''))} "
            f"<small>({count_of(len(members), 'template')})</small></h3>" + _fairness(fairness) + table)


def _fairness(f: dict) -> str:
    if not f:
        return "<p>No fairness test for this pool.</p>"
    test = (f"{escape(f.get('test', 'test'))}: statistic {number_text(f.get('statistic'))}"
            + ("" if f.get("df") is None else f", df {escape(f['df'])}") + f", p = {p_value_text(f.get('p_value'))}"
            + ("" if not f.get("lowest") else f"; lowest: <code>{escape(f['lowest'])}</code>"))
    message = escape(f.get("message", ""))
    if f.get("flag"):
        return (f'<div class="warning fairness"><p><strong>⚠ Fairness warning:</strong> {message}</p>'
                f"<p>{test}</p></div>")
    return f"<p>Fairness: {message} <span class=\"muted\">({test})</span></p>"
