"""The records intake hands on: a notebook file found (``Found``, or ``Sent`` when it
travelled as bytes), and a submission as read (``Submission``, its ``Cell``s)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.intake.issues import Issue


@dataclass(frozen=True)
class Found:
    """A notebook file on disk and the student its place names (folder name or file stem;
    "" for a Canvas or Moodle name, which ``match`` maps through its ``lms_*`` ids).

    ``shown`` is the path relative to the folder that was searched, terminal-safe: short
    enough for a message, precise enough to find the file. ``received_at`` is when it was
    handed in (timezone-aware; None when unknown) and ``received_from`` where that time
    comes from (receipts' ``RECEIVED_FROM_TIMESTAMP`` or ``RECEIVED_FROM_MTIME``); ``notes`` are
    issues about the file found before it is read (a bad timestamp, a late mark, how it was
    paired), carried into its ``Submission``."""
    student: str
    path: Path
    shown: str
    layout: str                      # "nbgrader" (<student>/<assignment>/x.ipynb), "release"
                                     # (<student>/<assignment>.ipynb), "folder" (<student>/x.ipynb),
                                     # "flat" (<student>.ipynb, <student> (1).ipynb), "canvas", "moodle"
    lms_id: str = ""                 # the user id a Canvas or Moodle name holds
    lms_login: str = ""              # the login a Canvas name starts with
    lms_name: str = ""               # the full name a Moodle name starts with
    lms_late: bool = False           # Canvas's _LATE mark
    received_at: datetime | None = None
    received_from: str = ""
    notes: tuple[Issue, ...] = ()


@dataclass(frozen=True)
class Sent(Found):
    """A notebook that travelled as bytes (a cluster shard's, read at the client the bounded
    way ``read_submission`` reads): it is read from ``data``, and ``path`` is where the
    client found it, never opened here."""
    data: bytes = b""


@dataclass(frozen=True)
class Cell:
    """One cell of a submission, in notebook order.

    ``grade_id`` is the kit cell this is (None for a cell the student added): the nbgrader
    grade id when the metadata has one, else the cell id when it names a kit cell of the
    student's key entry (``matched_by`` says which)."""
    index: int                       # 0-based position in the notebook
    cell_type: str                   # "code" | "markdown" | "raw" | whatever the file says
    source: str
    grade_id: str | None = None
    matched_by: str | None = None    # "nbgrader" | "cell id" | None
    locked: bool | None = None       # locked as the kit locks it (editable false, nbgrader locked);
                                     # None: the cell has no metadata to say

    @property
    def label(self) -> str:
        """How messages and the sandbox name this cell: its grade id, else its position."""
        return self.grade_id or f"cell {self.index + 1}"


@dataclass(frozen=True)
class Submission:
    """A notebook as read: never an exception, at worst no cells and an issue saying why.

    ``content_hash`` is the SHA-256 of the file's bytes (hex), so an unchanged file is not
    graded twice; ``record`` is the notebook's ``attnkit`` metadata (the variant record the
    build wrote) when it is an object, else None."""
    student: str
    path: Path
    shown: str
    content_hash: str
    cells: tuple[Cell, ...]
    record: dict | None
    issues: tuple[Issue, ...]
    nbformat: int | None = None
    received_at: datetime | None = None      # as on its Found
    received_from: str = ""
    lms_late: bool = False
