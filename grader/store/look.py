"""What needs a human look, and what only the instructor may read.

A submission's issues (grader.intake.issues's ``ISSUE_CODES``, the program's ``NOTE_CODES``) are
stored with it (``SubmissionRow.issues``: code and message). Some mean the grade may not be
what the student earned and a person should look before it stands: a file that could not be
read, kit cells deleted or edited, a notebook issued to someone else or to no one, copies and
renamed files, late work, a hand grade to look at again. ``attnkit grade`` lists those first,
and the class table marks them.

There is one definition of what needs a look: a student's ``look`` (grader.store.grades'
``StudentGrades.look``, and ``class_look`` for the TA's list after a run), made of the issues
``flagged`` keeps and the look codes the grades add. The class table's ``look``, the TA's list
(``needs_a_look``) and ``report --json`` all read that list, and filter nothing more.

Some of those messages speak about *another* student, or suspect one ("this notebook was issued
to student u014"): they are for the instructor only. A student's feedback shows what was
graded and that the instructor has a note — never the note itself (``student_notes``).
"""

from __future__ import annotations

from collections.abc import Iterable

RECHECK = "mark-recheck"                 # a hand grade to look at again (grader.store.marks)
REPLACED_ON_TIME = "replaced-on-time"    # a late handin counts over an on-time one that scored more

# Issues that need a person to look before the grade stands.
NEEDS_A_LOOK = frozenset({
    # the file could not be read (or not all of it): the grade is 0 or partial for a reason
    "unreadable", "symlink", "too-large", "too-complex", "too-many-cells", "empty-file", "not-text",
    "invalid-json", "not-a-notebook", "not-nbformat-4", "no-cells", "bad-cell",
    # the kit's cells
    "no-kit-cells", "kit-cell-missing", "check-cell-missing", "duplicate-grade-id", "givens-edited",
    "answer-not-code",
    # whose notebook is it
    "no-record", "wrong-student", "wrong-assignment", "wrong-variant", "earlier-variant",
    # files and names
    "duplicate", "several-notebooks", "ambiguous", "renamed", "paired-by-record",
    # when it came
    "bad-timestamp", "late-by-name", "late", REPLACED_ON_TIME,
    # the grader's own failure on the counted handin; a hand grade to look at again
    "grader-error", RECHECK,
    # follow-through credit on answers forensics flags as another student's (grader.forensics.flags)
    "copied-chain",
})

# Issues whose messages are for the instructor only: they name or suspect another student, or
# say the student did something they may not have done (a rebuilt key, a copied file).
INSTRUCTOR_ONLY = frozenset({
    "wrong-student", "wrong-assignment", "wrong-variant", "no-record", "givens-edited",
    "duplicate", "several-notebooks", "ambiguous", "paired-by-record", "renamed", "copied-chain",
})

INSTRUCTOR_HAS_A_NOTE = ("Your instructor has a note about this submission and may look at it "
                         "before the grade is final.")


def flagged(issues: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (code, message) pairs of ``issues`` that need a human look, in their order."""
    return [(code, message) for code, message in issues if code in NEEDS_A_LOOK]


def needs_a_look(submissions) -> list[dict]:
    """For the TA: ``submissions`` — (student, file, look), ``look`` what needs a look of
    theirs (``StudentGrades.look``, ``class_look``; already chosen: nothing is left out here) —
    as {student, file, code, message} objects, by student then in the order found."""
    return [{"student": student, "file": file, "code": code, "message": message}
            for student, file, look in sorted(submissions, key=lambda s: s[0])
            for code, message in look]


def student_notes(notes: Iterable[str], issues: Iterable[tuple[str, str]]) -> list[str]:
    """The notes a student may read: every note but those of instructor-only issues, which
    become one line saying the instructor has a note."""
    notes = list(notes)
    private = {message for code, message in issues if code in INSTRUCTOR_ONLY}
    shown = [n for n in notes if n not in private]
    if len(shown) < len(notes):
        shown.append(INSTRUCTOR_HAS_A_NOTE)
    return shown
