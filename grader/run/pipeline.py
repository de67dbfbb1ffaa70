"""Grading a folder of submissions, the whole way: the one call the CLI, the tests and the
benchmarks make.

    find the notebooks (intake) → pair them with the key's students → run each in the
    sandbox and judge every part (GradingRun) — as pytest items (plugin) when pytest's tools
    are asked for (-k, --junitxml, -v), else directly (plain) → record them in the gradebook
    → record the students with no submission as missing

The caller owns the gradebook and the sandbox (a test keeps one sandbox for many runs; the
CLI opens both for one); everything between is here, written once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from formats.deadline import Deadline
from formats.key_shape import assignment_id

from grader.budget import CPU_SECONDS
from grader.run.grading import GradingRun, grader_version, received
from grader.intake.issues import Issue
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match
from grader.intake.reading import file_hash
from grader.intake.records import Submission
from grader.run.plain import run_plain
from grader.store.grades import class_look
from grader.store.look import needs_a_look

@dataclass
class RunSummary:
    """What one ``grade_folder`` did."""
    assignment: str
    submissions: int                  # notebooks paired with a student of the key
    recorded: list[str]               # graded now, into the gradebook
    skipped: list[str]                # unchanged since they were graded (not --regrade)
    not_recorded: list[str]           # partly chosen with -k: in pytest's report only
    failed: list[str]                 # could not be recorded at all (each says why)
    missing: list[str]                # the key's students with no handin in the gradebook at all
    issues: list[Issue]               # about the folder as a whole (not one submission)
    code: int                         # pytest's exit code
    interrupted: bool
    seconds: float
    run: GradingRun = field(repr=False, default=None)
    absent: list[str] = field(default_factory=list)   # not in this folder, graded by an earlier run
    look: list[dict] = field(default_factory=list)     # grader.store.look.needs_a_look, over the class
    receipts: list = field(default_factory=list)       # grader.intake.receipts.ReceiptChange: kept or replaced

    def as_json(self, gradebook: Path | str) -> dict:
        """The summary ``attnkit grade --json`` prints."""
        spent = self.run.judges_cpu if self.run is not None else {}
        return {"assignment": self.assignment, "submissions": self.submissions,
                "graded": len(self.recorded), "unchanged": len(self.skipped),
                "not_recorded": len(self.not_recorded), "missing": sorted(self.missing),
                "not_in_folder": sorted(self.absent), "needs_a_look": self.look,
                "receipts": {"kept": [c.as_json() for c in self.receipts if c.kept],
                             "changed": [c.as_json() for c in self.receipts if not c.kept]},
                "issues": [{"code": i.code, "message": i.message} for i in self.issues],
                "gradebook": str(gradebook), "seconds": round(self.seconds, 3),
                "submissions_per_second": round(len(self.recorded) / max(self.seconds, 1e-9), 1),
                "judges": self.run.judges_used if self.run is not None else 0,
                "judges_cpu_seconds": {k: round(v, 3) for k, v in spent.items() if k != "peak_rss_mb"},
                "judges_peak_rss_mb": round(spent.get("peak_rss_mb", 0.0), 1),
                **self._cluster_json()}

    def _cluster_json(self) -> dict:
        """On a cluster: the shards sent, those sent again whole or split after a failure,
        and the students recorded as the grader's error alone."""
        stats = getattr(self.run, "cluster", None)
        if stats is None:
            return {}
        return {"cluster": {"shards": stats.shards, "resent": stats.resent, "split": stats.split,
                            "lost": sorted(stats.lost)}}


@dataclass(frozen=True)
class GradeOptions:
    """How ``grade_folder`` grades (every field has the default a plain run wants)."""

    servers: int = 1                  # sandbox servers at once
    regrade: bool = False             # grade unchanged submissions again
    pytest_args: Sequence[str] = ()   # -k, --junitxml: pytest's own
    verbose: bool = False
    read_ahead: bool = False          # read every notebook before grading starts (else each on its turn)
    students: Collection[str] | None = None    # only these
    cpu_seconds: float = CPU_SECONDS  # the grader's budget a submission
    progress: Callable[[int], object] | None = None   # progress(total): a bar with advance and close
    kit_version: str | None = None    # what the gradebook stores (default: this grader's)
    deadline: Deadline | None = None  # the late policy decides which handin counts; lateness needs a look
    roster: object = None             # exercises.course.roster students: LMS ids in Canvas and Moodle names
    receipts: tuple[dict, str] | None = None   # grader.intake.receipts.read_receipts: when the LMS says each came
    review: bool = True               # list what needs a human look over the class (a read of its grades)
    # a Dask client, or one being connected (grader.run.workers.Connecting, waited for only
    # when grading starts): graded on its workers (grader.run.cluster)
    cluster: object = None
    shard_size: int | None = None     # with ``cluster``: submissions a shard
    wall_seconds: float | None = None  # with ``cluster``: a submission's wall time
    before_each: Callable | None = None   # before_each(student), on the worker before each is recorded
    judges: bool = True               # the trusted work in one judge process per server (grader.run.judges)


def grade_folder(key: dict, folder: Path, gradebook, sandbox, options: GradeOptions | None = None,
                 **given) -> RunSummary:
    """Grade every submission in ``folder`` against ``key`` into ``gradebook``, running
    student code only in ``sandbox`` (``options.servers`` of its servers at once), as
    ``options`` (or ``GradeOptions(**given)``) says.

    Nothing is written for the students not in the folder: their earlier grades stand. The
    LMS's receipt times are given to unchanged handins too, never over a better source's
    (``RunSummary.receipts``). On a cluster ``sandbox`` is unused and may be None, and
    ``pytest_args`` must be empty: no pytest items run at the client."""
    opt = replace(options or GradeOptions(), **given)
    started = time.perf_counter()
    assignment = assignment_id(key)
    found = find_submissions(Path(folder), assignment)
    submissions, missing, issues = match(found, key, read=opt.read_ahead, roster=opt.roster)
    if opt.students is not None:
        submissions = [s for s in submissions if s.student in opt.students]
    submissions = _with_receipts(submissions, opt.receipts)
    bar = opt.progress(len(submissions)) if opt.progress is not None else None
    changes_before = len(gradebook.receipt_changes)
    run = GradingRun(key, submissions, gradebook, sandbox, servers=opt.servers, regrade=opt.regrade,
                     progress=bar, cpu_seconds=opt.cpu_seconds, judges=opt.judges and opt.cluster is None,
                     kit_version=grader_version() if opt.kit_version is None else opt.kit_version)
    try:
        if opt.cluster is not None:
            code = _on_cluster(run, opt.cluster, opt.shard_size, opt.wall_seconds, bar, opt.before_each)
        elif opt.pytest_args or opt.verbose:
            from grader.run.plugin import run_pytest      # (pytest is imported only to be used)
            code = run_pytest(run, assignment, list(opt.pytest_args), verbose=opt.verbose)
        else:                      # (the same verdicts and rows, without pytest's items)
            code = run_plain(run)
    finally:
        if bar is not None:
            bar.close()
    _receipts_of_unchanged(run, opt.receipts)
    # Not in this folder is not missing: a student graded by an earlier run keeps that grade
    # (the gradebook only adds); missing are those with nothing in the gradebook at all.
    absent = [s for s in missing if gradebook.submission(assignment, s) is not None]
    never = [s for s in missing if s not in set(absent)]
    look = needs_a_look(class_look(gradebook, key, opt.deadline)) if opt.review else []
    return RunSummary(assignment, len(submissions), list(run.recorded), list(run.skipped),
                        list(run.not_recorded), list(run.failed), never, list(issues),
                        code, run.interrupted, time.perf_counter() - started, run, absent, look,
                        gradebook.receipt_changes[changes_before:])


def _with_receipts(submissions: list, receipts: tuple[dict, str] | None) -> list:
    """``submissions`` with the LMS's receipt times (``receipts``: times, source) where it has one."""
    if receipts is None:
        return submissions
    times, source = receipts
    return [replace(s, received_at=times[s.student], received_from=source) if s.student in times else s
            for s in submissions]


def _receipts_of_unchanged(run: GradingRun, receipts: tuple[dict, str] | None) -> None:
    """The LMS's receipt times given to the handins this run did not grade again (unchanged):
    the export is news about them too, though their grades are current."""
    if receipts is None:
        return
    for student in run.skipped:
        if student in receipts[0]:
            submission = run.submissions[student]
            handin = (submission.content_hash if isinstance(submission, Submission)
                      else file_hash(submission))
            run.gradebook.set_receipt(run.assignment, student, handin, *received(submission))


def _on_cluster(run: GradingRun, client, shard_size: int | None, wall_seconds: float | None,
                bar, before_each=None) -> int:
    """The run's changed submissions graded on a Dask cluster (grader.run.cluster); 0, pytest's
    exit code when every item passed or failed as a result."""
    from grader.run.cluster import grade_on_cluster
    from grader.run.shards import SHARD_SIZE
    from grader.run.workers import Connecting
    chosen = run.students_to_grade()
    if isinstance(client, Connecting):      # (its processes started while the run got here)
        client = client.get()
    if bar is not None and run.skipped:
        bar.advance(len(run.skipped))
    recorded, stats = grade_on_cluster(run.key, [run.submissions[s] for s in chosen], run.gradebook,
                                       client, kit_version=run.kit_version, cpu_seconds=run.cpu_seconds,
                                       wall_seconds=wall_seconds or 10.0,
                                       shard_size=shard_size or SHARD_SIZE, progress=bar,
                                       before_each=before_each)
    run.recorded += recorded
    run.cluster = stats
    return 0
