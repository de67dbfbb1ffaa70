"""A run without pytest's items (grader/run/plain.py): the same gradebook rows and exit code as
the same run as pytest items, nothing to grade exits 5 either way, and Ctrl-C keeps what was
recorded. Real sandbox, real gradebook, synthetic submissions of the example assignment
(correct, partial, wrongly typed and every diagnosable misconception)."""

import pytest

from formats.key_shape import assignment_id
from grader.run.pipeline import grade_folder
from grader.sandbox.client import Limits, Sandbox
from grader.store.gradebook import Gradebook
from synthetic import profile_names, synthesize

SECRET = "plain run test secret: long enough, and only here"


@pytest.fixture(scope="module")
def batch(example_build, tmp_path_factory):
    """(key, submissions folder): a mixed class, every kind of verdict among them."""
    build_dir, key = example_build(8, SECRET)
    folder = tmp_path_factory.mktemp("plain-submissions")
    profiles = [p for p in profile_names(key) if p in ("correct", "partial", "typed_wrong")
                or p.startswith("misconception:")]
    synthesize(build_dir, key, folder, profiles=profiles)
    return key, folder


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, Limits(wall_seconds=5)) as box:
        yield box


def test_a_plain_run_records_what_pytest_items_record(batch, sandbox, tmp_path, monkeypatch, gradebook_rows):
    key, folder = batch
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    got = {}
    for name, args in (("plain", ()), ("items", ("--junitxml", str(tmp_path / "report.xml")))):
        with Gradebook(tmp_path / f"{name}.sqlite") as gradebook:
            summary = grade_folder(key, folder, gradebook, sandbox, servers=2, kit_version="",
                                   pytest_args=args)
            again = grade_folder(key, folder, gradebook, sandbox, servers=2, kit_version="",
                                 pytest_args=args)
            statuses = {r.status for r in gradebook.results(assignment_id(key))}
            misconceptions = {r.misconception for r in gradebook.results(assignment_id(key))} - {None}
        got[name] = (summary.code, sorted(summary.recorded), again.code, again.recorded,
                     gradebook_rows(tmp_path / f"{name}.sqlite"))
    plain, items = got["plain"], got["items"]
    assert (tmp_path / "report.xml").exists()           # (the second run went through pytest)
    assert plain[0] == items[0] == 1                     # parts failed in both
    assert plain[1] == items[1] and len(plain[1]) > 1
    assert plain[2] == items[2] == 5 and plain[3] == items[3] == []    # nothing left to grade
    assert plain[4] == items[4] and len(plain[4]["results"]) > 40
    assert {"passed", "failed", "manual"} <= statuses and misconceptions


class Interrupting:
    """A progress bar that is Ctrl-C'd as the second submission is recorded."""

    def __init__(self, total: int):
        self.done = 0

    def advance(self, n: int) -> None:
        self.done += n
        if self.done == 2:
            raise KeyboardInterrupt

    def close(self) -> None:
        pass


def test_ctrl_c_keeps_what_was_recorded(batch, sandbox, tmp_path, monkeypatch):
    key, folder = batch
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    with Gradebook(tmp_path / "g.sqlite") as gradebook:
        summary = grade_folder(key, folder, gradebook, sandbox, servers=2, kit_version="",
                               progress=Interrupting)
        recorded = [s.student for s in gradebook.submissions(assignment_id(key))]
    assert summary.interrupted and summary.code == 2
    assert recorded == summary.recorded and len(recorded) == 1
