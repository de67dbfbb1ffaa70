"""Opening a part of the marking page with 1,000 answers, in a real headless Chromium.

Builds the example assignment for one student, copies that student's key entry under
``--students`` ids, records for each a handin with a free-response answer to
``motivation/static`` (drawn from a few dozen texts, so the part has answer groups), serves
it with ``grader.marking.web.MarkingPage`` in this process and times, in Debian's
``chromium`` driven by Playwright, the time from navigation to the first answer shown (the
page, the parts list, the part's queue of every answer, the first answer's detail). The
baseline, timed in the same run, is the same for a part of 30 answers: the ratio says what
the class size costs. Median of ``--runs``; times drift on shared machines.

    python -m bench.mark_page [--students 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from formats.key_shape import assignment_id
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "bench secret: never use it for a real course"
PROBLEM, PARTS = "motivation", ("static", "bottleneck", "common_cause")
TEXTS = [f"Word2Vec gives one vector per word type, so both uses of crane share it (answer style {i})."
         for i in range(40)]


def chromium_path() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


def example_key(out: Path) -> dict:
    """The example assignment built for one student of a synthetic roster: its verified key."""
    from exercises.course.assignment import load_assignment
    from exercises.course.build import build
    from exercises.course.roster import Student
    from formats.answer_key import load_key

    os.environ["ATTNKIT_SECRET"] = SECRET
    result = build(load_assignment(EXAMPLE), [Student("s0000001", "Bench Student", "", 2)], out)
    if not result.ok:
        raise SystemExit(f"bench.mark_page: the build failed: {result.failures}")
    return load_key(result.key_path, SECRET.encode())


def big_class(key: dict, gradebook_path: Path, students: int, texts=TEXTS) -> dict:
    """A key of ``students`` copies of ``key``'s first entry, and a gradebook holding a
    graded handin for each, with a free-response answer to every motivation part (the
    hand-graded parts wait for a grader). Returns the new key."""
    first = next(iter(key["students"].values()))
    big = {**key, "students": {}}
    for i in range(students):
        sid = f"b{i:06d}"
        big["students"][sid] = {**copy.deepcopy(first), "name": f"Student {i}", "student_id": sid}
    assignment = assignment_id(big)
    with Gradebook(gradebook_path) as gb:
        for i, sid in enumerate(big["students"]):
            digest = f"{i:064x}"
            rows = [ResultRow(assignment, sid, PROBLEM, part, 0.0, 2.0, "manual", "Graded by hand.",
                              answer=texts[(i * 7 + j) % len(texts)], content_hash=digest)
                    for j, part in enumerate(PARTS)]
            gb.record(SubmissionRow(assignment, sid, f"{sid}.ipynb", digest, "graded", max_score=6.0), rows)
    return big


def time_opening(url: str, runs: int, browser) -> list[float]:
    """Seconds from navigation to the first answer shown, ``runs`` times in fresh pages."""
    out = []
    for _ in range(runs):
        context = browser.new_context()
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url + f"#{PROBLEM}/static/answers/1")
        page.wait_for_selector("body[data-state=shown]", timeout=60_000)
        out.append(time.perf_counter() - start)
        context.close()
    return out


def measure(key: dict, folder: Path, students: int, runs: int, browser) -> list[float]:
    from grader.marking.web import MarkingPage

    gradebook = folder / f"gradebook-{students}.sqlite"
    big = big_class(key, gradebook, students)
    server = MarkingPage(gradebook, big)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        return time_opening(server.url, runs, browser)
    finally:
        server.shutdown()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mark_page", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        key = example_key(Path(tmp) / "build")
        browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox", "--disable-gpu"])
        try:
            small = measure(key, Path(tmp), 30, args.runs, browser)
            large = measure(key, Path(tmp), args.students, args.runs, browser)
        finally:
            browser.close()
    s, l = statistics.median(small), statistics.median(large)
    print(f"marking page, navigation to the first answer shown (median of {args.runs}, headless Chromium):")
    print(f"  {30:>6} answers: {s * 1000:7.0f} ms   (runs: {', '.join(f'{x * 1000:.0f}' for x in small)})")
    print(f"  {args.students:>6} answers: {l * 1000:7.0f} ms   (runs: {', '.join(f'{x * 1000:.0f}' for x in large)})")
    print(f"  ratio {args.students} / 30 answers: {l / s:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
