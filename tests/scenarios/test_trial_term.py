"""The instructor's trial term, replayed end to end through ``attnkit``: eight students, a due
date in a time zone, 20 % per started day late with a floor of 40 % and a cutoff, an
extension file, an LMS export of submission times, the main folder, a late folder and a Canvas
download (``_LATE`` in its name), a regrade *without* the export, hand grades by the sheet and
one more by the marking page (its server on loopback, as the page calls it), then Canvas,
Moodle and Gradescope. Every final grade is worked by hand here — from the synthetic manifests and the rubric points, never by the grader:

    t-01  on time (the LMS export says so)                       auto + hand
    t-02  on time 48 pts, then a partial notebook 1 d 2 h late   (auto + hand) × 0.6 (2 days)
    t-03  Canvas download, 3 hours late (_LATE)                  (auto + hand) × 0.8
    t-04  extended by 3 days, handed in 2 days after the due     auto + hand
    t-05  3 days 1 hour late: 4 started days, 80 % > 60 %        (auto + hand) × 0.4 (the floor)
    t-06  5 days late: after the cutoff                          not accepted: 0
    t-07  its file says 4 days 9 hours late, the export on time  auto + hand, also after the regrade
    t-08  nothing handed in                                      missing

With ``counts: best`` instead, t-02's on-time notebook counts (auto + hand, no penalty).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import threading
import urllib.request
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attnkit.cli import main
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.answer_key import load_key
from grader.marking.web import MarkingPage
from synthetic import load_manifest, submission_path, synthesize

ROOT = Path(__file__).resolve().parents[2]
SECRET = "trial term secret: long enough, never a real one"
HW = "attention-hw1"
STUDENTS = [f"t-0{n}" for n in range(1, 9)]
DUE = datetime(2026, 12, 5, 22, 59, tzinfo=timezone.utc)          # 23:59 in Berlin (CET, +01:00)
# the sheet's hand grades, the same for every student: the items applied, their points
HAND = {"static": ("same_vector", "context"), "bottleneck": ("counts",), "common_cause": ("root_cause",)}
HAND_POINTS = 2 + 1 + 1
PAGE_STUDENT, PAGE_ITEM = "t-01", "attention"                      # one more item, by the page


def attnkit(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def handed_in(path: Path, when: datetime) -> None:
    os.utime(path, (when.timestamp(), when.timestamp()))


def copy_in(source: Path, target: Path, when: datetime) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    handed_in(target, when)


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trial")
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email,lms_id,lms_login\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu,{1000 + n},login{n}\n"
        for n, sid in enumerate(STUDENTS, 1)), encoding="utf-8")
    (folder / "extensions.csv").write_text("student_id,due\nt-04,2026-12-08 23:59\n", encoding="utf-8")
    spec = folder / "hw1.yaml"
    spec.write_text((ROOT / "problem_bank" / "assignments" / "example.yaml").read_text(encoding="utf-8")
                    + "due: 2026-12-05 23:59\ntimezone: Europe/Berlin\n"
                      "late: {policy: penalty, percent: 20, per: day, floor: 40, cutoff: 2026-12-09 23:59}\n"
                      "extensions: extensions.csv\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(spec), list(load_roster(roster)), folder / "build")
        assert result.ok, result.failures
        key = load_key(result.key_path, SECRET.encode())
        for kind in ("correct", "partial"):
            synthesize(folder / "build", key, folder / kind, profiles=[kind])
        yield folder, spec, roster, key


def notebook(folder: Path, kind: str, sid: str) -> Path:
    return submission_path(folder / kind, "nbgrader", HW, sid)


def auto(folder: Path, kind: str, sid: str) -> float:
    return load_manifest(folder / kind)["students"][sid]["score"]


def grade(trial, submissions: Path, *extra) -> tuple[dict, str]:
    folder, spec, roster, _ = trial
    code, out, err = attnkit("grade", spec, submissions, "--build", folder / "build", "--roster", roster,
                             "--jobs", "2", "--timeout", "5", "--json", *extra)
    assert code == 0, err
    return json.loads(out), err


def hand_grades_by_sheet(trial) -> set[str]:
    """Every free-response row of the exported sheet gets HAND's items; the students graded."""
    folder, spec, _, _ = trial
    sheet = folder / "sheet.csv"
    code, _, err = attnkit("mark", "export", spec, "--build", folder / "build", "--out", sheet)
    assert code == 0, err
    text = sheet.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    rows, header = list(reader), reader.fieldnames
    graded = set()
    for row in rows:
        if row["problem"] == "motivation" and row["part"] in HAND:
            for item in HAND[row["part"]]:
                row[f"{row['part']}:{item}"] = "1"
            graded.add(row["submission"])
    out = io.StringIO()
    writer = csv.DictWriter(out, header, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    sheet.write_text(out.getvalue(), encoding="utf-8-sig")
    code, _, err = attnkit("mark", "import", spec, sheet, "--build", folder / "build", "--apply",
                           "--grader", "ta-sheet")
    assert code == 0, err
    return graded


def hand_grade_by_page(trial) -> None:
    """One more rubric item for PAGE_STUDENT, saved through the marking page's server as the
    page saves it: the answer read first, the grade saved with what was read."""
    folder, _, _, key = trial
    server = MarkingPage(folder / "build" / "instructor" / "gradebook.sqlite", key, grader="ta-page")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def call(path, body=None):
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}{path}", data=None if body is None else json.dumps(body).encode(),
            headers={"X-Attnkit-Token": server.token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())
    try:
        shown = call(f"/api/answer?problem=motivation&part=common_cause&student={PAGE_STUDENT}")
        assert shown["answer"]["mark"]["grader"] == "ta-sheet"
        saved = call("/api/mark", {**shown["save_with"], "items": [*HAND["common_cause"], PAGE_ITEM]})
        assert saved["answers"][0]["mark"]["grader"] == "ta-page"
    finally:
        server.shutdown()
        thread.join(5)


def hand_worked(folder: Path, graded: set[str]) -> dict[str, float]:
    hand = {sid: HAND_POINTS for sid in graded}
    hand[PAGE_STUDENT] += 1
    return {"t-01": auto(folder, "correct", "t-01") + hand["t-01"],
            "t-02": round((auto(folder, "partial", "t-02") + hand["t-02"]) * 0.6, 4),
            "t-03": round((auto(folder, "correct", "t-03") + hand["t-03"]) * 0.8, 4),
            "t-04": auto(folder, "correct", "t-04") + hand["t-04"],
            "t-05": round((auto(folder, "correct", "t-05") + hand["t-05"]) * 0.4, 4),
            "t-06": 0.0,
            "t-07": auto(folder, "partial", "t-07") + hand["t-07"]}


def test_the_trial_term_ends_with_the_hand_worked_grades(trial):
    folder, spec, roster, key = trial
    # 1. the main folder, with the LMS's submission times for t-01, t-02, t-07
    for sid, kind in (("t-01", "correct"), ("t-02", "correct"), ("t-07", "partial")):
        copy_in(notebook(folder, kind, sid), notebook(folder, "main", sid), DUE - timedelta(hours=1))
    handed_in(notebook(folder, "main", "t-07"), DUE + timedelta(days=4, hours=9))   # the download's time
    received = folder / "received.csv"
    received.write_text("student_id,submitted_at\n" + "".join(
        f"{sid},{(DUE - timedelta(hours=2)).isoformat()}\n" for sid in ("t-01", "t-02", "t-07")),
        encoding="utf-8")
    first, _ = grade(trial, folder / "main", "--received", received)
    assert first["graded"] == 3
    # 2. the late folder
    for sid, kind, late in (("t-02", "partial", timedelta(days=1, hours=2)),
                            ("t-04", "correct", timedelta(days=2)),
                            ("t-05", "correct", timedelta(days=3, hours=1)),
                            ("t-06", "correct", timedelta(days=5))):
        copy_in(notebook(folder, kind, sid), notebook(folder, "late", sid), DUE + late)
    grade(trial, folder / "late")
    # 3. a Canvas bulk download: t-03 (login3, user 1003), three hours late
    copy_in(notebook(folder, "correct", "t-03"), folder / "canvas" / f"login3_LATE_1003_98765_{HW}.ipynb",
            DUE + timedelta(hours=3))
    grade(trial, folder / "canvas")
    # 4. a regrade of the main folder without the export: t-07's recorded time stands, and is said
    before = report(trial)
    _, err = grade(trial, folder / "main", "--regrade")
    assert "t-07" in err
    after = report(trial)
    assert totals(after) == totals(before)
    # 5. hand grades: the sheet for everyone, the page for one more item
    graded = hand_grades_by_sheet(trial)
    assert graded == {"t-01", "t-02", "t-03", "t-04", "t-05", "t-07"}      # no refused, no missing
    hand_grade_by_page(trial)
    # 6. the final files
    final = report(trial, "--lms", "canvas", "--lms", "moodle")
    want = hand_worked(folder, graded)
    assert totals(final) == pytest.approx(want)
    reports = folder / "build" / "reports"
    canvas_rows = list(csv.reader(io.StringIO((reports / "canvas.csv").read_text(encoding="utf-8-sig"))))
    got = {row[2]: row[5] for row in canvas_rows[2:]}
    assert {s: float(v) for s, v in got.items() if v != ""} == pytest.approx(want)
    assert got.get("t-08", "") == ""                                         # missing: no grade sent
    moodle_rows = list(csv.reader(io.StringIO((reports / "moodle.csv").read_text(encoding="utf-8-sig"))))
    moodle = {row[0].split("@")[0]: row for row in moodle_rows[1:]}
    assert {s: float(r[1]) for s, r in moodle.items() if s != "t-08"} == pytest.approx(want)
    assert moodle["t-08"][1] == "-"                                          # Moodle's "no grade"
    assert "late" in moodle["t-02"][2].lower() and "not accepted" in moodle["t-06"][2].lower()
    for sid, points in want.items():
        results = json.loads((reports / "gradescope" / sid / "results.json").read_text(encoding="utf-8"))
        assert results["score"] == pytest.approx(points), sid
    t06 = (reports / "feedback" / "t-06.html").read_text(encoding="utf-8")
    assert "No answer recorded" not in t06 and "not accepted" in t06.lower()
    # the TA's list says that t-02's better on-time notebook was replaced
    t02 = next(s for s in final["students"] if s["id"] == "t-02")
    assert [(h["score"], h["late_penalty_percent"], h["counts"]) for h in t02["handed_in"]] == \
        [(auto(folder, "partial", "t-02"), 40.0, True), (auto(folder, "correct", "t-02"), 0.0, False)]
    assert "replaced-on-time" in {x["code"] for x in final["needs_a_look"] if x["student"] == "t-02"}
    assert [x["file"] for x in final["needs_a_look"] if x["student"] == "t-06"] == \
        [str(notebook(folder, "late", "t-06"))]
    # 7. counts: best — t-02's on-time notebook counts, in full
    spec.write_text(spec.read_text(encoding="utf-8") + "counts: best\n", encoding="utf-8")
    best_summary = report(trial)
    best = totals(best_summary)
    # the synthetic free-response answers are the same text in both of t-02's notebooks, so the
    # hand grades given on the late one hold for the on-time one (no recheck asked)
    assert best["t-02"] == pytest.approx(auto(folder, "correct", "t-02") + HAND_POINTS)
    assert "mark-recheck" not in {x["code"] for x in best_summary["needs_a_look"] if x["student"] == "t-02"}
    assert {s: v for s, v in best.items() if s != "t-02"} == pytest.approx(
        {s: v for s, v in want.items() if s != "t-02"})


def report(trial, *extra) -> dict:
    folder, spec, roster, _ = trial
    code, out, err = attnkit("report", spec, "--build", folder / "build", "--roster", roster,
                             "--partial", "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def totals(summary: dict) -> dict[str, float]:
    return {s["id"]: s["total"] for s in summary["students"] if s["status"] != "missing"}
