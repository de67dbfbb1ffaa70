"""A notebook checked against the student's key entry: the kit cells the entry implies
(``kit_cells``: which grade ids are the kit's, and what each is), and the issues a read
notebook's cells and variant record raise against it (missing, doubled or edited kit cells;
a record naming another student, assignment or variant)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from formats.cells import (CHECK, EXAMPLE, GIVENS, HEADER_CELL, HEATMAP, PROMPT, SETUP_CELL, SOLUTION, cell_id,
                           grade_id)
from formats.key_shape import (IMPLEMENT, givens_of, gradings, is_class_key, is_free_response, issued_before,
                              issued_digest, kind, problem_record, problem_records)
from formats.serialize import decode_names

from grader.intake.givens import givens_blocks, givens_edits
from grader.intake.issues import Issue, listed, short
from grader.intake.records import Cell, Found


@dataclass(frozen=True)
class KitCell:
    """What a grade id of the student's entry is: its problem (None for setup and header),
    its role, and the part (or implement function, or test family) it belongs to.

    Roles: setup, header, prompt, givens, answer, check, heatmap, solution, example, tests."""
    grade_id: str
    problem: str | None
    role: str
    part: str | None = None


class KitCells(dict):
    """grade id → KitCell for the notebook of one entry, and ``by_cell_id``: cell id → grade
    id. Shared by every entry of the same shape (``kit_cells``): read it, never change it."""
    by_cell_id: dict[str, str]


def kit_cells(entry: dict) -> KitCells:
    """Every grade id a notebook built for ``entry`` may hold, mapped to what it is.

    Heatmap cells are listed for every numeric part (the build adds one only for 2-D float
    answers, which the key does not say); the instructor's worked-solution cells too. The
    cells depend only on the entry's shape (its problems, their kinds, parts, functions and
    whether they have givens), which a class's entries share: made once per shape."""
    return _kit_of(tuple(_shape(pid, record) for pid, record in problem_records(entry, {})))


def _shape(pid: str, record: dict) -> tuple:
    implement = kind(record) == IMPLEMENT
    items = tuple(g.get("family") if implement else g.get("id") for g in gradings(record, []))
    return (pid, implement, record.get("function", "") if implement else None, bool(givens_of(record)),
            is_free_response(record), items)


@lru_cache(maxsize=256)
def _kit_of(shape: tuple) -> KitCells:
    cells = KitCells({SETUP_CELL: KitCell(SETUP_CELL, None, "setup"),
                      HEADER_CELL: KitCell(HEADER_CELL, None, "header")})

    def add(gid, pid, role, part=None):
        cells[gid] = KitCell(gid, pid, role, part)

    for pid, implement, fname, has_givens, free_response, items in shape:
        add(grade_id(pid, role=PROMPT), pid, "prompt")
        add(grade_id(pid, role=SOLUTION), pid, "solution")
        if has_givens:
            add(grade_id(pid, role=GIVENS), pid, "givens")
        if implement:
            add(grade_id(pid, fname), pid, "answer", fname)
            add(grade_id(pid, fname, role=PROMPT), pid, "prompt", fname)
            add(grade_id(pid, fname, role=EXAMPLE), pid, "example", fname)
            for family in items:
                add(grade_id(pid, fname, family=str(family)), pid, "tests", family)
            continue
        for part in items:
            add(grade_id(pid, part), pid, "answer", part)
            add(grade_id(pid, part, role=PROMPT), pid, "prompt", part)
            if not free_response:
                add(grade_id(pid, part, role=CHECK), pid, "check", part)
                add(grade_id(pid, part, role=HEATMAP), pid, "heatmap", part)
    cells.by_cell_id = {cell_id(g): g for g in cells}
    return cells


def _graded_cells(kit: dict[str, KitCell]) -> list[KitCell]:
    """The kit cells grading reads: answers, givens, examples (in key order)."""
    return [k for k in kit.values() if k.role in ("answer", "givens", "example")]


def record_issues(found: Found, record: dict | None, key: dict, entry: dict,
                  variants: tuple[list[str], list[str], dict] | None) -> list[Issue]:
    """What the notebook's variant record says against the key; ``variants``: its
    ``record_variants`` (None without a record)."""
    if record is None:
        return [Issue("no-record", f"{found.shown}: the notebook has no variant record (attnkit "
                                   "metadata), so it cannot be confirmed to be the one issued to "
                                   f"{found.student}; it is graded against {found.student}'s key entry")]
    issues = []
    named = record.get("student")
    wanted = "" if is_class_key(key) else found.student
    if named != wanted:
        who = f"student {short(named)}" if isinstance(named, str) and named else "no student"
        issues.append(Issue("wrong-student", f"{found.shown}: this notebook was issued to {who}, not "
                                             f"{found.student}: it is graded with {found.student}'s "
                                             "givens and answers"))
    assignment_id = (key.get("assignment") or {}).get("id")
    named_assignment = (record.get("assignment") or {}).get("id") \
        if isinstance(record.get("assignment"), dict) else None
    if assignment_id is not None and named_assignment != assignment_id:
        issues.append(Issue("wrong-assignment", f"{found.shown}: this notebook is for assignment "
                                                f"{short(repr(named_assignment))}, not {assignment_id!r}"))
    differ, earlier, digests = variants
    differ = list(differ)               # (a copy: kit_issues reads the same variants after this)
    problems = entry.get("problems", {})
    if earlier:
        issues.append(Issue("earlier-variant", f"{found.shown}: the notebook has an earlier variant of "
                                               f"{', '.join(earlier)} (the key was rebuilt with new numbers "
                                               "after it was issued): it is graded with the key's givens"))
    extra = sum(pid not in problems for pid in digests)     # their ids are the notebook's text: counted only
    if extra:
        differ.append(f"{extra} problem{'s' if extra > 1 else ''} the key does not have")
    if differ:
        issues.append(Issue("wrong-variant", f"{found.shown}: the notebook's variant of "
                                             f"{', '.join(differ)} is not the one in the answer key "
                                             "(another student's notebook, or one built with another "
                                             "secret or version): it is graded with the key's givens"))
    return issues


def record_variants(record: dict, entry: dict) -> tuple[list[str], list[str], dict]:
    """(problems whose variant in the notebook is not the key's, those of them that are a
    variant the key issued before a rebuild, the notebook's variant digests by problem).

    What the student was issued (givens, options) decides: a rebuild that changed only how a
    part is graded (tolerance, points, checks, twins) changes a record's full digest, not its
    issued one. A notebook from before issued digests existed is compared by its full digest."""
    digests, issued = {}, {}
    for p in record.get("problems") if isinstance(record.get("problems"), list) else []:
        if isinstance(p, dict) and isinstance(p.get("id"), str):
            digests[p["id"]] = p.get("variant_digest")
            issued[p["id"]] = p.get("issued_digest")
    differ, earlier = [], []
    for pid, problem in entry.get("problems", {}).items():
        mine = issued.get(pid)
        if mine is None and digests.get(pid) == problem.get("digest"):
            continue
        if mine is not None and mine == issued_digest(problem):
            continue
        (earlier if mine is not None and mine in issued_before(problem) else differ).append(pid)
    return differ, earlier, digests


def other_variant_problems(variants) -> set[str]:
    """Problems whose notebook variant is not the key's (their givens differ for that reason),
    from ``record_variants`` (None: no record)."""
    if variants is None:
        return set()
    differ, earlier, _ = variants
    return set(differ) | set(earlier)


def kit_issues(found: Found, cells: tuple[Cell, ...], kit: dict[str, KitCell],
               entry: dict, other_variants: set[str] = frozenset()) -> list[Issue]:
    """What the notebook's cells say against the kit: none of them the kit's, metadata
    stripped, kit cells missing or doubled, givens cells edited (not those of a problem in
    ``other_variants``, whose givens differ for that reason and are reported as such)."""
    known = [c for c in cells if c.grade_id in kit]
    if not known:
        return [Issue("no-kit-cells", f"{found.shown}: none of the notebook's cells is a cell of the "
                                      "assignment (no nbgrader grade ids or cell ids it was issued "
                                      "with): every code cell is run in order and answers are read "
                                      "by variable name only")]
    issues = []
    stripped = [c for c in known if c.matched_by == "cell id"]
    if stripped:
        issues.append(Issue("metadata-stripped", f"{found.shown}: {len(stripped)} cell"
                                                 f"{'s have' if len(stripped) > 1 else ' has'} no "
                                                 "nbgrader metadata (removed by a tool or a copy into "
                                                 "a new notebook); matched by cell id instead"))
    present = {c.grade_id for c in known}
    for k in _graded_cells(kit):
        if k.grade_id not in present:
            issues.append(Issue("kit-cell-missing", f"{found.shown}: the cell {k.grade_id} is missing "
                                                    f"(deleted, or its id was lost): {_MISSING_EFFECT[k.role]}",
                                k.grade_id))
    checks = [k.grade_id for k in kit.values() if k.role == "check" and k.grade_id not in present]
    if checks:
        issues.append(Issue("check-cell-missing", f"{found.shown}: the check cell{'s' if len(checks) > 1 else ''} "
                                                  f"{listed(checks)} {'are' if len(checks) > 1 else 'is'} missing "
                                                  "(deleted, or the id was lost): grading does not run check "
                                                  "cells, so the score is unaffected, but the part's form was "
                                                  "not checked in the notebook", checks[0]))
    positions: dict[str, list[int]] = {}
    for c in known:
        positions.setdefault(c.grade_id, []).append(c.index + 1)
    for gid, where in positions.items():
        if len(where) > 1:
            issues.append(Issue("duplicate-grade-id", f"{found.shown}: cells {listed(where)} all carry "
                                                      f"the grade id {gid} (a copied cell): all of "
                                                      "them are kept, in notebook order", gid))
    issued: dict[str, tuple[dict, str]] = {}      # problem → its givens and their text, made once
    for c in known:
        k = kit[c.grade_id]
        if k.role == "givens" and k.problem not in other_variants:   # (those are reported as such)
            if k.problem not in issued:
                givens = decode_names(givens_of(problem_record(entry, k.problem)))
                issued[k.problem] = givens, givens_blocks(givens)
            givens, blocks = issued[k.problem]
            changed = givens_edits(c.source, givens, blocks=blocks)
            if changed:
                issues.append(Issue("givens-edited", f"{found.shown}: the locked givens cell {c.grade_id} "
                                                     f"was edited ({changed}); harmless: grading always "
                                                     "uses the givens as issued", c.grade_id))
    return issues


_MISSING_EFFECT = {
    "answer": "the answer is read from its variable wherever the notebook defines it",
    "givens": "the givens are set from the answer key before the problem's first cell",
    "example": "its example is not defined unless another cell defines it",
}
