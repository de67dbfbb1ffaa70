"""``attnkit report``: the gradebook's reports written, parsing and printing only; the work
is grader.reports'.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

from pathlib import Path

from formats.key_shape import key_students
from formats.textfile import terminal_json, terminal_safe

from .course_files import fail, key_and_gradebook, key_options, load, warn
from .progress import Progress


def _report(args) -> int:
    paths = key_and_gradebook(args)
    if paths is None:
        return 2
    args.key_path, gradebook_path = paths
    loaded = load(args)
    if isinstance(loaded, int):
        return loaded
    assignment, key = loaded
    if not gradebook_path.exists():
        return fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])

    from grader.gradebook import Gradebook, GradebookError
    from grader.reports import class_table, summary_json

    out = Path(args.out) if args.out else args.key_path.parent.parent / "reports"
    try:
        with Gradebook(gradebook_path) as gradebook:
            outcome = _write_reports(gradebook, key, out, args)
            summary = summary_json(gradebook, key)
            table = class_table(gradebook, key) if args.table and not args.json else None
    except GradebookError as err:
        return fail([str(err)])
    written, not_written, fallbacks = outcome
    for what, why in not_written.items():
        warn(f"attnkit report: {what} not written: {why}")
    for student, what in fallbacks.items():
        warn(f"attnkit report: feedback/{student}.html: could not draw {', '.join(what)}; "
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


def add_report_command(commands) -> None:
    report = commands.add_parser(
        "report", help="grades CSV, Gradescope results.json, per-student feedback pages",
        description="From the gradebook: grades.csv (one row per student, for an LMS), "
                    "gradescope/<student>/results.json, and feedback/<student>.html (offline, "
                    "self-contained: each part's result, the diagnosed mistake, heatmaps of the "
                    "student's attention matrices). Expected values appear only with --reveal.")
    report.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    key_options(report)
    report.add_argument("--out", metavar="DIR", help="where to write (default: next to instructor/, in reports/)")
    report.add_argument("--reveal", action="store_true",
                        help="show the expected values in the feedback pages (after the deadline)")
    report.add_argument("--table", action="store_true", help="also print the class table")
    report.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    report.set_defaults(handler=_report, command="report")
