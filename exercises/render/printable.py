"""Printable problem sets: one self-contained HTML page per student (for paper exams) and an
answer-key page per student for the instructor. Math is MathML and heatmaps are inline SVG,
so both pages open offline, with no script and no CDN."""

from __future__ import annotations

import numpy as np

from exercises.render.html import answer_box, code_block, escape, heatmap_svg, markdown_to_html, page
from exercises.render.notebook import LETTERS, Header, ProblemVariant, points_text
from exercises.render.preview import compared_with_tolerance, decimals_for, value_text


def _givens(problem: ProblemVariant) -> str:
    if not problem.variant.givens:
        return ""
    rows = [f"<dt><code>{escape(name)}</code></dt><dd>{markdown_to_html(value_text(value, 'markdown', None))}</dd>"
            for name, value in problem.variant.givens.items()]
    return f'<h3>Givens</h3>\n<dl class="givens">{"".join(rows)}</dl>\n'


def _answer_lines(value) -> int:
    """Room to write: a line per matrix row, at least two."""
    return max(2, min(12, np.shape(value)[0] + 1 if np.ndim(value) >= 1 else 2))


def _parts(problem: ProblemVariant) -> str:
    v, out = problem.variant, []
    t = v.template
    if t.kind == "implement":
        f = t.function
        header, _ = t.reference_code()
        tests = ", ".join(f"{x.family} ({points_text(x.points)})" for x in t.tests)
        return (f"<p>Write <code>{escape(f.name + f.signature)}</code>"
                + (f", returning {escape(f.returns)}" if f.returns else "") + ".</p>"
                + code_block(header + "\n    ...") + f"<p>Tests: {escape(tests)}.</p>"
                + answer_box(14))
    for i, part in enumerate(t.parts):
        label = f"({LETTERS[i].lower()})"
        out.append(f'<div class="part"><p><strong>{label}</strong> ({points_text(part.points)})</p>'
                   + markdown_to_html(v.part_prompt(part)))
        if t.kind == "choice":
            out.append("<ol type=\"A\">" + "".join(f"<li>{markdown_to_html(o['text'])}</li>"
                                                    for o in v.options[part.id]) + "</ol>"
                       + "<p>Your choice: ______</p>")
        else:
            out.append(answer_box(6 if t.kind == "free_response" else _answer_lines(v.answers[part.id])))
        out.append("</div>")
    return "\n".join(out)


def _title(head: Header, suffix: str = "") -> str:
    who = f"{head.student_name} ({head.student_id})" if head.student_name else head.student_id
    return f"{head.assignment_title}{suffix}" + (f" — {who}" if who else "")


def problem_set_page(head: Header, problems: list[ProblemVariant]) -> str:
    """The student's problem set: when it is due (and what late work costs), prompts, givens
    and space for the answers."""
    total = sum(p.variant.template.points for p in problems)
    body = [f"<h1>{escape(_title(head))}</h1>",
            f"<p>{points_text(total)} in total. The numbers on this sheet are yours alone.</p>"]
    if head.due:
        body.append(f'<p class="due"><strong>{escape(head.due)}.</strong> {escape(head.late_policy)}</p>')
    if head.instructions.strip():
        body.append(markdown_to_html(head.instructions))
    for n, p in enumerate(problems, 1):
        body.append(f'<section class="problem{" page-break" if n > 1 else ""}">'
                    f"<h2>Problem {n}. {escape(p.title)} ({points_text(p.variant.template.points)})</h2>"
                    + markdown_to_html(p.variant.prompt()) + _givens(p) + _parts(p) + "</section>")
    return page(_title(head), "\n".join(body))


def _expected(problem: ProblemVariant) -> str:
    v, out = problem.variant, []
    t = v.template
    if t.kind == "implement":
        return ("<p>Hidden tests: " + escape(", ".join(f"{x.family} ({x.cases}×, {points_text(x.points)})"
                                                        for x in t.tests)) + "</p>")
    for i, part in enumerate(t.parts):
        label = f"({LETTERS[i].lower()}) {part.id}"
        if t.kind == "free_response":
            out.append(f"<h4>{escape(label)}: rubric</h4>" + markdown_to_html(v.rubric_text(part)))
            continue
        answer = v.answers[part.id]
        if t.kind == "choice":
            option = v.options[part.id][answer]
            out.append(f"<p><strong>{escape(label)}</strong>: {LETTERS[answer]}</p>"
                       + markdown_to_html(option["text"]))
            continue
        shown = value_text(answer, "markdown", decimals_for(part.atol, answer))
        tolerance = (f" <small>(atol {part.atol:g}, rtol {part.rtol:g})</small>"
                     if compared_with_tolerance(answer) else "")
        out.append(f"<p><strong>{escape(label)}</strong>{tolerance}</p>" + markdown_to_html(shown))
        if isinstance(answer, np.ndarray) and answer.ndim == 2 and answer.dtype.kind == "f" \
                and min(answer.shape) > 1:
            out.append(f"<figure>{heatmap_svg(answer, title=part.id)}</figure>")
    return "\n".join(out)


def answer_key_page(head: Header, problems: list[ProblemVariant]) -> str:
    """The instructor's page for one student: expected answers (with tolerances), heatmaps
    of the matrices, the worked solutions."""
    body = [f"<h1>{escape(_title(head, ': answer key'))}</h1>",
            "<p>Instructor only. Expected values are shown rounded; grading uses the exact "
            "values of the answer key with each part's tolerance.</p>"]
    for n, p in enumerate(problems, 1):
        solution = p.variant.solution()
        body.append(f'<section class="problem{" page-break" if n > 1 else ""}">'
                    f"<h2>Problem {n}. {escape(p.title)}</h2>" + _expected(p)
                    + ("<h3>Worked solution</h3>" + markdown_to_html(solution) if solution.strip() else "")
                    + "</section>")
    return page(_title(head, ": answer key"), "\n".join(body))
