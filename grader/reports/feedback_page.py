"""The students' feedback pages (``write_feedback``): one self-contained HTML page per student
(no script, no CDN, no link), and the pieces the instructors' dashboard draws answers with
(``value_html``, ``markdown_html``, ``word_lists``).

A page gives the student's score per problem and per part, what went wrong and why, their
own answers, and the expected answers only with ``reveal`` (a page sent before the deadline
must not hand their answers to their classmates). Math in prompts, messages, rubric texts,
grader's comments and answers is MathML (``exercises.render.html``), which browsers draw on their
own: the page opens offline. What the late policy did to the handin is said in the words of
``grader.store.grades.late_line``, as the LMS exports say it. A part that cannot be drawn is shown
as text, a page that cannot be made is a minimal one, so every student always gets a page
(``FeedbackPages.fallbacks`` says whose fell back). Everything a student, a roster or a
grader wrote is escaped or rendered as Markdown without raw HTML or links.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from solutions import TWINS

from exercises.render.html import code_block, escape, heatmap_svg, markdown_to_html, page
from exercises.render.preview import decimals_for, value_text
from formats.cells import LETTERS
from formats.deadline import Deadline
from formats.key_shape import (assignment_id, assignment_title, entry_for, head_problems, problem_record,
                               problem_title, rubric_of)
from formats.serialize import decode_names, from_jsonable
from formats.textfile import write_atomic

from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, omitted_reason
from grader.store.grades import (ERROR, MANUAL, MISSING, NOT_ACCEPTED, Part, StudentGrades, class_grades,
                                 late_line, score_text, with_answers)
from grader.store.marks import student_lines

# Beyond this many numbers an answer is described, not drawn: a page of 4096 cells helps no one.
MAX_CELLS = 400

_points = score_text


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
    return decimals_for(float(atol), value)


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
    shown = value_html(expected, decimals_for(atol, expected), words)
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
    # Markdown with math, as the rubric and the prompts are drawn: an item's text is the key's,
    # with its variant's numbers in $…$; a comment is the grader's, and no raw HTML or link
    # of either reaches the page (markdown_html).
    return ('<div class="marked"><h4>Grader\'s feedback</h4><ul>'
            + "".join(f"<li>{markdown_html(line)}</li>" for line in lines) + "</ul>" + waiting + "</div>")


def _diagnosis_html(result: ResultRow) -> str:
    if not result or not result.misconception:
        return ""
    m = TWINS.get(result.misconception)
    if m is None:
        return (f'<div class="diagnosis"><p><strong>Diagnosis:</strong> '
                f"<code>{escape(result.misconception)}</code></p></div>")
    if m.summary in result.message:      # the message names it already: add the wrong line only
        return (f'<div class="diagnosis"><p><strong>The mistake, in code:</strong></p>'
                f"{code_block(m.code)}</div>")
    explanation = "" if m.explanation in result.message else f"<p>{escape(m.explanation)}</p>"
    return (f'<div class="diagnosis"><p><strong>Diagnosis:</strong> your answer equals '
            f"{escape(m.summary)}.</p>{explanation}{code_block(m.code)}</div>")


def _part_head(part: Part, index: int, status: str | None = None) -> str:
    """The part's heading: its letter and id, score, and ``status`` (default: its own's label)."""
    label = f"({LETTERS[index].lower()}) {part.part}" if index < len(LETTERS) else part.part
    status = _STATUS_LABELS.get(part.status, part.status) if status is None else status
    return (f'<div class="part status-{escape(part.status)}"><h3>{escape(label)} — '
            f"{_points(part.score)} / {_points(part.points)} · {escape(status)}</h3>")


_NOT_DRAWN = "This answer could not be drawn."


def _part_fallback(part: Part, index: int, status: str | None = None) -> str:
    """A part whose rendering failed: its status, score and message as plain escaped text."""
    message = part.result.message if part.result else ""
    return (_part_head(part, index, status) + (f"<p>{escape(message)}</p>" if message else "")
            + f"<p><em>{_NOT_DRAWN}</em></p></div>")


# A part of a handin the late policy refused: there is an answer, and it was not graded.
_REFUSED_PART = "not graded: not accepted"


def _refused_part_html(record: dict, part: Part, index: int, reveal: bool, words) -> str:
    """A part of a refused handin: not graded, and why; no answer is shown (none was read),
    the expected one with ``reveal``."""
    expected = _expected_html(record, part, words) if reveal else ""
    heading = "Rubric" if record.get("kind") == "free_response" else "Expected"
    return (_part_head(part, index, _REFUSED_PART)
            + (f"<h4>{heading}</h4>{expected}" if expected else "") + "</div>")


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


def _drawn_part(record: dict, part: Part, index: int, reveal: bool, words, fallbacks,
                refused: bool = False) -> str:
    """``_part_html`` (``_refused_part_html`` for a handin the late policy refused), or its
    fallback when a value cannot be drawn (the part is named in ``fallbacks``): one answer
    must not cost the student the rest of their page."""
    try:
        return (_refused_part_html if refused else _part_html)(record, part, index, reveal, words)
    except Exception as err:  # noqa: BLE001 — whatever the value, the page goes on
        if fallbacks is not None:
            fallbacks.append(f"{part.problem}/{part.part} ({type(err).__name__})")
        return _part_fallback(part, index, _REFUSED_PART if refused else None)


def _notices(s: StudentGrades) -> list[str]:
    """What the student must know before the figures: no submission, a grader error, what
    the late policy did (a penalty; a handin refused: there was a notebook, it was not
    accepted), the notes, parts still to be graded by hand."""
    out = []
    if s.status == MISSING:
        out.append("<p>No submission was received for this assignment.</p>")
    elif s.status == ERROR:
        out.append("<p>Your notebook could not be graded; the notes below say why.</p>")
    if late_line(s):            # (the penalty is also a row of the table, where the points add up)
        out.append(f'<p class="late"><strong>{escape(late_line(s))}</strong></p>')
    if s.shown_notes:
        out.append("<ul class=\"notes\">" + "".join(f"<li>{escape(n)}</li>" for n in s.shown_notes) + "</ul>")
    if any(p.status == MANUAL for p in s.parts):
        out.append("<p>Some parts are graded by hand: their points are not included yet.</p>")
    elif any(p.waiting for p in s.parts):
        out.append("<p>A grader will look at some parts again: their points may change.</p>")
    return out


def feedback_page(s: StudentGrades, key: dict, reveal: bool = False, fallbacks=None) -> str:
    """The student's page: their score per problem and per part, what went wrong and why,
    their own answers; the expected answers only with ``reveal``. A part that cannot be
    drawn is shown as text, and named in the list ``fallbacks`` when one is given."""
    entry = entry_for(key, s.id)
    title = f"{assignment_title(key, default=assignment_id(key))} — feedback"
    who = f"{s.name} ({s.id})" if s.name else s.id
    body = [f"<h1>{escape(title)}</h1>", f"<p>{escape(who)}</p>",
            f"<p><strong>{_points(s.total)} / {_points(s.max_score)} points</strong></p>", *_notices(s)]
    problems = head_problems(key)
    rows = "".join(f"<tr><td>{n}. {escape(problem_title(p, problem_record(entry or {}, p['id'], {})))}</td>"
                   f"<td>{_points(s.problem_scores[p['id']])} / {_points(p['points'])}</td></tr>"
                   for n, p in enumerate(problems, 1))
    if s.penalty:
        rows += (f"<tr><td>Late penalty ({escape(s.late)})</td>"
                 f"<td>−{_points(s.penalty)}</td></tr>")
    body.append(f"<table><thead><tr><th>Problem</th><th>Points</th></tr></thead><tbody>{rows}</tbody></table>")
    if reveal:
        body.append("<p><em>This page shows the expected answers.</em></p>")
    for n, problem in enumerate(problems, 1):
        pid = problem["id"]
        record = problem_record(entry, pid, {})
        words = word_lists(record)
        parts = [p for p in s.parts if p.problem == pid]
        section = [f'<section class="problem"><h2>Problem {n}. {escape(problem_title(problem, record))} '
                   f"({_points(s.problem_scores[pid])} / {_points(problem['points'])})</h2>"]
        section += [_drawn_part(record, p, i, reveal, words, fallbacks, s.status == NOT_ACCEPTED)
                    for i, p in enumerate(parts)]
        body.append("".join(section) + "</section>")
    return page(f"{title}: {who}", "\n".join(body))


def minimal_page(s: StudentGrades, key: dict) -> str:
    """The page of a student whose full page could not be made: the total and every part's
    status, score and message, as escaped text, from nothing but strings and numbers."""
    title = f"{key['assignment'].get('title', key['assignment']['id'])} — feedback"
    refused = s.status == NOT_ACCEPTED
    parts = "".join(f"<li>{escape(p.problem)}, {escape(p.part)}: {_points(p.score)} / "
                    f"{_points(p.points)} · {escape(_REFUSED_PART if refused else p.status)}"
                    + (f"<br>{escape(p.result.message)}" if p.result and p.result.message else "")
                    + "</li>" for p in s.parts)
    body = (f"<h1>{escape(title)}</h1><p>{escape(s.id)}</p>"
            f"<p><strong>{_points(s.total)} / {_points(s.max_score)} points</strong></p>"
            + (f"<p>{escape(late_line(s))}</p>" if late_line(s) else "")
            + f"<p><em>This page could not be drawn in full; here is every part's result.</em></p>"
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
