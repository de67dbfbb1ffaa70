"""The instructors' dashboard (grader/reports/dashboard.py, ``attnkit report --dashboard``): the item
analysis on the page is the summary's, every student's text is escaped, pools and their
fairness warning are drawn from the summary, and — in a real headless Chromium (Debian's
``chromium``, as tests/grader/marking/test_browser.py drives it) — the page opens from disk
without a console error or a single request beyond itself, showing the item statistics,
the heatmaps and the forensic flags planted in a graded class."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

import grader.reports.dashboard as dashboard
import grader.reports.wrong_matrices as wrong_matrices
from formats.key_shape import assignment_id, key_students
from grader.reports.dashboard import dashboard_html, write_dashboard
from grader.store.gradebook import Gradebook
from grader.reports.summary import summary_json

ROOT = Path(__file__).resolve().parents[3]
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_MESSAGE = "wrong </table><img src=x onerror=alert(2)> entries"
HOSTILE_CODE = "<i>not_a_code</i>"


@pytest.fixture
def graded(graded_class):
    """(key, gradebook path) of the example assignment graded for 12 students (shared: copy
    the gradebook before writing to it)."""
    _, key, gradebook, _ = graded_class(12)
    return key, gradebook


def page_of(gradebook, key, **kwargs) -> str:
    with Gradebook(gradebook) as gb:
        return dashboard_html(gb, key, **kwargs)


def summary_of(gradebook, key) -> dict:
    with Gradebook(gradebook) as gb:
        return summary_json(gb, key)


def _where(x: dict) -> str:
    return (x["problem"] + ("" if x["part"] is None else "/" + x["part"])
            + (f" ({x['template']})" if x.get("template") else ""))


def _rows(html: str) -> dict[str, tuple[str, list[str], str]]:
    """The item table's rows: data-item → (class, the cells' data-values, the row's HTML)."""
    table = html[html.index('<table class="items"'):]
    table = table[:table.index("</table>")]
    return {m.group(2): (m.group(1), re.findall(r'data-value="([^"]*)"', m.group(3)), m.group(3))
            for m in re.finditer(r'<tr class="([^"]*)" data-item="([^"]*)">(.*?)</tr>', table)}


# ------------------------------------------------------------------------------- content


def test_the_item_analysis_on_the_page_is_the_summarys(graded):
    key, gradebook = graded
    html = page_of(gradebook, key)
    items = summary_of(gradebook, key)["item_analysis"]
    rows = _rows(html)
    everything = items["problems"] + items["parts"]
    assert len(rows) == len(everything) and items["flagged"] > 0
    for x in everything:
        css, values, row = rows[_where(x)]
        figures = [x["facility"], x["sd"], x["discrimination"], x["efficiency"]]
        assert [None if v == "" else float(v) for v in values] == figures, _where(x)
        shown = re.findall(r'data-value="[^"]*">([^<]*)</td>', row)
        assert shown == ["–" if f is None else f"{f:.2f}" for f in figures]
        assert ("flagged" in css) == bool(x["flags"])
        for flag in x["flags"]:                      # the flag's own words, in its row
            assert flag in row
    a = items["assignment"]
    assert f"{a['alpha']:.2f} ± {a['se']:.2f} (SE)" in html
    assert f"{a['error_ratio']:.2f}" in html and f"{a['sem']:.2f} points" in html


def test_the_page_is_self_contained_and_the_same_bytes_each_time(graded, tmp_path):
    key, gradebook = graded
    with Gradebook(gradebook) as gb:
        first = write_dashboard(gb, key, tmp_path / "reports" / "dashboard.html").read_bytes()
        again = write_dashboard(gb, key, tmp_path / "reports" / "dashboard.html").read_bytes()
    assert first == again
    html = first.decode("utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in html
    for outside in ("<script", "<link", "src=", "url(", "@import", "http://", "https://", "//cdn"):
        assert outside not in html.lower(), outside
    assert all(h.startswith("#") for h in re.findall(r'href="([^"]*)"', html))   # its own anchors only
    assert not list((tmp_path / "reports").glob(".*.tmp"))                       # written atomically
    # the charts say what they show in words
    assert "<title id=\"hist-title\">" in html and "<desc id=\"hist-desc\">" in html
    assert html.count("<figure><svg") == html.count("<desc>")


def test_distribution_figures_are_the_graded_totals(graded):
    import statistics
    key, gradebook = graded
    summary = summary_of(gradebook, key)
    totals = [s["total"] for s in summary["students"] if s["status"] == "graded"]
    html = page_of(gradebook, key)
    assert f"<dt>Mean</dt><dd>{summary['totals']['mean']:.2f}</dd>" in html
    assert f"<dt>Median</dt><dd>{summary['totals']['median']:.2f}</dd>" in html
    assert f"<dt>SD</dt><dd>{statistics.stdev(totals):.2f}</dd>" in html
    counts = [int(n) for n in re.findall(r'<tr><th scope="row">[^<]*</th><td class="num">(\d+)</td></tr>',
                                         html[html.index("The histogram as a table"):])]
    assert sum(counts) == len(totals)


def _failing_matrix_rows(gb, key):
    parts = {(pid, part) for pid, _, part in wrong_matrices.matrix_parts(key, key_students(key))}
    return [r for r in gb.results(assignment_id(key)) if (r.problem, r.part) in parts and r.status == "failed"]


def test_names_messages_and_codes_are_escaped(graded, tmp_path):
    key, gradebook = graded
    # (the key verifies and parses its entries lazily: a plain copy with the names changed)
    key = {**key, "students": {sid: {**key["students"][sid], "name": HOSTILE_NAME + sid}
                               for sid in key_students(key)}}
    copied = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copied)
    with Gradebook(copied) as gb:
        failing = _failing_matrix_rows(gb, key)
        assert failing
        hostile = {(r.student, r.problem, r.part) for r in failing}
        coded = failing[0]
        for sid in sorted({r.student for r in failing}):
            rows = gb.results(assignment_id(key), sid)
            rows = [dataclasses.replace(r, message=HOSTILE_MESSAGE,
                                        misconception=HOSTILE_CODE if r == coded else r.misconception)
                    if (r.student, r.problem, r.part) in hostile else r for r in rows]
            gb.record(gb.handins(assignment_id(key), sid)[0], rows)
        html = dashboard_html(gb, key)
    assert "<script" not in html and "<img" not in html and "<i>not_a_code" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html            # the names are shown, as text
    assert "&lt;/table&gt;&lt;img src=x onerror=alert(2)&gt;" in html  # and the grader's messages
    assert "&lt;i&gt;not_a_code&lt;/i&gt;" in html
    assert html.count("<table") == html.count("</table>")


def test_pools_and_a_flagged_fairness_test_are_drawn_from_the_summary(graded, monkeypatch):
    key, gradebook = graded
    real = dashboard.summary_json
    pool = {"problem": "masks", "title": "Masks <by hand>",
            "members": [{"template": "causal_mask_by_hand", "title": "Causal", "students": 6, "graded": 6,
                         "mean": 5.5, "sd": 0.2, "facility": 0.917, "discrimination": 0.61},
                        {"template": "padding_mask_by_hand", "title": "Padding </td>", "students": 6,
                         "graded": 6, "mean": 2.5, "sd": 0.4, "facility": 0.417, "discrimination": 0.33}],
            "fairness": {"test": "Kruskal-Wallis", "statistic": 7.41, "df": 1, "p_value": 0.0042,
                         "lowest": "padding_mask_by_hand", "flag": True,
                         "message": "the members differ in difficulty: padding_mask_by_hand scores lowest"}}
    monkeypatch.setattr(dashboard, "summary_json", lambda *a, **k: {**real(*a, **k), "pools": [pool]})
    html = page_of(gradebook, key)
    pools = html[html.index('id="pools"'):html.index('id="forensics"')]
    assert '<div class="warning fairness">' in pools and "Fairness warning" in pools
    assert "the members differ in difficulty: padding_mask_by_hand scores lowest" in pools
    assert "Kruskal-Wallis: statistic 7.41, df 1, p = 0.004" in pools
    assert "Masks &lt;by hand&gt;" in pools and "Padding &lt;/td&gt;" in pools
    assert 'data-value="0.917"' in pools and 'data-value="0.417"' in pools
    assert '<tr class=flagged><th scope="row"><code>padding_mask_by_hand' in pools   # the lowest, marked
    # an unflagged test is no warning; no pools at all says so
    calm = {**pool, "fairness": {**pool["fairness"], "flag": False, "message": "no significant difference"}}
    monkeypatch.setattr(dashboard, "summary_json", lambda *a, **k: {**real(*a, **k), "pools": [calm]})
    assert "Fairness warning" not in page_of(gradebook, key)
    monkeypatch.setattr(dashboard, "summary_json", lambda *a, **k: {**real(*a, **k), "pools": []})
    assert "No pools" in page_of(gradebook, key)


def test_misconceptions_per_part_are_counted_and_drawn_as_bars(graded, monkeypatch):
    key, gradebook = graded
    summary = summary_of(gradebook, key)
    ours = summary["misconceptions_by_part"]
    graded_students = [s for s in summary["students"] if s["status"] == "graded"]
    for d in ours:
        parts = [p for s in graded_students for p in s["parts"]
                 if (p["problem"], p["part"]) == (d["problem"], d["part"])]
        # (scores are stored to 6 decimals: 3.333333 of 10/3 points is full marks)
        wrong = [p for p in parts if not p["waiting"] and p["score"] < p["max_score"] * (1 - 1e-6)]
        assert d["wrong"] == len(wrong) and d["explained"] == sum(bool(p["misconception"]) for p in wrong)
        assert sum(m["count"] for m in d["misconceptions"]) == d["explained"]
        assert d["share_explained"] == (round(d["explained"] / d["wrong"], 6) if d["wrong"] else None)
    assert any(d["misconceptions"] for d in ours)
    # the summary's own key is what the page draws, when it is there
    real = dashboard.summary_json
    planted = [{"problem": "masks", "part": "weights", "wrong": 4, "explained": 3, "share_explained": 0.75,
                "misconceptions": [{"code": "planted_code", "count": 3, "share_of_wrong": 0.75,
                                    "summary": "a <planted> summary"}]}]
    monkeypatch.setattr(dashboard, "summary_json",
                        lambda *a, **k: {**real(*a, **k), "misconceptions_by_part": planted})
    html = page_of(gradebook, key)
    section = html[html.index('id="misconceptions"'):html.index('id="pools"')]
    assert "<code>planted_code</code>" in section and "a &lt;planted&gt; summary" in section
    assert '<span class="share">75%</span>' in section and '<span class="share">25%</span>' in section


def test_the_commonest_wrong_matrix_is_drawn_beside_the_expected_one(graded):
    key, gradebook = graded
    html = page_of(gradebook, key)
    section = html[html.index('id="matrices"'):]
    pairs = re.findall(r'<div class="pair">(.*?)</div>', section, re.S)
    assert 1 <= len(pairs) <= dashboard.MATRIX_PARTS
    for pair in pairs:
        assert pair.count('<svg class="heatmap"') == 2
        assert "Wrong: " in pair and "Expected on " in pair
    assert re.search(r"\d+ students? of the \d+ who got this part wrong made this mistake", section)
    assert "misconception <code>" in section          # a diagnosed one among them


_DRAWN = re.compile(r'<section class="part" aria-label="([^"]*)"><h3>.*?(\d+) students? of the (\d+) who got '
                    r'this part wrong made this mistake \(([^)]*)\)', re.S)


def _drawn(html: str) -> dict[str, tuple[int, list[str]]]:
    """The wrong matrices drawn: part → (how many got it wrong, who made the mistake shown)."""
    section = html[html.index('id="matrices"'):]
    return {where: (int(wrong), who.rstrip(", …").split(", ")) for where, _, wrong, who in _DRAWN.findall(section)}


def test_every_table_counts_the_same_students_wrong_and_an_override_to_full_marks_is_not_wrong(graded, tmp_path):
    from grader.store import marks
    key, gradebook = graded
    copied = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copied)
    with Gradebook(copied) as gb:
        where, (_, who) = next(iter(_drawn(dashboard_html(gb, key)).items()))
        problem, part = where.split("/")
        student = who[0]
        (result,) = [r for r in gb.results(assignment_id(key), student) if (r.problem, r.part) == (problem, part)]
        marks.save(gb, key, problem, part, [marks.Target(student, 0, result)],
                   marks.Edit((), result.max_score - result.score, "", "the answer is right: a check was too strict"),
                   "ta")
        html = dashboard_html(gb, key)
        summary = summary_json(gb, key)
    table = {(f"{d['problem']}[{d['template']}]/{d['part']}" if d.get("template") else f"{d['problem']}/{d['part']}"):
             d["wrong"] for d in summary["misconceptions_by_part"]}
    drawn = _drawn(html)
    assert drawn
    for shown, (wrong, students) in drawn.items():
        assert wrong == table[shown], shown              # the matrices' count is the misconception table's
    if where in drawn:
        assert student not in drawn[where][1]


def test_a_large_matrix_is_cut_to_its_corner():
    html = dashboard._figure(np.arange(144.0).reshape(12, 12), "big", [])
    assert "the first 8×8 of 12×12" in html and html.count("<rect") == 64


def test_the_kind_of_error_names_an_unexplained_wrong_matrix():
    e = np.array([[1.0, 2.0], [3.0, 4.0]])
    shape = lambda a: wrong_matrices.error_shape(a, e, 1e-5, 1e-8)  # noqa: E731
    assert shape(e.T) == "rows and columns swapped (the transpose of the expected matrix)"
    assert shape(2 * e) == "a constant factor off" and shape(-e) == "the signs flipped"
    assert shape(e.ravel()) == "the right entries in the wrong shape"
    assert shape([[1.0, float("nan")], [3.0, 4.0]]) == "NaN or infinite entries"
    assert shape("text") == "not an array of numbers"


def test_a_section_that_fails_costs_the_page_nothing_else(graded, monkeypatch):
    key, gradebook = graded

    def broken(*_a, **_k):
        raise RuntimeError("forensics broke")
    monkeypatch.setattr("grader.forensics.flags.forensics", broken)
    html = page_of(gradebook, key)
    assert "This section could not be drawn (RuntimeError: forensics broke)" in html
    assert '<table class="items"' in html and '<svg class="heatmap"' in html


# ------------------------------------------------------------------------------- browser


COLLUDERS_SECRET = "dashboard colluders secret, tests only"


@pytest.fixture(scope="module")
def colluded_class(example_build):
    """(key, gradebook path, planted cases): the example assignment for the 30-student sample
    roster (its own build: the shared graded classes stay honest), synthetic submissions,
    colluders planted by ``synthetic.colluders.plant_colluders`` (copied numbers, similar
    code, shared wrong numbers) and the whole class graded for real."""
    import subprocess
    import sys

    from synthetic.colluders import plant_colluders
    build, key = example_build(30, COLLUDERS_SECRET)
    env = {**os.environ, "ATTNKIT_SECRET": COLLUDERS_SECRET}
    subs = build / "submissions"
    subprocess.run([sys.executable, "-m", "synthetic", str(build), "--key",
                    str(build / "instructor" / "answer_key.json"), "--secret-env", "ATTNKIT_SECRET",
                    "--out", str(subs)], check=True, env=env, cwd=ROOT, capture_output=True)
    planted = plant_colluders(build, key, subs)
    subprocess.run([sys.executable, "-m", "attnkit", "grade", str(ROOT / "problem_bank" / "assignments" / "example.yaml"),
                    str(subs / "submitted"), "--build", str(build), "--timeout", "5"],
                   check=True, env=env, cwd=ROOT, capture_output=True)
    return key, build / "instructor" / "gradebook.sqlite", planted


def test_the_page_in_a_real_browser_opens_offline_and_shows_everything(colluded_class, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip("no chromium browser on this machine (Debian: apt-get install chromium)")
    from grader.forensics.flags import forensics
    key, gradebook, planted = colluded_class
    with Gradebook(gradebook) as gb:
        path = write_dashboard(gb, key, tmp_path / "reports" / "dashboard.html")
        found = {(f["student"], f["kind"]) for f in forensics(gb, key)["flags"]}
    # the numbers copied in full and the shared wrong numbers are what forensics must find
    # (its own tests and bench.forensics measure the rest); every case it found is on the page
    shown = [(p.copier, p.flag) for p in planted if (p.copier, p.flag) in found]
    assert {p.flag for p in planted if (p.copier, p.flag) in shown} >= {"other-variant", "shared-wrong"}
    url = path.resolve().as_uri()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 2000})
            requests, console, errors = [], [], []
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: console.append((m.type, m.text)))
            page.on("pageerror", lambda e: errors.append(str(e)))
            started = time.perf_counter()
            page.goto(url, wait_until="load")
            loaded = time.perf_counter() - started
            page.wait_for_timeout(200)           # anything late (a lazy load) would show by now
            assert requests == [url]             # the page itself, and nothing else at all
            assert errors == [] and [c for c in console if c[0] in ("error", "warning")] == []
            assert page.locator("table.items").is_visible()
            rows = page.locator("table.items tr.flagged")
            assert rows.count() >= 1 and rows.first.is_visible()
            assert rows.first.locator("ul.flags li").first.is_visible()      # the flag's words
            heatmaps = page.locator("#matrices svg.heatmap")
            assert heatmaps.count() >= 2 and heatmaps.first.is_visible()
            for student, kind in shown:
                row = page.locator("tr.forensic-flag").filter(
                    has=page.locator("th", has_text=student)).filter(has_text=kind)
                assert row.count() >= 1 and row.first.is_visible(), (kind, student)
            assert page.locator("#distribution svg.chart").is_visible()
            if os.environ.get("DASHBOARD_SCREENSHOT"):
                page.screenshot(path=os.environ["DASHBOARD_SCREENSHOT"])
            print(f"dashboard: {path.stat().st_size} bytes, loaded in {loaded * 1000:.0f} ms")
        finally:
            browser.close()
