"""``attnkit report``: the gradebook's reports written, parsing and printing only; the work
is grader.reports.outputs.write_reports.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

import sys
from pathlib import Path

from formats.key_shape import key_students
from formats.textfile import terminal_json_chunks, terminal_safe

from .course_files import fail, key_options, open_course, warn
from .progress import Progress

# grader.reports.outputs.LMS_FILES' keys (named here too: --help must not wait for NumPy)
LMS_CHOICES = ("canvas", "moodle")


def _report(args) -> int:
    course = open_course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path, roster = course
    if not gradebook_path.exists():
        return fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])

    from grader.reports.outputs import ReportOptions, write_reports
    from grader.store.gradebook import GradebookError

    out = Path(args.out) if args.out else args.key_path.parent.parent / "reports"
    options = ReportOptions(reveal=args.reveal, table=args.table and not args.json,
                            dashboard=bool(args.dashboard), lms=tuple(args.lms or ()), roster=roster,
                            missing_as_zero=args.missing_as_zero, partial=args.partial,
                            canvas_title=args.canvas_title, canvas_id=args.canvas_id,
                            moodle_id=args.moodle_id, gradescope_visibility=args.gradescope_visibility)
    progress = Progress(len(key_students(key)), "feedback", enabled=None if not args.json else False)
    try:
        reports = write_reports(gradebook_path, key, out, options, assignment.deadline, progress=progress)
    except GradebookError as err:
        return fail([str(err)])
    finally:
        progress.close()
    _warn_of(reports)
    code = 1 if reports.not_written else 0
    if args.json:
        # (written as it is made: a large class's summary is never one text in memory)
        for chunk in terminal_json_chunks({
                **reports.summary, "written": reports.written, "not_written": reports.not_written,
                "fallbacks": reports.fallbacks, "export_notes": reports.notes,
                "rescored": [{"student": e.student, "problem": e.problem, "part": e.part,
                              "note": e.note} for e in reports.rescored]}):
            sys.stdout.write(chunk)
        print()
        return code
    if reports.table is not None:
        print(reports.table)
    students = reports.summary["counts"]["students"]
    print(terminal_safe(f"reports for {assignment.id} ({students} student{'s' if students != 1 else ''}):"))
    for what, where in reports.written.items():
        print(terminal_safe(f"  {what + ':':<12}{where}"))
    if args.reveal:
        print("  (feedback pages show the expected values: --reveal)")
    return code


def _warn_of(reports) -> None:
    """On stderr, before the summary: what the instructor must know about these reports."""
    if reports.summary.get("not_checked"):
        warn(f"attnkit report: {reports.summary['not_checked']}")
    for entry in reports.rescored:
        warn(f"attnkit report: re-scored {entry.student} {entry.problem}/{entry.part}: {entry.note}")
    for what, why in reports.not_written.items():
        warn(f"attnkit report: {what} not written: {why}")
    for what, lines in reports.notes.items():
        for line in lines:
            warn(f"attnkit report: {line}")
    for student, what in reports.fallbacks.items():
        warn(f"attnkit report: feedback/{student}.html: could not draw {', '.join(what)}; "
             "a plainer page was written instead")


def add_report_command(commands) -> None:
    report = commands.add_parser(
        "report", help="grades CSV, Gradescope results.json, per-student feedback pages, LMS imports",
        description="From the gradebook: grades.csv (one row per student: points so far, "
                    "status graded/incomplete/error/missing, pending hand-graded points), "
                    "gradescope/<student>/results.json, and feedback/<student>.html (offline, "
                    "self-contained: each part's result, the diagnosed mistake, heatmaps of the "
                    "student's attention matrices); with --lms, canvas.csv (Canvas: Grades > "
                    "Import) and moodle.csv (Moodle: Grader report > Import > CSV file). A "
                    "missing student's grade is blank, and an LMS gets no grade for a student "
                    "whose hand-graded parts are pending, unless asked. Expected values appear "
                    "only with --reveal. With --dashboard, dashboard.html: the class on one offline "
                    "page for instructors.")
    report.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    key_options(report)
    report.add_argument("--out", metavar="DIR", help="where to write (default: next to instructor/, in reports/)")
    report.add_argument("--reveal", action="store_true",
                        help="show the expected values in the feedback pages (after the deadline)")
    report.add_argument("--table", action="store_true", help="also print the class table")
    report.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    report.add_argument("--dashboard", action="store_true",
                        help="also write dashboard.html, for instructors only: the score distribution, "
                             "item analysis, misconceptions, pools, forensics and the commonest wrong "
                             "matrices on one self-contained page (opens offline, makes no request)")
    lms = report.add_argument_group("LMS imports")
    lms.add_argument("--lms", action="append", choices=LMS_CHOICES, metavar="LMS",
                     help="also write the import file of this LMS: canvas (canvas.csv), moodle "
                          "(moodle.csv); give it once per LMS")
    lms.add_argument("--roster", metavar="PATH",
                     help="the roster CSV: names and emails as the LMS spells them, and its "
                          "lms_id/lms_login columns (Canvas's ID and SIS Login ID, Moodle's username)")
    lms.add_argument("--missing-as-zero", action="store_true",
                     help="give a student without a submission 0 (default: blank, no grade)")
    lms.add_argument("--partial", action="store_true",
                     help="export the points so far for a student whose hand-graded parts are "
                          "pending (default: no grade in canvas.csv and moodle.csv until every "
                          "part is graded)")
    lms.add_argument("--canvas-title", metavar="TITLE",
                     help="the assignment's name in Canvas (default: its title; Canvas ignores "
                          "a column whose name holds \"final\")")
    lms.add_argument("--canvas-id", metavar="N",
                     help="the Canvas assignment's number (…/assignments/N): grades go to that "
                          "assignment (default: one named \"<title> (<assignment id>)\", created by "
                          "the first import)")
    lms.add_argument("--moodle-id", choices=("email", "idnumber", "username", "userid"), default="email",
                     help="how Moodle finds each student: email address (default), ID number "
                          "(the student id), username (the roster's lms_login) or user id (its lms_id)")
    report.add_argument("--gradescope-visibility", default="visible",
                        choices=("visible", "hidden", "after_due_date", "after_published"),
                        help="when students see results.json's tests and summary (default: visible)")
    report.set_defaults(handler=_report, command="report")
