"""The issues intake reports about a submission: their codes, the ``Issue`` record, and the
helpers that keep an issue's message one line whatever the notebook holds.

Issue codes (``ISSUE_CODES``) are part of the interface: the gradebook stores them, the
feedback explains them, and tests pin their messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.intake.limits import MAX_BYTES, MAX_CELLS, MAX_VALUES

_LISTED = 8                       # names, cells or positions a message lists before "and N more"

ISSUE_CODES = {
    # reading the file
    "unreadable": "the file could not be read (permissions, a folder, it vanished)",
    "symlink": "a symbolic link: never followed (it could point at another student's notebook)",
    "too-large": f"larger than {MAX_BYTES // (1024 * 1024)} MiB: not read",
    "too-complex": f"more than {MAX_VALUES:,} JSON values: not parsed",
    "too-many-cells": f"more than {MAX_CELLS:,} cells: nothing in it is run",
    "empty-file": "0 bytes",
    "not-text": "not UTF-8 text",
    "invalid-json": "not valid JSON (line and column given)",
    "not-a-notebook": "valid JSON, but not an object",
    "not-nbformat-4": "nbformat 3, missing or another version: nothing in it is run",
    "no-cells": "no list of cells, or an empty one",
    "bad-cell": "a cell that is not an object or has an unreadable source: skipped",
    # the kit's cells
    "metadata-stripped": "kit cells without nbgrader metadata, matched by their cell ids",
    "no-kit-cells": "no kit cell identifiable: every code cell runs, values read by name",
    "kit-cell-missing": "an answer, givens or example cell is not in the notebook",
    "check-cell-missing": "a part's check cell is not in the notebook: grading never runs it, but the "
                          "student worked without the part's form check",
    "duplicate-grade-id": "a grade id on two cells (a copied cell): both kept, in order",
    "givens-edited": "a locked givens cell was changed (harmless: givens come from the key)",
    # the notebook's variant record
    "no-record": "no attnkit variant record in the notebook metadata",
    "earlier-variant": "a variant the key issued before a rebuild gave the problem new numbers",
    "wrong-student": "the record names another student",
    "wrong-assignment": "the record names another assignment",
    "wrong-variant": "the record's variant digests differ from the key's",
    "practice-notebook": "a practice notebook (its record says practice): never graded, nothing in it is run",
    # when it was handed in
    "bad-timestamp": "nbgrader's timestamp.txt beside it is not a time: the file's modification time is used",
    "late-by-name": "Canvas marked the submission late (_LATE in its file name)",
    # pairing files with students (``match``)
    "duplicate": "copies of one notebook (name, name (1), …) in one place: the newest by modification "
                 "time is graded, the others are listed",
    "several-notebooks": "one student's folder holds notebooks of unrelated names: one is graded (named "
                         "like the assignment, else whose record names the student, else the newest)",
    "ambiguous": "notebooks in different places (or one only by its variant record) claim one student: "
                 "one is graded, the others are listed",
    "renamed": "the only notebook in a student's folder, not named <assignment>.ipynb: graded",
    "paired-by-record": "its file or folder name names no student; its variant record does: graded for them",
    "unknown-student": "a folder or file name that is not a student of the key, and no variant record "
                       "names one: not graded",
    "unmatched": "a Canvas or Moodle download whose user id and login are no student's (roster or key), "
                 "and no variant record names one: not graded",
}


# The issues that leave a submission without cells: nothing of it is run.
NOT_READ = frozenset({"unreadable", "symlink", "too-large", "too-complex", "too-many-cells",
                      "empty-file", "not-text", "invalid-json", "not-a-notebook", "not-nbformat-4",
                      "no-cells", "practice-notebook"})


@dataclass(frozen=True)
class Issue:
    """Something about a submission the instructor (and usually the student) should know.

    ``code`` is one of ``ISSUE_CODES``; ``message`` names the file (and the cell, when there
    is one); ``cell`` is that cell's label (a grade id, or "cell N" for a cell the student
    added) so feedback can attach the issue to a part."""
    code: str
    message: str
    cell: str | None = None

    def __str__(self) -> str:
        return self.message


def short(text: str, limit: int = 64) -> str:
    """Text from the notebook, cut to fit in a message."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _and(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def listed(items, joiner: str = "and") -> str:
    """Like ``_and``, but a long list (its length is the student's choice) names its first
    few, each cut short, and counts the rest: a message stays a line, whatever the notebook
    holds. ``joiner`` "," lists them with commas only."""
    shown = items if len(items) <= _LISTED + 1 else items[:_LISTED]
    words = [short(str(i)) for i in shown] + ([f"{len(items) - _LISTED:,} more"] if shown is not items else [])
    return _and(words) if joiner == "and" else ", ".join(words)
