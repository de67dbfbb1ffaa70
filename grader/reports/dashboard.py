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

Here: the page's frame, the forensics and the matrices drawn; the sections drawn from the
summary alone are ``grader.reports.dashboard_statistics``'s, the commonest wrong matrices are
found by ``grader.reports.wrong_matrices``, and the pieces every section uses are
``grader.reports.dashboard_format``'s.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from solutions import TWINS

from exercises.render.html import PAGE_CSS
from exercises.render.html import escape, heatmap_svg
from formats.deadline import Deadline
from formats.key_shape import assignment_id, assignment_title
from formats.textfile import write_atomic

from grader.reports.dashboard_format import count_of, p_value_text, points_text
from grader.reports.dashboard_statistics import distribution_html, items_html, misconceptions_html, pools_html
from grader.reports.feedback_page import labels_for, markdown_html, word_lists
from grader.forensics.flags import class_forensics, flags_of
from grader.store.gradebook import Gradebook
from grader.store.grades import GRADED, class_grades
from grader.reports.item_analysis import wrong_answers
from grader.reports.summary import summary_json
from grader.reports.wrong_matrices import Mistake, as_matrix, commonest_mistake, matrix_parts, student_record

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
    sections = [("distribution", "Score distribution", lambda: distribution_html(summary)),
                ("items", "Item analysis", lambda: items_html(summary)),
                ("misconceptions", "Misconceptions per problem", lambda: misconceptions_html(summary)),
                ("pools", "Pools of templates", lambda: pools_html(summary)),
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
    waiting = (f" {count_of(c['manual_parts'], 'part')} still to grade by hand count 0 in the totals "
               "and are left out of the item analysis." if c["manual_parts"] else "")
    return (f"<h1>{escape(title)}</h1>"
            f'<p class="warning"><strong>For instructors only.</strong> This page names students and '
            f"shows forensic evidence: keep it out of anything students can see.</p>"
            f"<p>{count_of(c['students'], 'student')}: {c['graded']} graded, {c['missing']} missing, "
            f"{c['error']} with errors; {points_text(summary['assignment']['points'])} points.{waiting}</p>")


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


# ------------------------------------------------------------------------------- 5. forensics


def _forensics(result, summary: dict) -> str:
    """``grader.forensics.flags``' flags (``result``, or the exception it raised): how many of each
    kind, then the least likely to be coincidence. Names and evidence are the students' text:
    escaped."""
    if isinstance(result, Exception):
        raise result
    flags = result["flags"]
    intro = (f"<p class=\"muted\">Over {count_of(result['students'], 'student')}: answers that are a "
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
    more = (f"<p>… and {count_of(len(cases) - len(top), 'more case')} (attnkit forensics --json).</p>"
            if len(cases) > len(top) else "")
    return (intro + '<table class="flag-kinds"><thead><tr><th scope="col">Kind</th><th scope="col">Flags</th>'
            f'<th scope="col">Students</th><th scope="col">What it means</th></tr></thead><tbody>{counts}</tbody></table>'
            f"<h3>The {count_of(len(top), 'case')} least likely to be coincidence</h3>"
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
            f'<td>{len(case)}: {escape(parts)}</td><td class="num">{p_value_text(first["p_coincidence"])}</td>'
            f'<td class="evidence">{escape(first.get("evidence", ""))}{_follow_note(case)}</td></tr>')


def _follow_note(case: list[dict]) -> str:
    """The follow-through parts that rest on a case's answers, named (``forensics.follow_through_note``)."""
    from grader.forensics.flags import follow_through_note
    notes = dict.fromkeys(n for n in map(follow_through_note, case) if n)
    return "".join(f'<br><span class="follow-through">{escape(n)}</span>' for n in notes)


# ------------------------------------------------------------------------------- 6. wrong matrices


def _matrices(gradebook: Gradebook, key: dict, grades, summary: dict) -> str:
    """For the by-hand matrix parts most often wrong (wrong as the misconception table counts
    it: ``item_analysis.got_wrong``), the commonest mistake: one student's wrong matrix
    beside their own expected one."""
    counted = {s.id: s.handin for s in grades if s.status == GRADED and s.handin}
    parts = matrix_parts(key, sorted(counted) or [s.id for s in grades])
    if not parts:
        return "<p>The assignment has no by-hand matrix part.</p>"
    wrong = wrong_answers(summary["students"])
    chosen = sorted((p for p in parts if wrong.get(p)), key=lambda p: -len(wrong[p]))[:MATRIX_PARTS]
    mistakes = [m for m in (commonest_mistake(gradebook, key, *where, counted, wrong[where]) for where in chosen)
                if m]
    if not mistakes:
        return "<p>No by-hand matrix part has a wrong matrix to show.</p>"
    names = {s.id: s.name for s in grades}
    intro = (f"<p class=\"muted\">The {count_of(len(mistakes), 'matrix part')} most often wrong. Every student has "
             "their own numbers, so \"commonest\" is the commonest <em>mistake</em>: the misconception the grader "
             "diagnosed, or else the kind of error. One student who made it is shown, beside their own expected "
             f"matrix (at most {MAX_SIDE}×{MAX_SIDE} entries of each).</p>")
    return intro + "".join(_mistake_html(m, key, names) for m in mistakes)


def _mistake_html(m: Mistake, key: dict, names: dict) -> str:
    if m.named:
        summary = TWINS[m.label].summary if m.label in TWINS else ""
        what = f"misconception <code>{escape(m.label)}</code>" + (f": {escape(summary)}" if summary else "")
    else:
        what = f"no misconception named; {escape(m.label)}"
    made = (f"{count_of(len(m.students), 'student')} of the {m.wrong} who got this part wrong made this "
            f"mistake ({escape(', '.join(m.students[:12]))}{', …' if len(m.students) > 12 else ''}).")
    note = (f"<p class=\"muted\">The commonest mistake, {escape(m.commonest)}, has no matrix to draw; the "
            "commonest one that has is shown.</p>" if m.commonest else "")
    who = m.student + (f" ({names[m.student]})" if names.get(m.student) else "")
    words = word_lists(student_record(key, m.student, m.problem))
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
    array = as_matrix(value)
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
