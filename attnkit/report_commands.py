"""``attnkit report``: the gradebook's reports written, parsing and printing only; the work
is grader.reports.summary'.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

from pathlib import Path

from formats.key_shape import key_students
from formats.textfile import terminal_json, terminal_safe

from .course_files import fail, key_options, open_course, warn
from .progress import Progress

# The LMS files `--lms` asks for, and where each goes in the report folder.
LMS_FILES = {"canvas": "canvas.csv", "moodle": "moodle.csv"}


def _report(args) -> int:
    course = open_course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path, args.roster_students = course
    if not gradebook_path.exists():
        return fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])

    from grader.forensics.flags import class_forensics, flags_of
    from grader.store.gradebook import Gradebook, GradebookError
    from grader.store.grades import class_grades
    from grader.store.marks import rescore
    from grader.reports.summary import class_table, summary_json

    out = Path(args.out) if args.out else args.key_path.parent.parent / "reports"
    try:
        with Gradebook(gradebook_path) as gradebook:
            rescored = rescore(gradebook, key, grader="attnkit report")
            grades = class_grades(gradebook, key, assignment.deadline)
            found = class_forensics(gradebook, key, grades, assignment.deadline,
                                    code=bool(getattr(args, "dashboard", False)))
            summary = summary_json(gradebook, key, assignment.deadline, grades=grades, flags=flags_of(found))
            outcome = _write_reports(gradebook, key, out, args, assignment.deadline,
                                     known={"grades": grades, "found": found, "summary": summary})
            table = (class_table(gradebook, key, summary=summary) if args.table and not args.json
                     else None)
    except GradebookError as err:
        return fail([str(err)])
    written, not_written, fallbacks, notes = outcome
    if summary.get("not_checked"):
        warn(f"attnkit report: {summary['not_checked']}")
    for entry in rescored:
        warn(f"attnkit report: re-scored {entry.student} {entry.problem}/{entry.part}: {entry.note}")
    for what, why in not_written.items():
        warn(f"attnkit report: {what} not written: {why}")
    for what, lines in notes.items():
        for line in lines:
            warn(f"attnkit report: {line}")
    for student, what in fallbacks.items():
        warn(f"attnkit report: feedback/{student}.html: could not draw {', '.join(what)}; "
             "a plainer page was written instead")
    code = 1 if not_written else 0
    if args.json:
        print(terminal_json({**summary, "written": written, "not_written": not_written,
                             "fallbacks": fallbacks, "export_notes": notes,
                             "rescored": [{"student": e.student, "problem": e.problem, "part": e.part,
                                           "note": e.note} for e in rescored]}))
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


def _write_reports(gradebook, key: dict, out: Path, args, deadline=None,
                   known: dict | None = None) -> tuple[dict, dict, dict, dict]:
    """(written: output → where, not_written: output → why, fallbacks: student → what of
    their page could not be drawn, notes: output → what the instructor must know before
    importing it). Each output is written on its own: one that fails (a full disk, an answer
    no renderer expected, a title Canvas would ignore) is reported, and the others are
    still written. ``known``: the class's grades, forensics and summary, worked out once."""
    from grader.reports import exports
    from grader.store.gradebook import GradebookError
    from grader.store.grades import class_grades
    from grader.reports.summary import write_feedback

    fallbacks: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    roster = getattr(args, "roster_students", None)
    known = known or {}
    grades_of: list = [known["grades"]] if "grades" in known else []

    def grades():
        if not grades_of:
            grades_of.append(class_grades(gradebook, key, deadline))
        return grades_of[0]

    def feedback():
        progress = Progress(len(key_students(key)), "feedback", enabled=None if not args.json else False)
        try:
            fallbacks.update(write_feedback(gradebook, key, out / "feedback", reveal=args.reveal,
                                            progress=progress, deadline=deadline).fallbacks)
        finally:
            progress.close()

    def lms_file(what: str, write, **options):
        def run():
            export = write(grades(), key, out / LMS_FILES[what], roster,
                           missing_as_zero=args.missing_as_zero, partial=args.partial, **options)
            if export.notes:
                notes[what] = list(export.notes)
        return what, out / LMS_FILES[what], run

    outputs = [("csv", out / "grades.csv",
                lambda: exports.write_grades_csv(grades(), key, out / "grades.csv", roster,
                                                 missing_as_zero=args.missing_as_zero)),
               ("gradescope", out / "gradescope" / "<student>" / "results.json",
                lambda: exports.write_gradescope(grades(), key, out / "gradescope",
                                                 visibility=args.gradescope_visibility)),
               ("feedback", out / "feedback" / "<student>.html", feedback)]
    if getattr(args, "dashboard", False):
        # the instructors' page: beside the reports, never among the students' feedback pages
        from grader.reports import dashboard
        outputs.append(("dashboard", out / "dashboard.html",
                        lambda: dashboard.write_dashboard(gradebook, key, out / "dashboard.html", deadline,
                                                          **known)))
    lms = dict.fromkeys(args.lms or ())               # in the order asked, each once
    if "canvas" in lms:
        outputs.append(lms_file("canvas", exports.write_canvas_csv, title=args.canvas_title,
                                canvas_assignment_id=args.canvas_id))
    if "moodle" in lms:
        outputs.append(lms_file("moodle", exports.write_moodle_csv, identify_by=args.moodle_id))
    written, not_written = {}, {}
    for what, where, write in outputs:
        try:
            write()
        except GradebookError:
            raise                         # the gradebook itself: no output can be made
        except OSError as err:
            not_written[what] = f"{err.filename or where}: {err.strerror or err}"
        except Exception as err:  # noqa: BLE001 — a bug in one output must not cost the others
            not_written[what] = str(err) if isinstance(err, exports.ExportError) else f"{type(err).__name__}: {err}"
        else:
            written[what] = str(where)
    return written, not_written, fallbacks, notes


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
    lms.add_argument("--lms", action="append", choices=sorted(LMS_FILES), metavar="LMS",
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
