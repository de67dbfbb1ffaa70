"""grade_folder over any sequence of folders: runs accumulate (issue 15). Hypothesis draws
sequences of runs, each over a random subset of the class handing in one of two notebooks
each (a correct one, a partial one) at a random time; after every run no grade recorded by an
earlier run is lost or changed but by a regrade of the same notebook, and the notebook
received last counts."""

import shutil
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.key_shape import assignment_id, key_students
from grader.store.gradebook import Gradebook
from grader.run.pipeline import grade_folder
from grader.sandbox.client import Limits, Sandbox
from synthetic import submission_path, synthesize

SECRET = "pipeline property secret: long enough"
START = datetime(2026, 12, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def course(example_build, tmp_path_factory):
    build_dir, key = example_build(3, SECRET)
    made = tmp_path_factory.mktemp("made")
    for kind in ("correct", "partial"):
        synthesize(build_dir, key, made / kind, profiles=[kind])
    return key, made


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, Limits(wall_seconds=5)) as box:
        yield box


RUNS = st.lists(st.dictionaries(st.sampled_from([0, 1, 2]),
                                st.tuples(st.sampled_from(["correct", "partial"]), st.integers(0, 6)),
                                max_size=3), min_size=1, max_size=4)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=RUNS)
def test_runs_over_any_folders_accumulate(course, sandbox, tmp_path_factory, runs):
    key, made = course
    students, hw = key_students(key), assignment_id(key)
    root = tmp_path_factory.mktemp("runs")
    seen: dict = {}                   # (student, handin) → its grade, as first recorded
    latest: dict = {}                 # student → (received, handin) of the newest handed in
    with Gradebook(root / "g.sqlite") as gradebook:
        for n, run in enumerate(runs):
            folder = root / f"run{n}"
            folder.mkdir()
            for index, (kind, day) in run.items():
                student = students[index]
                target = submission_path(folder, "nbgrader", hw, student)
                target.parent.mkdir(parents=True)
                shutil.copyfile(submission_path(made / kind, "nbgrader", hw, student), target)
                when = START + timedelta(days=day)
                (target.parent / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
            summary = grade_folder(key, folder, gradebook, sandbox, servers=2, kit_version="")
            assert len(summary.recorded) + len(summary.skipped) == len(run)
            now = {(h.student, h.handin): (h.score, h.received_at) for h in gradebook.handins(hw)}
            assert all(h.received_from == "nbgrader timestamp.txt" for h in gradebook.handins(hw))
            for handin, grade in seen.items():
                assert now[handin][0] == grade[0], handin           # never lost, never changed
            seen.update({h: g for h, g in now.items() if h not in seen})
            for (student, handin), (_, received) in now.items():
                if student not in latest or received > latest[student][0]:
                    latest[student] = (received, handin)
            for student, (received, _) in latest.items():
                assert gradebook.submission(hw, student).received_at == received
            assert {s.student for s in gradebook.submissions(hw)} == set(latest)


def test_a_deleted_check_cell_reaches_the_tas_list(course, sandbox, tmp_path):
    """Grading never runs a check cell, so its loss costs no point; but the student worked
    without the part's form check, and the TA's list says so (as attnkit check does)."""
    import json

    from grader.reports.summary import class_table, look_list, summary_json

    key, made = course
    hw, student = assignment_id(key), key_students(key)[0]
    source = submission_path(made / "correct", "nbgrader", hw, student)
    target = submission_path(tmp_path / "subs", "nbgrader", hw, student)
    target.parent.mkdir(parents=True)
    notebook = json.loads(source.read_text(encoding="utf-8"))
    check = next(c["id"] for c in notebook["cells"] if c.get("id", "").endswith("--check"))
    notebook["cells"] = [c for c in notebook["cells"] if c.get("id") != check]
    target.write_text(json.dumps(notebook), encoding="utf-8")
    with Gradebook(tmp_path / "g.sqlite") as gradebook:
        summary = grade_folder(key, tmp_path / "subs", gradebook, sandbox, servers=2, kit_version="")
        assert [(x["student"], x["code"]) for x in summary.look] == [(student, "check-cell-missing")]
        assert check in summary.look[0]["message"] and summary.look[0]["file"] == str(target)
        data = summary_json(gradebook, key)
        table = class_table(gradebook, key, summary=data)
    (me,) = [s for s in data["students"] if s["id"] == student]
    assert me["total"] == me["max"] - sum(p["max_score"] for p in me["parts"] if p["status"] == "manual")
    assert [x["code"] for x in me["needs_a_look"]] == ["check-cell-missing"]
    assert f"{student}  check-cell-missing: " in look_list(data)
    assert any(line.startswith(student) and line.endswith("look") for line in table.splitlines())


def test_the_course_run_gives_one_tas_list_read_after_the_run(course, sandbox, tmp_path):
    """``grade_course`` (what ``attnkit grade`` calls, for text and --json alike): the TA's list
    it reports is the class summary's own, read once after the run; options are one object,
    and a keyword given beside it overrides that field only."""
    import json

    from grader.run.course import grade_course
    from grader.run.pipeline import GradeOptions

    key, made = course
    hw, student = assignment_id(key), key_students(key)[0]
    source = submission_path(made / "correct", "nbgrader", hw, student)
    target = submission_path(tmp_path / "subs", "nbgrader", hw, student)
    target.parent.mkdir(parents=True)
    notebook = json.loads(source.read_text(encoding="utf-8"))
    notebook["cells"] = [c for c in notebook["cells"] if not c.get("id", "").endswith("--check")]
    target.write_text(json.dumps(notebook), encoding="utf-8")
    options = GradeOptions(servers=2, kit_version="")
    with Gradebook(tmp_path / "g.sqlite") as gradebook:
        graded = grade_course(key, tmp_path / "subs", gradebook, sandbox, options)
        assert graded.summary.look == graded.class_summary["needs_a_look"]
        assert [(x["student"], x["code"]) for x in graded.summary.look] == [(student, "check-cell-missing")]
        assert graded.rescored == []
        again = grade_folder(key, tmp_path / "subs", gradebook, sandbox, options, regrade=True, review=False)
    assert again.recorded == [student] and again.look == []
