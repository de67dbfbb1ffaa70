"""Resuming and determinism at class scale: the example assignment built for 200 students,
200 synthetic submissions, and ``python -m attnkit grade`` SIGKILLed (the whole process group)
at a dozen and more random points, each kill followed by a rerun that is killed again, then
one uninterrupted rerun. The gradebook that comes out must equal, row for row, the one an
uninterrupted run writes; regrading gives the same rows again; and a rebuild of the assignment
and a second synthesis of the submissions give the same bytes.

The kill points are counts of recorded submissions (plus a few random delays), not fixed
times, so they stay inside the batch however fast grading becomes."""

import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from synthetic import MISCONCEPTION_PREFIX, load_manifest, profile_names, synthesize

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
ASSIGNMENT = "attention-hw1"
SECRET = "resume-and-determinism test secret, never a real one"
N = 200
STUDENTS = [f"rd-{n:03d}" for n in range(N)]
SEED = 20240611                       # the kill plan and the profile order; change it to explore
ROW_KILLS = 12                        # kills once the gradebook holds a random number of rows
DELAY_KILLS = 3                       # kills after a random delay from the start of a run
JOBS = "2"
TIMEOUT = "10"                        # no profile here loops: only a loaded machine comes near it
RUN_DEADLINE = 300                    # seconds: any single run taking this long is a failure

# The columns that hold timings, excluded from every comparison of two gradebooks (see
# grader/store/gradebook.py's schema): ``duration_ms`` of a submission is the wall-clock time its
# grading took and ``duration_ms`` of a result that time shared over its parts (from
# time.perf_counter in grader/run/grading.py), and ``graded_at`` and ``first_seen`` are the UTC
# times of writes. They measure the run, not the submission: two correct runs can never agree
# on them. Every other
# column (scores, statuses, messages, misconceptions, answers, notes, hashes, kit version,
# position, path, and the meta table) is a function of the notebook's bytes, the key and the
# grader's code, and is compared. A column added later is compared too unless listed here.
TIMING_COLUMNS = {"submissions": ("duration_ms", "graded_at", "first_seen"), "results": ("duration_ms",)}
PRIMARY_KEYS = {"submissions": ("assignment", "student", "handin"),
                "results": ("assignment", "student", "handin", "problem", "part")}

# Hostile profiles that are cheap to grade and whose rows are deterministic, once each. Left
# out: infinite_loop and memory_bomb (slow), fork_bomb (slow), read_key (its answer is text read
# from /proc/<pid>/, different in every run by nature).
HOSTILE_ONCE = ("allclose_patch", "exit_midway", "fake_frames", "edited_givens", "wrong_student",
                "broken_json", "stripped_metadata")


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)


@dataclass
class Course:
    folder: Path
    roster: Path
    build: Path
    key: dict
    profiles: list
    subs: Path
    parts: dict                       # student → how many result rows a graded submission has


def _profiles(key: dict) -> list[str]:
    """200 profiles in a seeded order: every hostile one of HOSTILE_ONCE once, and the rest
    cycling over correct, partial, typed_wrong and every misconception twin."""
    repeatable = [p for p in profile_names(key)
                  if p in ("correct", "partial", "typed_wrong") or p.startswith(MISCONCEPTION_PREFIX)]
    assert len(repeatable) > 5, repeatable
    chosen = [*HOSTILE_ONCE, *(repeatable[i % len(repeatable)] for i in range(N - len(HOSTILE_ONCE)))]
    random.Random(SEED).shuffle(chosen)
    return chosen


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    folder = tmp_path_factory.mktemp("resume")
    roster = folder / "roster.csv"
    roster.write_text("student_id,name,email\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu\n" for sid in STUDENTS), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build", jobs=2)
    assert result.ok, result.failures
    key = load_key(result.key_path, SECRET.encode())
    assert sorted(key["students"]) == STUDENTS
    profiles = _profiles(key)
    synthesize(folder / "build", key, folder / "subs", profiles=profiles)
    parts = {sid: sum(len(r["grading"]) for r in entry["problems"].values())
             for sid, entry in key["students"].items()}
    return Course(folder, roster, folder / "build", key, profiles, folder / "subs", parts)


# --- running attnkit grade in a process of its own ---------------------------------------

def grade_argv(course: Course, gradebook: Path, *extra) -> list[str]:
    return [sys.executable, "-m", "attnkit", "grade", str(EXAMPLE), str(course.subs),
            "--build", str(course.build), "--gradebook", str(gradebook),
            "--jobs", JOBS, "--timeout", TIMEOUT, "--json", *map(str, extra)]


def start(argv: list[str], log: Path) -> subprocess.Popen:
    """The grader in a session (so a process group) of its own; output to files, never to
    pipes nobody reads."""
    with open(log.with_suffix(".out"), "wb") as out, open(log.with_suffix(".err"), "wb") as err:
        return subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "ATTNKIT_SECRET": SECRET},
                                stdout=out, stderr=err, start_new_session=True)


def output(log: Path) -> tuple[str, str]:
    return (log.with_suffix(".out").read_text(encoding="utf-8", errors="replace"),
            log.with_suffix(".err").read_text(encoding="utf-8", errors="replace"))


def grade(argv: list[str], log: Path) -> dict:
    """Run to the end; its --json summary."""
    process = start(argv, log)
    try:
        code = process.wait(timeout=RUN_DEADLINE)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    out, err = output(log)
    assert code == 0, f"exit code {code}\n{err}"
    return json.loads(out)


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


# --- reading a gradebook, never writing it -----------------------------------------------

def connect_ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)


def recorded(path: Path) -> int:
    """Submission rows in the gradebook (0 while it or its tables do not exist yet), read
    while the grader may be writing."""
    try:
        con = connect_ro(path)
        try:
            return con.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def contents(path: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """table → (compared columns, every row of them, sorted): all tables, all columns but
    the timing ones."""
    con = connect_ro(path)
    try:
        tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        data = {}
        for table in tables:
            columns = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            timing = TIMING_COLUMNS.get(table, ())
            # a renamed timing column must not make the exclusion silently wrong
            assert set(timing) <= set(columns), (table, columns)
            kept = [c for c in columns if c not in timing]
            rows = con.execute(f"SELECT {', '.join(kept)} FROM {table}").fetchall()
            data[table] = (kept, sorted(rows, key=repr))
        return data
    finally:
        con.close()


def differences(a: dict, b: dict, limit: int = 3) -> dict:
    """Rows only in a and rows only in b, per table (a few of each): empty when equal."""
    diff = {}
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            diff[table] = "only in one gradebook"
            continue
        if a[table][0] != b[table][0]:
            diff[table] = {"columns": (a[table][0], b[table][0])}
            continue
        ca, cb = Counter(a[table][1]), Counter(b[table][1])
        only_a, only_b = list((ca - cb).elements()), list((cb - ca).elements())
        if only_a or only_b:
            diff[table] = {"columns": a[table][0], "count": (len(only_a), len(only_b)),
                           "only_in_first": only_a[:limit], "only_in_second": only_b[:limit]}
    return diff


def timings(path: Path) -> list[tuple]:
    con = connect_ro(path)
    try:
        return (con.execute("SELECT student, duration_ms, graded_at FROM submissions ORDER BY student").fetchall()
                + con.execute("SELECT student, problem, part, duration_ms FROM results "
                              "ORDER BY student, problem, part").fetchall())
    finally:
        con.close()


def check_whole(path: Path, course: Course, complete: bool) -> int:
    """Integrity, no duplicated key, and no submission half-recorded: every submission row
    with exactly its parts' result rows, no result without its submission. ``complete``: all
    200 there. Returns the number of submission rows."""
    con = connect_ro(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not complete and not tables:
            return 0        # killed before its one transaction that creates the tables: empty
        for table, key in PRIMARY_KEYS.items():
            total = con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            distinct = con.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT {', '.join(key)} FROM {table})").fetchone()[0]
            assert total == distinct, f"{table}: {total} rows, {distinct} distinct keys"
        subs = dict(con.execute("SELECT student, status FROM submissions WHERE assignment = ?", (ASSIGNMENT,)))
        per_student = dict(con.execute("SELECT student, COUNT(*) FROM results WHERE assignment = ? "
                                       "GROUP BY student", (ASSIGNMENT,)))
        others = con.execute("SELECT COUNT(*) FROM submissions WHERE assignment != ?", (ASSIGNMENT,)).fetchone()[0]
    finally:
        con.close()
    assert others == 0
    assert set(subs) <= set(STUDENTS)
    assert set(per_student) <= set(subs), "results without their submission row"
    half = {s: (per_student.get(s, 0), course.parts[s]) for s in subs if per_student.get(s, 0) != course.parts[s]}
    assert half == {}, "submissions recorded with the wrong number of result rows (got, expected)"
    assert set(subs.values()) <= {"graded"}, Counter(subs.values())
    if complete:
        assert sorted(subs) == STUDENTS
        assert sum(per_student.values()) == sum(course.parts.values())
    return len(subs)


@pytest.fixture(scope="module")
def clean(course, tmp_path_factory) -> Path:
    """The 200 submissions graded by one uninterrupted run into a fresh gradebook."""
    folder = tmp_path_factory.mktemp("clean")
    gradebook = folder / "clean.sqlite"
    summary = grade(grade_argv(course, gradebook), folder / "clean")
    assert (summary["submissions"], summary["graded"], summary["unchanged"]) == (N, N, 0)
    assert summary["missing"] == [] and summary["not_recorded"] == 0
    check_whole(gradebook, course, complete=True)
    # Not a trivially equal pair of gradebooks: the scores are the synthetic manifest's, and
    # the batch holds right, wrong and diagnosed answers.
    manifest = load_manifest(course.subs)
    con = connect_ro(gradebook)
    try:
        scores = dict(con.execute("SELECT student, score FROM submissions"))
        statuses = {r[0] for r in con.execute("SELECT DISTINCT status FROM results")}
        diagnosed = con.execute("SELECT COUNT(*) FROM results WHERE misconception IS NOT NULL").fetchone()[0]
    finally:
        con.close()
    wrong = {s: (scores[s], m["score"], m["profile"]) for s, m in manifest["students"].items()
             if not math.isclose(scores[s], m["score"], abs_tol=1e-9)}
    assert wrong == {}, "scores differ from the synthetic manifest (got, expected, profile)"
    assert {"passed", "failed", "missing"} <= statuses and diagnosed > 0
    return gradebook


def kit_versions(path: Path) -> set[str]:
    con = connect_ro(path)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT kit_version FROM submissions")}
    finally:
        con.close()


def assert_same_gradebook(got: Path, want: Path) -> None:
    # The kit version is a digest of the grader's code: two of them mean the code changed
    # between the runs (an edit while the test ran), which regrades on purpose; say so.
    versions = kit_versions(got) | kit_versions(want)
    assert len(versions) == 1, f"grader code changed while the test ran? kit versions {versions}"
    diff = differences(contents(got), contents(want))
    assert diff == {}, json.dumps(diff, indent=1, default=str)[:6000]


# --- 1. killed at random points, resumed, equal to an uninterrupted run -------------------

@dataclass
class Kill:
    kind: str                         # "rows": at a recorded count; "delay": after seconds
    point: float                      # the planned count or delay
    before: int = 0                   # rows when the run started
    target: int = 0                   # rows: the count actually waited for
    after: int = 0                    # rows once the process group was dead
    killed: bool = False              # the run was still going when the signal was sent

    @property
    def mid_batch(self) -> bool:
        """Killed while it was grading: it had recorded submissions of its own, not all."""
        return self.killed and self.before < self.after < N


def kill_plan(rng: random.Random) -> list[Kill]:
    """ROW_KILLS counts spread over the batch (increasing; the last tenth left out so that
    each run still has work in flight when it is killed, however fast it goes), DELAY_KILLS random
    delays (they land in the start-up, in opening the gradebook, or in the batch) at random
    places among them."""
    counts = sorted(rng.sample(range(1, N - N // 10), ROW_KILLS))
    plan = [Kill("rows", c) for c in counts]
    for _ in range(DELAY_KILLS):
        plan.insert(rng.randrange(len(plan) + 1), Kill("delay", round(rng.uniform(0.2, 3.0), 3)))
    return plan


def run_and_kill(argv: list[str], log: Path, gradebook: Path, kill: Kill, rng: random.Random) -> None:
    kill.before = recorded(gradebook)
    # a run that resumes must itself record a submission before its kill
    kill.target = max(int(kill.point), kill.before + 1) if kill.kind == "rows" else 0
    process = start(argv, log)
    started = time.monotonic()
    try:
        while process.poll() is None:
            assert time.monotonic() - started < RUN_DEADLINE, f"{kill}: still running"
            if kill.kind == "rows" and recorded(gradebook) >= kill.target:
                time.sleep(rng.uniform(0, 0.01))     # not always right after a commit
                break
            # (a delay also ends once a tenth of the batch is in: on a fast machine a 3 s run
            # would grade half of it, and leave the later kills nothing to land in)
            if kill.kind == "delay" and (time.monotonic() - started >= kill.point
                                         or recorded(gradebook) >= kill.before + N // 10):
                break
            time.sleep(0.005)
        kill.killed = process.poll() is None
    finally:
        kill_group(process)
    if kill.killed:
        assert process.returncode == -signal.SIGKILL
    else:       # it ended first: only success is acceptable
        assert process.returncode == 0, output(log)[1]
    kill.after = recorded(gradebook)


def test_a_batch_killed_at_random_points_resumes_to_the_uninterrupted_gradebook(course, clean, tmp_path):
    rng = random.Random(SEED)
    gradebook = tmp_path / "killed.sqlite"
    argv = grade_argv(course, gradebook)
    plan = kill_plan(rng)
    for n, kill in enumerate(plan):
        run_and_kill(argv, tmp_path / f"run-{n:02d}", gradebook, kill, rng)
        if gradebook.exists():
            # right after the kill (the WAL not checkpointed): whole submissions only
            assert check_whole(gradebook, course, complete=False) == kill.after, kill
        assert kill.after >= kill.before, kill            # nothing recorded was lost
    report = [(k.kind, k.point, k.before, k.after, k.killed) for k in plan]
    print("kills (kind, planned, rows before, rows after, killed):", *report, sep="\n  ")

    # the kills landed inside the batch, in runs that were grading
    assert sum(k.mid_batch for k in plan) >= 10, report

    before, versions = recorded(gradebook), kit_versions(gradebook)
    summary = grade(argv, tmp_path / "final")
    # exactly the rest: every recorded submission skipped, every other one graded (more than
    # one kit version here would mean the grader's code was edited while the test ran)
    assert (summary["graded"], summary["unchanged"]) == (N - before, before), (summary, report, versions)
    assert summary["not_recorded"] == 0 and summary["missing"] == []

    check_whole(gradebook, course, complete=True)
    check_whole(clean, course, complete=True)
    assert_same_gradebook(gradebook, clean)


# --- 2a. regrading gives the same rows ---------------------------------------------------

def test_regrading_twice_gives_the_same_rows(course, clean, tmp_path):
    gradebook = tmp_path / "regraded.sqlite"
    shutil.copyfile(clean, gradebook)           # closed by its run: the WAL is in the file
    for n in range(2):
        before = timings(gradebook)
        summary = grade(grade_argv(course, gradebook, "--regrade"), tmp_path / f"regrade-{n}")
        assert (summary["graded"], summary["unchanged"]) == (N, 0)
        # the rows were written again (their timings changed), not merely left alone
        assert timings(gradebook) != before
        check_whole(gradebook, course, complete=True)
        assert_same_gradebook(gradebook, clean)


# --- 2b. the same inputs give the same bytes ---------------------------------------------

def files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


def assert_same_files(first: Path, second: Path) -> int:
    a, b = files(first), files(second)
    assert sorted(set(a) - set(b)) == [] and sorted(set(b) - set(a)) == [], "different file sets"
    differing = sorted(name for name in a if a[name].read_bytes() != b[name].read_bytes())
    assert differing == [], f"{len(differing)} files differ, e.g. {differing[:5]}"
    return len(a)


def test_rebuilding_200_students_writes_the_same_bytes(course, tmp_path):
    # tests/exercises/test_build.py checks this (serial against two cores) for 4 students; here
    # for the class-sized build, with the students shared out in other chunks than the first time.
    again = tmp_path / "build-again"
    result = build(load_assignment(EXAMPLE), list(load_roster(course.roster)), again, jobs=2, chunk=3)
    assert result.ok, result.failures
    count = assert_same_files(course.build, again)
    assert count == 2 * N + 2                      # release + instructor notebook each, the key's index and its one shard
    assert (again / "instructor" / "answer_key.json").is_file()


def test_synthesizing_the_200_submissions_again_writes_the_same_bytes(course, tmp_path):
    synthesize(course.build, course.key, tmp_path / "subs-again", profiles=course.profiles)
    assert assert_same_files(course.subs, tmp_path / "subs-again") == N + 1    # and manifest.json
