"""Copied numbers, for answer forensics (``grader.forensics.flags``): a submitted value that
is *another student's* expected answer or another student's mistake ("other-variant"), and
the same wrong numbers handed in by two students on different variants ("shared-wrong").

Every student has their own variant, so a numeric answer that is wrong for its owner but
right, within the part's tolerance, for a classmate's variant is the trace a copied number
leaves. For every student and numeric part that failed, the counted handin's stored answer is
compared with every other student's expected answer of that part (the key is trusted and
holds them all). A flag carries its evidence and ``p_coincidence``. For a *telling* value it
is the share of the other students whose answer is this same value; for one number, a count,
a shape or an index it is the chance that an honest answer lands within the tolerance of at
least one of the n − 1 classmates' values, 1 − (1 − share)^(n − 1). A *telling* value (``formats.compare.
telling``: four or more real numbers) that matches at most ``MAX_PARTNERS`` classmates is
flagged: two variants' arrays do not agree by chance. A value many variants can share (one
number, a small count, a shape, an index) flags only when ``p_coincidence`` is at most
``THRESHOLD``, so a small-integer answer that many variants share never flags on its own.

Cost: each part's distinct expected answers are sorted once by a weighted sum (fixed weights
in [1, 2), not the plain sum, which is the same for every softmax matrix); a student's value is
then compared in full only with those whose projection lies within what the tolerance allows
(a binary search), and the listing stops once more than MAX_PARTNERS owners match (a value
the class shares is no evidence). More than ``CROWD`` distinct values near one projection are
no evidence either (answers built to share a projection, or a region too dense for a match to
prove anything), so a class of n costs O(n log n) per part whatever its answers. A pool's
members are compared each on its own.
"""

from __future__ import annotations

import bisect

import numpy as np

from formats.compare import telling, within
from formats.key_shape import entry_with, gradings, key_students, problem_records
from formats.serialize import decode_names, from_jsonable

from grader.forensics.flag_kinds import MAX_PARTNERS, OTHER_VARIANT, SHARED_WRONG, THRESHOLD, Flag
from grader.store.rows import omitted_reason
from grader.store.spilled import Spilled

CROWD = 256              # distinct values near one projection beyond which a value is no evidence


def _array(value):
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if np.isfinite(a).all() else None


def _weights(size: int) -> np.ndarray:
    """Fixed weights in [1, 2) for the index's projection (the golden-ratio sequence): a
    plain sum would put every softmax matrix at its row count, the whole class in one place."""
    return 1 + np.mod(np.arange(1, size + 1) * 0.6180339887498949, 1.0)


class _PartIndex:
    """One part's values of the whole class (expected answers, twins' answers or students'
    answers), equal values stored once with their owners, sorted by a weighted sum."""

    def __init__(self, values: dict, rtol: float, atol: float):
        self.rtol, self.atol = rtol, atol
        unique: dict = {}
        for owner, v in values.items():
            a = _array(v)
            if a is not None:
                unique.setdefault((a.shape, a.tobytes()), (a, []))[1].append(owner)
        rows = [(float(_weights(a.size) @ a.ravel()), a, owners) for a, owners in unique.values()]
        rows.sort(key=lambda r: r[0])
        self.keys = [r[0] for r in rows]
        self.rows = rows
        self.n = len(values)

    def matching(self, value, limit: int | None = None) -> list | None:
        """The owners of the values ``value`` matches within the tolerance; None when there are
        more than ``limit`` of them (no need to list a value the whole class shares), or when
        more than ``CROWD`` distinct values lie near its projection (a crowd: answers built to
        share one projection, or a region so dense that a match there proves nothing) — so a
        query costs at most that many comparisons, whatever the class handed in."""
        a = _array(value)
        if a is None:
            return []
        # a matches b: |a − b| ≤ atol + rtol·|b| entrywise, so with weights w < 2,
        # |w·a − w·b| ≤ 2 (size·atol + rtol·Σ|b|), and Σ|b| ≤ (Σ|a| + size·atol) / (1 − rtol):
        # only projections that close can match
        spread = a.size * self.atol
        bound = 2 * (spread + self.rtol * (float(np.abs(a).sum()) + spread) / max(1 - self.rtol, 1e-12))
        bound += 1e-9 * (1 + 2 * float(np.abs(a).sum()))       # the sums' own rounding
        x = float(_weights(a.size) @ a.ravel())
        lo, hi = bisect.bisect_left(self.keys, x - bound), bisect.bisect_right(self.keys, x + bound)
        if hi - lo > max(CROWD, 4 * ((limit or 0) + 1)):
            return None
        out: list = []
        for _, b, owners in self.rows[lo:hi]:
            if b.shape == a.shape and within(a, b, self.rtol, self.atol):
                out += owners
                if limit is not None and len(out) > limit:
                    return None
        return out


def _twin_values(record: dict, part: str) -> dict:
    """twin name → what the twin gives for ``part`` on this record's variant."""
    if "twin_values" in record:                       # decoded once (numeric_records)
        return record["twin_values"].get(part, {})
    out = {}
    for name, stored in record.get("twins", {}).items():
        by_part = from_jsonable(stored)
        if isinstance(by_part, dict) and part in by_part:
            out[name] = by_part[part]
    return out


def _expected(record: dict) -> dict:
    return record["expected"] if "expected" in record else decode_names(record["answers"])


def _close(a, b, rtol, atol) -> bool:
    x, y = _array(a), _array(b)
    return x is not None and y is not None and x.shape == y.shape and within(x, y, rtol, atol)


def _mostly_the_same(expected: dict, rtol: float, atol: float) -> bool:
    """Is one expected value shared by more than THRESHOLD of the class (the lecture's own
    numbers, given to everyone)?"""
    index = _PartIndex(expected, rtol, atol)
    limit = max(1, int(THRESHOLD * len(expected)))          # (a value always matches itself)
    return any(index.matching(v, limit) is None for v in list(expected.values())[:50])


def _members(records: dict, problem: str, part: str):
    """(grading item, {student: record}) per template that has the part: a pool's members
    are different problems, compared each on its own (with its own tolerance)."""
    groups: dict = {}
    for sid, by_problem in records.items():
        record = by_problem.get(problem)
        if record is None or record.get("kind") != "numeric":
            continue
        grading = next((g for g in gradings(record, []) if g.get("id") == part), None)
        if grading is not None:
            groups.setdefault(record.get("template"), (grading, {}))[1][sid] = record
    return list(groups.values())


def _is_own(value, record: dict, part: str, rtol: float, atol: float) -> bool:
    """The student's own expected answer, or what one of their own variant's mistakes gives."""
    own = _expected(record).get(part)
    return _close(value, own, rtol, atol) or any(
        _close(value, t, rtol, atol) for t in _twin_values(record, part).values())


_TOLERANCES = ("id", "rtol", "atol")


def numeric_records(key: dict, answers: dict) -> dict:
    """student → problem → what the comparisons read of their record: the numeric problems
    a wrong answer was given to, with the expected answers, the twins' values and the
    tolerances of those parts only, decoded once. (A whole record holds every look-alike,
    hidden case and misconception list: not kept for the whole class.)"""
    wanted: dict = {}
    for (_, problem, part) in answers:
        wanted.setdefault(problem, set()).add(part)
    out = {}
    for sid in key_students(key):
        kept = {}
        for problem, record in problem_records(entry_with(key, sid, wanted)):
            if problem not in wanted or record.get("kind") != "numeric":
                continue
            parts = wanted[problem]
            stored = record.get("answers", {})
            kept[problem] = {"kind": "numeric", "template": record.get("template"),
                             "grading": [{k: g[k] for k in _TOLERANCES if k in g}
                                         for g in gradings(record, []) if g.get("id") in parts],
                             "twin_values": _twins_by_part(record, parts),
                             "expected": {part: from_jsonable(stored[part]) for part in parts if part in stored}}
        out[sid] = kept
    return out


def _twins_by_part(record: dict, parts: set) -> dict:
    """part → twin name → what the twin gives for it, for ``parts``: each twin decoded once."""
    out: dict = {part: {} for part in parts}
    for name, stored in record.get("twins", {}).items():
        if not (isinstance(stored, dict) and isinstance(stored.get("dict"), dict)):
            continue
        for part, value in stored["dict"].items():
            if part in out:
                out[part][name] = from_jsonable(value)
    return out


PART_MEMORY = 256 << 10     # bytes of one part's values kept in memory before they go to disk


def part_rows(key: dict, wanted: dict) -> dict[tuple, Spilled]:
    """(problem, part) → a row per student of the key whose record of the problem is numeric
    and grades the part: (student, template, the part's tolerances, its expected answer and
    each twin's answer, both as stored). ``wanted``: problem → parts. Each entry is decoded
    once, for every wanted problem, and each part's rows are spilled apart (``Spilled``): the
    class's values are then compared a part at a time (``part_flags``), never all held."""
    out = {(pid, part): Spilled(in_memory=PART_MEMORY) for pid, parts in wanted.items() for part in parts}
    for sid in key_students(key):
        for problem, record in problem_records(entry_with(key, sid, wanted)):
            if problem not in wanted or record.get("kind") != "numeric":
                continue
            stored, twins = record.get("answers", {}), record.get("twins", {})
            for g in gradings(record, []):
                part = g.get("id")
                if part in wanted[problem]:
                    out[(problem, part)].append((
                        sid, record.get("template"), {k: g[k] for k in _TOLERANCES if k in g}, stored.get(part),
                        {name: t["dict"][part] for name, t in twins.items()
                         if isinstance(t, dict) and isinstance(t.get("dict"), dict) and part in t["dict"]}))
    return out


def part_flags(problem: str, part: str, rows, given: dict, threshold: float,
               students: int, ask=None) -> tuple[list[Flag], list[Flag]]:
    """The other-variant flags of one part, and its shared-wrong flags that no other-variant
    flag of the same student explains. ``rows``: the part's ``part_rows``; ``given``: student
    → their decoded answer (``by_part``); ``students``: how many the key has; ``ask``: the
    students whose flags are wanted (None: all; every answer is still evidence for them)."""
    groups: dict = {}
    for sid, template, grading, expected, twins in rows:
        record = {"kind": "numeric", "template": template, "grading": [grading],
                  "twin_values": {part: {name: from_jsonable(v) for name, v in twins.items()}},
                  "expected": {} if expected is None else {part: from_jsonable(expected)}}
        groups.setdefault(template, ({"id": part, **grading}, {}))[1][sid] = record
    asked = given if ask is None else {sid: v for sid, v in given.items() if sid in ask}
    other = [f for grading, members in groups.values()
             for f in _other_variant(problem, part, grading, members, asked, threshold)]
    explained = {f.student for f in other}
    telling_ones = {sid: v for sid, v in given.items() if telling(v)}
    shared = [f for grading, members in groups.values()
              for f in _shared_wrong(problem, part, grading, members, telling_ones, students, ask)
              if f.student not in explained]
    return other, shared


def other_variant_flags(key: dict, answers: dict, threshold: float = THRESHOLD,
                        records: dict | None = None) -> list[Flag]:
    """``answers``: (student, problem, part) → the counted handin's stored answer, for the
    numeric parts that did not pass. One flag per student and part whose value is some
    classmates' expected answer — or what a listed mistake gives on a classmate's variant (a
    copied *wrong* answer) — and neither the student's own answer nor their own mistake."""
    records = numeric_records(key, answers) if records is None else records
    flags = []
    for (problem, part), given in by_part(answers).items():
        for grading, members in _members(records, problem, part):
            flags += _other_variant(problem, part, grading, members, given, threshold)
    return flags


def _other_variant(problem, part, grading, records: dict, given: dict, threshold) -> list[Flag]:
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    expected = {sid: _expected(r).get(part) for sid, r in records.items()}
    index = _PartIndex(expected, rtol, atol)
    twins = _PartIndex({(sid, name): v for sid, r in records.items()
                        for name, v in _twin_values(r, part).items()}, rtol, atol)
    flags = []
    for sid, value in given.items():
        if sid not in records or _is_own(value, records[sid], part, rtol, atol):
            continue                         # right for its owner, or its owner's own mistake
        matches = index.matching(value, MAX_PARTNERS)
        twin_matches = twins.matching(value, MAX_PARTNERS)
        if matches is None or twin_matches is None:
            continue                         # a value too many variants share: no evidence
        partners = tuple(dict.fromkeys([*matches, *(owner for owner, _ in twin_matches)]))
        if not partners or len(partners) > MAX_PARTNERS:
            continue
        share = len(partners) / max(index.n - 1, 1)
        if not telling(value):
            # one number (or a few) lands within the tolerance of *some* classmate's by
            # chance in a large class: the chance of hitting at least one of n − 1
            share = 1 - (1 - share) ** max(index.n - 1, 1)
            if share > threshold:
                continue
        what = "the expected answer" if matches else f"what the mistake {twin_matches[0][1]} gives"
        flags.append(Flag(sid, OTHER_VARIANT, partners, problem, part,
                          f"the answer to {problem}/{part} is {what} on {', '.join(partners)}'s "
                          "variant (within the part's tolerance), not on this student's own", share))
    return flags


def shared_wrong_flags(key: dict, answers: dict, records: dict | None = None) -> list[Flag]:
    """Pairs (and small groups) of students who gave the *same* wrong array for a part:
    their variants differ, so the same wrong numbers did not come from the same honest
    slip. Only telling values (an array of four or more real numbers) count; a value that
    is some variant's expected or listed-mistake answer is other-variant evidence instead."""
    records = numeric_records(key, answers) if records is None else records
    flags = []
    for (problem, part), given in by_part(answers).items():
        given = {sid: v for sid, v in given.items() if telling(v)}
        for grading, members in _members(records, problem, part):
            flags += _shared_wrong(problem, part, grading, members, given, len(records))
    return flags


def _shared_wrong(problem, part, grading, records: dict, given: dict, students: int,
                  ask=None) -> list[Flag]:
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    expected = {s: _expected(r).get(part) for s, r in records.items()}
    # a student's own listed mistake is an honest answer, however many classmates share it
    given = {sid: v for sid, v in given.items() if sid in records and not any(
        _close(v, t, rtol, atol) for t in _twin_values(records[sid], part).values())}
    if len(given) < 2 or _mostly_the_same(expected, rtol, atol):
        return []               # a part the same for (nearly) everyone: equal answers prove nothing
    index = _PartIndex(given, rtol, atol)
    flags = []
    for sid, value in given.items():
        if ask is not None and sid not in ask:
            continue
        same = index.matching(value, MAX_PARTNERS + 1)
        if same is None:
            continue
        # the same wrong numbers on the same numbers (two variants that agree on this
        # part) are the same honest slip; only different givens make them evidence
        group = tuple(m for m in same if m != sid
                      and not _close(expected.get(m), expected.get(sid), rtol, atol))
        if not group or len(group) > MAX_PARTNERS:
            continue
        flags.append(Flag(sid, SHARED_WRONG, group, problem, part,
                          f"the same wrong answer to {problem}/{part} as {', '.join(group)}, "
                          "on a different variant", len(group) / max(students - 1, 1)))
    return flags


def by_part(answers: dict) -> dict:
    """(problem, part) → student → the decoded answer, in part order. An answer the gradebook
    left out (too large to store) or cannot decode is no evidence, and is skipped."""
    out: dict = {}
    for (sid, problem, part), stored in sorted(answers.items()):
        if omitted_reason(stored) is not None:
            continue
        try:
            value = from_jsonable(stored) if isinstance(stored, (dict, list)) else stored
        except (TypeError, ValueError):
            continue
        out.setdefault((problem, part), {})[sid] = value
    return out
