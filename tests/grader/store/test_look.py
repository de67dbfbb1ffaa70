"""What needs a human look, and what a student may read of it."""

from grader.forensics.flags import COPIED_CHAIN
from grader.store.rows import SubmissionRow
from grader.intake.issues import ISSUE_CODES
from grader.run.program import NOTE_CODES
from grader.store.look import (INSTRUCTOR_HAS_A_NOTE, INSTRUCTOR_ONLY, NEEDS_A_LOOK, RECHECK,
                               REPLACED_ON_TIME, flagged, needs_a_look, student_notes)


def row(student, *issues):
    return SubmissionRow("hw", student, f"{student}.ipynb", "h", "graded",
                         notes=tuple(m for _, m in issues) + ("cell 3 raised NameError",),
                         issues=issues)


def test_every_code_is_one_the_grader_writes():
    known = set(ISSUE_CODES) | set(NOTE_CODES) | {"late", "grader-error", COPIED_CHAIN, RECHECK, REPLACED_ON_TIME}
    assert NEEDS_A_LOOK <= known and INSTRUCTOR_ONLY <= known


def test_the_ta_list_names_each_flagged_issue_with_its_file():
    rows = [row("b", ("wrong-student", "b.ipynb: this notebook was issued to student a")),
            row("a", ("invalid-json", "a.ipynb: not valid JSON"), ("magics-stripped", "a.ipynb: % lines")),
            row("c")]
    assert needs_a_look((r.student, r.path, flagged(r.issues)) for r in rows) == [
        {"student": "a", "file": "a.ipynb", "code": "invalid-json", "message": "a.ipynb: not valid JSON"},
        {"student": "b", "file": "b.ipynb", "code": "wrong-student",
         "message": "b.ipynb: this notebook was issued to student a"}]


def test_a_student_never_reads_a_note_about_another_student():
    r = row("b", ("wrong-student", "b.ipynb: this notebook was issued to student a"))
    shown = student_notes(r.notes, r.issues)
    assert shown == ["cell 3 raised NameError", INSTRUCTOR_HAS_A_NOTE]
    assert not any("student a" in n for n in shown)
    plain = row("c", ("invalid-json", "c.ipynb: not valid JSON"))
    assert student_notes(plain.notes, plain.issues) == list(plain.notes)     # their own file's trouble


def test_the_ta_list_leaves_out_nothing_it_is_given():
    """What needs a look is decided once (StudentGrades.look, class_look): the list shows all of it."""
    look = [(RECHECK, "motivation/static: the answer changed since it was marked"), ("late", "received 1 day late")]
    assert [(x["code"], x["message"]) for x in needs_a_look([("a", "a.ipynb", look)])] == look
