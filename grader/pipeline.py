"""Grading a folder of submissions, the whole way: the one call the CLI, the tests and the
benchmarks make.

    find the notebooks (intake) → pair them with the key's students → run each in the
    sandbox and judge every part (GradingRun) as pytest items (plugin) → record them in the
    gradebook → record the students with no submission as missing

The caller owns the gradebook and the sandbox (a test keeps one sandbox for many runs; the
CLI opens both for one); everything between is here, written once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from formats.key_shape import assignment_id, total_points

from .budget import CPU_SECONDS
from .grading import GradingRun, grader_version
from .intake import Issue, find_submissions, match
from .plugin import run_pytest

@dataclass
class GradeSummary:
    """What one ``grade_folder`` did."""
    assignment: str
    submissions: int                  # notebooks paired with a student of the key
    recorded: list[str]               # graded now, into the gradebook
    skipped: list[str]                # unchanged since they were graded (not --regrade)
    not_recorded: list[str]           # partly chosen with -k: in pytest's report only
    failed: list[str]                 # could not be recorded at all (each says why)
    missing: list[str]                # the key's students without a submission
    issues: list[Issue]               # about the folder as a whole (not one submission)
    code: int                         # pytest's exit code
    interrupted: bool
    seconds: float
    run: GradingRun = field(repr=False, default=None)

    def as_json(self, gradebook: Path | str) -> dict:
        """The summary ``attnkit grade --json`` prints."""
        return {"assignment": self.assignment, "submissions": self.submissions,
                "graded": len(self.recorded), "unchanged": len(self.skipped),
                "not_recorded": len(self.not_recorded), "missing": sorted(self.missing),
                "issues": [{"code": i.code, "message": i.message} for i in self.issues],
                "gradebook": str(gradebook), "seconds": round(self.seconds, 3),
                "submissions_per_second": round(len(self.recorded) / max(self.seconds, 1e-9), 1)}


def grade_folder(key: dict, folder: Path, gradebook, sandbox, *, servers: int = 1,
                 regrade: bool = False, pytest_args: Sequence[str] = (), verbose: bool = False,
                 read_ahead: bool = False, students: Collection[str] | None = None,
                 record_missing: bool = True, cpu_seconds: float = CPU_SECONDS,
                 progress: Callable[[int], object] | None = None,
                 kit_version: str | None = None) -> GradeSummary:
    """Grade every submission in ``folder`` against ``key`` into ``gradebook``, running
    student code only in ``sandbox`` (``servers`` of its servers at once).

    ``read_ahead`` reads every notebook before grading starts (else each is read on its
    sandbox thread when its turn comes, as ``attnkit grade`` does); ``students`` grades only
    those; ``record_missing`` records the key's students with no submission as missing;
    ``progress(total)`` makes the progress bar (anything with ``advance`` and ``close``),
    ``kit_version`` is what the gradebook stores (default: this grader's)."""
    started = time.perf_counter()
    assignment = assignment_id(key)
    found = find_submissions(Path(folder), assignment)
    submissions, missing, issues = match(found, key, read=read_ahead)
    if students is not None:
        submissions = [s for s in submissions if s.student in students]
    bar = progress(len(submissions)) if progress is not None else None
    run = GradingRun(key, submissions, gradebook, sandbox, servers=servers, regrade=regrade,
                     progress=bar, cpu_seconds=cpu_seconds,
                     kit_version=grader_version() if kit_version is None else kit_version)
    try:
        code = run_pytest(run, assignment, list(pytest_args), verbose=verbose)
        if record_missing:
            for student in missing:
                gradebook.mark_missing(assignment, student, total_points(key))
    finally:
        if bar is not None:
            bar.close()
    return GradeSummary(assignment, len(submissions), list(run.recorded), list(run.skipped),
                        list(run.not_recorded), list(run.failed), list(missing), list(issues),
                        code, run.interrupted, time.perf_counter() - started, run)
