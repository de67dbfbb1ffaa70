"""The course run's TA's list without the rest of the class summary (grader/run/course.py,
``attnkit grade --json``): the very list ``summary_json`` gives, whether the class's parts
must be read (follow-through credit, which a copied chain rests on) or need not be (none)."""

import shutil
import sqlite3

from formats.key_shape import assignment_id
from grader.reports.summary import summary_json
from grader.run.course import tas_list
from grader.store.gradebook import Gradebook
from grader.verdicts.follow_through import FOLLOW_THROUGH


def test_the_tas_list_alone_is_the_summarys(graded_class, tmp_path):
    _, key, shared, _ = graded_class(12)
    hw = assignment_id(key)
    path = tmp_path / "g.sqlite"
    shutil.copy(shared, path)
    with sqlite3.connect(path) as db:          # one part with follow-through credit, one without any
        (student,) = db.execute("SELECT student FROM results WHERE status = 'passed' "
                                "ORDER BY student LIMIT 1").fetchone()
        db.execute("UPDATE submissions SET issues = ? WHERE student = ?",    # and one handin to look at
                   ('[["check-cell-missing", "the check cell p1-check is missing"]]', student))
    for credit in (True, False):
        with sqlite3.connect(path) as db:
            db.execute("UPDATE results SET message = ? WHERE student = ? AND status = 'passed'",
                       (f"{FOLLOW_THROUGH} given your earlier answers" if credit else "", student))
        with Gradebook(path) as gradebook:
            assert gradebook.has_result(hw, ("passed", "partial"), FOLLOW_THROUGH) is credit
            look = tas_list(gradebook, key)
            assert look == summary_json(gradebook, key)["needs_a_look"]
            assert [(x["student"], x["code"]) for x in look] == [(student, "check-cell-missing")]
