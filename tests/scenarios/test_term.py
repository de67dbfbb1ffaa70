"""A whole term of one assignment, replayed through ``attnkit`` as an instructor runs it.

Released to six students with a due date, a late penalty (10 % a started day, at most 50 %)
and one extension; graded from the main folder, then a late folder, a resubmission, the
extended student's late notebook and a Canvas bulk download (LMS names, mapped by the
roster's LMS columns); then the Canvas and Moodle files. After every run no recorded grade is
lost or changed; the final files hold exactly the grades the policy gives (computed here from
the synthetic manifests, never by the grader); the TA's list names every planted problem; and
no student's page mentions another student.

Before the reports, a template fix (a tighter tolerance on one part) is rebuilt with the same
secret and everything is graded again: no false "variant not in the key" or "givens edited".
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attnkit.cli import main
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.answer_key import load_key
from grader.store.gradebook import Gradebook
from synthetic import load_manifest, submission_path, synthesize

ROOT = Path(__file__).resolve().parents[2]
SECRET = "term replay secret: long enough, never a real one"
HW = "attention-hw1"
DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)
STUDENTS = ["t-01", "t-02", "t-03", "t-04", "t-05", "t-06"]
# the main folder: what each student hands in by the due date
MAIN = {"t-01": "correct", "t-02": "partial", "t-03": "partial", "t-04": "wrong_student",
        "t-05": "partial", "t-06": "broken_json"}


def attnkit(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def handed_in(path: Path, when: datetime) -> None:
    os.utime(path, (when.timestamp(), when.timestamp()))


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    folder = tmp_path_factory.mktemp("term")
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email,lms_id,lms_login\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu,{1000 + n},login{n}\n"
        for n, sid in enumerate(STUDENTS, 1)), encoding="utf-8")
    (folder / "extensions.csv").write_text(f"student_id,due\nt-05,{(DUE + timedelta(days=3)).isoformat()}\n",
                                           encoding="utf-8")
    spec = folder / "hw1.yaml"
    spec.write_text((ROOT / "problem_bank" / "assignments" / "example.yaml").read_text(encoding="utf-8")
                    + f"due: {DUE.isoformat()}\nlate: {{policy: penalty, percent: 10, per: day, floor: 50}}\n"
                      "extensions: extensions.csv\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(spec), list(load_roster(roster)), folder / "build")
        assert result.ok, result.failures
        key = load_key(result.key_path, SECRET.encode())
        synthesize(folder / "build", key, folder / "main", profiles=[MAIN[s] for s in STUDENTS])
        synthesize(folder / "build", key, folder / "correct", profiles=["correct"])
        synthesize(folder / "build", key, folder / "partial", profiles=["partial"])
        yield folder, spec, roster, key, patch


def grade(term, submissions: Path) -> dict:
    folder, spec, roster, _, _ = term
    code, out, err = attnkit("grade", spec, submissions, "--build", folder / "build", "--roster", roster,
                             "--jobs", "2", "--timeout", "5", "--json")
    assert code == 0, err
    return json.loads(out)


def snapshot(folder: Path) -> dict:
    with Gradebook(folder / "build" / "instructor" / "gradebook.sqlite") as gb:
        return {(h.student, h.handin): (h.score, tuple((r.problem, r.part, r.score, r.status)
                                                       for r in gb.results(HW, h.student, handin=h.handin)))
                for h in gb.handins(HW)}


def score(folder: Path, kind: str, student: str) -> float:
    return load_manifest(folder / kind)["students"][student]["score"]


def test_a_term_ends_with_the_grades_the_policy_gives(term):
    folder, spec, roster, key, _ = term
    recorded: dict = {}

    def run(submissions):
        summary = grade(term, submissions)
        now = snapshot(folder)
        for handin, grade_ in recorded.items():         # nothing recorded is lost or changed
            assert now.get(handin) == grade_, handin
        recorded.update(now)
        return summary

    # 1. the main folder, handed in an hour before the due date
    for sid in STUDENTS:
        handed_in(submission_path(folder / "main", "nbgrader", HW, sid), DUE - timedelta(hours=1))
    first = run(folder / "main")
    assert first["graded"] == 6 and first["missing"] == []
    # 2. a late folder: t-02's correct notebook, a day and an hour late (2 days started: −20 %)
    late = submission_path(folder / "late", "nbgrader", HW, "t-02")
    late.parent.mkdir(parents=True)
    shutil.copyfile(submission_path(folder / "correct", "nbgrader", HW, "t-02"), late)
    handed_in(late, DUE + timedelta(days=1, hours=1))
    assert run(folder / "late")["not_in_folder"] == [s for s in STUDENTS if s != "t-02"]
    # 3. a resubmission before the due date: t-01 hands in again, and this one counts
    resub = folder / "resub" / "t-01.ipynb"
    resub.parent.mkdir()
    shutil.copyfile(submission_path(folder / "partial", "nbgrader", HW, "t-01"), resub)
    handed_in(resub, DUE - timedelta(minutes=30))
    run(folder / "resub")
    # 4. the extended student, two days late (their due date is three days later): no penalty
    extended = folder / "extended" / "t-05" / "my homework.ipynb"          # renamed in its folder
    extended.parent.mkdir(parents=True)
    shutil.copyfile(submission_path(folder / "correct", "nbgrader", HW, "t-05"), extended)
    handed_in(extended, DUE + timedelta(days=2))
    run(folder / "extended")
    # 5. a Canvas bulk download: t-03 (login3, user 1003), three hours late (−10 %)
    canvas = folder / "canvas" / "login3_LATE_1003_98765_attention-hw1.ipynb"
    canvas.parent.mkdir()
    shutil.copyfile(submission_path(folder / "correct", "nbgrader", HW, "t-03"), canvas)
    handed_in(canvas, DUE + timedelta(hours=3))
    run(folder / "canvas")
    # 6. a template fix that only affects grading: a tighter tolerance, rebuilt, graded again
    spec.write_text(spec.read_text(encoding="utf-8").replace(
        "    id: scaling\n", "    id: scaling\n    parts: {std: {atol: 0.004}}\n"), encoding="utf-8")
    code, out, err = attnkit("build", spec, "--roster", roster, "--out", folder / "build", "--json")
    assert code == 0, err
    assert json.loads(out)["new_variants"] == {}
    for submissions in ("main", "late", "resub", "extended", "canvas"):
        last = grade(term, folder / submissions)
        assert not [x for x in last["needs_a_look"] if x["code"] in ("wrong-variant", "givens-edited")
                    and x["student"] != "t-04"]                  # (t-04's is a copy of another's: rightly)
    now = snapshot(folder)
    assert set(now) == set(recorded)                    # the same handins, graded again

    # the TA's list names every planted problem
    look = {(x["student"], x["code"]) for x in last["needs_a_look"]}
    assert {("t-04", "wrong-student"), ("t-06", "invalid-json"), ("t-02", "late"), ("t-03", "late"),
            ("t-03", "late-by-name"), ("t-05", "renamed")} <= look, look
    assert ("t-05", "late") not in look and ("t-01", "late") not in look

    # the final files: the points so far (free response is graded by hand later), less penalties
    code, out, err = attnkit("report", spec, "--build", folder / "build", "--roster", roster,
                             "--lms", "canvas", "--lms", "moodle", "--partial", "--json")
    assert code == 0, err
    want = {"t-01": score(folder, "partial", "t-01"),
            "t-02": round(score(folder, "correct", "t-02") * 0.8, 4),
            "t-03": round(score(folder, "correct", "t-03") * 0.9, 4),
            "t-04": score(folder, "main", "t-04"),
            "t-05": score(folder, "correct", "t-05"),
            "t-06": score(folder, "main", "t-06")}
    reports = folder / "build" / "reports"
    canvas_rows = list(csv.reader(io.StringIO((reports / "canvas.csv").read_text(encoding="utf-8-sig"))))
    assert canvas_rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    got = {row[2]: float(row[5]) for row in canvas_rows[2:]}
    assert got == pytest.approx(want)
    assert {row[2]: row[1] for row in canvas_rows[2:]} == {s: str(1000 + n) for n, s in enumerate(STUDENTS, 1)}
    moodle_rows = list(csv.reader(io.StringIO((reports / "moodle.csv").read_text(encoding="utf-8-sig"))))
    got = {row[0].split("@")[0]: float(row[1]) for row in moodle_rows[1:]}
    assert got == pytest.approx(want)

    # no student's page mentions another student
    for sid in STUDENTS:
        others = [s for s in STUDENTS if s != sid]
        for page in ((reports / "feedback" / f"{sid}.html").read_text(encoding="utf-8"),
                     (reports / "gradescope" / sid / "results.json").read_text(encoding="utf-8")):
            assert not [o for o in others if o in page], sid
    t02 = (reports / "feedback" / "t-02.html").read_text(encoding="utf-8")
    assert "Late penalty (1 day 1 hour late" in t02
