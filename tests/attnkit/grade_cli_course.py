"""What the ``attnkit grade`` CLI tests share: the example course's constants, ``attnkit``
run in this process, a built ``Course``, where a student's notebook is handed in, and the
gradebook read back and held to the synthetic manifest."""

import io
import math
import re
import shutil
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, replace
from pathlib import Path

from attnkit.cli import main
from grader.store.gradebook import Gradebook
from synthetic import MISCONCEPTION_PREFIX, profile_names

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
ASSIGNMENT = "attention-hw1"
SECRET = "grade-cli test secret: long enough, never a real one"
# Ids with a dash: nothing else in a pytest node id (the scratch folder is attnkit-grade-<pid>-
# <random letters and digits>) can contain "st-01", so `-k "st-01 and …"` selects one student.
STUDENTS = [f"st-{n:02d}" for n in range(1, 9)]
JOBS, TIMEOUT = "2", "2"


def attnkit(*argv) -> tuple[int, str, str]:
    """``attnkit ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@dataclass
class Course:
    build: Path
    key: dict
    folder: Path

    def grade_args(self, submissions: Path, gradebook: Path, *extra) -> list:
        return ["grade", EXAMPLE, submissions, "--build", self.build, "--gradebook", gradebook,
                "--jobs", JOBS, "--timeout", TIMEOUT, *extra]


def handed_in(submissions: Path, student: str) -> Path:
    return submissions / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def first_twin(key) -> str:
    return next(p for p in profile_names(key) if p.startswith(MISCONCEPTION_PREFIX))


@dataclass
class GradedSubmission:
    submissions: Path
    gradebook: Path
    junit: Path
    summary: dict
    manifest: dict


def student_of(manifest: dict, profile: str) -> str:
    return next(sid for sid, m in manifest["students"].items() if m["profile"] == profile)


def copy_gradebook(graded: GradedSubmission, tmp_path: Path) -> Path:
    path = tmp_path / "gb.sqlite"
    shutil.copyfile(graded.gradebook, path)      # closed: WAL checkpointed into the file
    return path


def _without_pids(answer):
    """The key reader hands in what it found under /proc/<pid>/: the pids differ per run."""
    return re.sub(r"/proc/\d+/", "/proc/PID/", answer) if isinstance(answer, str) else answer


def rows(path: Path) -> tuple[list, list]:
    """(submissions, results) of the gradebook, durations left out (they are timings)."""
    with Gradebook(path) as gradebook:
        subs = [replace(s, duration_ms=0) for s in gradebook.submissions(ASSIGNMENT)]
        results = [replace(r, duration_ms=0, answer=_without_pids(r.answer))
                   for r in gradebook.results(ASSIGNMENT)]
    return subs, results


def dump(path: Path) -> list:
    """Every stored row, every column (graded_at and durations too)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return [con.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
                for table in ("submissions", "results")]


def same(row, expected: dict) -> bool:
    return (row.status == expected["status"] and math.isclose(row.score, expected["score"], abs_tol=1e-9)
            and math.isclose(row.max_score, expected["max_score"]) and row.misconception == expected["misconception"])


def assert_matches_manifest(path: Path, manifest: dict) -> None:
    subs, results = rows(path)
    by_student = {}
    for r in results:
        by_student.setdefault(r.student, {})[(r.problem, r.part)] = r
    assert sorted(s.student for s in subs) == sorted(manifest["students"])
    for s in subs:
        m = manifest["students"][s.student]
        expected = {(pid, part): v for pid, parts in m["expected"].items() for part, v in parts.items()}
        got = by_student[s.student]
        assert set(got) == set(expected), m["profile"]
        assert [(k, got[k].misconception, got[k].message, expected[k]) for k in expected if not same(got[k], expected[k])] == [], m["profile"]
        assert math.isclose(s.score, m["score"]), m["profile"]


def part_count(key: dict) -> int:
    return sum(len(r["grading"]) for e in key["students"].values() for r in e["problems"].values())


def recorded(path: Path) -> list[str]:
    """Students with a graded submission, read without writing (the grader is running)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return [r[0] for r in con.execute(
                "SELECT student FROM submissions WHERE status = 'graded' ORDER BY student")]
        finally:
            con.close()
    except sqlite3.Error:           # not created yet, or no tables yet
        return []
