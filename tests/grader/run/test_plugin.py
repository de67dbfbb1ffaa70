"""The pytest side of a grading run (grader/run/plugin.py): sessions of a few submissions each,
what ``-k``, ``-x`` and junitxml do across them, and a verdict that cannot be had. Real
sandbox, real gradebook, correct synthetic submissions of the example assignment; a spy
on ``GradingRun.execute`` tells which submissions ran in the sandbox."""

import xml.etree.ElementTree as ET

import pytest

from grader.store.gradebook import Gradebook
from grader.run.grading import GradingRun
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match
from grader.run.plugin import run_pytest
from grader.sandbox.client import Limits, Sandbox
from synthetic import synthesize

SECRET = "plugin test secret: long enough, and only here"
STUDENTS = 7
SESSION = 3          # 7 submissions: sessions of 3, 3 and 1


@pytest.fixture(scope="module")
def batch(example_build, tmp_path_factory):
    """(key, submissions folder): seven correct submissions."""
    build_dir, key = example_build(STUDENTS, SECRET)
    folder = tmp_path_factory.mktemp("plugin-submissions")
    synthesize(build_dir, key, folder, profiles=["correct", "partial"])
    return key, folder / "submitted"


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, Limits(wall_seconds=5)) as box:
        yield box


class Spied(GradingRun):
    """A grading run that remembers which submissions it ran in the sandbox."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.executed: list[str] = []

    def execute(self, student):
        self.executed.append(student)
        return super().execute(student)


def grade(batch, sandbox, tmp_path, *args, run_class=Spied):
    key, folder = batch
    submissions, _, _ = match(find_submissions(folder, key["assignment"]["id"]), key, read=False)
    with Gradebook(tmp_path / "gradebook.sqlite") as gradebook:
        run = run_class(key, submissions, gradebook, sandbox, servers=2, regrade=True)
        code = run_pytest(run, key["assignment"]["id"], list(args), session_size=SESSION)
        recorded = sorted(s.student for s in gradebook.submissions(key["assignment"]["id"]))
    return code, run, recorded


def test_sessions_grade_every_submission_once(batch, sandbox, tmp_path):
    code, run, recorded = grade(batch, sandbox, tmp_path)
    students = sorted(batch[0]["students"])
    assert code == 1                                   # the partial ones fail some parts
    assert recorded == students == sorted(run.recorded)
    assert sorted(run.executed) == students            # each ran once
    assert not run.ahead.futures and not run._entries and not run.ahead.results   # nothing held after


def test_k_runs_only_the_chosen_submission_in_the_sandbox(batch, sandbox, tmp_path):
    chosen = sorted(batch[0]["students"])[4]           # in the second session
    code, run, recorded = grade(batch, sandbox, tmp_path, "-k", chosen)
    assert run.executed == [chosen]                    # no deselected student's code ran
    assert recorded == [chosen]


def test_k_matching_nothing_exits_5_and_runs_nothing(batch, sandbox, tmp_path):
    code, run, recorded = grade(batch, sandbox, tmp_path, "-k", "nobody_has_this_name")
    assert (code, run.executed, recorded) == (5, [], [])


def test_x_stops_the_batch_at_the_first_failed_part(batch, sandbox, tmp_path):
    code, run, recorded = grade(batch, sandbox, tmp_path, "-x")
    first_partial = sorted(batch[0]["students"])[1]    # profiles alternate correct, partial
    assert code == 1
    assert recorded == sorted(batch[0]["students"])[:1]      # only the one before it, whole
    assert first_partial not in recorded
    assert all(f.done() for f in run.ahead.futures.values())     # what ran ahead was stopped


def test_junit_xml_in_either_spelling_holds_every_part_of_every_session(batch, sandbox, tmp_path):
    for spelling in ("--junitxml", "--junit-xml"):
        path = tmp_path / f"{spelling.strip('-')}.xml"
        code, run, recorded = grade(batch, sandbox, tmp_path, f"{spelling}={path}")
        cases = list(ET.parse(path).getroot().iter("testcase"))
        assert len(recorded) == STUDENTS
        assert len(cases) == sum(run.item_count(s) for s in recorded)   # one file, every session


def test_pytest_options_from_the_environment_are_ignored(batch, sandbox, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nobody_has_this_name -x")
    code, run, recorded = grade(batch, sandbox, tmp_path)
    assert len(recorded) == STUDENTS and code == 1


class Failing(Spied):
    """A run whose verdicts for one problem cannot be had (a grader bug)."""

    def verdict(self, student, problem, part):
        if problem == "scaling":
            raise RuntimeError("a bug in the grader")
        return super().verdict(student, problem, part)


def test_a_verdict_that_cannot_be_had_fails_its_item_with_the_traceback(batch, sandbox, tmp_path):
    path = tmp_path / "junit.xml"
    code, run, recorded = grade(batch, sandbox, tmp_path, f"--junitxml={path}", run_class=Failing)
    failures = [case for case in ET.parse(path).getroot().iter("testcase")
                if "::scaling::" in f"{case.get('classname')}::{case.get('name')}"
                or case.get("classname", "").endswith("scaling")]
    assert failures and all(case.find("failure") is not None for case in failures)
    assert all("RuntimeError: a bug in the grader" in case.find("failure").text for case in failures)
    assert not any(case.find("error") is not None                     # never a setup error
                   for case in ET.parse(path).getroot().iter("testcase"))
    assert len(recorded) == STUDENTS                   # the gradebook has the real verdicts


def test_a_failure_report_shows_a_student_s_escape_sequences_and_never_runs_them():
    """A part's failure text is what pytest prints with ``attnkit grade -v``; its message can
    hold the student's own exception message."""
    import unicodedata

    from grader.verdicts.parts import Verdict
    from grader.run.plugin import PartItem
    hostile = "\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"
    text = PartItem.failure_text(Verdict(0.0, 2.0, "missing", f"`w` is not defined (the cell raised "
                                                              f"ValueError: {hostile})\nsecond line"))
    assert text == ("0/2 points (missing): `w` is not defined (the cell raised ValueError: "
                    "\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m)\nsecond line")
    assert [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")] == []


def test_reports_are_pytests_own_and_setup_teardown_only_where_someone_listens(
        batch, sandbox, tmp_path, monkeypatch):
    """Each report's keywords are what pytest's runner would give (``dict.fromkeys`` over the
    item's keywords); with no listener but pytest's session an item sends its call report
    alone, and with junitxml listening all three."""
    from grader.run.plugin import PartItem

    made = []
    original = PartItem.reports

    def spied(self, only_call=False):
        assert self.report_keywords() == dict.fromkeys(self.keywords, 1)
        reports = original(self, only_call)
        made.append([r.when for r in reports])
        return reports

    monkeypatch.setattr(PartItem, "reports", spied)
    code, run, recorded = grade(batch, sandbox, tmp_path)
    items = sum(run.item_count(s) for s in recorded)
    assert len(recorded) == STUDENTS and made == [["call"]] * items
    made.clear()
    grade(batch, sandbox, tmp_path, f"--junitxml={tmp_path / 'j.xml'}")
    assert made == [["setup", "call", "teardown"]] * items
