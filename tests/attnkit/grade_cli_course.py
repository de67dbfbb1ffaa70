"""What the ``attnkit grade`` CLI tests share: the example course's constants, ``attnkit``
run in this process, a built ``Course`` and where a student's notebook is handed in."""

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from attnkit.cli import main

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

