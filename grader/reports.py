"""What instructors and students read, made from the gradebook and the answer key.

- ``write_csv``, ``write_gradescope``: the class list and Gradescope's results.json, from
  ``grader.exports`` (which also writes what Canvas and Moodle import);
- ``write_feedback``: one self-contained HTML page per student (no script, no CDN, no link);
  a part that cannot be drawn is shown as text, a page that cannot be made is a minimal one,
  so every student always gets a page (``FeedbackPages.fallbacks`` says whose fell back);
- ``class_table``: the same numbers as aligned plain text for the terminal, with a summary;
  every text in it from a roster or the gradebook shown terminal-safe;
- ``summary_json``: everything ``class_table`` shows, as data (``attnkit report --json``).

Who is in the class and what each student earned on the handin that counts is
``grader.grades``': a student without a submission is listed as ``missing``, never left out. Every output is a function of those two alone — sorted, no times, no
paths of this machine — so reporting twice gives the same bytes.

Expected values appear only on feedback pages written with ``reveal=True``: a page sent to a
student before the deadline must not hand their answers to their classmates.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
from solutions import MISCONCEPTIONS

from formats.cells import LETTERS
from exercises.html import code_block, escape, heatmap_svg, markdown_to_html, page
from exercises.preview import _decimals_for, value_text
from formats.serialize import decode_names, from_jsonable
from formats.key_shape import (assignment_id, assignment_title, entry_for, head_problems, problem_record,
                               problem_title, total_points, rubric_of)
from formats.textfile import terminal_safe, write_atomic

from formats.deadline import Deadline

from . import exports
from .gradebook import Gradebook, ResultRow, omitted_reason
from .grades import (ERROR, GRADED, MANUAL, MISSING, NOT_ACCEPTED, Part, StudentGrades, class_grades,
                     score_text, with_answers)
from .marks import student_lines
from .forensics import copied_chains
from .review import needs_a_look

# Beyond this many numbers an answer is described, not drawn: a page of 4096 cells helps no one.
MAX_CELLS = 400



_points = score_text


# ------------------------------------------------------------------------------------- CSV


def csv_text(gradebook: Gradebook, key: dict, deadline: Deadline | None = None) -> str:
    """The class's grades.csv (grader.exports.grades_export)."""
    return exports.grades_export(class_grades(gradebook, key, deadline), key).text


def write_csv(gradebook: Gradebook, key: dict, path: str | Path, deadline: Deadline | None = None) -> Path:
    """One row per student of the key (grader.exports.grades_export)."""
    exports.write_grades_csv(class_grades(gradebook, key, deadline), key, path)
    return Path(path)


def gradescope_results(s: StudentGrades, key: dict) -> dict:
    return exports.gradescope_results(s, key)


def write_gradescope(gradebook: Gradebook, key: dict, out_dir: str | Path,
                     deadline: Deadline | None = None) -> list[Path]:
    """``out_dir/<student>/results.json`` for every student of the key (grader.exports)."""
    return exports.write_gradescope(class_grades(gradebook, key, deadline), key, out_dir)


# -------------------------------------------------------------------------------- feedback


_ANCHOR = re.compile(r"<a\s[^>]*>|</a>")


def markdown_html(text: str) -> str:
    """Markdown as HTML without links: the page opens offline and sends no one anywhere,
    whatever a student wrote in an answer. markdown-it escapes raw HTML (html=False), so an
    ``<a`` here can only be one it made itself."""
    return _ANCHOR.sub("", markdown_to_html(text))


_STATUS_LABELS = {"passed": "✓ correct", "failed": "✗ not correct", "partial": "◐ partly correct",
                  "missing": "— no answer", "error": "⚠ error", "manual": "✎ graded by hand",
                  "marked": "✎ graded by hand", "overridden": "✎ score changed by a grader"}


def word_lists(record: dict) -> list[list[str]]:
    """Lists of words among the givens (tokens of a sentence): labels for a matrix's rows or
    columns when their number matches."""
    try:
        givens = decode_names(record.get("givens", {}))
    except (ValueError, KeyError, TypeError):
        return []
    return [list(v) for _, v in sorted(givens.items())
            if isinstance(v, list) and v and all(isinstance(x, str) for x in v)]


def labels_for(shape, words: list[list[str]]):
    pick = lambda n: next((w for w in words if len(w) == n), None)  # noqa: E731
    return pick(shape[0]), pick(shape[1])


def as_array(value):
    """A list of numbers (or of equally shaped arrays) as one array, else None."""
    if isinstance(value, np.ndarray):
        return value
    if not isinstance(value, (list, tuple)) or not value:
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return array if array.dtype.kind in "biuf" else None


def _is_float(value) -> bool:
    """Floats are compared with the part's tolerance; whole numbers, booleans and text exactly."""
    if isinstance(value, (float, np.floating)):
        return True
    array = as_array(value)
    return array is not None and array.dtype.kind == "f"


def _math(text: str) -> str:
    return markdown_html(text) if "$" in text else f"<p><code>{escape(text)}</code></p>"


def value_html(value, decimals: int = 4, words=()) -> str:
    """An answer for the page: numbers and vectors as math, 2-D arrays as heatmaps (rows and
    columns named after the givens' words when their number matches), text as text."""
    reason = omitted_reason(value)
    if reason is not None:
        return f"<p><em>{escape(reason)}</em></p>"
    array = as_array(value)
    if array is not None and array.ndim >= 1:
        if array.size > MAX_CELLS or (array.size == 0 and array.ndim > 1):
            # (an empty array is judged by its shape: (21000, 0, 0) would be 21,000 drawings)
            what = "too large to show here" if array.size else "no entries to show"
            return f"<p>An array of shape {escape(array.shape)}: {what}.</p>"
        if array.ndim == 2 and array.dtype.kind in "iuf" and min(array.shape) > 1:
            rows, cols = labels_for(array.shape, list(words))
            return f"<figure>{heatmap_svg(array, rows, cols)}</figure>"
        if array.ndim >= 3:
            return "".join(f"<p>[{i}]</p>" + value_html(array[i], decimals, words)
                           for i in range(array.shape[0]))
    if isinstance(value, str):
        return code_block(value) if "\n" in value else f"<p><code>{escape(value)}</code></p>"
    if isinstance(value, dict):
        return ("<dl>" + "".join(f"<dt><code>{escape(k)}</code></dt><dd>{value_html(v, decimals, words)}</dd>"
                                 for k, v in value.items()) + "</dl>")
    if isinstance(value, (list, tuple)) and any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in value):
        shown = value[:16]
        more = f"<p>… and {len(value) - len(shown)} more.</p>" if len(value) > len(shown) else ""
        return "".join(f"<p>[{i}]</p>" + value_html(v, decimals, words) for i, v in enumerate(shown)) + more
    try:
        return _math(value_text(array if array is not None else value, "markdown", decimals))
    except Exception:  # noqa: BLE001 — an odd value must not cost the student their page
        return f"<p><code>{escape(repr(value))}</code></p>"


def decoded_answer(answer):
    if answer is None or omitted_reason(answer) is not None:
        return answer
    try:
        return from_jsonable(answer)
    except (ValueError, TypeError, KeyError):
        return answer


def _option_html(options: list[dict], index: int) -> str:
    letter = LETTERS[index] if 0 <= index < len(LETTERS) else "?"
    text = options[index]["text"] if 0 <= index < len(options) else ""
    return f'<div class="option"><p><strong>{letter}.</strong></p>{markdown_html(text)}</div>'


def _student_answer_html(record: dict, part: Part, words) -> str:
    result = part.result
    if result is None or result.answer is None:
        return "<p><em>No answer recorded.</em></p>"
    value = decoded_answer(result.answer)
    kind = record.get("kind")
    if kind == "free_response" and isinstance(value, str):
        return f'<div class="free-text">{markdown_html(value)}</div>'
    if kind == "choice" and isinstance(value, str):
        options = record.get("options", {}).get(part.part, [])
        letter = value.strip().upper()
        if len(letter) == 1 and letter in LETTERS[:len(options)]:
            return _option_html(options, LETTERS.index(letter))
    return value_html(value, _decimals(record, part.part, value), words)


def _grading(record: dict, part: str) -> dict:
    return next((g for g in record.get("grading", []) if g.get("id") == part), {})


def _decimals(record: dict, part: str, value) -> int:
    """As many decimals as the part's tolerance needs: a value off by more than the
    tolerance never looks the same as the right one."""
    atol = _grading(record, part).get("atol", record.get("atol", 1e-4))  # implement: one for all
    return _decimals_for(float(atol), value)


def _expected_html(record: dict, part: Part, words) -> str:
    kind = record.get("kind")
    if kind == "free_response":
        return _rubric_html(rubric_of(record, part.part, part.points))
    if kind == "implement":
        out = []
        for test in record.get("tests", []):
            if test.get("family") == part.part:
                expected = from_jsonable(test["expected"])
                out.append(f"<p>Hidden case {int(test.get('index', 0)) + 1}: expected output</p>"
                           + value_html(expected, _decimals(record, part.part, expected), words))
        return "".join(out)
    answers = record.get("answers", {})
    if part.part not in answers:
        return ""
    expected = decode_names({part.part: answers[part.part]})[part.part]
    if kind == "choice":
        return _option_html(record.get("options", {}).get(part.part, []), int(expected))
    grading = _grading(record, part.part)
    atol, rtol = float(grading.get("atol", 0.0)), float(grading.get("rtol", 0.0))
    shown = value_html(expected, _decimals_for(atol, expected), words)
    if _is_float(expected):
        shown += f"<p><small>Compared with tolerance atol {atol:g}, rtol {rtol:g}.</small></p>"
    return shown


def _rubric_html(rubric) -> str:
    """What a full answer contains, for a student's page: the guide and each item's points
    and text — never the graders' notes."""
    items = "".join(f"<li><strong>{'+' if i.points > 0 else '−'}{_points(abs(i.points))}</strong> "
                    f"{markdown_html(i.text)}</li>" for i in rubric.items)
    return (markdown_html(rubric.guide) if rubric.guide.strip() else "") + (f"<ul class=\"rubric\">{items}</ul>"
                                                                       if items else "")


def _mark_html(record: dict, part: Part) -> str:
    """A hand grade on the student's page: the applied items' texts, the comment."""
    if part.mark is None:
        return ""
    lines = student_lines(part.mark, rubric_of(record, part.part, part.points))
    waiting = ("<p><em>A grader will look at this part again; the score may change.</em></p>"
               if part.recheck else "")
    return ('<div class="marked"><h4>Grader\'s feedback</h4><ul>'
            + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>" + waiting + "</div>")


def _diagnosis_html(result: ResultRow) -> str:
    if not result or not result.misconception:
        return ""
    m = MISCONCEPTIONS.get(result.misconception)
    if m is None:
        return (f'<div class="diagnosis"><p><strong>Diagnosis:</strong> '
                f"<code>{escape(result.misconception)}</code></p></div>")
    if m.summary in result.message:      # the message names it already: add the wrong line only
        return (f'<div class="diagnosis"><p><strong>The mistake, in code:</strong></p>'
                f"{code_block(m.code)}</div>")
    explanation = "" if m.explanation in result.message else f"<p>{escape(m.explanation)}</p>"
    return (f'<div class="diagnosis"><p><strong>Diagnosis:</strong> your answer equals '
            f"{escape(m.summary)}.</p>{explanation}{code_block(m.code)}</div>")


def _part_head(part: Part, index: int) -> str:
    label = f"({LETTERS[index].lower()}) {part.part}" if index < len(LETTERS) else part.part
    status = _STATUS_LABELS.get(part.status, part.status)
    return (f'<div class="part status-{escape(part.status)}"><h3>{escape(label)} — '
            f"{_points(part.score)} / {_points(part.points)} · {escape(status)}</h3>")


_NOT_DRAWN = "This answer could not be drawn."


def _part_fallback(part: Part, index: int) -> str:
    """A part whose rendering failed: its status, score and message as plain escaped text."""
    message = part.result.message if part.result else ""
    return (_part_head(part, index) + (f"<p>{escape(message)}</p>" if message else "")
            + f"<p><em>{_NOT_DRAWN}</em></p></div>")


def _part_html(record: dict, part: Part, index: int, reveal: bool, words) -> str:
    result = part.result
    head = _part_head(part, index)
    body = []
    if result is None and part.mark is None:
        body.append("<p>Not graded.</p>")
    elif result is not None and (part.mark is None or part.mark.kind != "hand"):
        if result.message:
            body.append(markdown_html(result.message))
        body.append(_diagnosis_html(result))
    body.append(_mark_html(record, part))
    if record.get("kind") == "free_response":
        if part.status == MANUAL and not (result and result.message):
            body.append("<p>This part is graded by hand; its points are added later.</p>")
        body.append("<h4>Your answer</h4>" + _student_answer_html(record, part, words))
        if reveal:
            body.append("<h4>Rubric</h4>" + _expected_html(record, part, words))
    else:
        if result is not None and result.answer is not None:
            body.append("<h4>Your answer</h4>" + _student_answer_html(record, part, words))
        if reveal:
            body.append("<h4>Expected</h4>" + _expected_html(record, part, words))
    return head + "".join(body) + "</div>"


def _drawn_part(record: dict, part: Part, index: int, reveal: bool, words, fallbacks) -> str:
    """``_part_html``, or its fallback when a value cannot be drawn (the part is named in
    ``fallbacks``): one answer must not cost the student the rest of their page."""
    try:
        return _part_html(record, part, index, reveal, words)
    except Exception as err:  # noqa: BLE001 — whatever the value, the page goes on
        if fallbacks is not None:
            fallbacks.append(f"{part.problem}/{part.part} ({type(err).__name__})")
        return _part_fallback(part, index)


def feedback_page(s: StudentGrades, key: dict, reveal: bool = False, fallbacks=None) -> str:
    """The student's page: their score per problem and per part, what went wrong and why,
    their own answers; the expected answers only with ``reveal``. A part that cannot be
    drawn is shown as text, and named in the list ``fallbacks`` when one is given."""
    entry = entry_for(key, s.id)
    title = f"{assignment_title(key, default=assignment_id(key))} — feedback"
    who = f"{s.name} ({s.id})" if s.name else s.id
    body = [f"<h1>{escape(title)}</h1>", f"<p>{escape(who)}</p>",
            f"<p><strong>{_points(s.total)} / {_points(s.max_score)} points</strong></p>"]
    if s.status == MISSING:
        body.append("<p>No submission was received for this assignment.</p>")
    elif s.status == ERROR:
        body.append("<p>Your notebook could not be graded; the notes below say why.</p>")
    if s.shown_notes:
        body.append("<ul class=\"notes\">" + "".join(f"<li>{escape(n)}</li>" for n in s.shown_notes) + "</ul>")
    if any(p.status == MANUAL for p in s.parts):
        body.append("<p>Some parts are graded by hand: their points are not included yet.</p>")
    elif any(p.waiting for p in s.parts):
        body.append("<p>A grader will look at some parts again: their points may change.</p>")
    problems = head_problems(key)
    rows = "".join(f"<tr><td>{n}. {escape(problem_title(p, problem_record(entry or {}, p['id'], {})))}</td>"
                   f"<td>{_points(s.problem_scores[p['id']])} / {_points(p['points'])}</td></tr>"
                   for n, p in enumerate(problems, 1))
    if s.penalty:
        rows += (f"<tr><td>Late penalty ({escape(s.late)})</td>"
                 f"<td>−{_points(s.penalty)}</td></tr>")
    body.append(f"<table><thead><tr><th>Problem</th><th>Points</th></tr></thead><tbody>{rows}</tbody></table>")
    if s.status == NOT_ACCEPTED:
        body.append(f"<p>This submission was received {escape(s.late)}.</p>")
    if reveal:
        body.append("<p><em>This page shows the expected answers.</em></p>")
    for n, problem in enumerate(problems, 1):
        pid = problem["id"]
        record = problem_record(entry, pid, {})
        words = word_lists(record)
        parts = [p for p in s.parts if p.problem == pid]
        section = [f'<section class="problem"><h2>Problem {n}. {escape(problem_title(problem, record))} '
                   f"({_points(s.problem_scores[pid])} / {_points(problem['points'])})</h2>"]
        section += [_drawn_part(record, p, i, reveal, words, fallbacks) for i, p in enumerate(parts)]
        body.append("".join(section) + "</section>")
    return page(f"{title}: {who}", "\n".join(body))


def minimal_page(s: StudentGrades, key: dict) -> str:
    """The page of a student whose full page could not be made: the total and every part's
    status, score and message, as escaped text, from nothing but strings and numbers."""
    title = f"{key['assignment'].get('title', key['assignment']['id'])} — feedback"
    parts = "".join(f"<li>{escape(p.problem)}, {escape(p.part)}: {_points(p.score)} / "
                    f"{_points(p.points)} · {escape(p.status)}"
                    + (f"<br>{escape(p.result.message)}" if p.result and p.result.message else "")
                    + "</li>" for p in s.parts)
    body = (f"<h1>{escape(title)}</h1><p>{escape(s.id)}</p>"
            f"<p><strong>{_points(s.total)} / {_points(s.max_score)} points</strong></p>"
            f"<p><em>This page could not be drawn in full; here is every part's result.</em></p>"
            f"<ul>{parts}</ul>")
    return page(f"{title}: {s.id}", body)


def _bare_page(s: StudentGrades) -> str:
    return page("feedback", f"<p>{escape(s.id)}: your feedback page could not be drawn; "
                            "ask your instructor for your results.</p>")


class FeedbackPages(list):
    """The pages ``write_feedback`` wrote (a list of paths, one per student), and
    ``fallbacks``: student → what could not be drawn on their page (parts, or the page)."""

    def __init__(self):
        super().__init__()
        self.fallbacks: dict[str, list[str]] = {}


def _page_for(s: StudentGrades, key: dict, reveal: bool) -> tuple[str, list[str]]:
    """(the student's page, what fell back): the full page, else the minimal one, else a
    bare line — a student always gets a page."""
    fallbacks: list[str] = []
    try:
        return feedback_page(s, key, reveal, fallbacks), fallbacks
    except Exception as err:  # noqa: BLE001 — the page, not the whole report, falls back
        fallbacks.append(f"the whole page ({type(err).__name__})")
    try:
        return minimal_page(s, key), fallbacks
    except Exception:  # noqa: BLE001
        return _bare_page(s), fallbacks


def write_feedback(gradebook: Gradebook, key: dict, out_dir: str | Path, reveal: bool = False,
                   progress=None, deadline: Deadline | None = None) -> FeedbackPages:
    """``out_dir/<student>.html`` for every student of the key, each page made on its own
    (see ``_page_for``); ``progress`` (optional) gets ``advance(1)`` per page."""
    written = FeedbackPages()
    for s in class_grades(gradebook, key, deadline):
        path = Path(out_dir) / f"{s.id}.html"
        html_text, fallbacks = _page_for(with_answers(gradebook, key, s), key, reveal)
        write_atomic(path, html_text.encode("utf-8", errors="replace"))
        written.append(path)
        if fallbacks:
            written.fallbacks[s.id] = fallbacks
        if progress is not None:
            progress.advance(1)
    return written


# ---------------------------------------------------------------------- summary and table


def _statistics(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "median": None}
    return {"mean": round(sum(values) / len(values), 6), "median": round(statistics.median(values), 6)}


def summary_json(gradebook: Gradebook, key: dict, deadline: Deadline | None = None,
                 grades=None, flags=None) -> dict:
    """The class as data: per student and part; per problem the mean and median over the
    graded submissions (a missing or unreadable one would only drag them towards 0); the
    commonest misconceptions; how many submissions are missing or errored. ``grades``,
    ``flags``: the class's grades and its forensics flags, when the caller has them."""
    grades = class_grades(gradebook, key, deadline) if grades is None else grades
    try:          # forensics that fail must not cost the grades their summary
        copied, unchecked = copied_chains(gradebook, key, grades, flags), None
    except Exception as err:  # noqa: BLE001
        copied, unchecked = {}, f"copied chains were not checked ({type(err).__name__}: {err})"
    look = {s.id: [*s.look, *copied.get(s.id, ())] for s in grades}
    graded = [s for s in grades if s.status == GRADED]
    problems = [{"id": p["id"], "title": p.get("title", p["id"]), "points": float(p["points"]),
                 **_statistics([s.problem_scores[p["id"]] for s in graded])}
                for p in head_problems(key)]
    mistakes: Counter = Counter()        # students who made the mistake somewhere
    parts: Counter = Counter()           # parts it cost, over the class
    where: dict[str, set[str]] = {}
    for s in grades:
        codes = set()
        for part in s.parts:
            code = part.result.misconception if part.result else None
            if code:
                codes.add(code)
                parts[code] += 1
                where.setdefault(code, set()).add(part.problem)
        mistakes.update(codes)
    misconceptions = [{"code": code, "count": count, "parts": parts[code],
                       "summary": MISCONCEPTIONS[code].summary if code in MISCONCEPTIONS else "",
                       "problems": sorted(where[code])}
                      for code, count in sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0]))]
    students = [{"id": s.id, "name": s.name, "email": s.email, "status": s.status,
                 "total": round(s.total, 6), "max": s.max_score, "notes": list(s.notes),
                 "needs_a_look": [{"code": c, "message": m} for c, m in look[s.id]],
                 "file": s.path, "handins": s.handins, "received_at": s.received_at,
                 "received_from": s.received_from, "late": s.late, "late_penalty": round(s.penalty, 6),
                 "problems": {pid: round(x, 6) for pid, x in s.problem_scores.items()},
                 "complete": s.status == GRADED and not s.waiting, "waiting_parts": s.waiting,
                 "parts": [{"problem": p.problem, "part": p.part, "score": round(p.score, 6),
                            "max_score": p.points, "status": p.status,
                            "misconception": p.result.misconception if p.result else None,
                            "auto_score": round(p.result.score, 6) if p.result else None,
                            "mark": _mark_json(p), "waiting": p.waiting}
                           for p in s.parts]}
                for s in grades]
    statuses = Counter(s.status for s in grades)
    pools = pool_members(key)
    for s in students:          # (an entry is read only when the assignment has a pool)
        entry = (entry_for(key, s["id"]) or {}) if pools else {}
        s["pools"] = {pid: problem_record(entry, pid, {}).get("template") for pid in pools
                      if problem_record(entry, pid, None) is not None}
    from .item_analysis import from_summary
    items = from_summary({"students": students})
    return {
        "assignment": {"id": assignment_id(key), "title": assignment_title(key),
                       "points": total_points(key)},
        "students": students,
        "problems": problems,
        "totals": _statistics([s.total for s in graded]),
        "misconceptions": misconceptions,
        "misconceptions_by_part": misconceptions_by_part(students),
        "item_analysis": items,
        "pools": _pools_json(items["pools"], key, students),
        "needs_a_look": needs_a_look((s.id, s.path, look[s.id]) for s in grades),
        **({"not_checked": unchecked} if unchecked else {}),
        "counts": {"students": len(grades), "graded": statuses[GRADED], "missing": statuses[MISSING],
                   "error": statuses[ERROR],
                   # parts that wait for a human: not marked yet, or marked and to look at again
                   "manual_parts": sum(s.waiting for s in grades if s.status != MISSING),
                   "needs_a_look": sum(bool(look[s.id]) for s in grades)},
    }


def pool_members(key: dict) -> dict[str, dict[str, str]]:
    """pool problem → member template → its title, from the key's head (exercises.pools)."""
    return {p["id"]: {m["template"]: str(m.get("title", m["template"])) for m in p["pool"]}
            for p in head_problems(key) if p.get("pool")}


def _pools_json(analysed: list[dict], key: dict, students: list[dict]) -> list[dict]:
    """Each pool's members side by side: how many students got each (of those with a key
    entry) and, over the graded ones, item_analysis's statistics and fairness check."""
    by_problem = {p["problem"]: p for p in analysed}
    titles = {p["id"]: str(p.get("title", p["id"])) for p in head_problems(key)}
    out = []
    for pid, members in pool_members(key).items():
        stats = {m["template"]: m for m in by_problem.get(pid, {}).get("members", [])}
        drawn = Counter(s["pools"].get(pid) for s in students)
        out.append({"problem": pid, "title": titles[pid],
                    "members": [{"template": t, "title": title, "students": drawn[t],
                                 **{k: v for k, v in stats.get(t, {"graded": 0}).items() if k != "template"}}
                                for t, title in members.items()],
                    "fairness": by_problem.get(pid, {}).get("fairness")})
    return out


def misconceptions_by_part(students: list[dict]) -> list[dict]:
    """Per part (a pool member's parts per member): how many graded students lost points on
    it, how many of those a known misconception explains, and which — the answer-note
    frequencies of Moodle's and STACK's reports. A part waiting for a hand grade is not
    wrong yet."""
    counts: dict[tuple, Counter] = {}
    wrong: Counter = Counter()
    for s in students:
        if s["status"] != GRADED:
            continue
        for p in s["parts"]:
            k = (p["problem"], s.get("pools", {}).get(p["problem"]), p["part"])
            counts.setdefault(k, Counter())
            if p["waiting"] or p["status"] == MANUAL or p["score"] >= p["max_score"] * (1 - 1e-6):
                continue
            wrong[k] += 1
            if p["misconception"]:
                counts[k][p["misconception"]] += 1
    out = []
    for (pid, template, part), codes in counts.items():
        n, explained = wrong[(pid, template, part)], sum(codes.values())
        out.append({"problem": pid, "template": template, "part": part, "wrong": n, "explained": explained,
                    "share_explained": round(explained / n, 6) if n else None,
                    "misconceptions": [{"code": c, "count": k, "share_of_wrong": round(k / n, 6),
                                        "summary": MISCONCEPTIONS[c].summary if c in MISCONCEPTIONS else ""}
                                       for c, k in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))]})
    return out


def _mark_json(p: Part) -> dict | None:
    """A part's hand grade as data (None without one)."""
    if p.mark is None:
        return None
    m = p.mark
    return {"kind": m.kind, "items": dict(m.items), "adjustment": m.adjustment, "comment": m.comment,
            "reason": m.reason, "grader": m.grader, "version": m.version,
            "rubric_version": m.rubric_version, "recheck": p.recheck or None}


def _width(text: str) -> int:
    """Columns a terminal gives ``text``: combining marks take none, wide characters two."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` columns, cut with "…"; one pass, however long the name."""
    if _width(text) <= limit:
        return text
    used, end = 0, 0
    for end, c in enumerate(text):
        used += _width(c)
        if used > limit - 1:
            break
    return text[:end] + "…"


def _shown(text) -> str:
    """A table cell as the terminal shows it (see terminal_safe): widths are counted on this,
    so a U+202E in a name can neither reverse the columns after it nor misalign them."""
    return terminal_safe(text, newlines=False)


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(_width(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells):
        padded = [(" " * (w - _width(c)) + c) if i in right else (c + " " * (w - _width(c)))
                  for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(padded).rstrip()
    return [line(header), "  ".join("─" * w for w in widths), *map(line, rows)]


_COLOURS = {MISSING: "\x1b[33m", ERROR: "\x1b[31m", GRADED: "\x1b[32m"}


def class_table(gradebook: Gradebook, key: dict, colour: bool = False, summary: dict | None = None,
                deadline: Deadline | None = None) -> str:
    """The class as aligned plain text: a line per student (total and per problem), then the
    mean and median per problem, the commonest misconceptions and how many submissions are
    missing or errored. ``colour`` adds ANSI colours to the status column. ``summary``:
    ``summary_json``'s, when the caller has it already."""
    summary = summary if summary is not None else summary_json(gradebook, key, deadline)
    assignment = summary["assignment"]
    pids = [p["id"] for p in summary["problems"]]
    out = [f"{_shown(assignment['title'])} ({_shown(assignment['id'])}): "
           f"{len(summary['students'])} students, {_points(assignment['points'])} points", ""]
    rows = []
    for s in summary["students"]:
        rows.append([_shown(s["id"]), _clip(_shown(s["name"]), 28),
                     f"{_points(s['total'])}/{_points(s['max'])}",
                     *(_points(s["problems"][pid]) for pid in pids), _status_cell(s)])
    lines = _table(["student", "name", "total", *map(_shown, pids), "status"], rows,
                   right=set(range(2, 3 + len(pids))))
    if colour:  # after padding, so the escape codes do not count as width
        lines = lines[:2] + [_colour_status(line, _status_cell(s), s["status"])
                             for line, s in zip(lines[2:], summary["students"])]
    out += lines
    counts = summary["counts"]
    graded = counts["graded"]
    out += ["", f"Per problem, over the {graded} graded submission{'s' if graded != 1 else ''}:"]
    stat_rows = [[_shown(p["id"]), _points(p["points"]),
                  "–" if p["mean"] is None else _points(p["mean"]),
                  "–" if p["median"] is None else _points(p["median"])] for p in summary["problems"]]
    out += ["  " + line for line in _table(["problem", "points", "mean", "median"], stat_rows, {1, 2, 3})]
    out.append("")
    if summary["misconceptions"]:
        out.append("Most common misconceptions (students, and the parts it cost them):")
        for m in summary["misconceptions"][:10]:
            what = f" — {_shown(m['summary'])}" if m["summary"] else ""
            out.append(f"  {_counted(m['count'], 'student'):>12}, {_counted(m['parts'], 'part'):>9}  "
                       f"{_shown(m['code'])}{what} ({_shown(', '.join(m['problems']))})")
    else:
        out.append("No misconception was diagnosed.")
    out += _explained_lines(summary.get("misconceptions_by_part", []))
    out += _item_lines(summary.get("item_analysis"))
    out += _pool_lines(summary.get("pools", []))
    out.append(f"Submissions: {counts['graded']} graded, {counts['missing']} missing, "
               f"{counts['error']} with errors.")
    if counts["manual_parts"]:
        out.append(f"{counts['manual_parts']} part{'s' if counts['manual_parts'] != 1 else ''} "
                   "still to grade by hand (attnkit mark; not in the totals until graded).")
    late = [s for s in summary["students"] if s["late_penalty"] or s["status"] == NOT_ACCEPTED]
    if late:
        out.append(f"Late: {_counted(len(late), 'submission')} (penalties are in the totals; "
                   "report --json has each one's lateness).")
    if counts["needs_a_look"]:
        out.append(f"{_counted(counts['needs_a_look'], 'submission')} marked \"look\" need a human "
                   "look before the grade stands (attnkit grade lists them).")
    return "\n".join(out) + "\n"


def _item_lines(items: dict | None) -> list[str]:
    """The item analysis in a few lines: α for the assignment and the dubious items."""
    if not items or items["students"] < 2:
        return []
    a = items["assignment"]
    alpha = ("–" if a["alpha"] is None else f"{a['alpha']:.2f}"
             + ("" if a["se"] is None else f" ± {a['se']:.2f}"))
    out = [f"Item analysis over {items['students']} graded submissions: Cronbach's α = {alpha} "
           f"({_counted(a['items'], 'item')}); {_counted(items['flagged'], 'dubious item')} "
           "(report --json has every part's facility, SD, discrimination and efficiency)."]
    flagged = [x for x in [*items["problems"], *items["parts"]] if x["flags"]]
    for x in flagged[:ITEM_LINES]:
        where = _part_name(x)
        facts = f"facility {x['facility']:.2f}" + (
            "" if x["discrimination"] is None else f", discrimination {x['discrimination']:.2f}")
        out.append(f"  {where}: {facts} — {'; '.join(x['flags'])}")
    if len(flagged) > ITEM_LINES:
        out.append(f"  … and {len(flagged) - ITEM_LINES} more (report --json)")
    if items.get("waiting"):
        out.append(f"  ({_counted(len(items['waiting']), 'part')} still to grade by hand left out)")
    return out


ITEM_LINES = 8          # dubious items listed in the terminal (all of them in --json)


def _part_name(x: dict) -> str:
    """problem/part, with a pool member's template: problem[template]/part."""
    member = f"[{x['template']}]" if x.get("template") else ""
    return _shown(x["problem"] + member + ("" if x.get("part") is None else "/" + x["part"]))


def _explained_lines(rows: list[dict]) -> list[str]:
    """The parts most students lost points on, with the share a known misconception explains."""
    worst = sorted((r for r in rows if r["wrong"]), key=lambda r: (-r["wrong"], r["problem"], r["part"]))
    if not worst:
        return []
    out = ["Parts most often wrong, and how much of it a known misconception explains:"]
    for r in worst[:ITEM_LINES]:
        top = r["misconceptions"][0] if r["misconceptions"] else None
        most = f"; most often {_shown(top['code'])} ({top['count']})" if top else ""
        out.append(f"  {_part_name(r)}: {r['wrong']} wrong, {100 * (r['share_explained'] or 0):.0f} % "
                   f"explained{most}")
    return out


def _pool_lines(pools: list[dict]) -> list[str]:
    """Each pool's members side by side, and the fairness check's verdict."""
    out = []
    for pool in pools:
        members = ", ".join(f"{_shown(m['template'])} {m['students']} students"
                            + ("" if m.get("facility") is None else f" (facility {m['facility']:.2f})")
                            for m in pool["members"])
        fairness = pool.get("fairness") or {}
        out.append(f"Pool {_shown(pool['problem'])}: {members}.")
        if fairness.get("message"):
            out.append(f"  {'Not fair? ' if fairness.get('flag') else ''}{_shown(fairness['message'])}")
    return out


def _counted(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _status_cell(student: dict) -> str:
    """The status column: the status ("incomplete" while a part waits to be graded by hand),
    and "look" when something needs a human look."""
    status = student["status"]
    if status == GRADED and any(p["waiting"] for p in student["parts"]):
        status = "incomplete"
    return _shown(status) + (", look" if student["needs_a_look"] else "")


def look_list(summary: dict) -> str:
    """For the TA, first: every submission that needs a human look, one line per issue."""
    look = summary["needs_a_look"]
    if not look:
        return ""
    students = len({x["student"] for x in look})
    lines = [f"Needs a human look ({_counted(students, 'submission')}):"]
    width = max(_width(_shown(x["student"])) for x in look)
    for x in look:
        student = _shown(x["student"])
        lines.append(f"  {student}{' ' * (width - _width(student))}  {_shown(x['code'])}: {_shown(x['message'])}")
    return "\n".join(lines) + "\n"


def _colour_status(line: str, cell: str, status: str) -> str:
    code = _COLOURS.get(status)
    if not code or not line.endswith(cell):
        return line
    return line[: -len(cell)] + code + cell + "\x1b[0m"
