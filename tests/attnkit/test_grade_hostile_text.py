"""``attnkit grade`` and ``attnkit report`` on hostile text: a roster name and a student's
exception message holding escape sequences, an answer whose range overflows a double —
printed without a terminal acting on them, and every report still written."""

import json
import shutil

import pytest

from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.answer_key import load_key
from grader.store.gradebook import Gradebook
from synthetic import synthesize
from tests.attnkit.grade_cli_course import ASSIGNMENT, EXAMPLE, SECRET, Course, attnkit, handed_in


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"
OVERFLOWING = "np.array([[1e308, -1e308, 0, 1]] * 4)"      # its range is ∞ in floating point


def acted_on(text: str) -> list[str]:
    """Characters a terminal would act on or hide (newlines structure the output)."""
    import unicodedata
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(course, gradebook): two students; ev-01's roster name holds escape sequences, their
    std cell raises an exception whose message holds them too, and their p2_weights is an
    array whose range overflows a double. Graded once, with -v."""
    folder = tmp_path_factory.mktemp("hostile")
    roster = folder / "roster.csv"
    roster.write_text(f"student_id,name,email\nev-01,Eve {HOSTILE} Mallory,ev@example.edu\n"
                      "ok-02,Olga Ok,ok@example.edu\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build")
        assert result.ok, result.failures
        course = Course(folder / "build", load_key(result.key_path, SECRET.encode()), folder)
        synthesize(course.build, course.key, folder / "subs", profiles=["correct"])
        path = handed_in(folder / "subs", "ev-01")
        notebook = json.loads(path.read_text(encoding="utf-8"))
        sources = {"scaling-std": 'raise ValueError("\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m")\n',
                   "dog_ran_fast-weights": f"p2_weights = {OVERFLOWING}\n"}
        for cell in notebook["cells"]:
            if cell.get("id") in sources:
                cell["source"] = sources.pop(cell["id"])
        assert not sources
        path.write_text(json.dumps(notebook), encoding="utf-8")
        gradebook = folder / "gb.sqlite"
        code, out, err = attnkit(*course.grade_args(folder / "subs", gradebook, "-v"))
    assert code == 0, err
    return course, gradebook, out + err


def test_grade_shows_roster_names_and_student_messages_without_running_them(hostile):
    course, gradebook, printed = hostile
    assert acted_on(printed) == []
    assert "Eve \\x1b]0;pwned" in printed                       # the class table
    assert "points (missing)" in printed                        # pytest's report of the failures
    with Gradebook(gradebook) as gb:
        std = next(r for r in gb.results(ASSIGNMENT, "ev-01") if r.part == "std")
    assert HOSTILE in std.message                               # the gradebook keeps the data


def test_grade_json_is_the_same_data_with_nothing_a_terminal_acts_on(hostile, tmp_path):
    course, gradebook, _ = hostile
    gb = tmp_path / "gb.sqlite"
    shutil.copyfile(gradebook, gb)
    renamed = tmp_path / "subs"
    shutil.copytree(course.folder / "subs", renamed)
    stranger = handed_in(renamed, f"zz{HOSTILE}")                # a folder that is no student
    stranger.parent.mkdir(parents=True)
    shutil.copyfile(handed_in(renamed, "ok-02"), stranger)
    code, out, err = attnkit(*course.grade_args(renamed, gb, "--json"))
    assert code == 0, err
    assert acted_on(out + err) == []
    summary = json.loads(out)
    assert any(issue["code"] == "unknown-student" and "submitted/zz" in issue["message"]
               for issue in summary["issues"])


def _report(course, gradebook, out, *extra):
    return attnkit("report", EXAMPLE, "--build", course.build, "--gradebook", gradebook,
                   "--out", out, *extra)


def test_report_of_an_overflowing_answer_writes_every_output(hostile, tmp_path):
    course, gradebook, _ = hostile
    code, out, err = _report(course, gradebook, tmp_path, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert set(summary["written"]) == {"csv", "gradescope", "feedback"}
    assert summary["not_written"] == {} and summary["fallbacks"] == {}
    assert acted_on(out + err) == []
    assert next(s["name"] for s in summary["students"] if s["id"] == "ev-01") == f"Eve {HOSTILE} Mallory"
    for sid in ("ev-01", "ok-02"):
        assert (tmp_path / "gradescope" / sid / "results.json").is_file()
    page_html = (tmp_path / "feedback" / "ev-01.html").read_text(encoding="utf-8")
    assert page_html.count('<svg class="heatmap"') >= 1 and "could not be drawn" not in page_html
    assert (tmp_path / "feedback" / "ok-02.html").is_file() and (tmp_path / "grades.csv").is_file()


def test_report_table_shows_names_without_running_them(hostile, tmp_path):
    course, gradebook, _ = hostile
    code, out, err = _report(course, gradebook, tmp_path, "--table")
    assert code == 0, err
    assert acted_on(out + err) == [] and "Eve \\x1b]0;pwned" in out


def test_a_page_that_cannot_be_drawn_falls_back_and_is_named(hostile, tmp_path, monkeypatch):
    course, gradebook, _ = hostile

    def broken(*_args, **_kwargs):
        raise ValueError("a renderer bug")
    monkeypatch.setattr("grader.reports.feedback_page.heatmap_svg", broken)
    code, out, err = _report(course, gradebook, tmp_path, "--json")
    assert code == 0, err
    fallbacks = json.loads(out)["fallbacks"]
    assert set(fallbacks) == {"ev-01", "ok-02"} and "dog_ran_fast/weights (ValueError)" in fallbacks["ev-01"]
    assert "feedback/ev-01.html: could not draw" in err and "feedback/ok-02.html" in err
    page_html = (tmp_path / "feedback" / "ev-01.html").read_text(encoding="utf-8")
    assert "This answer could not be drawn." in page_html


def test_each_output_is_written_whatever_another_does(hostile, tmp_path, monkeypatch):
    course, gradebook, _ = hostile

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device", str(tmp_path / "grades.csv"))
    monkeypatch.setattr("grader.reports.exports.write_grades_csv", full_disk)
    code, out, err = _report(course, gradebook, tmp_path, "--json")
    assert code == 1
    summary = json.loads(out)
    assert set(summary["written"]) == {"gradescope", "feedback"}
    assert "No space left on device" in summary["not_written"]["csv"] and "csv not written" in err
    assert len(list((tmp_path / "feedback").glob("*.html"))) == 2
