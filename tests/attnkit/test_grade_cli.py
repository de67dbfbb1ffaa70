"""``attnkit grade`` and ``attnkit report`` end to end: the example assignment built for eight
students, synthetic submissions of known kinds, graded with ``attnkit.cli.main`` in process
(and once as ``python -m attnkit`` in a process of its own, killed mid-run and resumed).
Every recorded part is compared with the synthetic manifest's expected outcome."""

import csv
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import string
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from attnkit.cli import main
from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.serialize import decode_names
from grader.sandbox import walls
from grader.store.gradebook import Gradebook
from synthetic import load_manifest, submission_path, synthesize
from tests.children import sigint_default
from tests.attnkit.grade_cli_course import (ASSIGNMENT, EXAMPLE, ROOT, SECRET, STUDENTS, TIMEOUT, Course,
                                            GradedSubmission, assert_matches_manifest, attnkit,
                                            copy_gradebook, dump, first_twin, handed_in, part_count,
                                            recorded, rows, student_of)


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    folder = tmp_path_factory.mktemp("grade-cli")
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu\n" for sid in STUDENTS), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build")
    assert result.ok, result.failures
    return Course(folder / "build", load_key(result.key_path, SECRET.encode()), folder)


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """The base set graded once with --json and --junitxml. Tests that change the gradebook or
    the submissions work on copies."""
    folder = tmp_path_factory.mktemp("graded")
    profiles = ["correct", "partial", "typed_wrong", first_twin(course.key), "read_key",
                "exit_midway", "broken_json", "wrong_student"]
    synthesize(course.build, course.key, folder / "subs", profiles=profiles)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        code, out, err = attnkit(*course.grade_args(folder / "subs", folder / "gb.sqlite", "--json",
                                                    "--junitxml", folder / "junit.xml"))
    assert code == 0, err
    return GradedSubmission(folder / "subs", folder / "gb.sqlite", folder / "junit.xml", json.loads(out),
                  load_manifest(folder / "subs"))


# --- grading and its summary -------------------------------------------------------------

def test_grade_records_every_part_as_the_manifest_expects(course, graded):
    s = graded.summary
    assert (s["assignment"], s["submissions"], s["graded"], s["unchanged"]) == (ASSIGNMENT, 8, 8, 0)
    assert s["missing"] == [] and s["not_recorded"] == 0
    assert_matches_manifest(graded.gradebook, graded.manifest)
    subs, _ = rows(graded.gradebook)
    wrong = student_of(graded.manifest, "wrong_student")
    owner = graded.manifest["students"][wrong]["notebook_of"]
    notes = next(x.notes for x in subs if x.student == wrong)
    assert any("issued to" in n and owner in n for n in notes), notes


def test_junitxml_has_one_testcase_per_part_with_its_points(course, graded):
    cases = ET.parse(graded.junit).getroot().iter("testcase")
    _, results = rows(graded.gradebook)
    expected = {(r.student, r.problem, r.part): r for r in results}
    seen = set()
    for case in cases:
        student, problem = case.get("classname").rsplit(".", 2)[-2:]
        k = (student, problem, case.get("name"))
        assert k in expected and k not in seen
        seen.add(k)
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        r = expected[k]
        assert float(props["points"]) == r.score and float(props["max_points"]) == r.max_score
        assert props["status"] == r.status
        assert props.get("misconception") == r.misconception
        assert (case.find("failure") is not None) == (r.status not in ("passed", "manual"))
    assert seen == set(expected) and len(seen) == part_count(course.key)


# --- 4. idempotence ------------------------------------------------------------------------

def test_a_second_run_skips_every_unchanged_submission(course, graded, tmp_path):
    gb = copy_gradebook(graded, tmp_path)
    before = dump(gb)
    code, out, _ = attnkit(*course.grade_args(graded.submissions, gb, "--json"))
    assert code == 0
    summary = json.loads(out)
    assert (summary["graded"], summary["unchanged"]) == (0, 8)
    assert dump(gb) == before


def test_regrade_grades_everything_again_into_the_same_rows(course, graded, tmp_path):
    gb = copy_gradebook(graded, tmp_path)
    before = rows(gb)
    code, out, _ = attnkit(*course.grade_args(graded.submissions, gb, "--json", "--regrade"))
    assert code == 0
    summary = json.loads(out)
    assert (summary["graded"], summary["unchanged"]) == (8, 0)
    assert rows(gb) == before



def test_editing_one_submission_regrades_only_it(course, graded, tmp_path):
    gb = copy_gradebook(graded, tmp_path)
    subs = tmp_path / "subs"
    shutil.copytree(graded.submissions, subs)
    student = student_of(graded.manifest, "correct")
    record, pid = next((r, pid) for pid, r in course.key["students"][student]["problems"].items()
                       if r["kind"] == "choice")
    part = record["grading"][0]["id"]
    right = string.ascii_uppercase[int(decode_names(record["answers"])[part])]
    wrong = next(letter for letter in "ABCD" if letter != right)
    path = handed_in(subs, student)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c.get("id") == f"{pid}-{part}")
    cell["source"] = f"{record['answer_names'][part]} = {wrong!r}\n"
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False), encoding="utf-8")
    old_subs, old_results = rows(gb)

    code, out, _ = attnkit(*course.grade_args(subs, gb, "--json"))
    assert code == 0
    summary = json.loads(out)
    assert (summary["graded"], summary["unchanged"]) == (1, 7)
    new_subs, new_results = rows(gb)
    assert [s for s in new_subs if s.student != student] == [s for s in old_subs if s.student != student]
    assert [r for r in new_results if r.student != student] == [r for r in old_results if r.student != student]
    old = {(r.problem, r.part): r for r in old_results if r.student == student}
    new = {(r.problem, r.part): r for r in new_results if r.student == student}
    assert (old[(pid, part)].status, new[(pid, part)].status) == ("passed", "failed")
    assert new[(pid, part)].score == 0.0
    unhashed = {k: replace(r, content_hash="") for k, r in new.items() if k != (pid, part)}
    assert unhashed == {k: replace(r, content_hash="") for k, r in old.items() if k != (pid, part)}
    assert next(s for s in new_subs if s.student == student).content_hash != \
        next(s for s in old_subs if s.student == student).content_hash


def test_a_student_not_in_the_folder_keeps_the_grade_an_earlier_runrecorded(course, graded, tmp_path):
    gb = copy_gradebook(graded, tmp_path)
    subs = tmp_path / "subs"
    shutil.copytree(graded.submissions, subs)
    gone = STUDENTS[-1]
    with Gradebook(gb) as gradebook:
        before = gradebook.submission(ASSIGNMENT, gone), gradebook.results(ASSIGNMENT, gone)
    shutil.rmtree(subs / "submitted" / gone)
    code, out, _ = attnkit(*course.grade_args(subs, gb, "--json"))
    assert code == 0
    summary = json.loads(out)
    assert summary["missing"] == [] and summary["not_in_folder"] == [gone]
    assert (summary["graded"], summary["unchanged"]) == (0, 7)
    with Gradebook(gb) as gradebook:
        assert (gradebook.submission(ASSIGNMENT, gone), gradebook.results(ASSIGNMENT, gone)) == before
        assert before[0].status == "graded" and before[1]


def test_grading_an_empty_folder_changes_no_grade(course, graded, tmp_path):
    """Issue 15's first reproduction: an empty folder once turned every graded student into
    "0/56 missing"."""
    gb = copy_gradebook(graded, tmp_path)
    before = rows(gb)
    (tmp_path / "empty").mkdir()
    code, out, err = attnkit(*course.grade_args(tmp_path / "empty", gb))
    assert code == 0, err
    assert "graded 0 submissions" in out and "8 not in this folder (their earlier grades stand)" in out
    assert "missing" not in out.splitlines()[-3]
    assert rows(gb) == before


def test_a_late_folder_then_the_main_folder_again_keeps_the_late_grade(course, graded, tmp_path):
    """Issue 15's second reproduction: grading a folder with only the late notebook turned
    everyone else missing, and regrading the main folder then dropped the late grade."""
    gb = copy_gradebook(graded, tmp_path)
    before = {s.student: s for s in rows(gb)[0]}
    late_student = student_of(graded.manifest, "partial")
    on_time = submission_path(graded.submissions, "nbgrader", ASSIGNMENT, late_student)
    late = submission_path(tmp_path / "late", "nbgrader", ASSIGNMENT, late_student)
    late.parent.mkdir(parents=True)
    notebook = json.loads(on_time.read_text(encoding="utf-8"))
    notebook["metadata"]["resubmitted"] = True          # another notebook: another content hash
    late.write_text(json.dumps(notebook), encoding="utf-8")
    os.utime(late, (on_time.stat().st_mtime + 86_400,) * 2)         # handed in a day later
    code, out, err = attnkit(*course.grade_args(tmp_path / "late", gb))
    assert code == 0, err
    after_late = {s.student: s for s in rows(gb)[0]}
    assert set(after_late) == set(before)                             # nobody turned missing
    assert after_late[late_student].path == str(late)
    assert {s: r for s, r in after_late.items() if s != late_student} == \
        {s: r for s, r in before.items() if s != late_student}
    code, out, err = attnkit(*course.grade_args(graded.submissions, gb, "--regrade"))
    assert code == 0, err
    with Gradebook(gb) as gradebook:
        assert gradebook.submission(ASSIGNMENT, late_student).path == str(late)   # the late one counts
        assert [h.path for h in gradebook.handins(ASSIGNMENT, late_student)] == [str(late), str(on_time)]


# --- 5. resuming after the process is killed -----------------------------------------------

def test_a_killed_run_resumes_with_exactly_the_rest(course, tmp_path):
    # The key reader first (so it surely ran in the grading process, which holds the secret in
    # its environment), an infinite loop last: it keeps the run busy for the timeout, so
    # the kill lands while something is still to grade.
    profiles = ["read_key", "correct", "partial", "typed_wrong", "exit_midway", first_twin(course.key),
                "stripped_metadata", "infinite_loop"]
    synthesize(course.build, course.key, tmp_path / "subs", profiles=profiles)
    gb = tmp_path / "gb.sqlite"
    args = ["grade", EXAMPLE, tmp_path / "subs", "--build", course.build, "--gradebook", gb,
            "--jobs", "1", "--timeout", TIMEOUT, "--json"]
    process = subprocess.Popen([sys.executable, "-m", "attnkit", *map(str, args)], cwd=ROOT,
                               env={**os.environ, "ATTNKIT_SECRET": SECRET},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not recorded(gb):
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "nothing was recorded in two minutes"
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    done = recorded(gb)
    assert 1 <= len(done) < len(STUDENTS) and STUDENTS[-1] not in done

    code, out, err = attnkit(*args)
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["graded"], summary["unchanged"]) == (len(STUDENTS) - len(done), len(done))
    with sqlite3.connect(f"file:{gb}?mode=ro", uri=True) as con:
        assert con.execute("SELECT COUNT(*), COUNT(DISTINCT student) FROM submissions").fetchone() == (8, 8)
        assert con.execute("SELECT COUNT(*) FROM results").fetchone()[0] == part_count(course.key)

    clean = tmp_path / "clean.sqlite"
    code, _, err = attnkit(*[clean if a == gb else a for a in args])
    assert code == 0, err
    assert rows(gb) == rows(clean)
    assert_matches_manifest(gb, load_manifest(tmp_path / "subs"))
    for path in tmp_path.glob("gb.sqlite*"):
        assert SECRET.encode() not in path.read_bytes()


# --- 6. -k and --junitxml ----------------------------------------------------------------

def test_k_runs_only_matching_items_and_leaves_the_gradebook_alone(course, graded, tmp_path):
    gb = copy_gradebook(graded, tmp_path)
    before = dump(gb)
    student = STUDENTS[0]
    junit = tmp_path / "k.xml"
    code, out, _ = attnkit(*course.grade_args(graded.submissions, gb, "--json", "--regrade",
                                              "-k", f"{student} and weights", "--junitxml", junit))
    assert code == 0
    summary = json.loads(out)
    assert (summary["graded"], summary["not_recorded"]) == (0, 1)
    assert dump(gb) == before                    # not even graded_at changed
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    ran = {(c.get("classname").rsplit(".", 2)[-2], c.get("classname").rsplit(".", 1)[-1], c.get("name"))
           for c in cases}
    wanted = {(student, pid, g.get("id") or g.get("family"))
              for pid, r in course.key["students"][student]["problems"].items() for g in r["grading"]
              if "weights" in pid.lower() or "weights" in (g.get("id") or g.get("family")).lower()}
    assert wanted and ran == wanted and len(cases) == len(wanted)
    for case in cases:
        assert {"points", "max_points", "status"} <= {p.get("name") for p in case.iter("property")}


# --- 7. the other ways grade can end ------------------------------------------------------

def test_explain_sandbox_prints_every_layer(capsys):
    assert main(["grade", "--explain-sandbox"]) == 0
    out = capsys.readouterr().out
    for layer in walls.explain():
        assert re.search(rf"^\s*\[(on |off)\] {re.escape(layer['name'])}\s", out, re.M), layer["name"]


def test_a_wrong_secret_is_refused_before_any_grading(course, graded, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", "not the course secret, but long enough")
    gb = tmp_path / "gb.sqlite"
    assert main([str(a) for a in course.grade_args(graded.submissions, gb)]) == 1
    err = capsys.readouterr().err
    assert "answer_key.json" in err and "secret" in err
    assert not gb.exists()


def _no_wall_holds(monkeypatch) -> list:
    """explain() as a machine would answer where no wall holds; the calls made of it."""
    import grader.sandbox.client as client

    asked = []
    monkeypatch.setattr(client, "explain", lambda *a, **k: asked.append(1) or
                        [walls.wall(w["name"], False, "played: off") for w in walls.explain()])
    return asked


def test_where_no_wall_holds_grading_is_refused_and_nothing_is_written(course, graded, tmp_path,
                                                                       monkeypatch, capsys):
    """The live child is asked while the key is read (a thread of its own, joined before
    anything else happens): its answer refuses the run, unless --insecure."""
    asked = _no_wall_holds(monkeypatch)
    gb = tmp_path / "gb.sqlite"
    assert main([str(a) for a in course.grade_args(graded.submissions, gb)]) == 1
    assert "refusing to run student code here" in capsys.readouterr().err and asked == [1]
    assert not gb.exists()


def test_a_course_error_is_said_before_the_walls_answer(course, graded, tmp_path, monkeypatch, capsys):
    _no_wall_holds(monkeypatch)
    monkeypatch.setenv("ATTNKIT_SECRET", "not the course secret, but long enough")
    assert main([str(a) for a in course.grade_args(graded.submissions, tmp_path / "gb.sqlite")]) == 1
    err = capsys.readouterr().err
    assert "secret" in err and "refusing" not in err
    import threading
    assert not [t for t in threading.enumerate() if t.name == "attnkit-walls"]     # joined


def test_a_missing_submissions_folder_exits_1(course, tmp_path, capsys):
    missing = tmp_path / "no-such-folder"
    assert main([str(a) for a in course.grade_args(missing, tmp_path / "gb.sqlite")]) == 1
    assert str(missing) in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["grade"], ["grade", str(EXAMPLE)], ["grade", str(EXAMPLE), "subs"]])
def test_missing_arguments_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "attnkit grade: give" in capsys.readouterr().err


# --- 8. reports ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reports(course, graded, tmp_path_factory):
    """(plain report folder, revealed report folder, the --json summary)."""
    folder = tmp_path_factory.mktemp("reports")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        code, out, err = attnkit("report", EXAMPLE, "--build", course.build, "--gradebook",
                                 graded.gradebook, "--out", folder / "plain", "--json")
        assert code == 0, err
        code, _, err = attnkit("report", EXAMPLE, "--build", course.build, "--gradebook",
                               graded.gradebook, "--out", folder / "revealed", "--reveal")
        assert code == 0, err
    return folder / "plain", folder / "revealed", json.loads(out)


def test_report_json_names_what_it_wrote(reports):
    plain, _, summary = reports
    assert [s["id"] for s in summary["students"]] == STUDENTS
    assert set(summary["written"]) == {"csv", "gradescope", "feedback"}
    assert Path(summary["written"]["csv"]) == plain / "grades.csv"


def test_grades_csv_has_one_row_per_student_with_the_gradebook_total(reports, graded):
    plain, _, _ = reports
    with open(plain / "grades.csv", newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert [row["student_id"] for row in table] == STUDENTS
    subs, _ = rows(graded.gradebook)
    totals = {s.student: s.score for s in subs}
    assert all(math.isclose(float(row["total"]), totals[row["student_id"]]) for row in table)


def test_gradescope_scores_sum_to_the_gradebook_total(reports, graded):
    plain, _, _ = reports
    subs, results = rows(graded.gradebook)
    for s in subs:
        data = json.loads((plain / "gradescope" / s.student / "results.json").read_text(encoding="utf-8"))
        assert len(data["tests"]) == len([r for r in results if r.student == s.student])
        assert math.isclose(sum(t["score"] for t in data["tests"]), s.score)
        assert math.isclose(data["score"], s.score)


def test_feedback_pages_link_nowhere_and_show_expected_values_only_when_revealed(reports, course):
    plain, revealed, _ = reports
    for student in STUDENTS:
        hidden, shown = ((folder / "feedback" / f"{student}.html").read_text(encoding="utf-8")
                         for folder in (plain, revealed))
        for page in (hidden, shown):
            assert not re.search(r"https?://", page)
        parts = sum(len(r["grading"]) for r in course.key["students"][student]["problems"].values()
                    if r["kind"] != "free_response")
        assert "<h4>Expected</h4>" not in hidden and "Hidden case" not in hidden
        assert "<h4>Rubric</h4>" not in hidden
        assert shown.count("<h4>Expected</h4>") == parts and "Hidden case" in shown
        assert "<h4>Rubric</h4>" in shown


def test_the_ta_sees_what_needs_a_look_and_no_student_page_names_another_student(reports, graded):
    look = graded.summary["needs_a_look"]
    flagged = {(x["student"], x["code"]) for x in look}
    assert (student_of(graded.manifest, "wrong_student"), "wrong-student") in flagged
    assert (student_of(graded.manifest, "broken_json"), "invalid-json") in flagged
    assert all(set(x) == {"student", "file", "code", "message"} and x["file"] for x in look)
    assert reports[2]["needs_a_look"] == look
    plain, revealed, _ = reports
    for student in STUDENTS:
        others = [s for s in STUDENTS if s != student]
        pages = [(folder / "feedback" / f"{student}.html").read_text(encoding="utf-8")
                 for folder in (plain, revealed)]
        pages.append((plain / "gradescope" / student / "results.json").read_text(encoding="utf-8"))
        for page in pages:
            assert not any(other in page for other in others), (student, [o for o in others if o in page])
    copier = student_of(graded.manifest, "wrong_student")
    assert "Your instructor has a note" in (plain / "feedback" / f"{copier}.html").read_text(encoding="utf-8")


def test_the_course_secret_is_in_no_report_and_not_in_the_gradebook(reports, graded):
    files = [p for folder in reports[:2] for p in folder.rglob("*") if p.is_file()]
    files += list(graded.gradebook.parent.glob("gb.sqlite*"))
    assert len(files) > 3 * len(STUDENTS)
    assert [p for p in files if SECRET.encode() in p.read_bytes()] == []


def test_an_nbgrader_course_is_graded_against_its_class_key(tmp_path, monkeypatch):
    """`attnkit build --nbgrader` writes one class-wide variant: every student's notebook is
    graded against the class entry, and the reports list the students who handed in."""
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    course = tmp_path / "course"
    assert attnkit("build", EXAMPLE, "--nbgrader", course)[0] == 0
    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student in ("alice", "bob"):
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        notebook = json.loads(source.read_text(encoding="utf-8"))
        if student == "bob":            # bob hands in the blank notebook
            for c in notebook["cells"]:
                if c["metadata"].get("nbgrader", {}).get("solution"):
                    c["source"] = "# YOUR CODE HERE\nraise NotImplementedError()" \
                        if c["cell_type"] == "code" else "YOUR ANSWER HERE"
        (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    key = course / "attnkit" / ASSIGNMENT / "answer_key.json"
    code, out, err = attnkit("grade", EXAMPLE, course / "submitted", "--key", key, "--json")
    assert code == 0, err
    assert json.loads(out)["graded"] == 2
    code, out, err = attnkit("report", EXAMPLE, "--key", key, "--out", tmp_path / "reports", "--json")
    assert code == 0, err
    totals = {s["id"]: s["total"] for s in json.loads(out)["students"]}
    automatic = sum(p["points"] for p in load_key(key, SECRET.encode())["assignment"]["problems"]
                    if p["kind"] != "free_response")
    assert totals == {"alice": automatic, "bob": 0.0}


def test_ctrl_c_stops_the_run_with_130_and_keeps_what_was_graded(course, tmp_path):
    profiles = ["correct", "partial", "infinite_loop"]
    synthesize(course.build, course.key, tmp_path / "subs", profiles=profiles)
    gb = tmp_path / "gb.sqlite"
    args = ["grade", EXAMPLE, tmp_path / "subs", "--build", course.build, "--gradebook", gb,
            "--jobs", "1", "--timeout", "30"]
    process = subprocess.Popen([sys.executable, "-m", "attnkit", *map(str, args)], cwd=ROOT,
                               env={**os.environ, "ATTNKIT_SECRET": SECRET},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 120
        while len(recorded(gb)) < 2:        # the third one loops until its 30 s deadline
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "nothing was recorded in two minutes"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err.decode()
    assert "interrupted" in err.decode()
    assert len(recorded(gb)) == 2
