"""Judge processes (grader/run/judges.py): the trusted work forked out, one judge per server.

Each run here is a fresh interpreter (``attnkit grade``, or a short script): a judge is
forked only where no other thread runs, and this test process has threads of earlier tests
(Dask's, for one)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader.sandbox import processes, protocol
from grader.sandbox.client import Sandbox

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="judges are forked on Linux only")


def _script(body: str, env: dict, *args: str, timeout: float = 300) -> dict:
    """Run ``body`` with ``args`` in a fresh interpreter at the project's root; the JSON it
    prints last."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(body), *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


GRADE = """
    import json, os, signal, sys
    from pathlib import Path
    from formats.answer_key import load_key
    from grader.store.gradebook import Gradebook
    from grader.run.grading import GradingRun
    from grader.run.pipeline import grade_folder
    from grader.sandbox.client import Limits, Sandbox

    build, gradebook_path, judges, doomed = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", sys.argv[4]
    key = load_key(build / "instructor" / "answer_key.json", os.environ["ATTNKIT_SECRET"].encode())
    grading = os.getpid()
    execute = GradingRun.execute

    def dying(run, student):          # the judge that takes the doomed submission dies with it
        if student == doomed and os.getpid() != grading:
            os.kill(os.getpid(), signal.SIGKILL)
        graded = execute(run, student)
        if "unpicklable:" + student == doomed:
            graded.answers["x"] = lambda: None      # (a judge's bug: its GradedSubmission cannot be sent)
        return graded

    GradingRun.execute = dying
    if doomed == "no-fork":            # the system refuses to fork (EAGAIN: too many processes)
        def refused():
            raise BlockingIOError(11, "Resource temporarily unavailable")
        os.fork = refused
    with Gradebook(gradebook_path) as gradebook, Sandbox(2, Limits(wall_seconds=5.0), lazy=True) as sandbox:
        summary = grade_folder(key, build / "submissions" / "submitted", gradebook, sandbox, servers=2,
                               judges=judges, review=False)
    print(json.dumps({"recorded": len(summary.recorded), "judges": summary.run.judges_used,
                      "failed": summary.failed}))
"""


def _grade(build: Path, gradebook: Path, secret: str, judges: bool, doomed: str = "") -> dict:
    env = {**os.environ, "ATTNKIT_SECRET": secret, "PYTHONPATH": str(ROOT)}
    return _script(GRADE, env, str(build), str(gradebook), "1" if judges else "0", doomed)


def test_judges_write_row_for_row_what_the_sandbox_threads_write(graded_class, tmp_path, gradebook_rows):
    build, key, _, secret = graded_class(12)
    forked = _grade(build, tmp_path / "judges.sqlite", secret, judges=True)
    threads = _grade(build, tmp_path / "threads.sqlite", secret, judges=False)
    assert forked == {"recorded": 12, "judges": 2, "failed": []}
    assert threads == {"recorded": 12, "judges": 0, "failed": []}
    assert gradebook_rows(tmp_path / "judges.sqlite") == gradebook_rows(tmp_path / "threads.sqlite")


def test_a_judge_that_dies_costs_its_submission_only_and_the_next_run_grades_it(graded_class, tmp_path, gradebook_rows):
    build, key, _, secret = graded_class(12)
    doomed = sorted(key["students"])[3]
    path = tmp_path / "g.sqlite"
    first = _grade(build, path, secret, judges=True, doomed=doomed)
    assert first["recorded"] == 12 and first["failed"] == []
    threads = tmp_path / "threads.sqlite"
    _grade(build, threads, secret, judges=False)
    rows, expected = gradebook_rows(path), gradebook_rows(threads)
    for table in ("submissions", "results"):
        assert [r for r in rows[table] if doomed not in r] == [r for r in expected[table] if doomed not in r]
    with sqlite3.connect(path) as db:
        status, notes = db.execute("SELECT status, notes FROM submissions WHERE student = ?", (doomed,)).fetchone()
    assert status == "error" and "the judge process is gone" in notes
    # the next run grades it again (a grader error is never final), with nobody dying now
    again = _grade(build, path, secret, judges=True)
    assert again["recorded"] == 1
    assert gradebook_rows(path) == expected


def test_verdicts_a_judge_cannot_send_cost_that_submission_only_and_the_judge_goes_on(graded_class, tmp_path):
    build, key, _, secret = graded_class(12)
    student = sorted(key["students"])[5]
    path = tmp_path / "g.sqlite"
    result = _grade(build, path, secret, judges=True, doomed="unpicklable:" + student)
    assert result == {"recorded": 12, "judges": 2, "failed": []}
    with sqlite3.connect(path) as db:
        rows = dict(db.execute("SELECT student, notes FROM submissions WHERE status = 'error'").fetchall())
    assert list(rows) == [student] and "its verdicts could not be sent back" in rows[student]
    assert "the judge process is gone" not in rows[student]


def test_a_refused_fork_leaves_the_run_to_its_sandbox_threads(graded_class, tmp_path, gradebook_rows):
    build, key, _, secret = graded_class(12)
    refused = _grade(build, tmp_path / "g.sqlite", secret, judges=True, doomed="no-fork")
    assert refused == {"recorded": 12, "judges": 0, "failed": []}
    _grade(build, tmp_path / "threads.sqlite", secret, judges=False)
    assert gradebook_rows(tmp_path / "g.sqlite") == gradebook_rows(tmp_path / "threads.sqlite")


def test_the_command_grades_with_one_judge_per_server(graded_class, tmp_path, gradebook_rows):
    build, key, local, secret = graded_class(12)
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    out = subprocess.run([sys.executable, "-m", "attnkit", "grade", str(EXAMPLE), str(build / "submissions" / "submitted"),
                          "--build", str(build), "--gradebook", str(tmp_path / "g.sqlite"), "--jobs", "2",
                          "--timeout", "5", "--json"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["graded"] == 12 and summary["judges"] == 2
    spent = summary["judges_cpu_seconds"]     # each judge said what it and its sandbox spent
    assert spent["judge"] > 0 and spent["sandbox"] > 0 and summary["judges_peak_rss_mb"] > 20
    assert gradebook_rows(tmp_path / "g.sqlite") == gradebook_rows(local)


HELD = """
    import json, os, sys, time
    from pathlib import Path
    from formats.answer_key import load_key
    from grader.run.grading import GradingRun
    from grader.intake.layouts import find_submissions
    from grader.intake.pairing import match
    from grader.sandbox.client import Limits, Sandbox

    build = Path(sys.argv[1])
    key = load_key(build / "instructor" / "answer_key.json", os.environ["ATTNKIT_SECRET"].encode())
    found, _, _ = match(find_submissions(build / "submissions" / "submitted", key["assignment"]["id"]), key, read=False)
    run = GradingRun(key, found, None, Sandbox(2, Limits(wall_seconds=5.0), lazy=True), servers=2, judges=True)
    run.start([found[0].student, found[1].student])
    run.wait(found[0].student), run.wait(found[1].student)   # each judge has graded one: its server is up
    print(json.dumps([judge.pid for judge in run.judges._all]), flush=True)
    time.sleep(600)
"""


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_judges_and_their_servers_die_with_the_grading_process(graded_class, tmp_path):
    build, key, _, secret = graded_class(12)
    env = {**os.environ, "ATTNKIT_SECRET": secret, "PYTHONPATH": str(ROOT)}
    held = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HELD), str(build)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        judges = json.loads(held.stdout.readline())
        assert len(judges) == 2 and set(judges) <= set(_children(held.pid))
        servers = [s for judge in judges for s in _children(judge)]
        assert len(servers) == 2
    finally:
        held.send_signal(signal.SIGKILL)   # as the OOM killer would: no clean-up runs
        held.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() and _state(p) != "Z"
                                              for p in judges + servers):
        time.sleep(0.1)
    assert [p for p in judges + servers if Path(f"/proc/{p}").exists() and _state(p) != "Z"] == []


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_servers_of_a_grading_process_and_of_its_judges_never_share_a_slot():
    try:
        processes.share_slots(2, 3)          # as judge 2 of 2 does
        with Sandbox(1) as sandbox:
            slot = sandbox._servers[0].os_process.slot
        assert 666 <= slot < 999
    finally:
        processes.share_slots(0, 1)


def test_a_lazy_sandbox_starts_a_server_only_when_a_run_needs_one():
    with Sandbox(2, lazy=True) as sandbox:
        assert sandbox._servers == []
        result = sandbox.run([{"op": protocol.EXEC, "label": "cell", "source": "x = 1"}])
        assert len(sandbox._servers) == 1 and not result.stopped and result.crashes == []


PINNED = """
    import json, os
    from grader.run.judges import Judges
    from grader.sandbox.client import Sandbox

    class Run:                          # what a judge asks of its run: here, where it runs
        sandbox = progress = None

        def execute(self, student):
            self.sandbox.run([])        # (its server starts on the first job)
            server = self.sandbox._servers[0].process.pid
            return {"judge": sorted(os.sched_getaffinity(0)), "server": sorted(os.sched_getaffinity(server))}

        def discard(self, student):
            pass

    judges = Judges(Run(), 2, lambda: Sandbox(1, lazy=True))
    try:
        seen = [judge.execute("s") for judge in judges._all]
    finally:
        judges.close()
    print(json.dumps({"grading": sorted(os.sched_getaffinity(0)), "judges": seen}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_each_judge_and_its_server_keep_to_one_cpu_of_the_grading_process(tmp_path):
    """A judge and its sandbox child take turns dozens of times per submission: on one CPU
    each turn is a cheap switch, across two an interprocessor interrupt."""
    cpus = sorted(os.sched_getaffinity(0))
    found = _script(PINNED, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert found["grading"] == cpus                      # the grading process itself is not pinned
    assert [j["judge"] for j in found["judges"]] == [[cpus[0]], [cpus[1 % len(cpus)]]]
    assert all(j["server"] == j["judge"] for j in found["judges"])
