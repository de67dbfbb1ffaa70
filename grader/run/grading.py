"""One grading run: submissions in, verdicts out, rows into the gradebook.

The run is what the pytest plugin (grader.run.plugin) reports to. It knows the answer key and
the submissions; the sandbox only ever receives a submission's own code, its givens and the
hidden inputs, and hands back values. Every score is decided here, in the trusted process
(each submission's verdicts: ``grader.run.graded``).
"""

from __future__ import annotations

import hashlib
import time
from datetime import timezone
from dataclasses import replace

from formats.answer_key import entry_digest
from formats.key_shape import assignment_id, entry_to_grade, graded_parts, head_parts, problem_order, problem_records
from formats.textfile import printable
from formats.version import KIT_VERSION

from grader.run import garbage
from grader.budget import CPU_SECONDS, Budget, OverBudget
from grader.verdicts.parts import ERROR, CaseOutcome, Verdict
from grader.run.graded import (FOLLOW_WITHHELD, GradedSubmission, capped_issues, capped_notes, causes_of, grade_values,
                               unrunnable)
from grader.run.lookahead import LookAhead
from grader.store.rows import ResultRow, SubmissionRow
from grader.intake.reading import file_hash, read_submission
from grader.intake.records import Found, Submission
from grader.run.judges import JudgeLost, Judges, can_fork
from grader.run.program import job_for
from grader.sandbox.client import Sandbox


# --- the run -----------------------------------------------------------------------------

# Everything that decides a score: the grader (its sandbox too), the formats it reads the key
# and the answers in, the misconceptions it names. (Not synthetic/: demo data is not scoring.)
_SCORING_CODE = ("grader/**/*.py", "formats/*.py", "solutions/twins/*.py")


def grader_version() -> str:
    """The kit's version and a digest of the code that decides scores: stored with every
    graded submission, so a grader that changed (even in an editable install, whose version
    number does not move) grades everything again instead of trusting old verdicts."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]      # the repository: grader/run/grading.py
    digest = hashlib.sha256()
    for pattern in _SCORING_CODE:
        for path in sorted(root.glob(pattern)):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{KIT_VERSION}+{digest.hexdigest()[:12]}"


def received(submission) -> tuple[str | None, str]:
    """When ``submission`` was handed in (UTC, ISO 8601) and where that time comes from, as
    intake found it (nbgrader's timestamp.txt, else the file's modification time) or an LMS
    export gave it (grader.intake.receipts); (None, "") when unknown."""
    if submission.received_at is None:
        return None, ""
    return submission.received_at.astimezone(timezone.utc).isoformat(timespec="seconds"), \
        submission.received_from


def fingerprint(content_hash: str, entry_digest: str) -> str:
    """What the gradebook keeps as a submission's hash: the notebook's bytes *and* the key
    entry it was graded against (``entry_digest``), so a submission counts as already graded
    only if neither changed: a key rebuilt after a template fix grades it again."""
    return hashlib.sha256(f"attnkit-graded/2|{content_hash}|{entry_digest}".encode()).hexdigest()


class GradingRun:
    """What the pytest plugin asks while it grades: which submissions, which parts, and each
    part's verdict; and what it reports back: a submission whose items have all run.

    ``execute`` runs in the judge processes (``judges``: one per server, grader.run.judges) or,
    without them, on the sandbox threads (one per server); everything else, including every
    gradebook write, on pytest's main thread."""

    def __init__(self, key: dict, submissions, gradebook, sandbox, *, servers: int = 1,
                 regrade: bool = False, progress=None, kit_version: str = "",
                 cpu_seconds: float = CPU_SECONDS, judges: bool = False):
        self.key = key
        self.assignment = assignment_id(key)
        self.order = problem_order(key)
        # A Submission (already read), or the Found of a file read when its turn comes.
        self.submissions: dict[str, Submission | Found] = {s.student: s for s in submissions}
        self.gradebook, self.sandbox = gradebook, sandbox
        self.servers, self.regrade, self.progress = servers, regrade, progress
        self.kit_version = kit_version
        self.cpu_seconds = cpu_seconds        # the grader CPU one submission may cost (grader.budget)
        self.skipped: list[str] = []          # unchanged since they were graded
        self.recorded: list[str] = []
        self.failed: list[str] = []           # could not be recorded at all (reported)
        self.interrupted = False              # set by the plugin on Ctrl-C
        self.not_recorded: list[str] = []     # partly selected with -k: gradebook left alone
        self._head_parts = head_parts(key)
        # Submissions run on the sandbox threads in the order pytest will ask for them, at
        # most a window ahead of the one being recorded (grader.run.lookahead).
        self.ahead = LookAhead(self._run_one, servers, window=max(8, 4 * servers),
                               thread_name="attnkit-sandbox")
        # One judge process per server (grader.run.judges), forked when the run starts: the
        # trusted work on every core. Off, or where forking is not safe: the sandbox threads.
        self._want_judges = judges and sandbox is not None
        self.judges = None
        self.judges_used = 0                  # judge processes this run forked
        self.judges_cpu: dict = {}            # what they spent: {"judge": s, "sandbox": s}
        self._parts: dict[str, list] = {}     # student → parts_of, until recorded
        self._entries: dict[str, dict] = {}   # student → key entry, until recorded
        self._hashes: dict[str, str] = {}     # student → their notebook's content hash
        self.cluster = None                   # grader.run.cluster.ClusterStats, graded on a cluster

    # --- what to grade ---------------------------------------------------------------

    def students_to_grade(self) -> list[str]:
        chosen = []
        # Only a student graded before can be skipped: the others' notebooks are hashed by
        # their judge, which reads them anyway (reading the whole class's here too would
        # delay the first submission).
        earlier = set() if self.regrade or self.gradebook is None else \
            self.gradebook.graded_students(self.assignment)
        for student in sorted(self.submissions):
            if student not in earlier or not self.gradebook.is_current(
                    self.assignment, student, self._hash(student, self._content_hash(student)),
                    self.kit_version):
                chosen.append(student)
            else:
                self.skipped.append(student)
        return chosen

    def _content_hash(self, student: str) -> str:
        if student not in self._hashes:
            submission = self.submissions[student]
            self._hashes[student] = (submission.content_hash if isinstance(submission, Submission)
                                     else file_hash(submission))
        return self._hashes[student]

    def entry(self, student: str) -> dict:
        """The key entry that grades ``student``: theirs, or an nbgrader course's class entry.
        Parsed once, and kept while the submission is in flight (until it is recorded)."""
        entry = self._entries.get(student)
        if entry is None:
            entry = entry_to_grade(self.key, student)
            if not self.ahead.released(student):   # (a discarded run ending late keeps nothing)
                self._entries[student] = entry
        return entry

    def _hash(self, student: str, content_hash: str) -> str:
        return fingerprint(content_hash, entry_digest(self.key, student))

    def parts_of(self, student: str) -> list[tuple[str, list[tuple[str, float]]]]:
        """(problem, [(part, points)]) in the assignment's order: what pytest collects. From
        the key's head where it lists them (they come from the templates, the same for every
        student); a key without them has each entry read for it."""
        if self._head_parts is not None:
            return self._head_parts
        if student not in self._parts:
            records = dict(problem_records(self.entry(student)))
            self._parts[student] = [(pid, graded_parts(records[pid])) for pid in self.order if pid in records]
        return self._parts[student]

    def item_count(self, student: str) -> int:
        return sum(len(parts) for _, parts in self.parts_of(student))

    # --- running ---------------------------------------------------------------------

    def start(self, students: list[str]) -> None:
        """Queue ``students`` (in the order their items will run) for the sandbox."""
        if self._want_judges and students:
            self._want_judges = False
            limits, count = self.sandbox.limits, min(self.servers, len(students))
            try:
                if can_fork():
                    self.judges = Judges(self, count, lambda: Sandbox(1, limits, lazy=True))
                    self.judges_used = count
            except OSError:                 # the system refused a fork: the sandbox threads grade
                self.judges = None
        self.ahead.start(students)

    def discard(self, student: str) -> None:
        """Not graded in this run after all (deselected with -k): free what it holds."""
        self._forget(student)
        self.ahead.cancel(student)

    def _release(self, student: str) -> None:
        """Done with ``student`` (recorded): keep nothing of theirs, run the next."""
        self._forget(student)
        self.ahead.release(student)

    def _forget(self, student: str) -> None:
        self._entries.pop(student, None)
        self._parts.pop(student, None)

    def wait(self, student: str) -> GradedSubmission:
        return self.ahead.result(student)

    def stop(self) -> None:
        self.ahead.stop()
        if self.judges is not None:
            self.judges_cpu = self.judges.close()
            self.judges = None

    def _run_one(self, student: str) -> GradedSubmission:
        """``execute`` in a judge process if the run has them (a sandbox thread waits for it,
        holding nothing), else here."""
        if self.judges is not None:
            started = time.perf_counter()
            try:
                return self.judges.execute(student)
            except JudgeLost as err:
                return self.as_error(student, f"internal grader error: {err} (while grading this "
                                    "submission); it is graded again on the next run", started)
            except LookupError:         # every judge is gone: the rest is graded here
                pass
        return self.execute(student)

    def execute(self, student: str) -> GradedSubmission:
        """Run one submission in the sandbox and judge every part (a sandbox thread). Whatever
        goes wrong costs this submission only: its parts are recorded as the grader's error
        and it is graded again on the next run."""
        started = time.perf_counter()
        why = "internal grader error: the key's entry does not grade this part"   # (never: one template)
        try:
            graded = self._execute(student, started, Budget(self.cpu_seconds).start())
        except Exception as err:  # noqa: BLE001 — one submission must never stop the batch
            why = str(err) if isinstance(err, OverBudget) else \
                f"internal grader error: {type(err).__name__}: {str(err)[:300]}"
            return self.as_error(student, why, started)    # (its entry may be what failed)
        return self._every_part(student, graded, why)

    def as_error(self, student: str, why: str, started: float) -> GradedSubmission:
        """Every part of ``student``'s the grader's error ``why`` (graded again next run)."""
        return self._every_part(student, GradedSubmission({}, {}, [why], seconds=time.perf_counter() - started), why)

    def _every_part(self, student: str, graded: GradedSubmission, why: str) -> GradedSubmission:
        for problem, parts in self.parts_of(student):
            for part, points in parts:
                graded.verdicts.setdefault((problem, part), Verdict(0.0, points, ERROR, why))
        return graded

    def _execute(self, student: str, started: float, budget: Budget) -> GradedSubmission:
        submission, entry = self.submissions[student], self.entry(student)
        if isinstance(submission, Found):
            submission = read_submission(submission, self.key, entry)
        budget.check("reading the notebook")
        notes = [issue.message for issue in submission.issues]
        issues = list(submission.issues)
        if not submission.cells:
            graded = unrunnable(entry, notes[-1] if notes else "the notebook has no cells")
            graded.notes = capped_notes(notes)
            graded.issues = capped_issues(issues)
            graded.seconds = time.perf_counter() - started
            graded.content_hash = submission.content_hash
            return graded
        program = job_for(submission, entry, order=self.order, budget=budget)
        notes += [issue.message for issue in program.notes if issue not in submission.issues]
        issues += [issue for issue in program.notes if issue not in submission.issues]
        result = self.sandbox.run(program.steps, budget=budget)
        outcomes = {pid: {case: CaseOutcome(o.ok, o.value, o.error or "") for case, o in cases.items()}
                    for pid, cases in result.outputs.items()}
        for crash in result.crashes:
            notes.append(f"{crash.label}: stopped the run ({crash.reason}); the run went on "
                         "without it" + (f" from hidden case {crash.case + 1}" if crash.case is not None else ""))
        if result.stopped:
            notes.append(f"the run stopped: {result.stopped}")
        graded = grade_values(entry, result.values, outcomes, program.free_text, causes_of(result),
                              result.stopped, budget,
                              follow=not any(issue.code in FOLLOW_WITHHELD for issue in issues))
        graded.notes = capped_notes(notes)
        graded.issues = capped_issues(issues)
        graded.seconds = time.perf_counter() - started
        graded.content_hash = submission.content_hash
        return graded

    def verdict(self, student: str, problem: str, part: str) -> Verdict:
        return self.wait(student).verdicts[(problem, part)]

    # --- recording -------------------------------------------------------------------

    def finished(self, student: str, record: bool = True) -> None:
        graded, parts = self.wait(student), self.parts_of(student)
        self._release(student)            # a long run does not keep every value
        garbage.submission_done()
        if self.progress is not None:
            self.progress.advance(1)
        if not record or self.gradebook is None:
            self.not_recorded.append(student)
            return
        row, rows = self.rows(student, graded, parts)
        try:
            self.gradebook.record(row, rows)
        except (ValueError, TypeError) as err:
            # Something of the student's that the gradebook refuses (an answer it cannot
            # store): keep the scores and messages, drop the answers, and say so.
            note = f"answers not stored: {type(err).__name__}: {str(err)[:200]}"
            try:
                self.gradebook.record(replace(row, notes=(*row.notes, note)),
                                      [replace(r, answer=None) for r in rows])
            except (ValueError, TypeError) as again:       # never stop the batch for one
                self.failed.append(f"{student}: not recorded: {type(again).__name__}: "
                                   f"{printable(str(again))[:200]}")
                return
        self.recorded.append(student)

    def rows(self, student: str, graded: GradedSubmission, parts=None) -> tuple[SubmissionRow, list[ResultRow]]:
        """The gradebook rows of one graded submission (``parts``: its ``parts_of``)."""
        parts = self.parts_of(student) if parts is None else parts
        submission = self.submissions[student]
        if graded.content_hash is None:        # the grader failed before reading it: grade it again next time
            graded.content_hash = ""
        # The handin is the notebook itself, read or not (students_to_grade hashed it already)
        handin = graded.content_hash or self._content_hash(student)
        graded_hash = self._hash(student, graded.content_hash)
        per_part_ms = round(graded.seconds * 1000 / max(len(graded.verdicts), 1), 3)
        rows = [ResultRow(self.assignment, student, problem, part, v.score, v.max_score, v.status,
                          v.message, v.misconception, graded.answers.get((problem, part)),
                          per_part_ms, graded_hash)
                for problem, problem_parts in parts for part, _ in problem_parts
                for v in [graded.verdicts[(problem, part)]]]
        score = sum(r.score for r in rows)
        total = sum(r.max_score for r in rows)
        # A broken notebook is graded (0, with its reason); "error" is the grader's own failure
        # on some part, and such a submission is graded again on the next run.
        status = "error" if any(r.status == ERROR for r in rows) else "graded"
        received_at, received_from = received(submission)
        row = SubmissionRow(self.assignment, student, str(submission.path), graded_hash,
                            status, tuple(graded.notes), score, total,
                            round(graded.seconds * 1000, 3), self.kit_version,
                            handin=handin, received_at=received_at,
                            received_from=received_from,
                            issues=tuple((i.code, i.message) for i in graded.issues))
        return row, rows
