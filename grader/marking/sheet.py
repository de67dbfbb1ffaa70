"""The grading sheet: hand grades exported to a CSV a TA fills in a spreadsheet or an editor,
and imported back — the marking page's work without a browser.

One row per student with a counted handin, per part: ``submission, problem, part, version,
rubric_version, answer_digest, answer``, one column per rubric item (``<part>:<item id>``:
``1`` when applied), ``adjustment, comment, reason``, and, for reading only, ``score,
max_score``; beside it, ``<sheet>-rubric.csv`` gives each column's meaning and each item's
points and text (``sheet_format``). A row's ``version`` is its grade's version at the export
(0: never graded); the import compares each row with the grade *as it was exported*
(``marks.history`` holds every version), so a sheet never reverts work done since:

- the row equals the exported state: nothing to import (even if the gradebook moved on);
- the row changed and the gradebook did not: a change, saved from the exported version
  (``marks.save`` refuses it if someone saves the part between the plan and the import);
- both changed: refused, with what to do;
- the student's counted answer is no longer the one exported (``answer_digest``): a change is
  refused, so a grade never goes to an answer its grader did not read. The ``answer`` cell
  is for reading only, never compared.

A sheet is imported whole: its changes are saved in one transaction (``marks.together``),
so a kill leaves none of them or all; a row someone saved meanwhile is a conflict, left out.

A blank row is "not graded yet". To record 0 points with no item applied, write ``0`` in
the adjustment. A sheet cannot withdraw a grade (blanking a graded row is a problem): the
marking page clears grades.

The file is read as a spreadsheet re-saves it: a byte-order mark, CRLF line endings, ``;``
or tab separators, ``TRUE``/``x``/``✓`` in an item cell, a decimal comma. Text cells are
written with every character visible and formula-safe, and read back exactly
(``sheet_format``): an unedited sheet changes nothing, whatever its texts hold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from formats.deadline import Deadline
from formats.key_shape import assignment_id, entry_for, rubric_of
from formats.rubric import Rubric
from formats.textfile import printable

from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow
from grader.store.marks import (COMMENT_LIMIT, HAND, OVERRIDE, Conflict, Edit, MarkError, Target, history,
                                part_rubric, save, together)
from .queue import Answer, markable_parts, part_queue, part_record
from .sheet_format import (SheetError, answer_cell, digest_cell, is_digest, read_number, read_table, read_version,
                           newlines, shown, text_cell, text_of, write_csv, write_legend, number_text as _num)

HEAD = ("submission", "problem", "part", "version", "rubric_version", "answer_digest", "answer")
TAIL = ("adjustment", "comment", "reason", "score", "max_score")
ERROR_LIMIT = 200               # problems listed; the rest are counted
APPLIED = frozenset({"1", "x", "✓", "✔", "yes", "y", "true"})
NOT_APPLIED = frozenset({"", "0", "no", "n", "false"})
# Why a changed row is refused, as the import's summary counts them
BOTH_CHANGED = "changed in the sheet and in the gradebook"
ANSWER_CHANGED = "the answer changed since the export"
OTHER_GRADEBOOK = "exported from another gradebook"


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


def _state_of(mark: dict | None) -> State:
    """The state of a mark (``Mark.as_json()`` or a log entry's ``mark``; None: never marked)."""
    if not mark or not mark.get("active"):
        return State()
    return State(True, frozenset(mark.get("items", {})), float(mark.get("adjustment", 0.0)),
                 newlines(printable(str(mark.get("comment", "")))), printable(str(mark.get("reason", ""))).strip())


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
    row = {"submission": text_cell(answer.student), "problem": problem, "part": part,
           "version": str(answer.version), "rubric_version": rubric.version,
           "answer_digest": digest_cell(answer.result), "answer": answer_cell(answer.result),
           "max_score": _num(points)}
    mark = answer.mark if answer.marked else None
    if mark is not None:
        row.update({f"{part}:{i}": "1" for i in mark.items if rubric.item(i)})
        row.update(adjustment=_num(mark.adjustment), comment=text_cell(mark.comment),
                   reason=text_cell(mark.reason), score=_num(mark.score))
    elif not free and answer.result is not None:
        row["score"] = _num(answer.result.score)        # the automatic score, for reading
    return row


def export_sheet(gb: Gradebook, key: dict, path, parts=None, deadline: Deadline | None = None) -> int:
    """Write the sheet of ``parts`` ((problem, part) pairs; None: every free-response part)
    to ``path``, atomically, and its legend beside it (``sheet_format.legend_path``); returns
    the rows written. Rows follow the key's part order, then the student id, so two exports
    of the same gradebook are the same file."""
    chosen = _chosen(key, parts)
    header = [*HEAD, *_item_columns(chosen), *TAIL]
    rows = []
    for problem, part, _, _ in chosen:
        queue = part_queue(gb, key, problem, part, deadline)
        rows += [_export_row(key, problem, part, a) for a in sorted(queue.answers, key=lambda a: a.student)]
    write_csv(Path(path), [header, *([r.get(c, "") for c in header] for r in rows)])
    write_legend(Path(path), header, chosen)
    return len(rows)


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
                said.append(f"{name} {shown(old) if old else '(none)'} → {shown(new) if new else '(none)'}")
        old = "(not graded)" if self.before_score is None else _num(self.before_score)
        said.append(f"score {old} → {_num(self.after_score)}")
        return f"{self.student} {self.problem}/{self.part}: " + "; ".join(said)

    def _items(self, state: State) -> str:
        return ", ".join(i.id for i in self.rubric.items if i.id in state.items) or "none"


@dataclass
class ImportPlan:
    """What importing a sheet would do. ``apply_import`` writes the ``changes``; it refuses a
    plan with ``errors`` (fix the sheet first). ``refused`` rows are left as they are;
    ``refused_why`` counts them by why (``BOTH_CHANGED``, ``ANSWER_CHANGED``, ``OTHER_GRADEBOOK``)."""

    sheet: str
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refused_why: Counter = field(default_factory=Counter)
    _more: int = field(default=0, repr=False)

    def refuse(self, message: str, why: str) -> None:
        """Leave a changed row out: ``message`` says which and what to do."""
        self.refused.append(message)
        self.refused_why[why] += 1

    def error(self, line: int, column: str, message: str) -> None:
        """Record 'SHEET:line: column: message' (the first ``ERROR_LIMIT``; the rest counted)."""
        if len(self.errors) < ERROR_LIMIT:
            self.errors.append(f"{self.sheet}:{line}: {column}: {message}")
        else:
            self._more += 1

    @property
    def error_count(self) -> int:
        """Every error found, the listed and the counted."""
        return len(self.errors) + self._more

    def finish(self) -> "ImportPlan":
        """Close the list: a line saying how many more errors were found than listed."""
        if self._more:
            self.errors.append(f"{self.sheet}: … and {self._more} more problems")
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
        plan.error(1, name or "(blank)", "a duplicated column")
    for name in (*HEAD, *TAIL):
        if name not in header:
            why = " (it says which answer each row grades): export the sheet again" if name == "answer_digest" else ""
            plan.error(1, name, "a missing column" + why)
            ok = False
    parts = _key_parts(key)
    items = {f"{part}:{i.id}" for _, part, rubric, _ in parts for i in rubric.items}
    for name in dict.fromkeys(header):
        if name not in HEAD and name not in TAIL and name not in items:
            plan.error(1, name or "(blank)", "an extra column (not an item of any part of the key)")
    present = {(r.get("problem", "").strip(), r.get("part", "").strip()) for r in rows}
    for problem, part, rubric, _ in parts:
        if (problem, part) in present:
            for item in rubric.items:
                if f"{part}:{item.id}" not in header:
                    plan.error(1, f"{part}:{item.id}", f"a missing column (an item of {problem}/{part})")
    return ok


def _sheet_state(row: dict, line: int, part: str, rubric: Rubric, kind: str,
                 plan: ImportPlan) -> State | None:
    """The grade a row states, or None after reporting what is wrong with it."""
    bad = plan.error_count
    applied = []
    for item in rubric.items:
        column = f"{part}:{item.id}"
        cell = row.get(column, "").strip().casefold()
        if cell in APPLIED:
            applied.append(item.id)
        elif cell not in NOT_APPLIED:
            plan.error(line, column, f"{shown(row[column])} is not an item mark (write 1 or x to apply "
                         "the item, leave it blank otherwise)")
    own = {f"{part}:{i.id}" for i in rubric.items}
    for column, cell in row.items():
        if ":" in column and column not in own and cell.strip().casefold() not in NOT_APPLIED:
            item = column.split(":", 1)[1]
            plan.error(line, column, f"{shown(cell)}: {row['problem']}/{part} has no item {item!r}")
    adjustment_cell = text_of(row.get("adjustment", "")).strip()
    adjustment = 0.0 if not adjustment_cell else read_number(adjustment_cell)
    span = max(rubric.ceiling - rubric.floor, 0.0)
    if adjustment is None:
        plan.error(line, "adjustment", f"{shown(adjustment_cell)} is not a number")
    elif abs(adjustment) > span:
        plan.error(line, "adjustment", f"{adjustment_cell} is outside ±{_num(span)} (the part's "
                     f"range, {_num(rubric.floor)} to {_num(rubric.ceiling)})")
    comment = newlines(printable(text_of(row.get("comment", ""))))
    reason = printable(text_of(row.get("reason", ""))).strip()
    for column, text in (("comment", comment), ("reason", reason)):
        if len(text) > COMMENT_LIMIT:            # as ``marks`` refuses it: planned, with its place
            plan.error(line, column, f"{len(text)} characters (at most {COMMENT_LIMIT})")
    graded = bool(applied or adjustment_cell or comment.strip() or reason)
    if kind == OVERRIDE and graded and not reason:
        plan.error(line, "reason", "an override of an automatic score needs a reason")
    if plan.error_count > bad:
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


def _row_identity(ctx: _Context, row: dict, line: int, plan: ImportPlan):
    """(student, problem, part, their answer, rubric, kind) of a row, or None after reporting
    an unknown id, part, a row without a counted handin or a duplicate."""
    student = text_of(row["submission"]).strip()
    problem, part = row["problem"].strip(), row["part"].strip()
    if not student or entry_for(ctx.key, student) is None:
        plan.error(line, "submission", f"{shown(student)} is not a student of the assignment")
        return None
    if (problem, part) not in ctx.parts:
        column = "part" if any(p == problem for p, _ in ctx.parts) else "problem"
        plan.error(line, column, f"the key has no part {shown(problem)}/{shown(part)}")
        return None
    first = ctx.seen.setdefault((student, problem, part), line)
    if first != line:
        plan.error(line, "submission", f"{student} {problem}/{part} is a duplicated row (first on line {first})")
        return None
    answer = ctx.answers(problem, part).get(student)
    if answer is None:
        plan.error(line, "submission", f"{student} has no counted handin for {problem}/{part}")
        return None
    try:
        rubric, _, free = part_rubric(ctx.key, student, problem, part)
    except MarkError as err:
        plan.error(line, "part", str(err))
        return None
    return student, problem, part, answer, rubric, HAND if free else OVERRIDE


def _plan_row(ctx: _Context, row: dict, line: int, plan: ImportPlan) -> None:
    """Classify one row: unchanged, a change, refused, or its problems."""
    who = _row_identity(ctx, row, line, plan)
    if who is None:
        return
    student, problem, part, answer, rubric, kind = who
    version = _exported_version(row, line, plan)
    if row["rubric_version"].strip() != rubric.version:
        plan.error(line, "rubric_version", f"{shown(row['rubric_version'].strip())}: the rubric of "
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
        plan.error(line, "score", f"{shown(row['score'].strip())} is not read: a score comes from the items "
                     f"and the adjustment (this row gives {'no score' if new_score is None else _num(new_score)}); "
                     "set the adjustment instead")
        return
    if sheet == current or (found and sheet == exported):
        plan.unchanged += 1                      # nothing to import (the gradebook may have moved on)
        return
    if version != answer.version and (found or answer.version != 0):
        plan.refuse(*_refusal(where, version, answer, found))
        return
    if not sheet.graded:
        plan.error(line, "adjustment", f"{student} {problem}/{part} is graded in the gradebook and blank on "
                     "the sheet: a sheet cannot withdraw a grade (clear it on the marking page; write 0 in the "
                     "adjustment for 0 points)")
        return
    if row["answer_digest"].strip() != digest_cell(answer.result):
        plan.refuse(f"{where}: {ANSWER_CHANGED} (a later handin counts, or it was graded again): not "
                    "imported, so no grade goes to an answer its grader did not read; export the sheet "
                    "again and grade the answer that counts", ANSWER_CHANGED)
        return
    before = exported if found else current
    plan.changes.append(Change(line, student, problem, part, answer.version, answer.result, rubric, before,
                               sheet, exported_score if found else now_score, new_score))


def _score_cell_ok(cell: str, allowed: set) -> bool:
    """A score cell is read-only: blank, or a score the row had or now gives (an edited score
    would otherwise be ignored without a word)."""
    cell = text_of(cell).strip()
    if not cell:
        return True
    x = read_number(cell)
    return x is not None and any(s is not None and abs(s - x) <= 1e-6 for s in allowed)


def _exported_version(row: dict, line: int, plan: ImportPlan) -> int | None:
    """The grade's version the row was exported at, its answer's digest checked too (None:
    a problem, reported)."""
    version = read_version(row["version"])
    if version is None:
        plan.error(line, "version", f"{shown(row['version'])} is not a version (the export wrote a whole number)")
    if not is_digest(row["answer_digest"]):
        plan.error(line, "answer_digest", f"{shown(row['answer_digest'].strip())} is not what the export "
                     "wrote (it says which answer the row grades): copy it back from the export")
        return None
    return version


def _refusal(where: str, version: int, answer: Answer, found: bool) -> tuple[str, str]:
    """(why a row changed on the sheet is not imported, in words; which kind of why)."""
    now = answer.version
    if not found:
        return (f"{where}: this gradebook has no version {version} of the grade (now version {now}): "
                "was the sheet exported from another gradebook? Export it again and redo the row"), OTHER_GRADEBOOK
    by = f" by {answer.mark.grader}" if answer.mark else ""
    return (f"{where}: changed on the sheet and in the gradebook since the export (version {version} → "
            f"{now}{by}); not imported: export the sheet again and redo the row"), BOTH_CHANGED


def plan_import(gb: Gradebook, key: dict, path, deadline: Deadline | None = None) -> ImportPlan:
    """Read and check a sheet against the gradebook: what importing it would change, what
    it leaves, what it refuses (changed on both sides) and its problems. Writes nothing.
    ``SheetError`` for a file that is not a readable sheet."""
    header, records = read_table(Path(path), str(path), HEAD)
    plan = ImportPlan(str(path))
    rows = []
    for line, cells in records:
        extra = cells[len(header):]
        if any(c.strip() for c in extra):
            plan.error(line, "(beyond the header)", f"{len(cells)} cells, the header names {len(header)} columns")
        rows.append((line, dict(zip(header, [*cells[:len(header)], *[""] * (len(header) - len(cells))]))))
    if not _check_header(header, key, [r for _, r in rows], plan):
        return plan.finish()
    ctx = _Context(gb, key, deadline, {(p, q): free for p, q, _, free in _key_parts(key)})
    for line, row in rows:
        _plan_row(ctx, row, line, plan)
    return plan.finish()


def apply_import(gb: Gradebook, key: dict, plan: ImportPlan, grader: str) -> Applied:
    """Save the plan's changes in one transaction (``marks.together``): all of them or, if
    anything fails or the process dies first, none. Each is saved from the version the plan
    compared it with: a row someone saved in between is a conflict, reported in
    ``.conflicts`` and left as it is; the others are saved. A plan with problems is refused
    whole (``SheetError``): a sheet is fixed, then imported."""
    if plan.errors:
        raise SheetError(plan.errors)
    applied = Applied()
    with together(gb):
        for change in plan.changes:
            target = Target(change.student, change.expected_version, change.result)
            try:
                saved = save(gb, key, change.problem, change.part, [target], change.edit(), grader, event="import")
            except (Conflict, MarkError) as err:
                applied.conflicts.append(f"{plan.sheet}:{change.line}: {err}")
            else:
                applied += saved
    return applied


__all__ = ["ANSWER_CHANGED", "Applied", "BOTH_CHANGED", "Change", "ImportPlan", "OTHER_GRADEBOOK", "SheetError",
           "State", "apply_import", "export_sheet", "plan_import"]
