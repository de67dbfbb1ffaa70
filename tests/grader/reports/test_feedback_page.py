"""The students' feedback pages (grader/reports/feedback_page.py) on a real key: a handin the late
policy refused is said to be refused (never "no answer"), and the math of rubric texts and
graders' comments is MathML, as on the marking page — no raw ``$…$``, nothing loaded."""

import re
from datetime import datetime, timedelta, timezone

import pytest

from formats.deadline import Deadline, LatePolicy
from formats.key_shape import assignment_id, graded_parts, is_free_response, problem_records, total_points
from grader.store import marks
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.store.grades import class_grades, late_line
from grader.reports.feedback_page import minimal_page, write_feedback

SECRET = "feedback page test secret, never a real one"
DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)
EXTERNAL = re.compile(r"://|\bhref=|\bsrc=|url\(|@import|<script|<link", re.IGNORECASE)


@pytest.fixture(scope="module")
def key(example_build):
    return example_build(2, SECRET)[1]


def hand_in(gb, key, student, received: datetime, status_of=lambda free: ("passed", 1.0)):
    """Every part of ``student`` recorded (free response waiting for a hand grade), with an
    answer, as received at ``received``; the rows."""
    a = assignment_id(key)
    rows = []
    for pid, record in problem_records(key["students"][student]):
        free = is_free_response(record)
        for part, points in graded_parts(record):
            status, fraction = ("manual", 0.0) if free else status_of(free)
            rows.append(ResultRow(a, student, pid, part, points * fraction, points, status, "",
                                  None, "My answer." if free else None, 3, f"h-{student}"))
    gb.record(SubmissionRow(a, student, f"{student}.ipynb", f"h-{student}", "graded", (),
                            sum(r.score for r in rows), total_points(key),
                            received_at=received.isoformat(), received_from="test"), rows)
    return rows


def test_a_handin_received_after_the_cutoff_is_said_to_be_refused_not_unanswered(key, tmp_path):
    ada, bo = sorted(key["students"])
    with Gradebook(tmp_path / "g.sqlite") as gb:
        rows = hand_in(gb, key, ada, DUE + timedelta(days=3, hours=2))
        hand_in(gb, key, bo, DUE - timedelta(hours=1))
        deadline = Deadline(DUE, LatePolicy("penalty", 10, "day", 50, DUE + timedelta(days=2)))
        refused = next(s for s in class_grades(gb, key, deadline) if s.id == ada)
        written = {p.stem: p.read_text(encoding="utf-8")
                   for p in write_feedback(gb, key, tmp_path / "fb", deadline=deadline)}
        revealed = {p.stem: p.read_text(encoding="utf-8")
                    for p in write_feedback(gb, key, tmp_path / "fbr", reveal=True, deadline=deadline)}[ada]
    page = written[ada]
    assert "No answer recorded" not in page and "no answer" not in page
    assert "Not accepted: your notebook was received 3 days 2 hours late, after the cutoff" in page
    assert late_line(refused) in page                  # in the words every report uses
    # every part says why it was not graded
    assert page.count("not graded: not accepted") == len(rows) == page.count('<div class="part status-')
    assert "No answer recorded" not in revealed and "<h4>Expected</h4>" in revealed
    assert revealed.count("not graded: not accepted") == len(rows)
    # the page made when the full one cannot be: the same words
    minimal = minimal_page(refused, key)
    assert late_line(refused) in minimal and minimal.count("not graded: not accepted") == len(rows)
    # the student on time is graded as ever
    assert "Not accepted" not in written[bo] and "not graded: not accepted" not in written[bo]


def test_math_in_applied_rubric_items_and_comments_is_drawn_not_shown_as_latex(key, tmp_path):
    ada, _ = sorted(key["students"])
    comment = "Close: $d = 1000$ reach the **decoder**, not $T$."
    with Gradebook(tmp_path / "g.sqlite") as gb:
        rows = hand_in(gb, key, ada, DUE - timedelta(hours=1))
        records = dict(problem_records(key["students"][ada]))
        # the bottleneck part's item "$T \cdot d = … \times … = …$ numbers in all the encoder states"
        part, item = next((r, i["id"]) for r in rows if r.status == "manual"
                          for i in records[r.problem]["rubric"][r.part]["items"] if "\\cdot" in i["text"])
        marks.save(gb, key, part.problem, part.part, [marks.Target(ada, 0, part)],
                   marks.Edit((item,), 0.0, comment), "ta")
        revealed = {p.stem: p.read_text(encoding="utf-8")
                    for p in write_feedback(gb, key, tmp_path / "fb", reveal=True)}[ada]
    feedback = re.search(r'<div class="marked">.*?</div>', revealed, re.S).group(0)
    assert "$" not in feedback and "\\cdot" not in feedback and "\\times" not in feedback
    assert feedback.count("<math") >= 3                # the item's math and the comment's two spans
    assert "<strong>decoder</strong>" in feedback      # the comment is Markdown, as the prompts are
    rubrics = revealed[revealed.index("<h4>Rubric</h4>"):]
    assert "\\cdot" not in rubrics and "<math" in rubrics
    assert not EXTERNAL.search(revealed)               # MathML: drawn by the browser, nothing loaded


def test_a_grader_comment_cannot_put_html_or_a_link_on_the_page(key, tmp_path):
    ada, _ = sorted(key["students"])
    comment = "<img src=x onerror=alert(1)> see [notes](https://example.com) $<script>$"
    with Gradebook(tmp_path / "g.sqlite") as gb:
        rows = hand_in(gb, key, ada, DUE - timedelta(hours=1))
        free = next(r for r in rows if r.status == "manual")
        marks.save(gb, key, free.problem, free.part, [marks.Target(ada, 0, free)],
                   marks.Edit((), 0.5, comment), "ta")
        page = {p.stem: p.read_text(encoding="utf-8") for p in write_feedback(gb, key, tmp_path / "fb")}[ada]
    assert "<img" not in page and "<script" not in page and "example.com" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "notes" in page
