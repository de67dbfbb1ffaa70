"""A course's grading run, the one call ``attnkit grade`` makes: the folder graded
(``grade_folder``), the hand grades re-scored where a rebuilt key changed a rubric's points
(``grader.store.marks.rescore``), then the class read once after the re-scoring — the whole
class summary (``summary_json``) when the class table is shown, the TA's list alone when it
is not (``--json``): the same list either way (``tas_list``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from formats.key_shape import assignment_id

from grader.reports.summary import class_table, copied_issues, look_list, summary_json
from grader.run import garbage
from grader.run.pipeline import GradeOptions, RunSummary, grade_folder
from grader.store.grades import class_grades, class_look
from grader.store.look import needs_a_look
from grader.store.marks import rescore
from grader.verdicts.follow_through import FOLLOW_THROUGH


@dataclass
class GradedCourse:
    summary: RunSummary             # what the run did; its ``look`` is the class's TA's list
    rescored: list                    # grader.store.marks.LogEntry: hand grades a changed rubric re-scored
    class_summary: dict | None        # summary_json after the re-scoring (None: the table was not asked for)
    key: dict

    def table(self) -> str:
        """The class table, from that one read (made only when text is printed)."""
        return class_table(None, self.key, summary=self.class_summary)

    def look(self) -> str:
        """The TA's list as text, "" when it is empty."""
        return look_list({"needs_a_look": self.summary.look})


def grade_course(key: dict, folder: Path, gradebook, sandbox, options: GradeOptions,
                 table: bool = True) -> GradedCourse:
    """Grade ``folder`` (as ``grade_folder`` with ``options``), re-score the hand grades to the
    key's rubrics, and read the class once for its TA's list and, with ``table``, its table."""
    summary = grade_folder(key, folder, gradebook, sandbox, replace(options, review=False))
    rescored = rescore(gradebook, key, grader="attnkit grade")
    with garbage.class_pass():
        if table:
            class_summary = summary_json(gradebook, key, options.deadline)
            summary.look = class_summary["needs_a_look"]
        else:
            class_summary, summary.look = None, tas_list(gradebook, key, options.deadline)
    return GradedCourse(summary, rescored, class_summary, key)


def tas_list(gradebook, key: dict, deadline=None) -> list[dict]:
    """``summary_json(…)["needs_a_look"]`` without the rest of the summary: every handin's own
    issues (``class_look``: the handins' rows, no part read) and the copied chains, which rest
    on follow-through credit. A class where no part earned any has none, and its results are
    never read; otherwise the class's grades are read for the chains, as the summary does."""
    carried = gradebook.has_result(assignment_id(key), ("passed", "partial"), FOLLOW_THROUGH)
    if not carried:
        return needs_a_look([look for look in class_look(gradebook, key, deadline) if look[2]])
    grades = class_grades(gradebook, key, deadline)
    copied, _ = copied_issues(gradebook, key, grades, None)
    return needs_a_look([(s.id, s.path, look) for s in grades
                         if (look := [*s.look, *copied.get(s.id, ())])])
