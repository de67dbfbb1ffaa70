"""Receipt times through ``attnkit grade``: an LMS export's times, once recorded, survive a
``--regrade`` that has only the files' modification times (a bulk download's, days after the
due date), stderr names whose recorded times were kept or changed, and an export given to a
run that grades nothing again still reaches the unchanged handins."""

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from attnkit.cli import main
from formats.key_shape import assignment_id, key_students
from grader.store.gradebook import Gradebook
from synthetic import submission_path, synthesize

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "receipts cli secret: long enough, never a real one"
DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)
DOWNLOADED = DUE + timedelta(days=4, hours=9)           # the bulk download: after the cutoff


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
    """(build folder, key, spec with a penalty and a cutoff, submissions downloaded late)."""
    build_dir, key = example_build(3, SECRET)
    folder = tmp_path_factory.mktemp("receipts-cli")
    spec = folder / "hw1.yaml"
    spec.write_text(EXAMPLE.read_text(encoding="utf-8") + f"due: {DUE.isoformat()}\nlate: {{policy: penalty, "
                    f"percent: 10, per: day, cutoff: {(DUE + timedelta(days=2)).isoformat()}}}\n",
                    encoding="utf-8")
    synthesize(build_dir, key, folder / "subs", profiles=["correct"])
    for sid in key_students(key):
        path = submission_path(folder / "subs", "nbgrader", assignment_id(key), sid)
        os.utime(path, (DOWNLOADED.timestamp(),) * 2)
    return build_dir, key, spec, folder / "subs"


def times_csv(path: Path, times: dict) -> Path:
    path.write_text("student_id,submitted_at\n" + "".join(f"{s},{t.isoformat()}\n" for s, t in times.items()),
                    encoding="utf-8")
    return path


def grade(course, gradebook: Path, *extra) -> tuple[int, str, str]:
    build_dir, _, spec, subs = course
    return attnkit("grade", spec, subs, "--build", build_dir, "--gradebook", gradebook, "--jobs", "2",
                   "--timeout", "5", *extra)


def report(course, gradebook: Path, out: Path) -> dict:
    build_dir, _, spec, _ = course
    code, stdout, err = attnkit("report", spec, "--build", build_dir, "--gradebook", gradebook,
                                "--out", out, "--json")
    assert code == 0, err
    return {s["id"]: s for s in json.loads(stdout)["students"]}


def receipts(gradebook: Path, key) -> dict:
    with Gradebook(gradebook) as gb:
        return {h.student: (h.received_at, h.received_from) for h in gb.handins(assignment_id(key))}


def test_a_regrade_without_the_export_keeps_its_times_and_says_whose(course, tmp_path):
    _, key, _, _ = course
    students = key_students(key)
    on_time = {sid: DUE - timedelta(hours=1 + n) for n, sid in enumerate(students)}
    lms = times_csv(tmp_path / "times.csv", on_time)
    gb = tmp_path / "gb.sqlite"
    code, _, err = grade(course, gb, "--received", lms, "--json")
    assert code == 0, err
    first = report(course, gb, tmp_path / "r1")
    assert {sid: s["status"] for sid, s in first.items()} == dict.fromkeys(students, "graded")

    code, out, err = grade(course, gb, "--regrade")               # only the files' times now
    assert code == 0, err
    assert receipts(gb, key) == {sid: (t.isoformat(), "LMS export (times.csv)") for sid, t in on_time.items()}
    second = report(course, gb, tmp_path / "r2")
    assert {sid: (s["status"], s["total"], s["late"]) for sid, s in second.items()} == \
        {sid: (s["status"], s["total"], s["late"]) for sid, s in first.items()}
    assert "not accepted" not in out
    assert f"kept the receipt times recorded from LMS export (times.csv) for {', '.join(students)}" in err
    assert "WARNING" not in err

    # a source as good that says otherwise wins, loudly, naming the student
    moved = {**on_time, students[0]: DUE + timedelta(days=3)}
    code, out, err = grade(course, gb, "--regrade", "--json", "--received", times_csv(tmp_path / "fixed.csv", moved))
    assert code == 0, err
    assert "WARNING: this run changed the recorded receipt time of 1 handin" in err
    assert f"  {students[0]}: {on_time[students[0]].isoformat()} (LMS export (times.csv)) → " \
           f"{moved[students[0]].isoformat()} (LMS export (fixed.csv))" in err
    assert json.loads(out)["receipts"]["changed"][0]["student"] == students[0]
    assert report(course, gb, tmp_path / "r3")[students[0]]["status"] == "not accepted"


def test_an_export_reaches_handins_that_are_not_graded_again(course, tmp_path):
    _, key, _, _ = course
    students = key_students(key)
    gb = tmp_path / "gb.sqlite"
    code, _, err = grade(course, gb, "--json")                    # the download's times: after the cutoff
    assert code == 0, err
    assert set(s["status"] for s in report(course, gb, tmp_path / "r1").values()) == {"not accepted"}
    lms = times_csv(tmp_path / "times.csv", dict.fromkeys(students, DUE - timedelta(hours=2)))
    code, out, err = grade(course, gb, "--received", lms, "--json")     # unchanged: nothing graded again
    assert code == 0, err
    assert json.loads(out)["unchanged"] == len(students)
    assert set(s["status"] for s in report(course, gb, tmp_path / "r2").values()) == {"graded"}
    assert "WARNING: this run changed the recorded receipt time of 3 handins" in err
