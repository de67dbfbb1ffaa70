"""Shared by every test: the hypothesis profile, the example assignment built for real, and a
headless Chromium for the pages' browser tests."""

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.answer_key import load_key

# In CI the property tests explore the same examples every run, so a red build is always
# reproducible; on a developer's machine they keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SAMPLE_ROSTER = ROOT / "problem_bank" / "assignments" / "sample_roster.csv"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser():
    """Debian's headless ``chromium``, driven by Playwright's Python API (nothing downloads a
    browser). Per module: a test elsewhere (tests/attnkit) starts Playwright of its own, and
    two sync Playwrights cannot run in one thread at once."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright is not installed (pip install -e '.[dev]')")
    if not os.path.exists(CHROMIUM):
        pytest.skip("no chromium browser on this machine (Debian: apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="session")
def example_build(tmp_path_factory):
    """``example_build(students, secret)`` → (build folder, verified key): the example
    assignment for the first ``students`` of the sample roster, built once per session."""
    built = {}

    def make(students: int, secret: str):
        if (students, secret) not in built:
            out = tmp_path_factory.mktemp("example-build")
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("ATTNKIT_SECRET", secret)
                result = build(load_assignment(EXAMPLE), list(load_roster(SAMPLE_ROSTER))[:students], out)
            assert result.ok, result.failures
            built[(students, secret)] = out, load_key(result.key_path, secret.encode())
        return built[(students, secret)]
    return make


@pytest.fixture(scope="session")
def graded_class(example_build, tmp_path_factory):
    """``graded_class(students)`` → (build folder, key, gradebook path, secret): the example
    assignment built for the first ``students`` of the sample roster, synthetic submissions
    (correct, partial, misconceptions, hostile) handed in and graded for real, once per
    session; the submissions are in ``build folder / "submissions" / "submitted"``, as
    ``make demo`` lays them out. Copy the gradebook before writing to it (``shutil.copy``):
    it is shared."""
    import subprocess
    import sys

    secret = "graded class secret, tests only"
    built = {}

    def make(students: int = 12):
        if students not in built:
            out, key = example_build(students, secret)
            env = {**os.environ, "ATTNKIT_SECRET": secret}
            subs = out / "submissions"
            subprocess.run([sys.executable, "-m", "synthetic", str(out), "--key",
                            str(out / "instructor" / "answer_key.json"), "--secret-env", "ATTNKIT_SECRET",
                            "--out", str(subs)], check=True, env=env, cwd=ROOT, capture_output=True)
            subprocess.run([sys.executable, "-m", "attnkit", "grade", str(EXAMPLE), str(subs / "submitted"),
                            "--build", str(out), "--timeout", "5"], check=True, env=env, cwd=ROOT,
                           capture_output=True)
            built[students] = out, key, out / "instructor" / "gradebook.sqlite", secret
        return built[students]
    return make


@pytest.fixture(scope="session")
def gradebook_rows():
    """``gradebook_rows(path)`` → each table's rows (submissions, results) without the timing
    columns, sorted: what "the same gradebook" means when two grading runs are compared."""
    import sqlite3
    timing = {"duration_ms", "first_seen", "graded_at"}

    def rows(path) -> dict:
        with sqlite3.connect(path) as db:
            out = {}
            for table in ("submissions", "results"):
                columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})") if c[1] not in timing]
                out[table] = sorted(db.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(), key=repr)
        return out
    return rows
