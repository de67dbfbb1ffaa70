"""From a submission to the steps the sandbox runs: what runs, in what order, with which givens.

The program replays the notebook the way its author would have run it top to bottom, with
three differences that keep grading fair and safe:

- the kit's own setup runs first, whatever the setup cell says now, with ``show_heatmap``
  a no-op (the sandbox has neither matplotlib nor a display);
- a problem's givens come from the answer key (a ``set`` step at its givens cell's place),
  never from the notebook, so an edited givens cell changes nothing;
- locked cells the student only reads (prompts, visible checks, heatmaps, worked
  solutions) never run; answer cells, the cells the student added and the ``--example``
  cells (data only) run in notebook order.

After the last cell of a problem a ``send`` step asks for its answer variables (a ``call``
step runs an implement problem's function on the hidden cases instead). The key's expected
values never enter a step: the sandbox gets only the student's code, the givens and the
hidden inputs.

Pure: no I/O, the same program for the same submission and entry.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from formats.cells import MARKDOWN_PLACEHOLDER, SETUP
from formats.key_shape import IMPLEMENT, givens_of, gradings, is_free_response, kind, problem_record
from formats.serialize import decode_names

from grader.budget import UNLIMITED, Budget
from grader.intake.givens import PARSING, assigns_exactly, expected_givens_source
from grader.intake.issues import NOT_READ, Issue, listed
from grader.intake.key_checks import kit_cells
from grader.intake.records import Submission
from grader.sandbox.protocol import call_step, exec_step, send_step, set_step

# Issues of the submission that change what is graded (the others, such as an edited givens
# cell or stripped metadata, are worth knowing but change nothing).
GRADING_ISSUES = NOT_READ | frozenset({
    "bad-cell", "no-kit-cells", "kit-cell-missing", "duplicate-grade-id", "wrong-student",
    "wrong-assignment", "wrong-variant", "duplicate",
})

# The program's own notes (beside the submission's issues, grader.intake.issues.ISSUE_CODES); a
# test holds this list to the codes the module emits.
NOTE_CODES = {
    "magics-stripped": "lines starting with % or ! were replaced by `pass` (IPython only)",
    "answer-not-code": "an answer cell turned into Markdown or raw: not run",
}

_HEATMAP_DEF = "\n\ndef show_heatmap("


def _grading_setup() -> str:
    """The kit's setup cell with ``show_heatmap`` replaced by a no-op of the same signature
    (it is the setup's last definition: everything from its ``def`` on is replaced)."""
    cut = SETUP.index(_HEATMAP_DEF)
    return (SETUP[:cut] + "\n\n\ndef show_heatmap(matrix, title, ylabel=\"row\", xlabel=\"column\"):\n"
            '    """Does nothing at grading: there is no display to draw on."""\n'
            "    return None\n")


GRADING_SETUP = _grading_setup()

# What never runs: the student reads these; the setup is the kit's own; givens come from the key.
_NEVER_RUN = frozenset({"setup", "header", "prompt", "givens", "check", "heatmap", "solution", "tests"})


@dataclass(frozen=True)
class Program:
    """What the sandbox runs for one submission, and what grading needs beside it.

    ``steps``: the job's steps (built by grader.sandbox.protocol); ``problem_of_step``:
    for each step, the problem it belongs to (None for the setup and cells before the first
    problem), so a crash or an error can be charged to the right problem; ``free_text``:
    problem → part → the student's Markdown answer ('' when unanswered) for free-response
    problems; ``notes``: issues that affect grading, the submission's and the program's own
    (magics left out, an answer cell that is not code)."""
    steps: list[dict]
    problem_of_step: list[str | None]
    free_text: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[Issue] = field(default_factory=list)


def problem_order(key: dict) -> list[str]:
    """The assignment's problem ids in the order the notebook shows them (the key's entries
    are sorted by id, so the order lives in the key's assignment summary)."""
    return [p["id"] for p in key.get("assignment", {}).get("problems", []) if isinstance(p, dict)]


# --- magics --------------------------------------------------------------------------------

# A line starting with % or ! (searched in a whole cell, it also finds every such line). The
# indent is whitespace *but newlines*: with \s*, every line start would scan on across all the
# blank lines after it, and a cell of newlines cost time quadratic in its length.
_MAGIC = re.compile(r"^([^\S\n]*)[%!]", re.MULTILINE)


# Beyond this many characters a cell is not parsed to see whether its % lines are magics:
# CPython's parser takes ~250 bytes of memory per byte of source (a 6 MB cell cost the grader
# 2.9 GB and 11 s), and a cell's length is the student's choice. Real cells are a few kB.
PARSED_AT_MOST = 64 * 1024


def strip_magics(source: str) -> tuple[str, bool]:
    """(source, whether lines were replaced): IPython magics and shell escapes (``%matplotlib
    inline``, ``!pip install …``) are SyntaxErrors to ``exec``. Source that already parses is
    left alone (a ``%`` line inside a string, or continuing an expression, stays); else each
    line starting with % or ! is replaced by ``pass`` at its indent, so the block around it and
    the line numbers of errors stay as the student sees them. A cell longer than
    ``PARSED_AT_MOST`` is not parsed: its magic lines are replaced all the same."""
    if not _MAGIC.search(source):
        return source, False     # no line to replace: the sandbox reports any syntax error
    if len(source) <= PARSED_AT_MOST:
        try:
            with PARSING:
                ast.parse(source)    # parsing only: nothing of the student's runs on this side
            return source, False
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            pass
    lines = source.split("\n")
    out = [(m.group(1) + "pass") if (m := _MAGIC.match(line)) else line for line in lines]
    return "\n".join(out), out != lines


def free_answer(text: str) -> str:
    """A Markdown answer without nbgrader's placeholder line: '' means unanswered."""
    return "\n".join(line for line in text.split("\n") if line.strip() != MARKDOWN_PLACEHOLDER).strip()


# --- building the steps --------------------------------------------------------------------

class _Builder:
    def __init__(self, submission: Submission, entry: dict, order: list[str], budget: Budget):
        self.submission = submission
        self.entry = entry
        self.order = order
        self.steps: list[dict] = []
        self.problems: list[str | None] = []
        self.notes: list[Issue] = [i for i in submission.issues if i.code in GRADING_ISSUES]
        self.givens = {pid: decode_names(givens_of(problem_record(entry, pid))) for pid in order}
        self.owner: dict[str, str] = {}       # given name → the problem whose value it holds now
        self.given_set: set[str] = set()      # problems whose givens were set at least once
        self._issued: dict[str, int] = {}     # problem → length of its givens cell as built
        self.magic_cells: list[str] = []      # cells whose % and ! lines were left out
        self.budget = budget

    def issued_length(self, pid: str) -> int:
        """How long ``pid``'s givens cell was as built (made only when a cell is recognised by
        its content: most notebooks keep their ids)."""
        if pid not in self._issued:
            self._issued[pid] = len(expected_givens_source(self.givens[pid]))
        return self._issued[pid]

    def add(self, step: dict, problem: str | None) -> None:
        self.steps.append(step)
        self.problems.append(problem)

    def set_givens(self, pid: str, names=None) -> None:
        values = dict(self.givens[pid])
        if names is not None:
            values = {n: values[n] for n in names}
        if not values:
            return
        self.add(set_step(values), pid)
        self.given_set.add(pid)
        self.owner.update(dict.fromkeys(values, pid))

    def ensure_givens(self, pid: str) -> None:
        """Before running a cell of ``pid``: its givens set, and those that another problem's
        givens overwrote since (Q, K, V are shared between problems) set back, as the
        notebook asks the student to do ("run this cell again when you come back")."""
        if pid not in self.given_set:
            self.set_givens(pid)
            return
        stolen = [n for n in self.givens[pid] if self.owner.get(n) != pid]
        if stolen:
            self.set_givens(pid, stolen)

    def run(self, cell, pid: str | None) -> None:
        if cell.cell_type != "code" or not cell.source.strip():
            return
        self.budget.check("building the program")
        source, stripped = strip_magics(cell.source)
        if stripped:
            self.magic_cells.append(cell.label)
        if pid is not None:
            self.ensure_givens(pid)
        self.add(exec_step(cell.label, source), pid)

    def note_magics(self) -> None:
        """One note for every cell whose magics were left out (a notebook may have thousands)."""
        cells = self.magic_cells
        if not cells:
            return
        self.notes.append(Issue("magics-stripped", f"{self.submission.shown}: {listed(cells)}: lines "
                                                   "starting with % or ! (IPython magics, shell "
                                                   "commands) cannot run at grading and were left out",
                                cells[0] if len(cells) == 1 else None))

    def collect(self, pid: str) -> None:
        record = problem_record(self.entry, pid)
        if kind(record) == IMPLEMENT:
            cases = [decode_names(case.get("args", {})) for case in record.get("tests", [])]
            self.add(call_step(pid, record.get("function", ""), cases), pid)
        elif not is_free_response(record):
            names = list(record.get("answer_names", {}).values())
            if names:
                self.add(send_step(pid, names), pid)


def _order(submission: Submission, entry: dict, order) -> list[str]:
    problems = entry.get("problems", {})
    if order is None:
        record = submission.record or {}
        in_record = record.get("problems") if isinstance(record.get("problems"), list) else []
        order = [p.get("id") for p in in_record if isinstance(p, dict) and isinstance(p.get("id"), str)]
    chosen = [pid for pid in dict.fromkeys(order) if pid in problems]
    return chosen + [pid for pid in problems if pid not in chosen]


def job_for(submission: Submission, entry: dict, *, order: list[str] | None = None,
            budget: Budget = UNLIMITED) -> Program:
    """The program for ``submission`` graded against the key ``entry``.

    ``order``: the assignment's problem ids in notebook order (``problem_order(key)``);
    by default the order the notebook's record lists, then the entry's. ``budget`` is checked
    before each cell (OverBudget: the submission cost the grader too much)."""
    order = _order(submission, entry, order)
    builder = _Builder(submission, entry, order, budget)
    builder.add(exec_step("setup", GRADING_SETUP), None)
    kit = kit_cells(entry)
    known = [c for c in submission.cells if c.grade_id in kit]
    if known:
        _in_notebook_order(builder, submission, kit)
    else:
        _by_name_only(builder, submission)
    builder.note_magics()
    free = _free_text(submission, entry, kit, builder)
    return Program(builder.steps, builder.problems, free, builder.notes)


def _in_notebook_order(builder: _Builder, submission: Submission, kit) -> None:
    cells = submission.cells
    belongs, current = [], None
    for c in cells:
        k = kit.get(c.grade_id) if c.grade_id else None
        if k is not None:
            current = k.problem
        belongs.append(current)      # a cell the student added: the problem of the kit cell before it
    last = {pid: i for i, pid in enumerate(belongs) if pid is not None}
    has_givens_cell = {kit[c.grade_id].problem for c in cells
                       if c.grade_id in kit and kit[c.grade_id].role == "givens"}
    for i, c in enumerate(cells):
        pid = belongs[i]
        k = kit.get(c.grade_id) if c.grade_id else None
        if pid is not None and pid not in builder.given_set and pid not in has_givens_cell:
            builder.set_givens(pid)                   # no givens cell: before the problem's first cell
        if k is not None and k.role == "givens":
            builder.set_givens(pid)
        elif k is None or k.role not in _NEVER_RUN:
            if k is not None and k.role == "answer" and c.cell_type != "code" \
                    and not is_free_response(problem_record(builder.entry, pid)):
                builder.notes.append(Issue("answer-not-code", f"{submission.shown}: the answer cell "
                                                              f"{c.grade_id} is a {c.cell_type} cell, "
                                                              "not code: it was not run", c.grade_id))
            builder.run(c, pid)
        if pid is not None and last.get(pid) == i:
            builder.collect(pid)
    for pid in builder.order:                        # problems none of whose cells are left
        if pid not in last:
            builder.set_givens(pid)
            builder.collect(pid)


def _givens_of(cell, builder: _Builder, used: set[str]) -> str | None:
    """With no kit cell identifiable: the problem whose givens cell this is, recognised by
    content (exactly that problem's given names assigned, values as issued or not)."""
    if cell.cell_type != "code":
        return None
    for pid in builder.order:
        givens = builder.givens[pid]
        if givens and pid not in used and assigns_exactly(cell.source, givens, builder.issued_length(pid)):
            return pid
    return None


def _by_name_only(builder: _Builder, submission: Submission) -> None:
    """No kit cell identifiable (a notebook rebuilt by hand, cells pasted into a new one):
    every problem's givens first, in problem order; every code cell in order, except that a
    cell recognisably a givens cell is replaced by the key's givens; then every problem's
    values."""
    for pid in builder.order:
        builder.set_givens(pid)
    used: set[str] = set()
    for c in submission.cells:
        pid = _givens_of(c, builder, used)
        if pid is not None:
            used.add(pid)
            builder.set_givens(pid)
        else:
            builder.run(c, None)
    for pid in builder.order:
        builder.collect(pid)


def _free_text(submission: Submission, entry: dict, kit, builder: _Builder) -> dict[str, dict[str, str]]:
    texts: dict[str, dict[str, list[str]]] = {}
    for c in submission.cells:
        k = kit.get(c.grade_id) if c.grade_id else None
        if k is not None and k.role == "answer" and is_free_response(problem_record(entry, k.problem)):
            text = free_answer(c.source)
            if text:
                texts.setdefault(k.problem, {}).setdefault(k.part, []).append(text)
    free = {}
    for pid in builder.order:
        record = problem_record(entry, pid)
        if is_free_response(record):
            free[pid] = {g["id"]: "\n\n".join(texts.get(pid, {}).get(g["id"], []))
                         for g in gradings(record, [])}
    return free
