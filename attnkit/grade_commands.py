"""``attnkit grade``: parsing, printing and exit codes; the work is grader.run.pipeline's.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from formats.textfile import terminal_json, terminal_safe

from .course_files import fail, key_options, open_course, positive, warn
from .progress import Progress


def _explain() -> int:
    from grader.sandbox.client import explain

    walls = explain()
    width = max(len(wall["name"]) for wall in walls)
    print("The sandbox that runs student code, on this machine:")
    for wall in walls:
        mark = "on " if wall["active"] else "off"
        print(f"  [{mark}] {wall['name']:<{width}}  {wall['detail']}")
    print("Always, whatever is off: student code runs in a forked child of a sandbox server that never "
          "holds the answer key or an expected value; only values come back, in size-capped, "
          "validated frames (never pickle); every score is decided in the grader's own process.")
    return 0


def _asking_walls(args):
    """Start asking a live sandbox child which walls hold, on a thread of its own, while the
    course's files are read (a server's start and the key's check each took ~0.12 s, one
    after the other); the call returned waits for the answer (None: not asked, --insecure).
    It must be called before grading starts: judges are forked only where no thread runs.
    Not asked with --cluster: no student code runs here then (each worker is asked instead,
    ``_checked``)."""
    if args.insecure or args.cluster:
        return lambda: None
    from grader.sandbox.client import explain

    answer: dict = {}

    def ask() -> None:
        try:
            answer["walls"] = explain(bare=True)     # (only whether the files are walled off)
        except Exception:  # noqa: BLE001 — then the static check decides (protected(None))
            answer["walls"] = None

    asking = threading.Thread(target=ask, name="attnkit-walls", daemon=True)
    asking.start()

    def wait():
        asking.join()
        return answer.get("walls")
    return wait


def _unprotected(args, walls) -> int:
    """Refuse to run student code where the walls cannot keep it from the grader's own files
    (the key, the gradebook, the kit's code): grader.sandbox.walls.protected of what a live
    child said (``walls``). 0 when fine; always with --cluster, whose workers run it (and are
    asked the same, ``_checked``)."""
    from grader.sandbox.walls import protected

    if args.insecure or args.cluster or protected(walls):
        return 0
    print("attnkit grade: refusing to run student code here: neither Landlock (Linux ≥ 5.13) nor "
          "a uid of its own (run as root) can keep it from reading the answer key or writing "
          "the gradebook on this machine. See attnkit grade --explain-sandbox; --insecure grades "
          "anyway (only for code you trust).", file=sys.stderr)
    return 1


INTERRUPTED = ("attnkit grade: interrupted; what was graded is in the gradebook, and the next run "
               "picks up the rest")


@contextmanager
def _grading_place(args, connecting):
    """(sandbox, None) on this machine, or (None, the cluster being connected: waited for when
    grading starts, grader.run.workers.Connecting) with --cluster (closed by its caller)."""
    if connecting is None:
        from grader.sandbox.client import Limits, Sandbox
        # lazy: a run with judges (grader.run.judges) has each start a server of its own
        with Sandbox(args.jobs, Limits(wall_seconds=args.timeout), lazy=True) as sandbox:
            yield sandbox, None
        return
    yield None, connecting


def _connecting(args):
    """For --cluster: the cluster asked for at once, on a thread of its own (its processes
    start and its workers are checked while the course is read); None without it."""
    if not args.cluster:
        return None
    from grader.run.workers import Connecting
    return Connecting(args.cluster, lambda client: _checked(client, args), wall_seconds=args.timeout)


def _checked(client, args) -> list:
    """Refuse a cluster where a worker runs another kit, or cannot keep student code from its
    files (ClusterUnavailable); start every worker's sandbox servers (the futures returned
    are held while the run lasts: starting a server runs no student code)."""
    from formats.version import KIT_VERSION
    from grader.run.cluster import get_workers_ready
    from grader.run.workers import ClusterUnavailable, workers_of_another_kit, workers_unprotected
    others = workers_of_another_kit(client)
    if others:
        raise ClusterUnavailable(
            f"refusing to grade on {', '.join(others)}: this is attention-kit {KIT_VERSION}, and "
            "every worker must run the same kit (another could grade otherwise, or not read "
            "this key): install this version on those machines")
    readying = get_workers_ready(client, args.timeout)
    exposed = [] if args.insecure else workers_unprotected(client, args.timeout)
    if exposed:
        raise ClusterUnavailable(
            f"refusing to run student code on {', '.join(exposed)}: neither Landlock nor a uid "
            "of its own can keep it from the worker's files there (attnkit grade --explain-sandbox "
            "on that machine says why); --insecure grades anyway (only for code you trust)")
    return readying


def _grade(args) -> int:
    if args.explain_sandbox:
        return _explain()
    if not args.assignment or not args.submissions:
        print("attnkit grade: give ASSIGNMENT.yaml and SUBMISSIONS (or --explain-sandbox)",
              file=sys.stderr)
        return 2
    connecting = _connecting(args)
    try:
        return _graded(args, connecting)
    finally:
        if connecting is not None:
            connecting.close()


def _graded(args, connecting) -> int:
    walls = _asking_walls(args)
    course = open_course(args)
    walls = walls()                    # (joined whatever the course's files said)
    if isinstance(course, int):
        return course
    if not Path(args.submissions).is_dir():
        return fail([f"{args.submissions}: no such folder"])
    receipts = None
    if args.received:
        from grader.intake.receipts import ReceiptsError, read_receipts
        try:
            receipts = read_receipts(args.received)
        except ReceiptsError as err:
            return fail(err.errors)
    started = time.perf_counter()
    refused = _unprotected(args, walls)
    if refused:
        return refused
    pytest_args = (["-k", args.k] if args.k else []) + \
        (["--junitxml", str(args.junitxml)] if args.junitxml else [])
    if args.cluster and pytest_args:
        return fail(["--cluster grades whole submissions on the workers: -k and --junitxml (pytest's "
                     "items) work only without it"])
    graded = _run(args, course, receipts, pytest_args, connecting)
    if isinstance(graded, int):
        return graded
    graded.summary.seconds = time.perf_counter() - started   # (what the user waited: the sandbox's start too)
    return _said(args, graded, gradebook_path=course[2])


def _run(args, course, receipts, pytest_args, connecting):
    """The course graded (grader.run.course.grade_course), or an exit code and why on stderr."""
    from grader.run.cluster import NoWorkers
    from grader.run.workers import ClusterUnavailable
    from grader.run.course import grade_course
    from grader.run.pipeline import GradeOptions
    from grader.store.gradebook import Gradebook, GradebookError

    assignment, key, gradebook_path, roster = course
    bar = (lambda total: Progress(total, "grade", enabled=None if not args.json else False))
    try:
        with Gradebook(gradebook_path) as gradebook, _grading_place(args, connecting) as (sandbox, client):
            options = GradeOptions(servers=args.jobs, regrade=args.regrade, pytest_args=pytest_args,
                                   verbose=args.verbose, progress=bar, deadline=assignment.deadline,
                                   roster=roster, receipts=receipts, cluster=client,
                                   shard_size=args.shard_size, wall_seconds=args.timeout)
            return grade_course(key, Path(args.submissions), gradebook, sandbox, options,
                                table=not args.json)
    except GradebookError as err:
        return fail([str(err)])
    except ClusterUnavailable as err:
        return fail([str(err)])
    except NoWorkers as err:
        return fail([f"--cluster {args.cluster}: {err}"])
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


def _said(args, graded, gradebook_path: Path) -> int:
    """What the run did, on stdout (text or --json) and stderr; the command's exit code."""
    summary = graded.summary
    if summary.interrupted:     # pytest caught a Ctrl-C: what was recorded stays, the rest waits
        print(INTERRUPTED, file=sys.stderr)
        return 130
    for failure in summary.failed:
        warn(f"attnkit grade: {failure}")
    for entry in graded.rescored:
        warn(f"attnkit grade: re-scored {entry.student} {entry.problem}/{entry.part}: {entry.note}")
    _receipt_warnings(summary.receipts)
    if summary.code == 4:           # a usage error (a bad -k expression): pytest said why
        return 2
    if summary.code in (2, 3):      # errors during collection / pytest's internal error
        return fail([f"grading stopped (pytest exit code {summary.code}); see above"])
    shown = summary.as_json(gradebook_path)
    if args.json:
        print(terminal_json(shown))
        return 0
    for issue in summary.issues:
        warn(f"note: {issue}")
    print(graded.table())
    look = graded.look()
    if look:
        print(look)
    _print_totals(args, summary, shown)
    where = f"--build {args.build}" if args.build else f"--key {args.key_path}"
    print(terminal_safe(f"gradebook: {gradebook_path}\nreports:   attnkit report {args.assignment} {where}"))
    return 0


def _print_totals(args, summary, shown: dict) -> None:
    """How many were graded, how fast, where; what was unchanged, absent or missing."""
    graded, missing = shown["graded"], summary.missing
    where_run = (f"on the cluster {args.cluster}, {summary.run.cluster.shards} shards"
                 if args.cluster and summary.run.cluster else
                 f"{args.jobs} server{'s' if args.jobs != 1 else ''}")
    print(terminal_safe(f"graded {graded} submission{'s' if graded != 1 else ''} in "
          f"{summary.seconds:.2f} s ({shown['submissions_per_second']:g}/s, {where_run}); "
          f"{len(summary.skipped)} unchanged since the last run"
          + ("" if args.regrade else " (--regrade grades them again)")
          + (f"; {len(summary.absent)} not in this folder (their earlier grades stand)"
             if summary.absent else "")
          + (f"; {len(missing)} missing" if missing else "")))
    if summary.not_recorded:
        print(f"-k chose only some parts of {len(summary.not_recorded)} submission(s): their results "
              "are in pytest's report, not in the gradebook")


def _receipt_warnings(changes) -> None:
    """On stderr: whose recorded receipt time stayed against this run's worse source, and,
    loudly, whose recorded time this run replaced (grader.intake.receipts.merged)."""
    kept: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        if c.kept:
            kept.setdefault((c.recorded_from, c.given_from or "no time"), []).append(c.student)
    for (recorded, given), students in kept.items():
        warn(f"attnkit grade: kept the receipt times recorded from {recorded} for {', '.join(students)} "
             f"(this run had only {given}, a worse source)")
    changed = [c for c in changes if not c.kept]
    if changed:
        warn(f"attnkit grade: WARNING: this run changed the recorded receipt time of {len(changed)} "
             f"handin{'s' if len(changed) != 1 else ''}; lateness is now judged on the new time:")
    for c in changed:
        warn(f"  {c.student}: {c.recorded_at} ({c.recorded_from}) → {c.given_at} ({c.given_from})")


def add_grade_command(commands) -> None:
    grade = commands.add_parser(
        "grade", help="grade submitted notebooks in the sandbox, into the gradebook",
        description="Grade every submission in SUBMISSIONS (nbgrader's submitted/<student>/"
                    "<assignment>/ layout, or <student>.ipynb files) against the signed answer "
                    "key. Student code runs only in the sandbox and only its values come back; "
                    "each part is a pytest item, compared with the key's value and diagnosed "
                    "against known misconceptions. Results go to a SQLite gradebook; unchanged, "
                    "already graded submissions are skipped, so an interrupted run resumes.",
        epilog="example: attnkit grade problem_bank/assignments/example.yaml build/demo/submissions/submitted "
               "--build build/demo")
    grade.add_argument("assignment", metavar="ASSIGNMENT.yaml", nargs="?", help="the assignment spec (for its secret)")
    grade.add_argument("submissions", metavar="SUBMISSIONS", nargs="?", help="the folder of submitted notebooks")
    key_options(grade)
    grade.add_argument("--jobs", "-j", type=positive, default=os.cpu_count() or 1,
                       help="sandbox servers: submissions run at once (default: one per core, %(default)s here)")
    grade.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="wall-clock limit per run of a submission's code (default %(default)s)")
    grade.add_argument("--regrade", action="store_true", help="grade unchanged submissions again")
    grade.add_argument("--received", metavar="CSV",
                       help="when each student handed in, from the LMS (student_id and received_at or "
                            "submitted_at, ISO 8601 with an offset): wins over timestamp.txt and file times, "
                            "and is kept when a later run (--regrade) has only those")
    grade.add_argument("--roster", metavar="CSV",
                       help="the roster, for Canvas and Moodle downloads: its lms_id and lms_login columns "
                            "name the files' students")
    grade.add_argument("-k", metavar="EXPRESSION",
                       help="pytest's -k: only items matching, e.g. 's2026001 and weights'")
    grade.add_argument("--junitxml", metavar="PATH", help="also write pytest's JUnit XML report")
    grade.add_argument("-v", "--verbose", action="store_true", help="show pytest's own report")
    grade.add_argument("--explain-sandbox", action="store_true",
                       help="say which of the sandbox's walls hold on this machine, and exit")
    grade.add_argument("--insecure", action="store_true",
                       help="grade even where the sandbox cannot protect the grader's files "
                            "(no Landlock and not root): only for code you trust")
    cluster = grade.add_argument_group("grading on a Dask cluster (pip install 'attention-kit[cluster]')")
    cluster.add_argument("--cluster", metavar="WHERE",
                         help="grade on Dask workers: local:N (a LocalCluster of N worker processes on "
                              "loopback, no dashboard), tcp://HOST:PORT or tls://HOST:PORT (a running "
                              "scheduler; TLS as Dask's configuration sets it), or a scheduler file")
    cluster.add_argument("--shard-size", type=positive, default=100, metavar="N",
                         help="submissions per task sent to a worker (default %(default)s; a "
                              "worker's first is a quarter of it, the last ones shrink to a tenth)")
    grade.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    grade.set_defaults(handler=_grade, command="grade")
