"""Grading as a pytest run: one test item per (submission, problem, part) with its points.

``attnkit grade`` calls ``pytest.main`` with this plugin and one argument: a small manifest
file ``<assignment>.attnkit`` in a private scratch folder (never the submissions folder, so
pytest never imports a ``conftest.py`` or ``test_*.py`` a student put beside a notebook).
The plugin collects that file as the assignment; below it, a node per submission, a node
per problem and an item per part (per test family for ``implement``). So the usual pytest
tools work: ``-k "s2026001 and weights"`` selects, ``--junitxml`` writes a report whose
properties carry the points, and a failing item's message is the student's feedback.

Student code runs before the items that judge it: once collection (and ``-k``) has chosen
the submissions, a thread per sandbox worker runs them in collection order, and each item
waits only for its own submission's values. A submission's rows reach the gradebook in one
transaction once all its items have run, so an interrupted run loses at most the
submissions in flight, and the next run picks them up again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .checking import MANUAL, PASSED, Verdict

MANIFEST_SUFFIX = ".attnkit"


class PartFailed(Exception):
    """A part that did not earn its full points; the verdict says why."""

    def __init__(self, verdict: Verdict):
        super().__init__(verdict.message)
        self.verdict = verdict


class GradingPlugin:
    """The pytest plugin object; ``run`` is the grading run it reports to (grader.grading)."""

    def __init__(self, run):
        self.run = run
        self._pending: dict[str, set[str]] = {}
        self.partly_selected: set[str] = set()

    # --- collection ------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent):
        if file_path.suffix == MANIFEST_SUFFIX:
            return AssignmentFile.from_parent(parent, path=file_path, run=self.run)
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        # -k has deselected what it wanted by now (trylast): see which submissions are whole.
        chosen: dict[str, set[str]] = {}
        for item in items:
            chosen.setdefault(item.student, set()).add(item.nodeid)
        for student, ids in chosen.items():
            if len(ids) != self.run.item_count(student):
                self.partly_selected.add(student)
        self._pending = chosen

    def pytest_collection_finish(self, session):
        # Start the sandbox on every chosen submission, in order, as many at once as workers.
        self.run.start(list(self._pending))

    # --- running ---------------------------------------------------------------------

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        yield
        student = getattr(item, "student", None)
        pending = self._pending.get(student)
        if pending is None:
            return
        pending.discard(item.nodeid)
        if not pending:
            del self._pending[student]
            self.run.finished(student, record=student not in self.partly_selected)

    def pytest_sessionfinish(self, session):
        self.run.stop()

    def pytest_keyboard_interrupt(self, excinfo):
        self.run.interrupted = True


class AssignmentFile(pytest.File):
    """The manifest: its children are the submissions the run grades."""

    def __init__(self, *, run, **kwargs):
        super().__init__(**kwargs)
        self.run = run

    def collect(self):
        for student in self.run.students_to_grade():
            yield SubmissionNode.from_parent(self, name=student, run=self.run)


class SubmissionNode(pytest.Collector):
    def __init__(self, *, run, **kwargs):
        super().__init__(**kwargs)
        self.run = run

    def collect(self):
        for problem, parts in self.run.parts_of(self.name):
            yield ProblemNode.from_parent(self, name=problem, run=self.run, parts=parts)


class ProblemNode(pytest.Collector):
    def __init__(self, *, run, parts, **kwargs):
        super().__init__(**kwargs)
        self.run = run
        self.parts = parts

    def collect(self):
        for part, points in self.parts:
            yield PartItem.from_parent(self, name=part, run=self.run, points=points)


class PartItem(pytest.Item):
    """One part of one problem of one student's submission."""

    def __init__(self, *, run, points: float, **kwargs):
        super().__init__(**kwargs)
        self.run = run
        self.points = points
        self.student = self.parent.parent.name
        self.problem = self.parent.name
        self.verdict: Verdict | None = None

    def runtest(self):
        self.run.wait(self.student)
        self.verdict = self.run.verdict(self.student, self.problem, self.name)
        self.user_properties += [("points", self.verdict.score), ("max_points", self.verdict.max_score),
                                 ("status", self.verdict.status)]
        if self.verdict.misconception:
            self.user_properties.append(("misconception", self.verdict.misconception))
        if self.verdict.status == MANUAL:
            pytest.skip("graded by hand")
        if self.verdict.status != PASSED:
            raise PartFailed(self.verdict)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, PartFailed):
            v = excinfo.value.verdict
            return f"{v.score:g}/{v.max_score:g} points ({v.status}): {v.message}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.student}::{self.problem}::{self.name} ({self.points:g} points)"


def run_pytest(run, assignment_id: str, extra_args=(), verbose: bool = False) -> int:
    """Grade ``run``'s submissions with pytest; pytest's exit code (1 when any part failed).

    pytest gets a scratch folder holding only the manifest, an empty ini file of our own and
    no conftest: nothing from the submissions folder is ever imported into this process."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="attnkit-grade-") as scratch:
        root = Path(scratch)
        (root / "pytest.ini").write_text("[pytest]\n")
        manifest = root / f"{assignment_id}{MANIFEST_SUFFIX}"
        manifest.write_text(f"attnkit grading run for {assignment_id}\n")
        args = [str(manifest), "-c", str(root / "pytest.ini"), "--rootdir", str(root),
                "--noconftest", "-p", "no:cacheprovider", "-p", "no:stepwise", "-p", "no:logging",
                "--capture=no", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                *(["-rN", "-q", "--tb=line"] if verbose else ["-p", "no:terminal"]),
                *extra_args]
        saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # no third-party plugins in the grader
        try:
            return int(pytest.main(args, plugins=[GradingPlugin(run)]))
        finally:
            if saved is None:
                os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
            else:
                os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved
