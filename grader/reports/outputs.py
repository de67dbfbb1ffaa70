"""A course's reports, the one call ``attnkit report`` makes: the hand grades re-scored, the
class read once (grades, forensics, summary), then each output written on its own — grades.csv,
Gradescope's results.json, the feedback pages, and when asked the dashboard and LMS imports —
so one that fails (a full disk, an answer no renderer expected, a title Canvas would ignore) is
reported and the others are still written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader.forensics.flags import class_forensics, flags_of
from grader.reports import exports
from grader.reports.feedback_page import write_feedback
from grader.reports.summary import class_table, summary_json
from grader.run import garbage
from grader.store.gradebook import Gradebook, GradebookError
from grader.store.grades import class_grades
from grader.store.marks import rescore

# The LMS files ``lms`` asks for, and where each goes in the report folder.
LMS_FILES = {"canvas": "canvas.csv", "moodle": "moodle.csv"}


@dataclass(frozen=True)
class ReportOptions:
    """What to write, and how (``attnkit report``'s options)."""
    reveal: bool = False                  # feedback pages show the expected values
    table: bool = False                   # also make the class table
    dashboard: bool = False               # also write dashboard.html (instructors only)
    lms: tuple[str, ...] = ()             # LMS_FILES' keys, in the order asked
    roster: tuple | None = None           # the roster's students, as the LMS spells them
    missing_as_zero: bool = False
    partial: bool = False
    canvas_title: str | None = None
    canvas_id: str | None = None
    moodle_id: str = "email"
    gradescope_visibility: str = "visible"


@dataclass
class Reports:
    """What ``write_reports`` did."""
    summary: dict                         # grader.reports.summary.summary_json
    rescored: list                        # grader.store.marks.LogEntry: hand grades re-scored
    written: dict = field(default_factory=dict)      # output → where
    not_written: dict = field(default_factory=dict)  # output → why
    fallbacks: dict = field(default_factory=dict)    # student → what of their page could not be drawn
    notes: dict = field(default_factory=dict)        # output → what to know before importing it
    table: str | None = None              # the class table, when asked


def write_reports(gradebook_path: Path, key: dict, out: Path, options: ReportOptions,
                  deadline=None, progress=None) -> Reports:
    """Re-score the hand grades to the key's rubrics, read the class once, and write every
    output ``options`` asks for into ``out``. ``progress`` (optional) advances once per
    feedback page. Raises GradebookError when the gradebook itself cannot be read."""
    with Gradebook(gradebook_path) as gradebook, garbage.class_pass():
        rescored = rescore(gradebook, key, grader="attnkit report")
        grades = class_grades(gradebook, key, deadline)
        found = class_forensics(gradebook, key, grades, deadline, code=options.dashboard)
        summary = summary_json(gradebook, key, deadline, grades=grades, flags=flags_of(found))
        reports = Reports(summary, rescored)
        for what, where, write in _outputs(gradebook, key, out, options, deadline, reports,
                                           known={"grades": grades, "found": found, "summary": summary},
                                           progress=progress):
            _write_one(reports, what, where, write)
        if options.table:
            reports.table = class_table(gradebook, key, summary=summary)
    return reports


def _write_one(reports: Reports, what: str, where: Path, write: Callable[[], None]) -> None:
    """One output written, or why not recorded: its failure never costs the others."""
    try:
        write()
    except GradebookError:
        raise                         # the gradebook itself: no output can be made
    except OSError as err:
        reports.not_written[what] = f"{err.filename or where}: {err.strerror or err}"
    except Exception as err:  # noqa: BLE001 — a bug in one output must not cost the others
        reports.not_written[what] = (str(err) if isinstance(err, exports.ExportError)
                                     else f"{type(err).__name__}: {err}")
    else:
        reports.written[what] = str(where)


def _outputs(gradebook, key: dict, out: Path, options: ReportOptions, deadline, reports: Reports,
             known: dict, progress) -> list[tuple[str, Path, Callable[[], None]]]:
    """(output, where it goes, how to write it), in the order they are written."""
    grades = known["grades"]

    def feedback():
        reports.fallbacks.update(write_feedback(gradebook, key, out / "feedback", reveal=options.reveal,
                                                progress=progress, deadline=deadline).fallbacks)

    def lms_file(what: str, write, **extra):
        def run():
            export = write(grades, key, out / LMS_FILES[what], options.roster,
                           missing_as_zero=options.missing_as_zero, partial=options.partial, **extra)
            if export.notes:
                reports.notes[what] = list(export.notes)
        return what, out / LMS_FILES[what], run

    outputs = [("csv", out / "grades.csv",
                lambda: exports.write_grades_csv(grades, key, out / "grades.csv", options.roster,
                                                 missing_as_zero=options.missing_as_zero)),
               ("gradescope", out / "gradescope" / "<student>" / "results.json",
                lambda: exports.write_gradescope(grades, key, out / "gradescope",
                                                 visibility=options.gradescope_visibility)),
               ("feedback", out / "feedback" / "<student>.html", feedback)]
    if options.dashboard:
        # the instructors' page: beside the reports, never among the students' feedback pages
        from grader.reports import dashboard
        outputs.append(("dashboard", out / "dashboard.html",
                        lambda: dashboard.write_dashboard(gradebook, key, out / "dashboard.html", deadline,
                                                          **known)))
    lms = dict.fromkeys(options.lms)                  # in the order asked, each once
    if "canvas" in lms:
        outputs.append(lms_file("canvas", exports.write_canvas_csv, title=options.canvas_title,
                                canvas_assignment_id=options.canvas_id))
    if "moodle" in lms:
        outputs.append(lms_file("moodle", exports.write_moodle_csv, identify_by=options.moodle_id))
    return outputs
