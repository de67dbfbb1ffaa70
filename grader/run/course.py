"""A course's grading run, the one call ``attnkit grade`` makes: the folder graded
(``grade_folder``), the hand grades re-scored where a rebuilt key changed a rubric's points
(``grader.store.marks.rescore``), then the class read once (``summary_json``) — the class
table and the TA's list both come from that one read, taken after the re-scoring, whether
the command prints text or ``--json``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from grader.reports.summary import class_table, look_list, summary_json
from grader.run import garbage
from grader.run.pipeline import GradeOptions, RunSummary, grade_folder
from grader.store.marks import rescore


@dataclass
class GradedCourse:
    summary: RunSummary             # what the run did; its ``look`` is the class's TA's list
    rescored: list                    # grader.store.marks.LogEntry: hand grades a changed rubric re-scored
    class_summary: dict               # grader.reports.summary.summary_json, after the re-scoring
    key: dict

    def table(self) -> str:
        """The class table, from that one read (made only when text is printed)."""
        return class_table(None, self.key, summary=self.class_summary)

    def look(self) -> str:
        """The TA's list as text, "" when it is empty."""
        return look_list(self.class_summary)


def grade_course(key: dict, folder: Path, gradebook, sandbox, options: GradeOptions) -> GradedCourse:
    """Grade ``folder`` (as ``grade_folder`` with ``options``), re-score the hand grades to the
    key's rubrics, and read the class once for its table and its TA's list."""
    summary = grade_folder(key, folder, gradebook, sandbox, replace(options, review=False))
    rescored = rescore(gradebook, key, grader="attnkit grade")
    with garbage.class_pass():
        class_summary = summary_json(gradebook, key, options.deadline)
    summary.look = class_summary["needs_a_look"]
    return GradedCourse(summary, rescored, class_summary, key)
