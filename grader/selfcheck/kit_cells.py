"""The notebook's kit cells as the self-check sees them: which grade ids are present, in
what order, and which problem each cell belongs to. The rows and the notes both read it."""

from __future__ import annotations

from formats.cells import parse_grade_id


class KitCells:
    """The notebook's kit cells as this check sees them: which grade ids are present, in what
    order, and the problem each cell belongs to (that of the last kit cell at or before it,
    as grading reads it)."""

    def __init__(self, submission, problems):
        ids = {p["id"] for p in problems}
        self.order = [c.grade_id for c in submission.cells if c.grade_id]
        self.present = set(self.order)
        self.problem_of: dict[str, str] = {}
        current = None
        for c in submission.cells:
            gid = parse_grade_id(c.grade_id) if c.grade_id else None
            if gid is not None and gid.problem in ids:
                current = gid.problem
            if current is not None:
                self.problem_of.setdefault(c.label, current)
