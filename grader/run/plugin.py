"""Grading as a pytest run: one test item per (submission, problem, part) with its points.

``attnkit grade -k …``, ``--junitxml`` or ``-v`` calls ``pytest.main`` with this plugin (a run that
asks for none of pytest's tools records the same verdicts without the items:
``grader.run.plain``) and one argument: a small manifest
file ``<assignment>.attnkit`` in a private scratch folder (never the submissions folder, so
pytest never imports a ``conftest.py`` or ``test_*.py`` a student put beside a notebook).
The plugin collects that file as the assignment; below it, a node per submission, a node
per problem and an item per part (per test family for ``implement``). So the usual pytest
tools work: ``-k "s2026001 and weights"`` selects, ``--junitxml`` writes a report whose
properties carry the points, and a failing item's message is the student's feedback.

Student code runs before the items that judge it: a thread per sandbox server runs the
submissions in the order their items will run, a bounded window ahead (``grader.run.lookahead``), and
each item waits only for its own submission's values. A large batch is graded in several
pytest sessions of ``SESSION_SIZE`` submissions (pytest keeps every item it collects until
its session ends); the sandbox runs on across them. A submission's rows reach the gradebook
in one transaction once all its items have run, so an interrupted run loses at most the
submissions in flight, and the next run picks them up again.
"""

from __future__ import annotations

import time
import traceback
from pathlib import Path

import pytest
from pytest import TestReport

from formats.textfile import terminal_safe

from grader.run import garbage
from grader.run.scratch import scratch
from grader.verdicts.parts import MANUAL, PASSED, Verdict

MANIFEST_SUFFIX = ".attnkit"


def _safe(text: str, newlines: bool = True) -> str:
    """``terminal_safe(text, newlines)``, with its answer for the common case found in C: a
    text whose every character but newlines is printable holds nothing a terminal would act
    on or hide (``str.isprintable`` is False for every category terminal_safe escapes), so it
    comes back as it is. Feedback is rarely plain ASCII (×, ≈, —), and the character-by-character
    pass cost a failed part more than the rest of its report."""
    if (text.replace("\n", "") if newlines else text).isprintable():
        return text
    return terminal_safe(text, newlines=newlines)


class PartFailed(Exception):
    """A part that did not earn its full points; the verdict says why."""

    def __init__(self, verdict: Verdict):
        super().__init__(verdict.message)
        self.verdict = verdict


class GradingPlugin:
    """The pytest plugin object of one session: ``run`` is the grading run it reports to
    (grader.run.grading), ``students`` the submissions this session collects."""

    def __init__(self, run, students: list[str]):
        self.run = run
        self.students = students
        self._pending: dict[str, set[str]] = {}
        self.partly_selected: set[str] = set()
        self.stopped = False

    # --- collection ------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent):
        if file_path.suffix == MANIFEST_SUFFIX:
            return AssignmentFile.from_parent(parent, path=file_path, run=self.run,
                                              students=self.students)
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
        for student in self.students:
            if student not in chosen:       # every part deselected: not run, not recorded
                self.run.discard(student)
        self._pending = chosen
        self.run.start(list(chosen))        # (already queued, unless -k chose among them)

    # --- running ---------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        try:
            return (yield)
        finally:
            self._item_done(item)

    def _item_done(self, item) -> None:
        student = getattr(item, "student", None)
        pending = self._pending.get(student)
        if pending is None:
            return
        pending.discard(item.nodeid)
        if not pending:
            del self._pending[student]
            self.run.finished(student, record=student not in self.partly_selected)

    def pytest_keyboard_interrupt(self, excinfo):
        self.run.interrupted = True

    def pytest_sessionfinish(self, session):
        # -x or --maxfail stopped the session: no later session runs, and the submissions it
        # left half reported are not recorded (the next run grades them).
        self.stopped = bool(session.shouldfail or session.shouldstop)
        for student in list(self._pending):
            self.run.discard(student)
        self._pending.clear()


class PartProtocol:
    """The run protocol of a part's item (a plugin of its own: GradingPlugin wraps the same
    hook to record a submission once its last item has run). One per session."""

    def __init__(self):
        self._quiet: bool | None = None         # _only_the_session_listens, on the first item

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """A part's item has no fixtures, no setup and nothing to capture: it is reported
        straight from its verdict, with the three reports (setup, call, teardown) that
        reporters such as junitxml and the terminal expect, and none of the runner's
        per-phase machinery (fixtures, capture, three calls per item), which would cost more
        than the verdicts it reports. A verdict that cannot be had is a failed item with the
        grader's traceback."""
        if not isinstance(item, PartItem):
            return None
        ihook = item.ihook
        if self._quiet is None:
            self._quiet = _only_the_session_listens(ihook)
        if self._quiet:
            ihook.pytest_runtest_logreport(report=item.reports(only_call=True)[0])
            return True
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in item.reports():
            ihook.pytest_runtest_logreport(report=report)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


def _only_the_session_listens(ihook) -> bool:
    """Is pytest's own session the only listener for reports (no terminal, no junitxml, no
    plugin given with ``-p``)? It counts failed reports (for ``-x`` and ``--maxfail``) and
    nothing else, so it is given each item's call report alone: the setup and teardown
    reports, always passed, and the start and finish calls no one implements, are skipped."""
    return (not ihook.pytest_runtest_logstart.get_hookimpls()
            and not ihook.pytest_runtest_logfinish.get_hookimpls()
            and all(impl.plugin_name == "session" for impl in ihook.pytest_runtest_logreport.get_hookimpls()))


class AssignmentFile(pytest.File):
    """The manifest: its children are the submissions the session grades."""

    def __init__(self, *, run, students, **kwargs):
        super().__init__(**kwargs)
        self.run = run
        self.students = students

    def collect(self):
        for student in self.students:
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
        self._location = None

    def judge(self) -> Verdict:
        """This part's verdict (waiting for its submission's run), kept with its points as
        the item's user properties (junitxml writes them)."""
        self.verdict = self.run.verdict(self.student, self.problem, self.name)
        self.user_properties += [("points", self.verdict.score), ("max_points", self.verdict.max_score),
                                 ("status", self.verdict.status)]
        if self.verdict.misconception:
            self.user_properties.append(("misconception", self.verdict.misconception))
        return self.verdict

    def runtest(self):              # what pytest's own runner would do; PartProtocol reports instead
        verdict = self.verdict or self.judge()
        if verdict.status == MANUAL:
            pytest.skip("graded by hand")
        if verdict.status != PASSED:
            raise PartFailed(verdict)

    def reports(self, only_call: bool = False) -> list[TestReport]:
        """The setup, call and teardown reports of this part, made from its verdict (or the
        call report alone)."""
        started = time.time()
        try:
            verdict = self.judge()
        except Exception as error:  # noqa: BLE001 — the grader's own failure, shown as one
            verdict, trace = None, "".join(traceback.format_exception(error))
        if verdict is None:
            outcome, longrepr = "failed", _safe(f"internal grader error:\n{trace}")
        elif verdict.status == PASSED:
            outcome, longrepr = "passed", None
        elif verdict.status == MANUAL:
            outcome, longrepr = "skipped", (str(self.path), 0, "Skipped: graded by hand")
        else:
            outcome, longrepr = "failed", self.failure_text(verdict)
        keywords = self.report_keywords()
        stopped = time.time()

        def report(when, outcome="passed", longrepr=None):
            return TestReport(self.nodeid, self.location, keywords, outcome, longrepr, when,
                              duration=stopped - started if when == "call" else 0.0,
                              start=started, stop=stopped, user_properties=self.user_properties)
        if only_call:
            return [report("call", outcome, longrepr)]
        return [report("setup"), report("call", outcome, longrepr), report("teardown")]

    def report_keywords(self) -> dict[str, int]:
        """``dict.fromkeys(self.keywords, 1)``, what pytest's runner puts in a report: the
        item's own name, then its parents' keywords, which every part of a problem shares and
        are listed once per problem (walking the chain of parents again for every item would
        repeat the same work for each part). An item given markers of its own takes the long way."""
        own = getattr(self.keywords, "_markers", None)       # (pytest's NodeKeywords)
        if self.own_markers or own is None or list(own) != [self.name]:
            return dict.fromkeys(self.keywords, 1)
        shared = self.parent.__dict__.get("_attnkit_keywords")
        if shared is None:
            shared = self.parent._attnkit_keywords = dict.fromkeys(self.parent.keywords, 1)
        return {self.name: 1, **{k: 1 for k in shared if k != self.name}}

    @staticmethod
    def failure_text(verdict: Verdict) -> str:
        """What pytest prints (``-v``) and junitxml keeps for a failed part. The message can
        hold a student's exception message, escape sequences and all: shown, never run."""
        return _safe(f"{verdict.score:g}/{verdict.max_score:g} points ({verdict.status}): "
                     f"{verdict.message}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, PartFailed):
            return self.failure_text(excinfo.value.verdict)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self._domain()

    @property
    def location(self) -> tuple[str, int | None, str]:
        # What pytest derives from reportinfo, without resolving the same path for every part
        # (made once: pytest asks for it several times per item).
        if self._location is None:       # the manifest, relative to the rootdir
            self._location = (self.parent.parent.parent.nodeid, None, self._domain())
        return self._location

    def _domain(self) -> str:
        # The headline of a failure in pytest's report; a class key's student is a folder name.
        return _safe(f"{self.student}::{self.problem}::{self.name} ({self.points:g} points)",
                     newlines=False)


SESSION_SIZE = 100      # submissions per pytest session (see run_pytest)


def run_pytest(run, assignment_id: str, extra_args=(), verbose: bool = False,
               session_size: int = SESSION_SIZE) -> int:
    """Grade ``run``'s submissions with pytest; pytest's exit code (1 when any part failed).

    pytest gets a scratch folder holding only the manifest, an empty ini file of our own and
    no conftest: nothing from the submissions folder is ever imported into this process.

    pytest holds every item it collects until its session ends (a few kilobytes each, and a
    submission has dozens), so a large batch is graded in sessions of ``session_size``
    submissions, one after another, while the sandbox runs on without waiting between them:
    memory stays flat whatever the batch. With ``-v`` or ``--junitxml`` there is one session,
    so the terminal report and the XML file are one each (junitxml keeps every report in
    memory until it writes the file anyway)."""
    import os

    students = run.students_to_grade()
    whole = verbose or any(str(a).startswith(("--junitxml", "--junit-xml")) for a in extra_args)
    # With a selection, a submission runs once its session has chosen it; else all are queued
    # now, and the sandbox never waits for pytest between sessions.
    selective = any(str(a).startswith(("-k", "-m", "--deselect")) for a in extra_args)
    size = max(1, len(students) if whole else session_size)
    sessions = [students[i:i + size] for i in range(0, len(students), size)] or [[]]
    with scratch("grade") as folder:
        root = Path(folder)
        (root / "pytest.ini").write_text("[pytest]\n")
        manifest = root / f"{assignment_id}{MANIFEST_SUFFIX}"
        manifest.write_text(f"attnkit grading run for {assignment_id}\n")
        args = [str(manifest), "-c", str(root / "pytest.ini"), "--rootdir", str(root),
                "--noconftest", "--assert=plain", "-p", "no:cacheprovider", "-p", "no:stepwise", "-p", "no:logging",
                "-p", "no:unraisableexception", "-p", "no:threadexception", "--capture=no",
                *(["-rN", "-q", "--tb=line", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
                  if verbose else ["-p", "no:terminal", "-p", "no:warnings"]),
                *extra_args]
        # No third-party plugins in the grader, and no options from the environment.
        saved = {name: os.environ.pop(name, None) for name in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD",
                                                               "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        try:
            with garbage.paced(by_submission=False):    # (by sessions: grader.run.garbage)
                if not selective:
                    run.start(students)
                return _sessions(run, sessions, args)
        finally:
            run.stop()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _sessions(run, sessions: list[list[str]], args: list[str]) -> int | None:
    """pytest's sessions, one after another; their combined exit code."""
    code = None
    for chosen in sessions:
        plugin = GradingPlugin(run, chosen)
        last = int(pytest.main(args, plugins=[plugin, PartProtocol()]))
        garbage.session_done()
        code = _combined(code, last)
        if last in (2, 3, 4) or run.interrupted or plugin.stopped:
            break                    # interrupted, an internal or usage error, -x or --maxfail
    return code


def _combined(code: int | None, last: int) -> int:
    """The exit code of the sessions so far: a stop (2, 3, 4) wins, then failures (1), then
    success (0); "no tests collected" (5) only if no session collected any."""
    if code is None or last in (2, 3, 4):
        return last
    if 1 in (code, last):
        return 1
    return 0 if 0 in (code, last) else 5
