"""Reports: the CSV (every student of the key, formula-safe), Gradescope's results.json, the
feedback pages (self-contained; expected values only when revealed), the terminal table and
the JSON summary — all the same bytes every time."""

import csv
import io
import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from solutions import TWINS

from formats.serialize import decode_names, encode_names, to_jsonable
from formats.textfile import terminal_json
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.reports.summary import class_table, csv_text, summary_json, write_csv, write_gradescope
from grader.reports.feedback_page import feedback_page, write_feedback
from grader.store.grades import class_grades, with_answers

A = "hw-reports"
GRADING = {"rtol": 1e-5, "misconceptions": [], "checks": []}

# The right answers: numbers that appear nowhere else on a page, so finding one means it leaked.
SCALE = 0.5773502691896258
WEIGHTS = np.array([[0.7071, 0.1913, 0.1016], [0.3329, 0.4447, 0.2224], [0.2681, 0.2681, 0.4638]])
IMPL_EXPECTED = np.array([[0.8123, 0.1877]])
RIGHT_OPTION = "Because a causal mask would hide the right-hand context"
RUBRIC = "Full marks for naming the **fixed-size** context vector."
# What Ada wrote: wrong, and as distinctive.
ADA_WEIGHTS = np.array([[0.9512, 0.0311, 0.0177], [0.0402, 0.9205, 0.0393], [0.0168, 0.0168, 0.9664]])


def record(scale=SCALE, weights=WEIGHTS):
    return {
        "attn": {"kind": "numeric", "givens": encode_names({"words": ["the", "cat", "sat"]}),
                 "answers": encode_names({"scale": scale, "weights": weights}),
                 "answer_names": {"scale": "scale", "weights": "p1_weights"}, "options": {},
                 "rubrics": {},
                 "grading": [{**GRADING, "id": "scale", "points": 1.0, "atol": 1e-4},
                             {**GRADING, "id": "weights", "points": 2.0, "atol": 5e-3,
                              "misconceptions": ["sdpa_no_scale"]}]},
        "quiz": {"kind": "choice", "givens": {}, "answers": {"why": 1}, "answer_names": {"why": "why"},
                 "options": {"why": [{"text": "Because **BERT** is small", "feedback": "Size is not it."},
                                     {"text": RIGHT_OPTION, "feedback": ""},
                                     {"text": "Because of padding", "feedback": "No."}]},
                 "rubrics": {}, "grading": [{**GRADING, "id": "why", "points": 1.0, "atol": 1e-8}]},
        "essay": {"kind": "free_response", "givens": {}, "answers": {}, "answer_names": {},
                  "options": {}, "rubrics": {"bottleneck": RUBRIC},
                  "grading": [{**GRADING, "id": "bottleneck", "points": 2.0, "atol": 1e-8}]},
        "impl": {"kind": "implement", "givens": {}, "answers": {}, "answer_names": {}, "options": {},
                 "rubrics": {}, "function": "attention", "rtol": 1e-6, "atol": 1e-4,
                 "misconceptions": ["sdpa_no_scale"],
                 "grading": [{"family": "basic", "points": 1.0, "cases": 1},
                             {"family": "masked", "points": 1.0, "cases": 1}],
                 "tests": [{"family": "basic", "index": 0, "args": {}, "expected": to_jsonable(IMPL_EXPECTED)},
                           {"family": "masked", "index": 0, "args": {},
                            "expected": to_jsonable(np.array([[1.0, 0.0]]))}]},
    }


KEY = {
    "assignment": {"id": A, "title": "Attention & masks", "points": 8.0,
                   "problems": [{"id": "attn", "title": "Attention weights", "kind": "numeric", "points": 3.0},
                                {"id": "quiz", "title": "BERT, briefly", "kind": "choice", "points": 1.0},
                                {"id": "essay", "title": "The bottleneck", "kind": "free_response", "points": 2.0},
                                {"id": "impl", "title": "Implement attention", "kind": "implement", "points": 2.0}]},
    "students": {
        "s1": {"name": "Ada Lovelace", "email": "ada@example.edu", "notebook": "x", "problems": record()},
        "s2": {"name": '=HYPERLINK("http://evil.example/","click"), Jr.', "email": "+1@example.edu",
               "notebook": "x", "problems": record(0.25, WEIGHTS.T)},
        "s3": {"name": "Søren Ørsted", "email": "soren@example.edu", "notebook": "x", "problems": record()},
    },
}

ADA_TEXT = "The context is **one fixed-size** vector: $c \\in \\mathbb{R}^d$. See [this](https://example.com/notes)."


def row(student, problem, part, score, max_score, status, message="", misconception=None, answer=None):
    return ResultRow(A, student, problem, part, score, max_score, status, message, misconception,
                     answer, 5, f"hash-{student}")


ADA = [row("s1", "attn", "scale", 0.0, 1.0, "failed", "`scale`: outside tolerance", answer=0.3333333),
       row("s1", "attn", "weights", 0.0, 2.0, "failed", "`p1_weights` matches a known mistake.",
           "sdpa_no_scale", to_jsonable(ADA_WEIGHTS)),
       row("s1", "quiz", "why", 0.0, 1.0, "failed", "A is not right. Size is not it.", answer="a"),
       row("s1", "essay", "bottleneck", 0.0, 2.0, "manual", "Graded by hand.", answer=ADA_TEXT),
       row("s1", "impl", "basic", 1.0, 1.0, "passed"),
       row("s1", "impl", "masked", 0.5, 1.0, "partial", "`attention` fails 1 of 2 hidden cases.")]
BOB = [row("s2", "attn", "scale", 1.0, 1.0, "passed", answer=0.25),
       row("s2", "attn", "weights", 2.0, 2.0, "passed", answer=to_jsonable(WEIGHTS.T)),
       row("s2", "quiz", "why", 1.0, 1.0, "passed", answer="B"),
       row("s2", "essay", "bottleneck", 0.0, 2.0, "missing", "No answer written (graded by hand)."),
       row("s2", "impl", "basic", 1.0, 1.0, "passed"),
       row("s2", "impl", "masked", 1.0, 1.0, "passed")]


def sub(student, rows, status="graded", notes=()):
    return SubmissionRow(A, student, f"{student}.ipynb", f"hash-{student}", status, notes,
                         sum(r.score for r in rows), 8.0, 100, "0.1.0")


@pytest.fixture
def gradebook(tmp_path):
    with Gradebook(tmp_path / "grades.sqlite") as gb:
        gb.record(sub("s1", ADA, notes=("cell 4 raised NameError: name 'np' is not defined",)), ADA)
        gb.record(sub("s2", BOB), BOB)
        yield gb                                     # s3 never submitted


def pages(gb, out: Path, reveal: bool) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in write_feedback(gb, KEY, out, reveal=reveal)}


# ---------------------------------------------------------------------------------- CSV


def test_csv_lists_every_student_of_the_key_with_scores_per_problem(gradebook, tmp_path):
    path = write_csv(gradebook, KEY, tmp_path / "out" / "grades.csv")
    data = path.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf") and data.count(b"\r\n") == 4
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert rows[0] == ["student_id", "name", "email", "total", "max", "attn", "quiz", "essay", "impl", "status",
                       "pending_points", "late_penalty", "late"]
    # the essay is still to be graded by hand: incomplete, with its points pending (issue 15)
    assert rows[1] == ["s1", "Ada Lovelace", "ada@example.edu", "1.5", "8", "0", "0", "0", "1.5", "incomplete",
                       "2", "", ""]
    assert rows[2][3:] == ["6", "8", "3", "1", "0", "2", "graded", "0", "", ""]
    # no submission: blank, not 0 (issue 15)
    assert rows[3] == ["s3", "Søren Ørsted", "soren@example.edu", "", "8", "", "", "", "", "missing", "", "", ""]


def test_csv_cells_cannot_start_a_formula(gradebook):
    rows = list(csv.reader(io.StringIO(csv_text(gradebook, KEY), newline="")))
    name, email = rows[2][1], rows[2][2]
    assert name == "'" + KEY["students"]["s2"]["name"]     # quoted, comma and all, and inert
    assert email == "'+1@example.edu"
    assert all(not cell.startswith(("=", "+", "-", "@")) for r in rows for cell in r)


# ---------------------------------------------------------------------------- Gradescope


def test_gradescope_results_have_a_test_per_part(gradebook, tmp_path):
    paths = write_gradescope(gradebook, KEY, tmp_path / "gs")
    assert [p.relative_to(tmp_path / "gs").as_posix() for p in paths] == \
        ["s1/results.json", "s2/results.json", "s3/results.json"]
    ada = json.loads(paths[0].read_text(encoding="utf-8"))
    assert ada["score"] == 1.5 and "1.5 of 8 points" in ada["output"] and "NameError" in ada["output"]
    assert [t["number"] for t in ada["tests"]] == ["1.1", "1.2", "2.1", "3.1", "4.1", "4.2"]
    for t in ada["tests"]:
        assert {"name", "number", "score", "max_score", "output", "visibility"} <= set(t)
        assert t["visibility"] == "visible"
    by_number = {t["number"]: t for t in ada["tests"]}
    assert by_number["1.2"]["status"] == "failed" and by_number["1.2"]["max_score"] == 2.0
    assert by_number["4.1"]["status"] == "passed"
    assert by_number["4.2"]["score"] == 0.5 and by_number["4.2"]["status"] == "failed"
    assert "status" not in by_number["3.1"] and "by hand" in by_number["3.1"]["output"]
    missing = json.loads(paths[2].read_text(encoding="utf-8"))
    assert missing["score"] == 0 and "No submission" in missing["output"]
    assert all(t["score"] == 0 and t["status"] == "failed" for t in missing["tests"])


# ------------------------------------------------------------------------------ feedback

EXTERNAL = re.compile(r"://|\bhref=|\bsrc=|url\(|@import|<script|<link|<iframe|<img|<object|<embed",
                      re.IGNORECASE)


def test_feedback_pages_are_self_contained(gradebook, tmp_path):
    for reveal in (False, True):
        written = pages(gradebook, tmp_path / str(reveal), reveal)
        assert sorted(written) == ["s1", "s2", "s3"]
        for sid, html in written.items():
            assert html.startswith("<!DOCTYPE html>")
            # s2's roster name holds a URL, shown as text: everything else must name none.
            html = html.replace(escape_html(KEY["students"][sid]["name"]), "")
            assert not EXTERNAL.search(html), (sid, EXTERNAL.search(html))
    # The student's link is shown as its text, going nowhere.
    assert "example.com" not in written["s1"] and ">this<" not in written["s1"] and "this." in written["s1"]


def test_expected_values_appear_only_when_revealed(gradebook, tmp_path):
    hidden = pages(gradebook, tmp_path / "hidden", False)["s1"]
    shown = pages(gradebook, tmp_path / "shown", True)["s1"]
    leaks = ["0.57735",                                    # the scale, to the part's tolerance
             *(f">{x:.2f}<" for x in WEIGHTS.flat),        # the heatmap's cells
             "0.8123",                                     # a hidden test's expected output
             RIGHT_OPTION, "<strong>B.</strong>",          # the right option
             "fixed-size</strong> context vector"]         # the rubric
    for text in leaks:
        assert text not in hidden, text
        assert text in shown, text
    for x in ADA_WEIGHTS.flat:                             # the student's own answer, both times
        assert f">{x:.2f}<" in hidden and f">{x:.2f}<" in shown
    assert "0.33333" in hidden                             # their scale, to the same decimals


def test_feedback_explains_the_diagnosed_misconception(gradebook, tmp_path):
    html = pages(gradebook, tmp_path, False)["s1"]
    m = TWINS["sdpa_no_scale"]
    for text in (m.summary, m.explanation, m.code):
        assert escape_html(text) in html
    assert "Size is not it." in html                       # the chosen option's own feedback
    assert "Because <strong>BERT</strong> is small" in html  # and what they chose


def escape_html(text: str) -> str:
    from exercises.render.html import escape
    return escape(text)


def test_matrices_are_heatmaps_labelled_with_the_givens_words(gradebook, tmp_path):
    html = pages(gradebook, tmp_path, False)["s1"]
    heatmap = re.search(r'<svg class="heatmap".*?</svg>', html, re.S).group(0)
    for word in ("the", "cat", "sat"):
        assert f">{word}</text>" in heatmap


def test_free_response_is_graded_by_hand_and_shows_the_text(gradebook, tmp_path):
    written = pages(gradebook, tmp_path, False)
    ada = written["s1"]
    assert "graded by hand" in ada and "<strong>one fixed-size</strong> vector" in ada
    assert "<math" in ada                                   # their $…$ as MathML
    assert "No answer written" in written["s2"]
    assert "No submission was received" in written["s3"] and "0 / 8 points" in written["s3"]


def test_a_stored_answer_that_was_too_large_is_described(tmp_path):
    big = to_jsonable(np.ones((200, 200)))
    rows = [row("s1", "attn", "weights", 0.0, 2.0, "failed", "wrong", answer=big)]
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(sub("s1", rows), rows)
        (ada,) = [with_answers(gb, KEY, s) for s in class_grades(gb, KEY) if s.id == "s1"]
        html = feedback_page(ada, KEY)
    assert "too large to keep" in html


def test_write_feedback_reports_progress(gradebook, tmp_path):
    class Progress:
        done = 0

        def advance(self, n):
            self.done += n
    progress = Progress()
    write_feedback(gradebook, KEY, tmp_path, progress=progress)
    assert progress.done == 3


# ---------------------------------------------------------------------- table and summary


def test_class_table_is_aligned_plain_text_with_a_summary(gradebook):
    text = class_table(gradebook, KEY)
    assert "\x1b" not in text and "\x1b[" in class_table(gradebook, KEY, colour=True)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("student"))
    table = lines[header:header + 5]
    status_column = table[0].index("status")
    assert [line[status_column:] for line in table[2:]] == ["incomplete", "graded", "missing"]   # (s1: an essay to grade by hand)
    assert "Søren Ørsted" in table[4] and "1.5/8" in table[2]
    assert "sdpa_no_scale" in text and "1 missing" in text and "0 with errors" in text
    assert "1 part still to grade by hand (attnkit mark" in text
    attn = next(line for line in lines if line.strip().startswith("attn "))
    assert attn.split()[1:] == ["3", "1.5", "1.5"]          # points, mean, median of 0 and 3


def test_summary_json_is_data_for_the_cli(gradebook):
    summary = summary_json(gradebook, KEY)
    json.loads(terminal_json(summary))          # (the students a list, every value data)
    json.dumps(summary, allow_nan=False, default=list)
    assert summary["counts"] == {"students": 3, "graded": 2, "missing": 1, "error": 0, "manual_parts": 1,
                                 "needs_a_look": 0}
    assert [s["id"] for s in summary["students"]] == ["s1", "s2", "s3"]
    assert summary["students"][1]["problems"] == {"attn": 3.0, "quiz": 1.0, "essay": 0.0, "impl": 2.0}
    assert summary["misconceptions"] == [{"code": "sdpa_no_scale", "count": 1, "parts": 1, "problems": ["attn"],
                                          "summary": TWINS["sdpa_no_scale"].summary}]
    assert summary["totals"] == {"mean": 3.75, "median": 3.75}
    assert [p["status"] for p in summary["students"][2]["parts"]] == ["missing"] * 6


def test_forensics_that_fail_leave_the_summary_whole_and_say_so(gradebook, monkeypatch):
    def broken(*_a, **_k):
        raise RuntimeError("forensics broke")
    monkeypatch.setattr("grader.forensics.flags._follow_through_parts", broken)
    summary = summary_json(gradebook, KEY)
    assert summary["not_checked"] == "copied chains were not checked (RuntimeError: forensics broke)"
    assert summary["students"] and "needs_a_look" in summary
    monkeypatch.undo()
    assert "not_checked" not in summary_json(gradebook, KEY)


def test_errored_submissions_are_counted(tmp_path):
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(SubmissionRow(A, "s2", "s2.ipynb", "h", "error", ("belongs to s9",), 0, 8, 0, "0.1.0"), [])
        counts = summary_json(gb, KEY)["counts"]
        assert (counts["graded"], counts["missing"], counts["error"]) == (0, 2, 1)
        assert "1 with errors" in class_table(gb, KEY)


def test_every_report_is_the_same_bytes_however_often_and_whenever_graded(gradebook, tmp_path):
    def everything(folder: Path) -> dict[str, bytes]:
        write_csv(gradebook, KEY, folder / "grades.csv")
        write_gradescope(gradebook, KEY, folder / "gradescope")
        write_feedback(gradebook, KEY, folder / "feedback", reveal=True)
        (folder / "table.txt").write_text(class_table(gradebook, KEY), encoding="utf-8")
        (folder / "summary.json").write_text(json.dumps(summary_json(gradebook, KEY), default=list), encoding="utf-8")
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    first = everything(tmp_path / "a")
    with sqlite3.connect(gradebook.path) as c:               # graded at another time
        c.execute("UPDATE submissions SET graded_at = '1999-12-31T23:59:59+00:00'")
    assert everything(tmp_path / "b") == first
    assert len(first) == 1 + 3 + 3 + 2


# ------------------------------------------------------------- with a key the kit really built


SECRET = "report-test secret, 32 bytes long"


@pytest.fixture(scope="module")
def built_key(example_build):
    return example_build(3, SECRET)[1]


def _right_answers(key: dict, sid: str) -> list[ResultRow]:
    """Every part of a real key recorded as the right answer: what a perfect student earns."""
    aid, rows = key["assignment"]["id"], []
    for problem in key["assignment"]["problems"]:
        rec = key["students"][sid]["problems"][problem["id"]]
        answers = decode_names(rec["answers"]) if rec["kind"] in ("numeric", "choice") else {}
        for g in rec["grading"]:
            part = g.get("id", g.get("family"))
            answer = {"numeric": lambda: to_jsonable(answers[part]),
                      "choice": lambda: "ABCDEFGH"[answers[part]],
                      "free_response": lambda: "Attention looks back at *every* state.",
                      "implement": lambda: None}[rec["kind"]]()
            status = "manual" if rec["kind"] == "free_response" else "passed"
            score = 0.0 if status == "manual" else float(g["points"])
            rows.append(ResultRow(aid, sid, problem["id"], part, score, float(g["points"]), status,
                                  "", None, answer, 3, "h"))
    return rows


def test_feedback_from_a_real_key_covers_every_kind_of_problem(built_key, tmp_path):
    key = built_key
    aid, sid = key["assignment"]["id"], sorted(key["students"])[0]
    rows = _right_answers(key, sid)
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(SubmissionRow(aid, sid, "n.ipynb", "h", "graded", (), sum(r.score for r in rows),
                                key["assignment"]["points"], 1, "0.1.0"), rows)
        written = pages_for(gb, key, tmp_path / "fb", reveal=False)
        revealed = pages_for(gb, key, tmp_path / "fbr", reveal=True)
        table = class_table(gb, key)
    assert sorted(written) == sorted(key["students"])
    for html in [*written.values(), *revealed.values()]:
        assert not EXTERNAL.search(html)
    page_html = written[sid]
    assert page_html.count('<div class="part status-') == len(rows)
    assert page_html.count('<svg class="heatmap"') >= 3
    bahdanau_words = decode_names(key["students"][sid]["problems"]["bahdanau"]["givens"])["words"]
    assert all(f">{w}</text>" in page_html for w in bahdanau_words)   # the rows of `pre`
    assert "Expected" not in page_html and "Expected" in revealed[sid]
    assert "2 missing" in table


def pages_for(gb, key, out, reveal):
    return {p.stem: p.read_text(encoding="utf-8") for p in write_feedback(gb, key, out, reveal=reveal)}


# ------------------------------------------------ no answer may stop a report or hide a page

OVERFLOWING = np.array([[1e308, -1e308, 0, 1]] * 4)      # its range is ∞ in floating point
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"


def acted_on(text: str) -> list[str]:
    """Characters a terminal would act on or hide (newlines structure the output)."""
    import unicodedata
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


def _overflowing_gradebook(path: Path) -> Gradebook:
    rows = [r if (r.problem, r.part) != ("attn", "weights") else
            row("s1", "attn", "weights", 0.0, 2.0, "failed", "`p1_weights`: wrong <values>",
                answer=to_jsonable(OVERFLOWING)) for r in ADA]
    gb = Gradebook(path)
    gb.record(sub("s1", rows), rows)
    gb.record(sub("s2", BOB), BOB)
    return gb


def test_an_answer_whose_range_overflows_is_drawn_and_every_page_written(tmp_path):
    with _overflowing_gradebook(tmp_path / "g.sqlite") as gb:
        written = write_feedback(gb, KEY, tmp_path / "fb")
    assert [p.name for p in written] == ["s1.html", "s2.html", "s3.html"]
    assert written.fallbacks == {}
    ada = written[0].read_text(encoding="utf-8")
    heatmap = re.search(r'<svg class="heatmap".*?</svg>', ada, re.S).group(0)
    assert heatmap.count("<rect") == 16 and "nan" not in heatmap.lower()


def test_a_part_that_cannot_be_drawn_falls_back_to_its_text(gradebook, tmp_path, monkeypatch):
    def broken(*_args, **_kwargs):
        raise ValueError("a renderer bug")
    monkeypatch.setattr("grader.reports.feedback_page.heatmap_svg", broken)
    written = write_feedback(gradebook, KEY, tmp_path)
    assert len(written) == 3
    assert written.fallbacks == {"s1": ["attn/weights (ValueError)"], "s2": ["attn/weights (ValueError)"]}
    ada = written[0].read_text(encoding="utf-8")
    part = re.search(r'<div class="part status-failed"><h3>\(b\) weights.*?</div>', ada, re.S).group(0)
    assert "0 / 2 · ✗ not correct" in part and "matches a known mistake." in part
    assert "This answer could not be drawn." in part and "a renderer bug" not in ada
    assert "Size is not it." in ada and "0.33333" in ada      # the other parts, in full


def test_a_page_that_cannot_be_made_is_a_minimal_page_never_a_missing_one(tmp_path, monkeypatch):
    rows = [r if (r.problem, r.part) != ("attn", "scale") else
            row("s1", "attn", "scale", 0.0, 1.0, "failed", "raised ValueError: <script>x</script>")
            for r in ADA]

    def broken(_record):
        raise RuntimeError("a bug outside any part")
    monkeypatch.setattr("grader.reports.feedback_page.word_lists", broken)
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(sub("s1", rows), rows)
        written = write_feedback(gb, KEY, tmp_path / "fb")
    assert [p.name for p in written] == ["s1.html", "s2.html", "s3.html"]
    assert written.fallbacks == {sid: ["the whole page (RuntimeError)"] for sid in ("s1", "s2", "s3")}
    ada = written[0].read_text(encoding="utf-8")
    assert ada.startswith("<!DOCTYPE html>") and "1.5 / 8 points" in ada
    assert "attn, scale: 0 / 1 · failed<br>raised ValueError: &lt;script&gt;x&lt;/script&gt;" in ada
    assert "<script>" not in ada and ada.count("<li>") == 6


def test_class_table_shows_roster_text_and_never_passes_it_to_the_terminal(gradebook):
    key = {**KEY, "students": {**KEY["students"],
                               "s2": {**KEY["students"]["s2"], "name": f"\u202e\x9bEve {HOSTILE} Mallory"}}}
    text = class_table(gradebook, key)
    assert acted_on(text) == []
    assert "s2       \\u202e\\x9bEve \\x1b]0;pwned\\…    6/8" in text    # clipped to 28 columns
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("student"))
    table = lines[header:header + 5]
    status_column = table[0].index("status")
    assert [line[status_column:] for line in table[2:]] == ["incomplete", "graded", "missing"]
    assert acted_on(class_table(gradebook, key, colour=True).replace("\x1b[", "")) == []


def test_a_very_long_roster_name_is_clipped_in_linear_time(gradebook):
    # Clipping one character at a time, re-measuring each time, took hours for this name.
    key = {**KEY, "students": {**KEY["students"],
                               "s3": {**KEY["students"]["s3"], "name": "Ø" * 2_000_000}}}
    line = next(line for line in class_table(gradebook, key).splitlines() if line.startswith("s3"))
    assert "Ø" * 27 + "…" in line and "Ø" * 28 not in line


def test_long_student_text_in_messages_and_answers_renders_in_linear_time(tmp_path):
    # Unclosed \text{ groups in one $…$ span cost latex2mathml quadratic time; 2 MB of them,
    # as a message and as a free-response answer, would take hours.
    hostile = "$" + "\\text{x" * 300_000 + "$"
    rows = [r if r.problem not in ("attn", "essay") else
            row("s1", r.problem, r.part, r.score, r.max_score, r.status, f"raised {hostile}",
                answer=hostile if r.problem == "essay" else r.answer) for r in ADA]
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(sub("s1", rows), rows)
        written = write_feedback(gb, KEY, tmp_path / "fb")
    ada = written[0].read_text(encoding="utf-8")
    assert written.fallbacks == {} and ada.count("\\text{x" * 1000) >= 3


def test_an_empty_array_is_described_by_its_shape_not_drawn_per_row():
    """np.zeros((21000, 0, 0)) has no entries, so it passed the size check, and was drawn
    one sub-array at a time: 21,000 drawings and 2.8 MB of HTML for one part."""
    from grader.reports.feedback_page import value_html
    html = value_html(np.zeros((21000, 0, 0)))
    assert html == "<p>An array of shape (21000, 0, 0): no entries to show.</p>"


def test_the_class_is_read_without_its_answers(tmp_path):
    """A class's answers (up to 64 kB a part) were all read for the CSV and the table: about
    5 GB at 1,000 students. Only a feedback page reads them, one student's at a time."""
    answer = "x" * 60_000
    rows = [row("s1", "attn", "weights", 0.0, 2.0, "failed", "wrong", answer=answer)]
    with Gradebook(tmp_path / "g.sqlite") as gb:
        gb.record(sub("s1", rows), rows)
        grades = class_grades(gb, KEY)
        assert all(p.result is None or p.result.answer is None for s in grades for p in s.parts)
        (ada,) = [with_answers(gb, KEY, s) for s in grades if s.id == "s1"]
        assert next(p for p in ada.parts if p.part == "weights").result.answer == answer
        write_feedback(gb, KEY, tmp_path / "feedback")
    assert answer in (tmp_path / "feedback" / "s1.html").read_text(encoding="utf-8")
