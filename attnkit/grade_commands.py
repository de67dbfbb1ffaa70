"""``attnkit grade``, ``attnkit report`` and ``attnkit check``: parsing, printing and exit
codes; the work is in grader/.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from formats.key_shape import assignment_id, key_students
from formats.textfile import terminal_json, terminal_safe

from .build_commands import _fail as _fail_raw
from .build_commands import _positive
from .progress import Progress


def _fail(problems) -> int:
    """build_commands._fail, with each problem (which names files, keys, students) shown safely."""
    return _fail_raw([terminal_safe(p) for p in problems])


def _err(text: str) -> None:
    print(terminal_safe(text), file=sys.stderr)


def _key_and_gradebook(args) -> tuple[Path, Path] | None:
    if not args.key and not args.build:
        print(f"attnkit {args.command}: give --build DIR (the folder `attnkit build --out` wrote) "
              "or --key PATH (its instructor/answer_key.json)", file=sys.stderr)
        return None
    key = Path(args.key) if args.key else Path(args.build) / "instructor" / "answer_key.json"
    gradebook = Path(args.gradebook) if args.gradebook else key.parent / "gradebook.sqlite"
    return key, gradebook


def _load(args):
    """(assignment, key) or an exit code."""
    from formats.answer_key import AnswerKeyError, load_key
    from exercises.assignment import AssignmentError, load_assignment

    try:
        assignment = load_assignment(args.assignment, templates=False)
        key = load_key(args.key_path, assignment.secret())
    except AssignmentError as err:
        return _fail(err.problems)
    except AnswerKeyError as err:
        return _fail([str(err)])
    if assignment_id(key) != assignment.id:
        return _fail([f"{args.key_path}: this key is for assignment {assignment_id(key)!r}, "
                      f"not {assignment.id!r}"])
    return assignment, key


# --- grade -------------------------------------------------------------------------------

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


def _unprotected(args) -> int:
    """Refuse to run student code where the walls cannot keep it from the grader's own files
    (the key, the gradebook, the kit's code): grader.sandbox.walls.protected. 0 when fine."""
    from grader.sandbox.client import explain
    from grader.sandbox.walls import protected

    if args.insecure or protected(explain()):
        return 0
    print("attnkit grade: refusing to run student code here: neither Landlock (Linux ≥ 5.13) nor "
          "a uid of its own (run as root) can keep it from reading the answer key or writing "
          "the gradebook on this machine. See attnkit grade --explain-sandbox; --insecure grades "
          "anyway (only for code you trust).", file=sys.stderr)
    return 1


INTERRUPTED = ("attnkit grade: interrupted; what was graded is in the gradebook, and the next run "
               "picks up the rest")


def _grade(args) -> int:
    if args.explain_sandbox:
        return _explain()
    if not args.assignment or not args.submissions:
        print("attnkit grade: give ASSIGNMENT.yaml and SUBMISSIONS (or --explain-sandbox)",
              file=sys.stderr)
        return 2
    paths = _key_and_gradebook(args)
    if paths is None:
        return 2
    args.key_path, gradebook_path = paths
    loaded = _load(args)
    if isinstance(loaded, int):
        return loaded
    assignment, key = loaded
    if not Path(args.submissions).is_dir():
        return _fail([f"{args.submissions}: no such folder"])

    from grader.gradebook import Gradebook, GradebookError
    from grader.pipeline import grade_folder
    from grader.sandbox.client import Limits, Sandbox

    started = time.perf_counter()
    refused = _unprotected(args)
    if refused:
        return refused
    pytest_args = (["-k", args.k] if args.k else []) + \
        (["--junitxml", str(args.junitxml)] if args.junitxml else [])
    bar = (lambda total: Progress(total, "grade", enabled=None if not args.json else False))
    try:
        with Gradebook(gradebook_path) as gradebook, \
                Sandbox(args.jobs, Limits(wall_seconds=args.timeout)) as sandbox:
            summary = grade_folder(key, Path(args.submissions), gradebook, sandbox,
                                   servers=args.jobs, regrade=args.regrade, pytest_args=pytest_args,
                                   verbose=args.verbose, progress=bar)
            table = None
            if not args.json:
                from grader.reports import class_table
                table = class_table(gradebook, key)
    except GradebookError as err:
        return _fail([str(err)])
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    summary.seconds = time.perf_counter() - started     # (what the user waited: the sandbox's start too)
    if summary.interrupted:     # pytest caught a Ctrl-C: what was recorded stays, the rest waits
        print(INTERRUPTED, file=sys.stderr)
        return 130
    for failure in summary.failed:
        _err(f"attnkit grade: {failure}")
    if summary.code == 4:           # a usage error (a bad -k expression): pytest said why
        return 2
    if summary.code in (2, 3):      # errors during collection / pytest's internal error
        return _fail([f"grading stopped (pytest exit code {summary.code}); see above"])
    shown = summary.as_json(gradebook_path)
    if args.json:
        print(terminal_json(shown))
        return 0
    for issue in summary.issues:
        _err(f"note: {issue}")
    print(table)
    graded, missing = shown["graded"], summary.missing
    print(f"graded {graded} submission{'s' if graded != 1 else ''} in "
          f"{summary.seconds:.2f} s ({shown['submissions_per_second']:g}/s, {args.jobs} server"
          f"{'s' if args.jobs != 1 else ''}); {len(summary.skipped)} unchanged since the last run"
          + ("" if args.regrade else " (--regrade grades them again)")
          + (f"; {len(missing)} missing" if missing else ""))
    if summary.not_recorded:
        print(f"-k chose only some parts of {len(summary.not_recorded)} submission(s): their results "
              "are in pytest's report, not in the gradebook")
    where = f"--build {args.build}" if args.build else f"--key {args.key_path}"
    print(terminal_safe(f"gradebook: {gradebook_path}\nreports:   attnkit report {args.assignment} {where}"))
    return 0


# --- report ------------------------------------------------------------------------------

def _report(args) -> int:
    paths = _key_and_gradebook(args)
    if paths is None:
        return 2
    args.key_path, gradebook_path = paths
    loaded = _load(args)
    if isinstance(loaded, int):
        return loaded
    assignment, key = loaded
    if not gradebook_path.exists():
        return _fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])

    from grader.gradebook import Gradebook, GradebookError
    from grader.reports import class_table, summary_json

    out = Path(args.out) if args.out else args.key_path.parent.parent / "reports"
    try:
        with Gradebook(gradebook_path) as gradebook:
            outcome = _write_reports(gradebook, key, out, args)
            summary = summary_json(gradebook, key)
            table = class_table(gradebook, key) if args.table and not args.json else None
    except GradebookError as err:
        return _fail([str(err)])
    written, not_written, fallbacks = outcome
    for what, why in not_written.items():
        _err(f"attnkit report: {what} not written: {why}")
    for student, what in fallbacks.items():
        _err(f"attnkit report: feedback/{student}.html: could not draw {', '.join(what)}; "
             "a plainer page was written instead")
    code = 1 if not_written else 0
    if args.json:
        print(terminal_json({**summary, "written": written, "not_written": not_written,
                             "fallbacks": fallbacks}))
        return code
    if table is not None:
        print(table)
    students = summary["counts"]["students"]
    print(terminal_safe(f"reports for {assignment.id} ({students} student{'s' if students != 1 else ''}):"))
    for what, where in written.items():
        print(terminal_safe(f"  {what + ':':<12}{where}"))
    if args.reveal:
        print("  (feedback pages show the expected values: --reveal)")
    return code


def _write_reports(gradebook, key: dict, out: Path, args) -> tuple[dict, dict, dict]:
    """(written: output → where, not_written: output → why, fallbacks: student → what of
    their page could not be drawn). Each output is written on its own: one that fails (a full
    disk, an answer no renderer expected) is reported, and the others are still written."""
    from grader.gradebook import GradebookError
    from grader.reports import write_csv, write_feedback, write_gradescope

    fallbacks: dict[str, list[str]] = {}

    def feedback():
        progress = Progress(len(key_students(key)), "feedback", enabled=None if not args.json else False)
        try:
            fallbacks.update(write_feedback(gradebook, key, out / "feedback", reveal=args.reveal,
                                            progress=progress).fallbacks)
        finally:
            progress.close()

    outputs = (("csv", out / "grades.csv", lambda: write_csv(gradebook, key, out / "grades.csv")),
               ("gradescope", out / "gradescope" / "<student>" / "results.json",
                lambda: write_gradescope(gradebook, key, out / "gradescope")),
               ("feedback", out / "feedback" / "<student>.html", feedback))
    written, not_written = {}, {}
    for what, where, write in outputs:
        try:
            write()
        except GradebookError:
            raise                         # the gradebook itself: no output can be made
        except OSError as err:
            not_written[what] = f"{err.filename or where}: {err.strerror or err}"
        except Exception as err:  # noqa: BLE001 — a bug in one output must not cost the others
            not_written[what] = f"{type(err).__name__}: {err}"
        else:
            written[what] = str(where)
    return written, not_written, fallbacks


# --- check -------------------------------------------------------------------------------

def _check(args) -> int:
    from grader.sandbox.processes import Limits, start_servers

    # The sandbox server boots (a fresh interpreter importing NumPy) while this process imports
    # NumPy and reads the notebook: the two overlap, which is most of what keeps a check under
    # half a second. So the server starts before anything here imports NumPy (the client does).
    limits = Limits(wall_seconds=args.timeout)
    started = start_servers(1, limits)
    try:
        from grader.sandbox.client import Sandbox
    except BaseException:
        for server in started:
            server.kill()
        raise
    with Sandbox(1, limits, started=started) as sandbox:
        from grader.selfcheck import CheckError, self_check

        try:
            report = self_check(Path(args.notebook), sandbox=sandbox)
        except CheckError as err:
            return _fail([str(err)])
    if args.json:
        print(terminal_json(report.as_json()))
    else:
        print(report.table())
    return 0


def add_grade_commands(commands) -> None:
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
    _key_options(grade)
    grade.add_argument("--jobs", "-j", type=_positive, default=os.cpu_count() or 1,
                       help="sandbox servers: submissions run at once (default: one per core, %(default)s here)")
    grade.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="wall-clock limit per run of a submission's code (default %(default)s)")
    grade.add_argument("--regrade", action="store_true", help="grade unchanged submissions again")
    grade.add_argument("-k", metavar="EXPRESSION",
                       help="pytest's -k: only items matching, e.g. 's2026001 and weights'")
    grade.add_argument("--junitxml", metavar="PATH", help="also write pytest's JUnit XML report")
    grade.add_argument("-v", "--verbose", action="store_true", help="show pytest's own report")
    grade.add_argument("--explain-sandbox", action="store_true",
                       help="say which of the sandbox's walls hold on this machine, and exit")
    grade.add_argument("--insecure", action="store_true",
                       help="grade even where the sandbox cannot protect the grader's files "
                            "(no Landlock and not root): only for code you trust")
    grade.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    grade.set_defaults(handler=_grade, command="grade")

    report = commands.add_parser(
        "report", help="grades CSV, Gradescope results.json, per-student feedback pages",
        description="From the gradebook: grades.csv (one row per student, for an LMS), "
                    "gradescope/<student>/results.json, and feedback/<student>.html (offline, "
                    "self-contained: each part's result, the diagnosed mistake, heatmaps of the "
                    "student's attention matrices). Expected values appear only with --reveal.")
    report.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    _key_options(report)
    report.add_argument("--out", metavar="DIR", help="where to write (default: next to instructor/, in reports/)")
    report.add_argument("--reveal", action="store_true",
                        help="show the expected values in the feedback pages (after the deadline)")
    report.add_argument("--table", action="store_true", help="also print the class table")
    report.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    report.set_defaults(handler=_report, command="report")

    check = commands.add_parser(
        "check", help="a student's self-check: run a notebook's visible checks in the sandbox",
        description="Run your notebook's answer cells and its visible checks in the same sandbox "
                    "grading uses, and print a table of every part. It checks the form of your "
                    "answers (shape, rows that sum to 1, …), never their values, and never shows an "
                    "expected value: the hidden checks run at grading.")
    check.add_argument("notebook", metavar="NOTEBOOK", help="your .ipynb file")
    check.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="wall-clock limit for running your cells (default %(default)s)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(handler=_check, command="check")


def _key_options(parser) -> None:
    parser.add_argument("--build", metavar="DIR", help="the folder `attnkit build --out` wrote")
    parser.add_argument("--key", metavar="PATH", help="the answer key (default: DIR/instructor/answer_key.json)")
    parser.add_argument("--gradebook", metavar="PATH",
                        help="the SQLite gradebook (default: gradebook.sqlite beside the key)")
