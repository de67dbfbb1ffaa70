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

Cost: the class is compared a part at a time, each part's expected answers, twins' answers
and students' answers in a ``ValueIndex`` (``grader.forensics.value_index``: a matrix per
shape, searched by a weighted sum); the listing stops once more than MAX_PARTNERS owners match
(a value the class shares is no evidence), and a crowd of values near one projection is no
evidence either, so a class of n costs O(n log n) per part whatever its answers. A pool's
members are compared each on its own.
"""

from __future__ import annotations

from array import array

from formats.compare import telling, within
from formats.key_shape import entry_with, gradings, key_students, problem_records
from formats.serialize import from_jsonable

from grader.forensics.flag_kinds import MAX_PARTNERS, OTHER_VARIANT, SHARED_WRONG, THRESHOLD, Flag
from grader.forensics.value_index import ValueIndex, as_floats
from grader.store.rows import omitted_reason
from grader.store.spilled import Spilled

_TOLERANCES = ("id", "rtol", "atol")


def _close(a, b, rtol, atol) -> bool:
    x, y = as_floats(a), as_floats(b)
    return x is not None and y is not None and x.shape == y.shape and within(x, y, rtol, atol)


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


class _Group:
    """One template's records of a part (a pool's members are compared each on its own):
    its students (by place, the order they came), their expected answers (owner: place) and
    their variants' mistakes (owner: twin number, ``twin_owner`` its student's place)."""

    def __init__(self, part: str, grading: dict, asked: dict):
        self.grading = {"id": part, **grading}
        self.rtol, self.atol = float(self.grading["rtol"]), float(self.grading["atol"])
        self.sids: list[str] = []
        self.place: dict[str, int] = {}
        self.expected = ValueIndex(self.rtol, self.atol)
        # the class's listed mistakes are several values a student, and only the asked answers
        # look them up: only those one of the answers may match are kept in full
        queries = ValueIndex(self.rtol, self.atol)
        for value in asked.values():
            queries.add(value)
        self.twins = ValueIndex(self.rtol, self.atol, queries.freeze(), MAX_PARTNERS)
        self.twin_owner, self.twin_name = array("i"), array("i")
        self.names: dict[str, int] = {}
        self.own_mistake = bytearray()      # place → 1: their telling answer is their own variant's mistake

    def add(self, sid: str, expected, twins: dict, given) -> None:
        place = self.place[sid] = len(self.sids)
        self.sids.append(sid)
        self.expected.add(None if expected is None else from_jsonable(expected))
        values = [from_jsonable(v) for v in twins.values()]
        for name, value in zip(twins, values):
            self.twins.add(value)
            self.twin_owner.append(place)
            self.twin_name.append(self.names.setdefault(name, len(self.names)))
        self.own_mistake.append(given is not None and telling(given)
                                and any(_close(given, t, self.rtol, self.atol) for t in values))

    def freeze(self) -> "_Group":
        self.expected.freeze(), self.twins.freeze()
        self.names_by_number = list(self.names)
        return self

    def mostly_the_same(self) -> bool:
        """Is one expected value shared by more than THRESHOLD of the class (the lecture's own
        numbers, given to everyone)?"""
        limit = max(1, int(THRESHOLD * self.expected.n))        # (a value always matches itself)
        return any(self.expected.matching(self.expected.value(k), limit) is None
                   for k in range(min(50, self.expected.n)))


def part_groups(rows, part: str, given: dict, asked: dict | None = None) -> list[_Group]:
    """A part's ``part_rows`` in one pass, a ``_Group`` per template. ``given``: student →
    their decoded answer (whether it is one of their own variant's mistakes is noted);
    ``asked``: those whose other-variant flags are wanted (None: all of ``given``)."""
    asked = given if asked is None else asked
    groups: dict = {}
    for sid, template, grading, expected, twins in rows:
        group = groups.get(template) or groups.setdefault(template, _Group(part, grading, asked))
        group.add(sid, expected, twins, given.get(sid))
    return [g.freeze() for g in groups.values()]


def part_flags(problem: str, part: str, rows, given: dict, threshold: float,
               students: int, ask=None) -> tuple[list[Flag], list[Flag]]:
    """The other-variant flags of one part, and its shared-wrong flags that no other-variant
    flag of the same student explains. ``rows``: the part's ``part_rows``; ``given``: student
    → their decoded answer (``by_part``); ``students``: how many the key has; ``ask``: the
    students whose flags are wanted (None: all; every answer is still evidence for them)."""
    asked = given if ask is None else {sid: v for sid, v in given.items() if sid in ask}
    groups = part_groups(rows, part, given, asked)
    other = [f for g in groups for f in _other_variant(problem, part, g, asked, threshold)]
    explained = {f.student for f in other}
    telling_ones = {sid: v for sid, v in given.items() if telling(v)}
    shared = [f for g in groups for f in _shared_wrong(problem, part, g, telling_ones, students, ask)
              if f.student not in explained]
    return other, shared


def _each_part(key: dict, answers: dict):
    """(problem, part, its groups, student → decoded answer) of each part ``answers`` has."""
    given_by = by_part(answers)
    wanted: dict = {}
    for problem, part in given_by:
        wanted.setdefault(problem, set()).add(part)
    rows = part_rows(key, wanted)
    for (problem, part), given in given_by.items():
        yield problem, part, part_groups(rows.pop((problem, part)), part, given), given


def other_variant_flags(key: dict, answers: dict, threshold: float = THRESHOLD) -> list[Flag]:
    """``answers``: (student, problem, part) → the counted handin's stored answer, for the
    numeric parts that did not pass. One flag per student and part whose value is some
    classmates' expected answer — or what a listed mistake gives on a classmate's variant (a
    copied *wrong* answer) — and neither the student's own answer nor their own mistake."""
    return [f for problem, part, groups, given in _each_part(key, answers)
            for g in groups for f in _other_variant(problem, part, g, given, threshold)]


def _other_variant(problem, part, g: _Group, given: dict, threshold) -> list[Flag]:
    flags = []
    for sid, value in given.items():
        place = g.place.get(sid)
        if place is None:
            continue
        matches = g.expected.matching(value, MAX_PARTNERS)
        twin_matches = g.twins.matching(value, MAX_PARTNERS)
        if matches is None or twin_matches is None:
            continue                         # a value too many variants share: no evidence
        if place in matches or any(g.twin_owner[t] == place for t in twin_matches):
            continue                         # right for its owner, or its owner's own mistake
        partners = tuple(dict.fromkeys([*(g.sids[m] for m in matches),
                                        *(g.sids[g.twin_owner[t]] for t in twin_matches)]))
        if not partners or len(partners) > MAX_PARTNERS:
            continue
        share = len(partners) / max(g.expected.n - 1, 1)
        if not telling(value):
            # one number (or a few) lands within the tolerance of *some* classmate's by
            # chance in a large class: the chance of hitting at least one of n − 1
            share = 1 - (1 - share) ** max(g.expected.n - 1, 1)
            if share > threshold:
                continue
        what = ("the expected answer" if matches else
                f"what the mistake {g.names_by_number[g.twin_name[twin_matches[0]]]} gives")
        flags.append(Flag(sid, OTHER_VARIANT, partners, problem, part,
                          f"the answer to {problem}/{part} is {what} on {', '.join(partners)}'s "
                          "variant (within the part's tolerance), not on this student's own", share))
    return flags


def shared_wrong_flags(key: dict, answers: dict) -> list[Flag]:
    """Pairs (and small groups) of students who gave the *same* wrong array for a part:
    their variants differ, so the same wrong numbers did not come from the same honest
    slip. Only telling values (an array of four or more real numbers) count; a value that
    is some variant's expected or listed-mistake answer is other-variant evidence instead."""
    students = len(key_students(key))
    flags = []
    for problem, part, groups, given in _each_part(key, answers):
        given = {sid: v for sid, v in given.items() if telling(v)}
        flags += [f for g in groups for f in _shared_wrong(problem, part, g, given, students)]
    return flags


def _shared_wrong(problem, part, g: _Group, given: dict, students: int, ask=None) -> list[Flag]:
    # a student's own listed mistake is an honest answer, however many classmates share it
    given = {sid: v for sid, v in given.items() if sid in g.place and not g.own_mistake[g.place[sid]]}
    if len(given) < 2 or g.mostly_the_same():
        return []               # a part the same for (nearly) everyone: equal answers prove nothing
    index, owners = ValueIndex(g.rtol, g.atol), list(given)
    for value in given.values():
        index.add(value)
    index.freeze()
    flags = []
    for sid, value in given.items():
        if ask is not None and sid not in ask:
            continue
        same = index.matching(value, MAX_PARTNERS + 1)
        if same is None:
            continue
        # the same wrong numbers on the same numbers (two variants that agree on this
        # part) are the same honest slip; only different givens make them evidence
        mine = g.expected.value(g.place[sid])
        group = tuple(owners[m] for m in same if owners[m] != sid and not _close(
            g.expected.value(g.place[owners[m]]), mine, g.rtol, g.atol))
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
