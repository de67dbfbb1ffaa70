"""Hand grades through the commands a course runs: `attnkit grade --regrade` leaves them as
they are, `attnkit report` counts them everywhere, and a rubric changed in the template
re-scores them at the next run."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from formats.key_shape import entry_for, problem_record
from grader.store import marks
from grader.store.gradebook import Gradebook
from grader.marking.queue import part_queue

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
FREE_PARTS = ("static", "bottleneck", "common_cause")


def run(*argv, secret, check=True):
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    done = subprocess.run([sys.executable, "-m", "attnkit", *map(str, argv)], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def mark_everything(gb_path, key) -> dict:
    """Every written free-response answer graded with its rubric's positive items; returns
    student → the points given."""
    given = {}
    with Gradebook(gb_path) as gb:
        for part in FREE_PARTS:
            for a in part_queue(gb, key, "motivation", part).answers:
                if a.result is None or a.result.status != "manual":
                    continue
                rubric = problem_record(entry_for(key, a.student), "motivation")["rubric"][part]
                items = tuple(i["id"] for i in rubric["items"] if i["points"] > 0)[:1]
                (m,) = marks.save(gb, key, "motivation", part, [marks.Target(a.student, 0, a.result)],
                                  marks.Edit(items, 0, f"comment on {part}"), "ta")
                given[a.student] = given.get(a.student, 0) + m.score
    return given


def report_json(build, gb_path, out, secret) -> dict:
    return json.loads(run("report", EXAMPLE, "--build", build, "--gradebook", gb_path, "--out", out,
                          "--json", secret=secret).stdout)


def test_regrading_keeps_hand_grades_and_every_report_counts_them(graded_class, tmp_path):
    build, key, shared, secret = graded_class(6)
    gb_path = tmp_path / "gradebook.sqlite"
    shutil.copy(shared, gb_path)
    before = {s["id"]: s for s in report_json(build, gb_path, tmp_path / "r0", secret)["students"]}
    given = mark_everything(gb_path, key)
    assert given
    with Gradebook(gb_path) as gb:
        kept = marks.marks(gb, "attention-hw1")
    run("grade", EXAMPLE, build / "submissions" / "submitted", "--build", build, "--gradebook", gb_path,
        "--regrade", "--timeout", "5", secret=secret)
    with Gradebook(gb_path) as gb:
        assert marks.marks(gb, "attention-hw1") == kept        # not a field changed

    summary = report_json(build, gb_path, tmp_path / "r1", secret)
    students = {s["id"]: s for s in summary["students"]}
    for sid, points in given.items():
        assert abs(students[sid]["total"] - (before[sid]["total"] + points)) < 1e-9
        waiting = [p for p in students[sid]["parts"] if p["waiting"]]
        assert not waiting, waiting
    rows = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "r1" / "grades.csv", encoding="utf-8"))}
    for sid, points in given.items():
        assert float(rows[sid]["total"]) == round(students[sid]["total"], 4)
        assert rows[sid]["pending_points"] in ("", "0")
    sid = next(iter(given))
    results = json.loads((tmp_path / "r1" / "gradescope" / sid / "results.json").read_text(encoding="utf-8"))
    static = next(t for t in results["tests"] if t["name"].endswith(": static"))
    assert "comment on static" in static["output"] and "pending" not in static["name"]
    page = (tmp_path / "r1" / "feedback" / f"{sid}.html").read_text(encoding="utf-8")
    assert "comment on static" in page and "feedback</h4>" in page
    graded = [sid for sid in given if students[sid]["status"] == "graded"]
    assert graded and all(students[sid]["complete"] for sid in graded)
    assert not any(before[sid]["complete"] for sid in graded)       # they waited for a human before


def test_a_rubric_changed_in_the_key_rescores_at_the_next_report(graded_class, tmp_path):
    build, key, shared, secret = graded_class(6)
    gb_path = tmp_path / "gradebook.sqlite"
    shutil.copy(shared, gb_path)
    mark_everything(gb_path, key)
    # the instructor doubles `same_vector` in the assignment and rebuilds the key (the
    # variants stay: a rubric is not part of what was issued)
    spec = tmp_path / "hw.yaml"
    spec.write_text(EXAMPLE.read_text(encoding="utf-8").replace(
        "    id: motivation\n",
        "    id: motivation\n    parts: {static: {points: 3, rubric: {same_vector: 2}}}\n"), encoding="utf-8")
    rebuilt = tmp_path / "build"
    shutil.copytree(build, rebuilt, ignore=shutil.ignore_patterns("submissions", "gradebook.sqlite*"))
    shutil.copy(spec, rebuilt / "hw.yaml")
    done = run("build", spec, "--roster", ROOT / "problem_bank" / "assignments" / "sample_roster.csv",
               "--out", rebuilt, secret=secret, check=False)
    assert done.returncode in (0, 1), done.stderr
    report = run("report", spec, "--build", rebuilt, "--gradebook", gb_path, "--out", tmp_path / "r",
                 "--json", secret=secret)
    rescored = json.loads(report.stdout)["rescored"]
    assert rescored and all(e["part"] == "static" for e in rescored)
    assert any("same_vector" in e["note"] for e in rescored)
    with Gradebook(gb_path) as gb:
        log = marks.history(gb, "attention-hw1", problem="motivation", part="static")
    assert "rescore" in {e.event for e in log}


# Runs `attnkit mark import` in this process after arming a kill: the Nth write of a grade
# (inside the save, before anything commits it) sends this very process SIGKILL.
KILLED_IMPORT = """
import os, signal, sys
from grader.store import marks
write, count = marks._write, [0]
def killing_write(*args, **kwargs):
    write(*args, **kwargs)
    count[0] += 1
    if count[0] == int(os.environ["KILL_AFTER_WRITES"]):
        os.kill(os.getpid(), signal.SIGKILL)
marks._write = killing_write
from attnkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_an_import_killed_mid_apply_saves_nothing_and_a_rerun_saves_everything(graded_class, tmp_path):
    build, key, shared, secret = graded_class(12)
    gb_path = tmp_path / "gradebook.sqlite"
    shutil.copy(shared, gb_path)
    sheet = tmp_path / "sheet.csv"
    common = ("--build", build, "--gradebook", gb_path)
    run("mark", "export", EXAMPLE, *common, "--out", sheet, secret=secret)
    with open(sheet, encoding="utf-8", newline="") as f:
        header, *rows = list(csv.reader(f))
    for row in rows:                                           # every row graded: one item applied
        part = row[header.index("part")]
        row[next(i for i, h in enumerate(header) if h.startswith(f"{part}:"))] = "1"
    with open(sheet, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows([header, *rows])
    argv = ["mark", "import", str(EXAMPLE), str(sheet), *map(str, common), "--apply"]
    env = {**os.environ, "ATTNKIT_SECRET": secret, "KILL_AFTER_WRITES": str(len(rows) * 2 // 3)}
    killed = subprocess.run([sys.executable, "-c", KILLED_IMPORT, *argv], env=env, cwd=ROOT,
                            capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr              # the kill came from inside the save loop
    assert len(rows) >= 30
    with Gradebook(gb_path) as gb:                             # (opening runs SQLite's quick_check)
        assert marks.marks(gb, "attention-hw1") == {} and marks.history(gb, "attention-hw1") == []
        assert gb.query("PRAGMA integrity_check") == [("ok",)]
    done = run("mark", "import", EXAMPLE, sheet, *common, "--apply", secret=secret)
    assert f"saved {len(rows)} grades" in done.stdout
    with Gradebook(gb_path) as gb:
        assert len(marks.marks(gb, "attention-hw1")) == len(rows)
        assert {e.event for e in marks.history(gb, "attention-hw1")} == {"import"}


def test_the_import_summary_says_why_rows_are_refused_and_the_export_names_its_legend(graded_class, tmp_path):
    build, key, shared, secret = graded_class(12)
    gb_path = tmp_path / "gradebook.sqlite"
    shutil.copy(shared, gb_path)
    sheet = tmp_path / "sheet.csv"
    common = ("--build", build, "--gradebook", gb_path)
    done = run("mark", "export", EXAMPLE, *common, "--out", sheet, "--part", "motivation/static", secret=secret)
    assert str(tmp_path / "sheet-rubric.csv") in done.stdout and (tmp_path / "sheet-rubric.csv").is_file()
    with open(sheet, encoding="utf-8", newline="") as f:
        header, *rows = list(csv.reader(f))
    for row in rows[:2]:
        row[header.index("static:context")] = "1"
    with open(sheet, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows([header, *rows])
    with Gradebook(gb_path) as gb, gb.transaction() as c:        # a later handin's answer counts now
        c.execute("UPDATE results SET answer = '\"a later answer\"' WHERE student = ? AND part = 'static'",
                  (rows[0][header.index("submission")],))
    done = run("mark", "import", EXAMPLE, sheet, *common, secret=secret, check=False)
    assert done.returncode == 1
    assert "1 to change, 10 unchanged, 1 refused (the answer changed since the export), 0 problems" in done.stdout
    assert "changed in the sheet and in the gradebook" not in done.stdout
