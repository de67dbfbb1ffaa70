"""``attnkit report`` with ``--lms``: canvas.csv and moodle.csv beside the other reports, each
written on its own, the roster's LMS ids used, and what was left out said on stderr.

The example assignment is built for four students (``example_build``) and a gradebook filled
as grading fills it: one graded in full, one with hand-graded parts pending, two missing."""

import csv
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from attnkit.cli import main
from formats.key_shape import (assignment_id, entry_for, graded_parts, head_problems, key_students,
                               problem_record, total_points)
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "exports test secret: long enough, never a real one"     # the build test_exports uses too
COLUMN = "Homework 1: Attention, by hand and in code (attention-hw1)"


def attnkit(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)


@pytest.fixture(scope="module")
def course(example_build, tmp_path_factory):
    """(build folder, key, gradebook path, roster path, the hand-graded points Bo waits for)."""
    build, key = example_build(4, SECRET)
    folder = tmp_path_factory.mktemp("report-cli")
    a = assignment_id(key)
    ada, bo, cy, dee = key_students(key)
    pending = 0.0
    with Gradebook(folder / "gb.sqlite") as gb:
        for student in (ada, bo):
            rows = []
            for p in head_problems(key):
                for part, points in graded_parts(problem_record(entry_for(key, student), p["id"], {})):
                    manual = student == bo and p.get("kind") == "free_response"
                    pending += points if manual else 0.0
                    rows.append(ResultRow(a, student, p["id"], part, 0.0 if manual else points, points,
                                          "manual" if manual else "passed"))
            gb.record(SubmissionRow(a, student, f"{student}.ipynb", f"hash-{student}", "graded", (),
                                    sum(r.score for r in rows), total_points(key)), rows)
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email,lms_id,lms_login\n"
                      f"{ada},Ada Lovelace,Ada@Example.edu,501,ada\n{bo},=cmd|' /C calc'!A0,bo@example.edu,502,bo\n"
                      f"{cy},Cy,cy@example.edu,503,cy\n{dee},Dee,dee@example.edu,504,dee\n", encoding="utf-8")
    return build, key, folder / "gb.sqlite", roster, pending


def report(course, out, *extra):
    build, _, gradebook, _, _ = course
    return attnkit("report", EXAMPLE, "--build", build, "--gradebook", gradebook, "--out", out, *extra)


def read(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline="")))


def test_lms_files_are_written_beside_the_other_reports_and_listed(course, tmp_path):
    _, key, _, roster, pending = course
    ada, bo, cy, dee = key_students(key)
    code, out, err = report(course, tmp_path, "--lms", "canvas", "--lms", "moodle", "--roster", roster, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["written"] == {"csv": str(tmp_path / "grades.csv"),
                                  "gradescope": str(tmp_path / "gradescope" / "<student>" / "results.json"),
                                  "feedback": str(tmp_path / "feedback" / "<student>.html"),
                                  "canvas": str(tmp_path / "canvas.csv"), "moodle": str(tmp_path / "moodle.csv")}
    assert summary["not_written"] == {}
    canvas = read(tmp_path / "canvas.csv")
    assert (tmp_path / "canvas.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert canvas[:2] == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", COLUMN],
                          ["    Points Possible", "", "", "", "", "56"]]
    assert canvas[2:] == [["Ada Lovelace", "501", ada, "ada", "", "56"],
                          ["'=cmd|' /C calc'!A0", "502", bo, "bo", "", ""],
                          ["Cy", "503", cy, "cy", "", ""], ["Dee", "504", dee, "dee", "", ""]]
    moodle = read(tmp_path / "moodle.csv")
    assert moodle[0] == ["Email address", COLUMN, "Feedback"]
    assert [r[:2] for r in moodle[1:]] == [["Ada@Example.edu", "56"], ["bo@example.edu", "-"],
                                           ["cy@example.edu", "-"], ["dee@example.edu", "-"]]
    # What the instructor must know before importing: on stderr, and in --json.
    assert f"canvas: no grade for 1 student ({bo})" in err and f"moodle: no grade for 2 students ({cy}, {dee})" in err
    assert any("--partial" in n for n in summary["export_notes"]["canvas"])
    grades = {r["student_id"]: r for r in csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text("utf-8")))}
    assert [grades[s]["status"] for s in (ada, bo, cy, dee)] == ["graded", "incomplete", "missing", "missing"]
    assert grades[bo]["pending_points"] == f"{pending:g}" and grades[dee]["total"] == ""
    results = json.loads((tmp_path / "gradescope" / bo / "results.json").read_text(encoding="utf-8"))
    assert results["visibility"] == "visible" and results["extra_data"]["status"] == "incomplete"


def test_without_lms_the_reports_are_the_ones_there_were(course, tmp_path):
    code, out, err = report(course, tmp_path, "--json")
    assert code == 0, err
    assert set(json.loads(out)["written"]) == {"csv", "gradescope", "feedback"}
    assert not (tmp_path / "canvas.csv").exists() and not (tmp_path / "moodle.csv").exists()


def test_partial_and_missing_as_zero_fill_the_blanks(course, tmp_path):
    _, key, _, _, pending = course
    code, out, err = report(course, tmp_path, "--lms", "canvas", "--lms", "moodle", "--moodle-id", "idnumber",
                            "--partial", "--missing-as-zero", "--gradescope-visibility", "after_due_date")
    assert code == 0, err
    assert [r[-1] for r in read(tmp_path / "canvas.csv")[2:]] == ["56", f"{56 - pending:g}", "0", "0"]
    moodle = read(tmp_path / "moodle.csv")
    assert moodle[0][0] == "ID number" and [r[:2] for r in moodle[1:]] == [
        [s, g] for s, g in zip(key_students(key), ["56", f"{56 - pending:g}", "0", "0"])]
    assert "no grade" not in err
    results = json.loads((tmp_path / "gradescope" / key_students(key)[0] / "results.json").read_text("utf-8"))
    assert results["visibility"] == "after_due_date"
    assert {t["visibility"] for t in results["tests"]} == {"after_due_date"}


def test_a_canvas_title_canvas_would_ignore_costs_only_the_canvas_file(course, tmp_path):
    code, out, err = report(course, tmp_path, "--lms", "canvas", "--lms", "moodle", "--canvas-title",
                            "Final homework", "--json")
    assert code == 1
    summary = json.loads(out)
    assert set(summary["written"]) == {"csv", "gradescope", "feedback", "moodle"}
    why = summary["not_written"]["canvas"]
    assert "canvas-lms#2134" in why and "--canvas-title" in why
    assert "canvas not written" in err and not (tmp_path / "canvas.csv").exists()
    code, _, err = report(course, tmp_path, "--lms", "canvas", "--canvas-title", "Attention HW", "--canvas-id", "77")
    assert code == 0, err
    assert read(tmp_path / "canvas.csv")[0][-1] == "Attention HW (77)"


def test_a_broken_roster_stops_before_anything_is_written(course, tmp_path):
    bad = tmp_path / "roster.csv"
    bad.write_text("student_id,name\n,no id\n", encoding="utf-8")
    code, out, err = report(course, tmp_path / "out", "--lms", "canvas", "--roster", bad)
    assert code == 1 and "roster.csv:2" in err          # the problems of the file, as `build` says them
    assert not (tmp_path / "out").exists()


def test_an_unknown_lms_is_refused_by_the_parser(course, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        report(course, tmp_path, "--lms", "blackboard")
    assert exit_.value.code == 2


@pytest.mark.parametrize("broken", ["write_grades_csv", "write_canvas_csv", "write_moodle_csv"])
def test_each_file_is_written_whatever_another_does(course, tmp_path, monkeypatch, broken):
    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "somewhere.csv"))
    monkeypatch.setattr(f"grader.reports.exports.{broken}", full_disk)
    code, out, err = report(course, tmp_path, "--lms", "canvas", "--lms", "moodle", "--json")
    assert code == 1
    summary = json.loads(out)
    what = {"write_grades_csv": "csv", "write_canvas_csv": "canvas", "write_moodle_csv": "moodle"}[broken]
    assert set(summary["written"]) == {"csv", "gradescope", "feedback", "canvas", "moodle"} - {what}
    assert "No space left on device" in summary["not_written"][what] and f"{what} not written" in err


def test_the_dashboard_is_written_beside_the_reports_and_fails_on_its_own(course, tmp_path, monkeypatch):
    code, out, err = report(course, tmp_path, "--dashboard", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["written"]["dashboard"] == str(tmp_path / "dashboard.html")
    assert set(summary["written"]) == {"csv", "gradescope", "feedback", "dashboard"}
    html = (tmp_path / "dashboard.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "instructors&#x27; dashboard</h1>" in html and "<script" not in html
    assert not (tmp_path / "feedback" / "dashboard.html").exists()      # never among the students' pages
    code, out, err = report(course, tmp_path / "text", "--dashboard")
    assert code == 0 and "dashboard:" in out and str(tmp_path / "text" / "dashboard.html") in out

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "dashboard.html"))
    monkeypatch.setattr("grader.reports.dashboard.write_dashboard", full_disk)
    code, out, err = report(course, tmp_path / "full", "--dashboard", "--json")
    assert code == 1
    summary = json.loads(out)
    assert set(summary["written"]) == {"csv", "gradescope", "feedback"}
    assert "No space left on device" in summary["not_written"]["dashboard"] and "dashboard not written" in err
