"""The hostile corpus's kit (tests/scenarios/test_hostile.py): the parts the cases aim at,
the notebook edits they make, the context a case is made in, what it expects, and the
graded corpus the tests read."""

from __future__ import annotations

import json
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from formats.literals import assignment
from formats.serialize import from_jsonable
from synthetic import submission_path


ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "hostile corpus: a course secret that must reach no gradebook byte, 7f3c9a"
WORKERS = 2
TIMEOUT = 2.0          # wall seconds per try of a submission: each looping case pays it once
PASSED, FAILED, MISSING = "passed", "failed", "missing"

STD = ("scaling", "std")             # the part most cases sabotage: a scalar, mid-notebook
VARIANCE = ("scaling", "variance")   # an integer answer
WEIGHTS = ("dog_ran_fast", "weights")
Z_THE = ("dog_ran_fast", "z_the")
EXP_SCORES = ("masks", "exp_scores")
COUNTS = ("bert_mlm", "counts")      # a choice
STATIC = ("motivation", "static")    # a free response


# --- editing notebooks ----------------------------------------------------------------------

def source_of(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def index_of(nb: dict, gid: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if grade_id(c) == gid)


def cell(nb: dict, gid: str) -> dict:
    return nb["cells"][index_of(nb, gid)]


def answer_id(part: tuple[str, str]) -> str:
    return f"{part[0]}-{part[1]}"


def set_source(nb: dict, gid: str, code: str) -> None:
    cell(nb, gid)["source"] = code


def prepend(nb: dict, gid: str, code: str) -> None:
    c = cell(nb, gid)
    c["source"] = code.rstrip("\n") + "\n" + source_of(c)


def insert_after(nb: dict, gid: str, code: str, cell_type: str = "code") -> None:
    """A cell the student added after the kit cell ``gid``."""
    new = {"cell_type": cell_type, "id": f"added-{uuid.uuid4().hex[:8]}", "metadata": {},
           "source": code}
    if cell_type == "code":
        new.update(execution_count=None, outputs=[])
    nb["cells"].insert(index_of(nb, gid) + 1, new)


# --- the context a case is made in --------------------------------------------------------

@dataclass
class Ctx:
    """What a case may use to write its notebook: the student's correct notebook (a copy to
    edit), their key entry, and the paths an attacker would aim at."""
    student: str
    notebook: dict
    entry: dict
    key: dict
    key_path: Path
    gradebook: Path
    own_path: Path              # where this notebook is handed in
    other: str                  # another student (a control)
    other_path: Path            # their handed-in notebook
    other_notebook: dict        # their correct notebook
    canary: Path                # a file in /tmp nobody should be able to create
    port: int                   # a TCP listener of the trusted side on 127.0.0.1

    def variable(self, part) -> str:
        return self.entry["problems"][part[0]]["answer_names"][part[1]]

    def expected(self, part):
        return from_jsonable(self.entry["problems"][part[0]]["answers"][part[1]])

    def write(self, part, value) -> None:
        """The answer cell of ``part`` assigns ``value``."""
        set_source(self.notebook, answer_id(part), assignment(self.variable(part), value))

    def numeric_parts(self, pid: str) -> list[tuple[str, str]]:
        record = self.entry["problems"][pid]
        assert record["kind"] == "numeric"
        return [(pid, g["id"]) for g in record["grading"]]

    def families(self, pid: str) -> list[tuple[str, str]]:
        record = self.entry["problems"][pid]
        assert record["kind"] == "implement"
        return [(pid, g["family"]) for g in record["grading"]]

    def implement_cell(self) -> str:
        record = self.entry["problems"]["implement"]
        return f"implement-{record['function']}"


@dataclass(frozen=True)
class Expect:
    """A case's exact outcome. ``parts``: (problem, part) → the status it must have; every
    other part must come out as the honest notebook's (passed, or manual for free
    responses). ``every``: every part has this status (a notebook that cannot be read)."""
    parts: dict = field(default_factory=dict)
    every: str | None = None
    says: dict = field(default_factory=dict)      # (problem, part) → text its message holds
    notes: tuple = ()                             # text some note of the submission holds
    check: Callable | None = None                 # check(corpus, student): anything else


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable              # make(ctx) → the notebook (dict) or the file's bytes
    expect: Callable            # expect(ctx) → Expect
    why: str = ""
    hole: str = ""              # a hole this case shows: its test is xfail(strict=True)


# --- the attacks --------------------------------------------------------------------------

def report_cell(variable: str, attempts: str) -> str:
    """Code that runs each attempt (a list of (label, zero-argument function)) and assigns a
    line per attempt to ``variable``: 'label: OK …' or 'label: ErrorType: message'."""
    return f'''\
_report = []
{attempts}
for _label, _attempt in _attempts:
    try:
        _report.append(f"{{_label}}: OK {{_attempt()!r:.300}}")
    except BaseException as _err:
        _report.append(f"{{_label}}: {{type(_err).__name__}}: {{_err}}")
{variable} = "\\n".join(_report)
'''


def answer_of(corpus, student, part) -> str:
    answer = corpus.rows(student)[part].answer
    assert isinstance(answer, str), answer
    return answer


def every_attempt_refused(corpus, student, part, labels) -> None:
    answer = answer_of(corpus, student, part)
    lines = answer.split("\n")
    assert [line.split(":")[0] for line in lines] == list(labels), answer
    assert all(": OK " not in line for line in lines), answer


# --- grading the corpus -------------------------------------------------------------------------

@dataclass
class Corpus:
    code: int                        # run_pytest's exit code
    key: dict
    key_path: Path
    gradebook: Path
    canary: Path
    listener: socket.socket
    manifest: dict                   # the honest (correct) notebooks' expected outcomes
    student_of: dict                 # case name → student
    expected: dict                   # case name → Expect
    controls: list
    submissions: dict                # student → SubmissionRow
    results: dict                    # student → [ResultRow]
    recorded: list
    before: dict                     # path → bytes of every handed-in notebook (and the key)
    folder: Path

    def rows(self, student: str) -> dict:
        return {(r.problem, r.part): r for r in self.results.get(student, [])}

    def honest(self, student: str) -> dict:
        return {(pid, part): v for pid, parts in self.manifest["students"][student]["expected"].items()
                for part, v in parts.items()}

    def submission_of(self, student: str) -> Path:
        return submission_path(self.folder, "nbgrader", self.key["assignment"]["id"], student)

    def gradebook_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.gradebook.parent.glob(self.gradebook.name + "*")))


def read_notebook(path: Path) -> dict:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for c in notebook["cells"]:
        c["source"] = source_of(c)
    return notebook
