"""The issue's whole loop, through the commands a course runs and a real browser: a graded
class, `attnkit mark` served, every free-response part of every student graded in headless
Chromium (groups first, then the rest by keyboard), `attnkit report` counting them in the
totals, the CSV and the feedback pages, `attnkit grade --regrade` leaving them intact, and
the sheet's round trip (`mark export`, `mark import --apply` into the ungraded gradebook)
giving the same grades as the browser."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.store.marks import marks

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[dev]')")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip("no chromium browser on this machine (Debian: apt-get install chromium; .ci/run does)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
FREE_PARTS = ("static", "bottleneck", "common_cause")


def attnkit(*argv, secret, gradebook, build):
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    done = subprocess.run([sys.executable, "-m", "attnkit", *map(str, argv), "--build", str(build),
                           "--gradebook", str(gradebook)], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def progress(page) -> tuple[int, int]:
    k, n = re.match(r"(\d+) of (\d+) graded", page.text_content("#progress")).groups()
    return int(k), int(n)


def settle(page, key):
    page.keyboard.press(key)
    page.wait_for_function("document.body.dataset.pending === '0'")


def grade_part(page, url, part) -> None:
    """Every answer of ``motivation/part``: each group once (item 1), then the others one by one."""
    page.goto(f"{url}#motivation/{part}/answers/1")
    page.wait_for_function(f"document.body.dataset.state === 'shown' && "
                           f"document.getElementById('part').value === 'motivation/{part}'")
    page.keyboard.press("g")                                  # groups: one grade for all members
    page.wait_for_selector("body[data-state=shown]")
    groups = int(re.search(r"Groups \((\d+)\)", page.text_content("body")).group(1))
    for _ in range(groups):
        page.keyboard.press("n")
        page.wait_for_selector("body[data-state=shown]")
        settle(page, "1")
    page.keyboard.press("g")                                  # back to single answers
    page.wait_for_selector("body[data-state=shown]")
    k, n = progress(page)
    for _ in range(n):
        if k == n:
            break
        page.keyboard.press("n")
        page.wait_for_selector("body[data-state=shown]")
        settle(page, "1")
        k, n = progress(page)
    assert progress(page)[0] == progress(page)[1], page.text_content("#progress")


@pytest.fixture
def served(graded_class, tmp_path):
    """`attnkit mark` on a copy of the graded class, as a subprocess; (build, key, gradebook,
    secret, url, the ungraded gradebook's copy)."""
    build, key, shared, secret = graded_class(12)
    gradebook, ungraded = tmp_path / "gradebook.sqlite", tmp_path / "ungraded.sqlite"
    shutil.copy(shared, gradebook)
    shutil.copy(shared, ungraded)
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    server = subprocess.Popen([sys.executable, "-m", "attnkit", "mark", str(EXAMPLE), "--build", str(build),
                               "--gradebook", str(gradebook), "--no-browser", "--grader", "ta-term"],
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    url = None
    for line in server.stdout:
        if line.strip().startswith("http://127.0.0.1:"):
            url = line.strip()
            break
    assert url, "attnkit mark printed no URL"
    yield build, key, gradebook, secret, url, ungraded
    server.terminate()
    assert server.wait(30) == 0


def test_the_demo_class_graded_in_the_browser_reaches_every_report_and_survives_a_regrade(served, tmp_path):
    build, key, gradebook, secret, url, ungraded = served
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(bypass_csp=True).new_page()     # (wait_for_function evaluates strings)
        for part in FREE_PARTS:
            grade_part(page, url, part)
        browser.close()
    aid = assignment_id(key)
    with Gradebook(gradebook) as gb:
        browser_marks = marks(gb, aid)
    assert {k[2] for k in browser_marks} == set(FREE_PARTS)

    report = json.loads(attnkit("report", EXAMPLE, "--out", tmp_path / "r", "--json", secret=secret,
                                gradebook=gradebook, build=build))
    assert report["counts"]["manual_parts"] == 0
    students = {s["id"]: s for s in report["students"]}
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "r" / "grades.csv", encoding="utf-8"))}
    for (sid, problem, part), m in browser_marks.items():
        (shown,) = [x for x in students[sid]["parts"] if (x["problem"], x["part"]) == (problem, part)]
        assert shown["mark"]["items"] == m.items and shown["score"] == m.score and not shown["waiting"]
    for sid, s in students.items():
        if s["status"] == "graded":
            assert s["complete"], sid
            assert float(rows[sid]["total"]) == round(s["total"], 4) and rows[sid]["status"] == "graded"
    sid = next(k[0] for k in browser_marks)
    assert "feedback</h4>" in (tmp_path / "r" / "feedback" / f"{sid}.html").read_text(encoding="utf-8")

    attnkit("grade", EXAMPLE, build / "submissions" / "submitted", "--regrade", "--timeout", "5",
            secret=secret, gradebook=gradebook, build=build)
    with Gradebook(gradebook) as gb:
        assert marks(gb, aid) == browser_marks

    # the sheet: exported from the browser's gradebook, imported into the ungraded copy
    sheet = tmp_path / "sheet.csv"
    attnkit("mark", "export", EXAMPLE, "--out", sheet, secret=secret, gradebook=gradebook, build=build)
    attnkit("mark", "import", EXAMPLE, sheet, "--apply", "--grader", "ta-sheet", secret=secret,
            gradebook=ungraded, build=build)
    with Gradebook(ungraded) as gb:
        imported = marks(gb, aid)
    same = ("kind", "items", "adjustment", "comment", "reason", "score", "max_score", "rubric_version",
            "answer_digest")
    assert {k: [getattr(m, f) for f in same] for k, m in imported.items()} == \
        {k: [getattr(m, f) for f in same] for k, m in browser_marks.items()}
