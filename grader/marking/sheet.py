"""The grading sheet: hand grades exported to a CSV a TA fills in a spreadsheet or an editor,
and imported back — the marking page's work without a browser.

One row per student with a counted handin, per part: ``submission, problem, part, version,
rubric_version, answer``, one column per rubric item (``<part>:<item id>``: ``1`` when
applied), ``adjustment, comment, reason``, and, for reading only, ``score, max_score``.
A row's ``version`` is its grade's version at the export (0: never graded); the import
compares each row with the grade *as it was exported* (``marks.history`` holds every
version), so a sheet never reverts work done in the gradebook since:

- the row equals the exported state: nothing to import (even if the gradebook moved on);
- the row changed and the gradebook did not: a change, saved from the exported version
  (``marks.save`` refuses it if someone saves the part between the plan and the import);
- both changed: refused, with what to do.

A blank row is "not graded yet". To record 0 points with no item applied, write ``0`` in
the adjustment. A sheet cannot withdraw a grade (blanking a graded row is a problem): the
marking page clears grades.

The file is read as a spreadsheet re-saves it: a byte-order mark, CRLF line endings, ``;``
or tab separators, ``TRUE``/``x``/``✓`` in an item cell, a decimal comma. Text cells are
written formula-safe (``exports.safe_cell``) and read back without the guard.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from formats.deadline import Deadline
from formats.key_shape import assignment_id, entry_for, rubric_of
from formats.rubric import Rubric
from formats.textfile import ProblemsError, printable, read_utf8, write_atomic

from ..exports import csv_text, safe_cell
from ..gradebook import Gradebook, ResultRow
from ..marks import (COMMENT_LIMIT, HAND, OVERRIDE, Conflict, Edit, MarkError, Target, history,
                     part_rubric, save)
from .queue import Answer, markable_parts, normalised, part_queue, part_record

HEAD = ("submission", "problem", "part", "version", "rubric_version", "answer")
TAIL = ("adjustment", "comment", "reason", "score", "max_score")
MAX_BYTES = 128 * 1024 * 1024     # a class of thousands with long answers fits; a stray dump does not
MAX_ROWS = 100_000
PROBLEM_LIMIT = 200               # problems listed; the rest are counted
SHOWN = 40                        # characters of a cell quoted in a message
SPREADSHEET_CELL = 32_000         # Excel keeps 32,767 characters of a cell: a longer answer comes back cut
APPLIED = frozenset({"1", "x", "✓", "✔", "yes", "y", "true"})
NOT_APPLIED = frozenset({"", "0", "no", "n", "false"})
_VERSION = re.compile(r"\d{1,9}(?:\.0*)?")


class SheetError(ProblemsError):
    """A sheet that cannot be read at all (not UTF-8, not CSV, empty, no header), or a plan
    with problems given to ``apply_import``; each line reads 'SHEET[:line]: message'."""


# --- a part's grade as the sheet sees it ----------------------------------------------------

@dataclass(frozen=True)
class State:
    """What a row says about a grade. Two rows mean the same grade when their states are
    equal; ``graded`` False is a part not graded (no mark, or a cleared one)."""

    graded: bool = False
    items: frozenset = frozenset()
    adjustment: float = 0.0
    comment: str = ""
    reason: str = ""


def _lines(text: str) -> str:
    """Line endings as the gradebook keeps them: a spreadsheet writes CRLF inside a cell."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _state_of(mark: dict | None) -> State:
    """The state of a mark (``Mark.as_json()`` or a log entry's ``mark``; None: never marked)."""
    if not mark or not mark.get("active"):
        return State()
    return State(True, frozenset(mark.get("items", {})), float(mark.get("adjustment", 0.0)),
                 _lines(printable(str(mark.get("comment", "")))), printable(str(mark.get("reason", ""))).strip())


def _num(x: float) -> str:
    """A number as the sheet writes it: the shortest text that reads back as the same float,
    integers without '.0' (so an unedited cell compares equal after a round trip)."""
    text = repr(float(x) + 0.0)
    return text[:-2] if text.endswith(".0") else text


# --- export --------------------------------------------------------------------------------

def _key_parts(key: dict) -> list[tuple[str, str, Rubric, bool]]:
    """(problem, part, a representative rubric, free response) of every graded part in the
    key's order, read from the first entry that has the problem (the parts and the rubric's
    items come from the template: the same for every student; only their texts differ)."""
    return [(pid, part, rubric_of(part_record(key, pid, part), part, points), kind == HAND)
            for pid, part, _title, points, kind in markable_parts(key)]


def _chosen(key: dict, parts) -> list[tuple[str, str, Rubric, bool]]:
    """The parts to export, in the key's order: ``parts`` or every free-response part."""
    known = _key_parts(key)
    if parts is None:
        return [p for p in known if p[3]]
    wanted = {(str(a), str(b)) for a, b in parts}
    unknown = sorted(wanted - {p[:2] for p in known})
    if unknown:
        raise SheetError([f"the key has no part {a}/{b}" for a, b in unknown])
    return [p for p in known if p[:2] in wanted]


def _item_columns(parts) -> list[str]:
    """One column per rubric item, ``<part>:<item>``, in the key's order (a column two parts
    share by name is written once: each row's own part says which items it has)."""
    columns: dict[str, None] = {}
    for _, part, rubric, _ in parts:
        columns.update((f"{part}:{i.id}", None) for i in rubric.items)
    return list(columns)


def _export_row(key: dict, problem: str, part: str, answer: Answer) -> dict[str, str]:
    """The cells of one student's part: their grade now, or blank cells when not graded."""
    rubric, points, free = part_rubric(key, answer.student, problem, part)
    row = {"submission": safe_cell(answer.student), "problem": problem, "part": part,
           "version": str(answer.version), "rubric_version": rubric.version,
           "answer": safe_cell(answer.text), "max_score": _num(points)}
    mark = answer.mark if answer.marked else None
    if mark is not None:
        row.update({f"{part}:{i}": "1" for i in mark.items if rubric.item(i)})
        row.update(adjustment=_num(mark.adjustment), comment=safe_cell(mark.comment),
                   reason=safe_cell(mark.reason), score=_num(mark.score))
    elif not free and answer.result is not None:
        row["score"] = _num(answer.result.score)        # the automatic score, for reading
    return row


def _csv(rows: list[list[str]]) -> bytes:
    """The kit's CSV (as ``grader.exports``): UTF-8 without a byte-order mark, RFC 4180
    (CRLF, quotes where needed)."""
    return csv_text(rows).encode("utf-8")


def export_sheet(gb: Gradebook, key: dict, path, parts=None, deadline: Deadline | None = None) -> int:
    """Write the sheet of ``parts`` ((problem, part) pairs; None: every free-response part)
    to ``path``, atomically; returns the rows written. Rows follow the key's part order,
    then the student id, so two exports of the same gradebook are the same file."""
    chosen = _chosen(key, parts)
    header = [*HEAD, *_item_columns(chosen), *TAIL]
    rows = []
    for problem, part, _, _ in chosen:
        queue = part_queue(gb, key, problem, part, deadline)
        rows += [_export_row(key, problem, part, a) for a in sorted(queue.answers, key=lambda a: a.student)]
    write_atomic(Path(path), _csv([header, *([r.get(c, "") for c in header] for r in rows)]))
    return len(rows)


# --- reading a sheet -------------------------------------------------------------------------

def _delimiter(text: str) -> str:
    """The separator the header uses: ',' as exported, ';' or a tab as a spreadsheet in
    some locales re-saves it."""
    first = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def _read_bytes_head(path: Path, shown: str) -> bytes:
    """The first bytes of the file, after checking its size (a sheet is read whole)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise SheetError([f"{shown}: no such file"]) from None
    except OSError as err:
        raise SheetError([f"{shown}: cannot read: {err.strerror}"]) from None
    if size > MAX_BYTES:
        raise SheetError([f"{shown}: {size} bytes; a sheet is at most {MAX_BYTES // 2**20} MiB "
                          "(export one part at a time)"])
    return head


def _read_table(path: Path, shown: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(the header, [(line, cells)] of every non-blank row) of a CSV sheet; ``SheetError``
    naming the file for one that is not a readable CSV with a header."""
    if _read_bytes_head(path, shown).startswith(b"PK\x03\x04"):
        raise SheetError([f"{shown}: a spreadsheet workbook (.xlsx/.ods), not CSV: save it as "
                          "\"CSV UTF-8\" and import that"])
    text, _ = read_utf8(path, shown, SheetError)
    if not text.strip():
        raise SheetError([f"{shown}: the file is empty (export a sheet with `attnkit mark export`)"])
    if "\x00" in text:
        raise SheetError([f"{shown}: not a CSV file (it holds NUL bytes: a binary file?)"])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text), strict=True)
    records, start = [], 1
    try:
        header = [h.strip() for h in next(reader)]
        start = reader.line_num + 1
        for cells in reader:
            line, start = start, reader.line_num + 1
            if any(c.strip() for c in cells):
                records.append((line, cells))
            if len(records) > MAX_ROWS:
                raise SheetError([f"{shown}:{line}: more than {MAX_ROWS} rows (export one part at a time)"])
    except csv.Error as err:
        raise SheetError([f"{shown}:{start}: not a CSV file the kit can read: {err}"]) from None
    if "submission" not in header:
        raise SheetError([f"{shown}:1: no header: the first line must name the columns "
                          f"({', '.join(HEAD)}, …); start from a sheet `attnkit mark export` wrote"])
    return header, records


def _unguard(cell: str) -> str:
    """A text cell without the apostrophe ``safe_cell`` put before a formula-like text."""
    return cell[1:] if cell.startswith("'") and safe_cell(cell[1:]) == cell else cell


def _shown(cell: str) -> str:
    """A cell quoted in a message: short, its control characters escaped (repr)."""
    return repr(cell if len(cell) <= SHOWN else cell[:SHOWN] + "…")


# --- the plan --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One row to import: the grade as exported (``before``), as the sheet has it (``after``)."""

    line: int
    student: str
    problem: str
    part: str
    expected_version: int         # the version the decision was made against
    result: ResultRow | None      # the automatic result of the answer the sheet graded
    rubric: Rubric
    before: State
    after: State
    before_score: float | None    # None: not graded
    after_score: float

    def edit(self) -> Edit:
        """The sheet's grade as ``marks.save`` takes it (items in the rubric's order)."""
        items = tuple(i.id for i in self.rubric.items if i.id in self.after.items)
        return Edit(items, self.after.adjustment, self.after.comment, self.after.reason)

    def describe(self) -> str:
        """What the import would change, e.g. 's2026003 motivation/static: items same_vector
        → same_vector, context; score 1 → 2'."""
        b, a = self.before, self.after
        said = []
        if b.items != a.items:
            said.append(f"items {self._items(b)} → {self._items(a)}")
        if b.adjustment != a.adjustment:
            said.append(f"adjustment {_num(b.adjustment)} → {_num(a.adjustment)}")
        for name in ("comment", "reason"):
            old, new = getattr(b, name), getattr(a, name)
            if old != new:
                said.append(f"{name} {_shown(old) if old else '(none)'} → {_shown(new) if new else '(none)'}")
        old = "(not graded)" if self.before_score is None else _num(self.before_score)
        said.append(f"score {old} → {_num(self.after_score)}")
        return f"{self.student} {self.problem}/{self.part}: " + "; ".join(said)

    def _items(self, state: State) -> str:
        return ", ".join(i.id for i in self.rubric.items if i.id in state.items) or "none"


@dataclass
class ImportPlan:
    """What importing a sheet would do. ``apply_import`` writes the ``changes``; it refuses a
    plan with ``problems`` (fix the sheet first). ``refused`` rows are left as they are."""

    sheet: str
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _more: int = field(default=0, repr=False)

    def problem(self, line: int, column: str, message: str) -> None:
        """Record 'SHEET:line: column: message' (the first ``PROBLEM_LIMIT``; the rest counted)."""
        if len(self.problems) < PROBLEM_LIMIT:
            self.problems.append(f"{self.sheet}:{line}: {column}: {message}")
        else:
            self._more += 1

    @property
    def problem_count(self) -> int:
        """Every problem found, the listed and the counted."""
        return len(self.problems) + self._more

    def finish(self) -> "ImportPlan":
        """Close the list: a line saying how many more problems were found than listed."""
        if self._more:
            self.problems.append(f"{self.sheet}: … and {self._more} more problems")
            self._more = 0
        return self


class Applied(list):
    """The marks an import saved, with ``conflicts``: rows someone saved in the gradebook
    between the plan and the import, left as they are (each 'SHEET:line: …')."""

    def __init__(self):
        super().__init__()
        self.conflicts: list[str] = []


def _check_header(header: list[str], key: dict, rows: list[dict], plan: ImportPlan) -> bool:
    """Report duplicated, missing and unknown columns; False when a fixed column is missing
    (the rows cannot be read then). An item column is known when it names an item of a part
    of the key; it is missing when a row's part has the item and the sheet has no column."""
    ok = True
    for name in sorted({h for h in header if header.count(h) > 1}):
        plan.problem(1, name or "(blank)", "a duplicated column")
    for name in (*HEAD, *TAIL):
        if name not in header:
            plan.problem(1, name, "a missing column")
            ok = False
    parts = _key_parts(key)
    items = {f"{part}:{i.id}" for _, part, rubric, _ in parts for i in rubric.items}
    for name in dict.fromkeys(header):
        if name not in HEAD and name not in TAIL and name not in items:
            plan.problem(1, name or "(blank)", "an extra column (not an item of any part of the key)")
    present = {(r.get("problem", "").strip(), r.get("part", "").strip()) for r in rows}
    for problem, part, rubric, _ in parts:
        if (problem, part) in present:
            for item in rubric.items:
                if f"{part}:{item.id}" not in header:
                    plan.problem(1, f"{part}:{item.id}", f"a missing column (an item of {problem}/{part})")
    return ok


def _version(cell: str) -> int | None:
    """The whole number the export wrote ('3'; '3.0' as a spreadsheet may re-save it)."""
    cell = cell.strip()
    return int(float(cell)) if _VERSION.fullmatch(cell) else None


def _number(cell: str) -> float | None:
    """A number as a person or a spreadsheet writes it ('-0.5', '-0,5', '+1'); None if not."""
    cell = cell.strip().replace("\u2212", "-")
    if re.fullmatch(r"[+-]?\d+,\d+", cell):
        cell = cell.replace(",", ".")
    try:
        x = float(cell)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _sheet_state(row: dict, line: int, part: str, rubric: Rubric, kind: str,
                 plan: ImportPlan) -> State | None:
    """The grade a row states, or None after reporting what is wrong with it."""
    bad = plan.problem_count
    applied = []
    for item in rubric.items:
        column = f"{part}:{item.id}"
        cell = row.get(column, "").strip().casefold()
        if cell in APPLIED:
            applied.append(item.id)
        elif cell not in NOT_APPLIED:
            plan.problem(line, column, f"{_shown(row[column])} is not an item mark (write 1 or x to apply "
                         "the item, leave it blank otherwise)")
    own = {f"{part}:{i.id}" for i in rubric.items}
    for column, cell in row.items():
        if ":" in column and column not in own and cell.strip().casefold() not in NOT_APPLIED:
            item = column.split(":", 1)[1]
            plan.problem(line, column, f"{_shown(cell)}: {row['problem']}/{part} has no item {item!r}")
    adjustment_cell = _unguard(row.get("adjustment", "")).strip()
    adjustment = 0.0 if not adjustment_cell else _number(adjustment_cell)
    span = max(rubric.ceiling - rubric.floor, 0.0)
    if adjustment is None:
        plan.problem(line, "adjustment", f"{_shown(adjustment_cell)} is not a number")
    elif abs(adjustment) > span:
        plan.problem(line, "adjustment", f"{adjustment_cell} is outside ±{_num(span)} (the part's "
                     f"range, {_num(rubric.floor)} to {_num(rubric.ceiling)})")
    comment = _lines(printable(_unguard(row.get("comment", ""))))
    reason = printable(_unguard(row.get("reason", ""))).strip()
    if len(comment) > COMMENT_LIMIT:
        plan.problem(line, "comment", f"{len(comment)} characters (at most {COMMENT_LIMIT})")
    graded = bool(applied or adjustment_cell or comment.strip() or reason)
    if kind == OVERRIDE and graded and not reason:
        plan.problem(line, "reason", "an override of an automatic score needs a reason")
    if plan.problem_count > bad:
        return None
    if not graded:
        return State()                           # (a comment of blanks alone grades nothing)
    return State(True, frozenset(applied), adjustment or 0.0, comment, reason)


@dataclass
class _Context:
    """What the plan reads once per sheet: the parts' queues and who was seen where."""

    gb: Gradebook
    key: dict
    deadline: Deadline | None
    parts: dict = field(default_factory=dict)           # (problem, part) → free response
    queues: dict = field(default_factory=dict)          # (problem, part) → student → Answer
    seen: dict = field(default_factory=dict)            # (student, problem, part) → line

    def answers(self, problem: str, part: str) -> dict[str, Answer]:
        """student → their counted answer to the part (the queue is read once per part)."""
        if (problem, part) not in self.queues:
            queue = part_queue(self.gb, self.key, problem, part, self.deadline)
            self.queues[(problem, part)] = {a.student: a for a in queue.answers}
        return self.queues[(problem, part)]


def _exported(ctx: _Context, student: str, problem: str, part: str, version: int) -> tuple[bool, dict | None]:
    """(found, the mark's JSON) at ``version`` from the log (version 0: never marked)."""
    if version == 0:
        return True, None
    for entry in history(ctx.gb, assignment_id(ctx.key), student, problem, part):
        if entry.version == version:
            return True, entry.mark
    return False, None


def _score(state: State, rubric: Rubric, kind: str, answer: Answer) -> float | None:
    """The part's score with ``state`` (None: a free-response part not graded)."""
    auto = answer.result.score if answer.result is not None else 0.0
    if not state.graded:
        return None if kind == HAND else auto
    # (an override: of the automatic score as it is now, as ``marks.save`` scores it)
    return rubric.score(state.items, state.adjustment, auto if kind == OVERRIDE else rubric.start)


def _same_answer(cell: str, answer: Answer) -> bool:
    """The sheet's answer is the one that counts now (whitespace and case aside; a
    spreadsheet cuts a long cell, so a long prefix of the answer is the answer): a grade is
    never attached to an answer the grader did not read."""
    if not cell.strip():
        return True                               # (a cell emptied to keep the sheet small: nothing to compare)
    sheet, now = normalised(_lines(_unguard(cell))), normalised(answer.text)
    return sheet == now or (len(cell) >= SPREADSHEET_CELL and now.startswith(sheet))


def _row_identity(ctx: _Context, row: dict, line: int, plan: ImportPlan):
    """(student, problem, part, their answer, rubric, kind) of a row, or None after reporting
    an unknown id, part, a row without a counted handin or a duplicate."""
    student = _unguard(row["submission"]).strip()
    problem, part = row["problem"].strip(), row["part"].strip()
    if not student or entry_for(ctx.key, student) is None:
        plan.problem(line, "submission", f"{_shown(student)} is not a student of the assignment")
        return None
    if (problem, part) not in ctx.parts:
        column = "part" if any(p == problem for p, _ in ctx.parts) else "problem"
        plan.problem(line, column, f"the key has no part {_shown(problem)}/{_shown(part)}")
        return None
    first = ctx.seen.setdefault((student, problem, part), line)
    if first != line:
        plan.problem(line, "submission", f"{student} {problem}/{part} is a duplicated row (first on line {first})")
        return None
    answer = ctx.answers(problem, part).get(student)
    if answer is None:
        plan.problem(line, "submission", f"{student} has no counted handin for {problem}/{part}")
        return None
    try:
        rubric, _, free = part_rubric(ctx.key, student, problem, part)
    except MarkError as err:
        plan.problem(line, "part", str(err))
        return None
    return student, problem, part, answer, rubric, HAND if free else OVERRIDE


def _plan_row(ctx: _Context, row: dict, line: int, plan: ImportPlan) -> None:
    """Classify one row: unchanged, a change, refused, or its problems."""
    who = _row_identity(ctx, row, line, plan)
    if who is None:
        return
    student, problem, part, answer, rubric, kind = who
    version = _version(row["version"])
    if version is None:
        plan.problem(line, "version", f"{_shown(row['version'])} is not a version (the export wrote a whole number)")
    if row["rubric_version"].strip() != rubric.version:
        plan.problem(line, "rubric_version", f"{_shown(row['rubric_version'].strip())}: the rubric of "
                     f"{problem}/{part} changed since the export (now {rubric.version}); export the sheet again")
        return
    sheet = _sheet_state(row, line, part, rubric, kind, plan)
    if sheet is None or version is None:
        return
    where = f"{plan.sheet}:{line}: {student} {problem}/{part}"
    current = _state_of(answer.mark.as_json() if answer.mark else None)
    now_score = answer.mark.score if answer.marked else _score(State(), rubric, kind, answer)
    if version == answer.version:
        found, exported, exported_score = True, current, now_score
    else:
        found, mark = _exported(ctx, student, problem, part, version)
        exported = _state_of(mark)
        exported_score = mark["score"] if mark and mark.get("active") else _score(State(), rubric, kind, answer)
    new_score = _score(sheet, rubric, kind, answer)
    if not _score_cell_ok(row.get("score", ""), {exported_score, now_score, new_score}):
        plan.problem(line, "score", f"{_shown(row['score'].strip())} is not read: a score comes from the items "
                     f"and the adjustment (this row gives {'no score' if new_score is None else _num(new_score)}); "
                     "set the adjustment instead")
        return
    if sheet == current or (found and sheet == exported):
        plan.unchanged += 1                      # nothing to import (the gradebook may have moved on)
        return
    if version != answer.version and (found or answer.version != 0):
        plan.refused.append(_refusal(where, version, answer, found))
        return
    if not sheet.graded:
        plan.problem(line, "adjustment", f"{student} {problem}/{part} is graded in the gradebook and blank on "
                     "the sheet: a sheet cannot withdraw a grade (clear it on the marking page; write 0 in the "
                     "adjustment for 0 points)")
        return
    if not _same_answer(row.get("answer", ""), answer):
        plan.refused.append(f"{where}: the answer on the sheet is not the one that counts now (a later "
                            "handin, or an edited answer cell); grade it from a new export")
        return
    before = exported if found else current
    plan.changes.append(Change(line, student, problem, part, answer.version, answer.result, rubric, before,
                               sheet, exported_score if found else now_score, new_score))


def _score_cell_ok(cell: str, allowed: set) -> bool:
    """A score cell is read-only: blank, or a score the row had or now gives (an edited score
    would otherwise be ignored without a word)."""
    cell = _unguard(cell).strip()
    if not cell:
        return True
    x = _number(cell)
    return x is not None and any(s is not None and abs(s - x) <= 1e-6 for s in allowed)


def _refusal(where: str, version: int, answer: Answer, found: bool) -> str:
    """Why a row changed on the sheet is not imported."""
    now = answer.version
    if not found:
        return (f"{where}: this gradebook has no version {version} of the grade (now version {now}): "
                "was the sheet exported from another gradebook? Export it again and redo the row")
    by = f" by {answer.mark.grader}" if answer.mark else ""
    return (f"{where}: changed on the sheet and in the gradebook since the export (version {version} → "
            f"{now}{by}); not imported: export the sheet again and redo the row")


def plan_import(gb: Gradebook, key: dict, path, deadline: Deadline | None = None) -> ImportPlan:
    """Read and check a sheet against the gradebook: what importing it would change, what
    it leaves, what it refuses (changed on both sides) and its problems. Writes nothing.
    ``SheetError`` for a file that is not a readable sheet."""
    shown = str(path)
    header, records = _read_table(Path(path), shown)
    plan = ImportPlan(shown)
    rows = []
    for line, cells in records:
        extra = cells[len(header):]
        if any(c.strip() for c in extra):
            plan.problem(line, "(beyond the header)", f"{len(cells)} cells, the header names {len(header)} columns")
        rows.append((line, dict(zip(header, [*cells[:len(header)], *[""] * (len(header) - len(cells))]))))
    if not _check_header(header, key, [r for _, r in rows], plan):
        return plan.finish()
    ctx = _Context(gb, key, deadline, {(p, q): free for p, q, _, free in _key_parts(key)})
    for line, row in rows:
        _plan_row(ctx, row, line, plan)
    return plan.finish()


def apply_import(gb: Gradebook, key: dict, plan: ImportPlan, grader: str) -> Applied:
    """Save the plan's changes, one transaction per row, each from the version the plan
    compared it with: a row someone saved in between is a conflict, reported in
    ``.conflicts`` and left as it is; the others are saved. A plan with problems is refused
    whole (``SheetError``): a sheet is fixed, then imported."""
    if plan.problems:
        raise SheetError(plan.problems)
    applied = Applied()
    for change in plan.changes:
        target = Target(change.student, change.expected_version, change.result)
        try:
            applied += save(gb, key, change.problem, change.part, [target], change.edit(), grader, event="import")
        except (Conflict, MarkError) as err:
            applied.conflicts.append(f"{plan.sheet}:{change.line}: {err}")
    return applied


__all__ = ["Applied", "Change", "ImportPlan", "SheetError", "State", "apply_import", "export_sheet",
           "plan_import"]
