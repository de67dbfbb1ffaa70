"""One student's notebook as it is being filled: the build folder's release and instructor
notebooks, the release notebook's answer cells, and the draft a profile fills."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from formats import key_shape as shape
from formats.cells import LETTERS, grade_id
from formats.literals import assignment
from formats.serialize import from_jsonable
from synthetic.oracle import LOST


class SyntheticError(ValueError):
    """The build folder does not hold what a synthetic submission is made from."""


@dataclass
class Answer:
    """An answer cell of the release notebook."""
    index: int
    cell_id: str
    problem: str
    part: str | None          # None for an implement problem's function cell
    kind: str
    variable: str | None


@dataclass
class Draft:
    student: str
    entry: dict
    notebook: dict
    answers: list[Answer]
    solutions: dict            # cell id → the instructor's answer (markers removed)
    values: dict = field(default_factory=dict)      # (problem, part) → value, LOST or text
    modes: dict = field(default_factory=dict)       # implement problem → mode
    notes: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    notebook_of: str = ""
    raw: bytes | None = None   # written as is (a broken file)
    # False where a correct grader withholds follow-through credit: a notebook issued to
    # someone else, or whose givens were edited (its chains follow numbers not this student's)
    follow_through: bool = True

    def cell(self, answer: Answer) -> dict:
        return self.notebook["cells"][answer.index]

    def numeric(self) -> list[Answer]:
        return [a for a in self.answers if a.kind == "numeric"]

    def record(self, answer: Answer) -> dict:
        """The key's record of the answer's problem."""
        return shape.problem_record(self.entry, answer.problem)

    def expected_value(self, answer: Answer):
        return from_jsonable(self.record(answer)["answers"][answer.part])

    def write(self, answer: Answer, value) -> None:
        """The answer cell assigns ``value`` to its variable."""
        self.cell(answer)["source"] = assignment(answer.variable, value)
        self.values[(answer.problem, answer.part)] = value

    def lose(self, answer: Answer, source: str, note: str) -> None:
        """The cell holds ``source``, which never assigns the part's variable."""
        self.cell(answer)["source"] = source
        self.values[(answer.problem, answer.part)] = LOST
        if answer.kind == shape.IMPLEMENT:
            self.modes[answer.problem] = "lost"
        self.notes.append(f"{answer.cell_id}: {note}")


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _read_notebook(path: Path) -> dict:
    try:
        notebook = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise SyntheticError(f"{path}: no such notebook (run the build first)") from None
    for cell in notebook["cells"]:
        cell["source"] = _source(cell)
    return notebook


def _solution_text(source: str) -> str:
    """An instructor cell's answer as a student types it: the solution markers dropped."""
    return "\n".join(line for line in source.split("\n")
                     if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)


def answer_cells(notebook: dict, entry: dict) -> list[Answer]:
    """The notebook's answer cells of the entry's problems, found by their grade ids."""
    owners = {}
    for pid, record in shape.problem_records(entry):
        if shape.kind(record) == shape.IMPLEMENT:
            owners[grade_id(pid, record["function"])] = (pid, None, shape.IMPLEMENT, None)
        else:
            names = shape.answer_names(record)
            for g in shape.gradings(record):
                part = shape.part_id(g)
                owners[grade_id(pid, part)] = (pid, part, shape.kind(record), names.get(part))
    found = []
    for i, cell in enumerate(notebook["cells"]):
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        gid = nbgrader.get("grade_id")
        if nbgrader.get("solution") and gid in owners:
            found.append(Answer(i, cell["id"], *owners[gid]))
    return found


def _plausible_text(record: dict, part: str, student: str) -> str:
    """A short free-response answer in the rubric's words: the texts of the first k of its
    positive items, k drawn from the student and the part (so a class writes a few
    different answers, some complete, some not, and the identical ones form groups)."""
    points = dict(shape.graded_parts(record)).get(part, 0.0)
    rubric = shape.rubric_of(record, part, points)
    good = [i.text for i in rubric.items if i.points > 0]
    if not good:
        text = " ".join(rubric.guide.split())
        return (text[:400].rsplit(" ", 1)[0] + " …" if len(text) > 400 else text) or _FALLBACK
    k = 1 + int(hashlib.sha256(f"{student}/{part}".encode()).hexdigest()[:8], 16) % len(good)
    return " ".join(" ".join(t.split()) for t in good[:k])


_FALLBACK = "Attention lets every position weigh every other one, with weights it computes."


class BuildFolder:
    """The build folder's notebooks, read once per student."""

    def __init__(self, build_dir: Path, key: dict):
        self.dir = Path(build_dir)
        self.key = key
        self.assignment = shape.assignment_id(key)
        self._cache: dict = {}

    def paths(self, student: str) -> tuple[Path, Path]:
        entry = shape.entry_for(self.key, student)
        release = self.dir / entry["notebook"]
        instructor = self.dir / "instructor" / "notebooks" / student / release.name
        return release, instructor

    def draft(self, student: str) -> Draft:
        """The student's release notebook with its answer cells still empty."""
        if student not in self._cache:
            release, instructor = self.paths(student)
            notebook = _read_notebook(release)
            solved = _read_notebook(instructor)
            solutions = {c["id"]: _solution_text(c["source"]) for c in solved["cells"]
                         if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
            self._cache[student] = (notebook, solutions)
        notebook, solutions = self._cache[student]
        entry = shape.entry_for(self.key, student)
        notebook = copy.deepcopy(notebook)
        return Draft(student, entry, notebook, answer_cells(notebook, entry), solutions,
                     notebook_of=student)


def fill_correct(draft: Draft) -> None:
    """Every answer cell as the instructor wrote it; free responses get a short text."""
    for a in draft.answers:
        cell = draft.cell(a)
        record = draft.record(a)
        if a.kind == shape.FREE_RESPONSE:
            text = _plausible_text(record, a.part, draft.student)
            cell["source"] = text
            draft.values[(a.problem, a.part)] = text
            continue
        if a.cell_id not in draft.solutions:
            raise SyntheticError(f"{draft.student}: the instructor notebook has no answer for {a.cell_id}")
        cell["source"] = draft.solutions[a.cell_id]
        if a.kind == shape.IMPLEMENT:
            draft.modes[a.problem] = "correct"
        elif a.kind == "choice":
            draft.values[(a.problem, a.part)] = LETTERS[int(from_jsonable(record["answers"][a.part]))]
        else:
            draft.values[(a.problem, a.part)] = draft.expected_value(a)
