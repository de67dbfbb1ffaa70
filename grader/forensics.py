"""Answer forensics, for instructors only: a submitted value that is *another student's*
expected answer or another student's mistake ("other-variant"), the same wrong numbers
handed in by two students on different variants ("shared-wrong"), and two students' similar
implement code ("similar-code", ``similar_code_flags``: winnowed fingerprints of normalised
tokens, ``grader.code_similarity``; read from the counted handin's notebook only while its
content hash is still the handin's, the stub and the reference solution from the build's
release and instructor notebooks; ``part`` is the implement function's name).

The answers are read from the gradebook part by part for the counted handins: every failed or
partial numeric part, and every part passed by follow-through credit only (a copied chain is
right "given the student's own" earlier answers, which are copied too).

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

Cost: each part's expected answers are sorted once by their sum; a student's value is then
compared in full only with those whose sum lies within what the tolerance allows (a binary
search), so a class of n costs O(n log n) per part, not O(n²).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from formats.cells import grade_id
from formats.compare import telling, within
from formats.key_shape import IMPLEMENT, entry_for, gradings, key_students, problem_records
from formats.serialize import decode_names, from_jsonable

from .code_similarity import fingerprints, line_ranges, plain, similar_pairs
from .follow_through import FOLLOW_THROUGH
from .gradebook import omitted_reason
from .intake import Found, read_submission

OTHER_VARIANT, SHARED_WRONG, SIMILAR_CODE = "other-variant", "shared-wrong", "similar-code"
THRESHOLD = 0.1          # at most this share of the class may share the value
MAX_PARTNERS = 3


@dataclass(frozen=True)
class Flag:
    student: str
    kind: str
    partners: tuple[str, ...]
    problem: str
    part: str
    evidence: str
    p_coincidence: float

    def as_json(self) -> dict:
        return {"student": self.student, "kind": self.kind, "with": list(self.partners),
                "problem": self.problem, "part": self.part, "evidence": self.evidence,
                "p_coincidence": round(self.p_coincidence, 6)}


def _array(value):
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None
    return a if np.isfinite(a).all() else None


class _PartIndex:
    """One part's expected answers of the whole class, sorted by their sums."""

    def __init__(self, expected: dict, rtol: float, atol: float):
        self.rtol, self.atol = rtol, atol
        rows = [(float(a.sum()), sid, a) for sid, a in ((s, _array(v)) for s, v in expected.items())
                if a is not None]
        rows.sort(key=lambda r: r[0])
        self.sums = [r[0] for r in rows]
        self.rows = rows
        self.n = len(expected)

    def matching(self, value) -> list[str]:
        """The students whose expected answer ``value`` matches within the tolerance."""
        a = _array(value)
        if a is None:
            return []
        # a matches b: |a − b| ≤ atol + rtol·|b| entrywise, so |Σa − Σb| ≤ size·atol + rtol·Σ|b|,
        # and Σ|b| ≤ (Σ|a| + size·atol) / (1 − rtol): only sums that close can match
        spread = a.size * self.atol
        bound = spread + self.rtol * (float(np.abs(a).sum()) + spread) / max(1 - self.rtol, 1e-12)
        bound += 1e-9 * (1 + float(np.abs(a).sum()))       # the sums' own rounding
        s = float(a.sum())
        lo, hi = bisect.bisect_left(self.sums, s - bound), bisect.bisect_right(self.sums, s + bound)
        return [sid for _, sid, b in self.rows[lo:hi]
                if b.shape == a.shape and within(a, b, self.rtol, self.atol)]


def _twin_values(record: dict, part: str) -> dict:
    """twin name → what the twin gives for ``part`` on this record's variant."""
    out = {}
    for name, stored in record.get("twins", {}).items():
        by_part = from_jsonable(stored)
        if isinstance(by_part, dict) and part in by_part:
            out[name] = by_part[part]
    return out


def _close(a, b, rtol, atol) -> bool:
    x, y = _array(a), _array(b)
    return x is not None and y is not None and x.shape == y.shape and within(x, y, rtol, atol)


def _mostly_the_same(expected: dict, rtol: float, atol: float) -> bool:
    """Is one expected value shared by more than THRESHOLD of the class (the lecture's own
    numbers, given to everyone)?"""
    index = _PartIndex(expected, rtol, atol)
    values = list(expected.values())
    return any(len(index.matching(v)) > THRESHOLD * len(values) for v in values[:50])


def other_variant_flags(key: dict, answers: dict, threshold: float = THRESHOLD) -> list[Flag]:
    """``answers``: (student, problem, part) → the counted handin's stored answer, for the
    numeric parts that did not pass. One flag per student and part whose value is some
    classmates' expected answer — or what a listed mistake gives on a classmate's variant (a
    copied *wrong* answer) — and neither the student's own answer nor their own mistake."""
    students = key_students(key)
    records = {sid: dict(problem_records(key["students"][sid])) for sid in students}
    flags = []
    for (problem, part), given in _by_part(answers).items():
        expected, grading = {}, None
        for sid in students:
            record = records[sid].get(problem)
            if record is None or record.get("kind") != "numeric":
                continue
            grading = grading or next((g for g in gradings(record) if g.get("id") == part), None)
            expected[sid] = decode_names(record["answers"]).get(part)
        if grading is None or not expected:
            continue
        rtol, atol = float(grading["rtol"]), float(grading["atol"])
        index = _PartIndex(expected, rtol, atol)
        twins = _PartIndex({(sid, name): v for sid in expected
                            for name, v in _twin_values(records[sid][problem], part).items()}, rtol, atol)
        for sid, value in given.items():
            if sid not in expected:
                continue
            matches = index.matching(value)
            twin_matches = twins.matching(value)
            if sid in matches or any(owner == sid for owner, _ in twin_matches):
                continue                         # right for its owner, or its owner's own mistake
            partners = tuple(dict.fromkeys([*(m for m in matches if m != sid),
                                            *(owner for owner, _ in twin_matches)]))
            if not partners or len(partners) > MAX_PARTNERS:
                continue
            share = len(partners) / max(index.n - 1, 1)
            if not telling(value):
                # one number (or a few) lands within the tolerance of *some* classmate's by
                # chance in a large class: the chance of hitting at least one of n − 1
                share = 1 - (1 - share) ** max(index.n - 1, 1)
                if share > threshold:
                    continue
            what = ("the expected answer" if matches else
                    f"what the mistake {twin_matches[0][1]} gives")
            flags.append(Flag(sid, OTHER_VARIANT, partners, problem, part,
                              f"the answer to {problem}/{part} is {what} on {', '.join(partners)}'s "
                              "variant (within the part's tolerance), not on this student's own", share))
    return flags


def shared_wrong_flags(key: dict, answers: dict) -> list[Flag]:
    """Pairs (and small groups) of students who gave the *same* wrong array for a part:
    their variants differ, so the same wrong numbers did not come from the same honest
    slip. Only telling values (an array of four or more real numbers) count; a value that
    is some variant's expected or listed-mistake answer is other-variant evidence instead."""
    flags = []
    students = key_students(key)
    entries = {s: dict(problem_records(key["students"][s])) for s in students}
    for (problem, part), given in _by_part(answers).items():
        given = {sid: v for sid, v in given.items() if telling(v)}
        records = {s: entries[s].get(problem) for s in students}
        record = next((r for r in records.values() if r), None)
        grading = next((g for g in gradings(record) if g.get("id") == part), None) if record else None
        if grading is None or len(given) < 2:
            continue
        rtol, atol = float(grading["rtol"]), float(grading["atol"])
        expected = {s: decode_names(r["answers"]).get(part) for s, r in records.items() if r}
        if _mostly_the_same(expected, rtol, atol):
            continue            # a part the same for (nearly) everyone: equal answers prove nothing
        # a student's own listed mistake is an honest answer, however many classmates share it
        given = {sid: v for sid, v in given.items()
                 if not any(_close(v, t, rtol, atol) for t in _twin_values(records[sid], part).values())}
        index = _PartIndex(given, rtol, atol)
        for sid, value in given.items():
            # the same wrong numbers on the same numbers (two variants that agree on this
            # part) are the same honest slip; only different givens make them evidence
            group = tuple(m for m in index.matching(value) if m != sid
                          and not _close(expected.get(m), expected.get(sid), rtol, atol))
            if not group or len(group) > MAX_PARTNERS:
                continue
            flags.append(Flag(sid, SHARED_WRONG, group, problem, part,
                              f"the same wrong answer to {problem}/{part} as {', '.join(group)}, "
                              "on a different variant", len(group) / max(len(students) - 1, 1)))
    return flags


def _by_part(answers: dict) -> dict:
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


def _counted_part(r) -> bool:
    """A part whose answer forensics reads: failed, partial, or passed only by follow-through
    credit (a copied chain is right "given the student's own" earlier, copied, answers)."""
    return r is not None and (r.status in ("failed", "partial")
                              or (r.status == "passed" and r.message.startswith(FOLLOW_THROUGH)))


def counted_answers(grades, gradebook=None) -> dict:
    """(student, problem, part) → stored answer of every failed numeric part of ``grades``
    (``grades.class_grades``: the counted handins), and of every part passed by follow-through
    credit. ``class_grades`` reads no answers (a class's would be gigabytes): with the
    ``gradebook``, each such part's answers are read for the counted handins only, one part
    at a time (``Gradebook.part_results``)."""
    out, wanted = {}, {}
    for s in grades:
        for p in s.parts:
            r = p.result
            if not _counted_part(r):
                continue
            if r.answer is not None:
                out[(s.id, p.problem, p.part)] = r.answer
            elif gradebook is not None and s.handin:
                wanted.setdefault((r.assignment, p.problem, p.part), {})[s.id] = s.handin
    for (assignment, problem, part), handins in wanted.items():
        for handin, r in gradebook.part_results(assignment, problem, part, handins=handins):
            if handins.get(r.student) == handin and _counted_part(r) and r.answer is not None:
                out[(r.student, problem, part)] = r.answer
    return out


def forensics(gradebook, key: dict, threshold: float = THRESHOLD, build=None, code: bool = True,
              deadline=None) -> dict:
    """Every flag of the class, as ``attnkit forensics --json`` prints it: other-variant and
    shared-wrong numbers, and similar implement code (``grader.code_similarity_flags``;
    ``build``: the build folder, for the stub and the reference solution, by default the
    folder above the gradebook's ``instructor/``; ``code=False`` skips it; ``deadline``: the
    late policy that says which handin counts). ``result["code"]``
    says what the code comparison read and which handins it skipped, and why."""
    from .grades import class_grades
    grades = class_grades(gradebook, key, deadline)
    answers = counted_answers(grades, gradebook)
    flags = other_variant_flags(key, answers, threshold)
    explained = {(f.student, f.problem, f.part) for f in flags}
    flags += [f for f in shared_wrong_flags(key, answers)
              if (f.student, f.problem, f.part) not in explained]
    result = {"flags": [], "students": len(grades), "threshold": threshold}
    if code:
        code_flags, result["code"] = similar_code_flags(key, grades, _build_of(gradebook, build))
        flags += code_flags
    result["flags"] = [f.as_json() for f in flags]
    return result


def _build_of(gradebook, build):
    """The build folder: ``build``, else the folder above the gradebook's ``instructor/``
    when it holds the build's notebooks (``attnkit build``'s layout), else None."""
    if build is not None:
        return Path(build)
    path = Path(getattr(gradebook, "path", ""))
    if path.parent.name == "instructor" and (path.parent / "notebooks").is_dir():
        return path.parent.parent
    return None


# --- similar implement code ----------------------------------------------------------------

def _implement_problems(key: dict) -> dict[tuple[str, str], str]:
    """(problem id, function) → the answer cell's grade id, for every function an implement
    problem asks for (a pool of implement problems asks for one per member), in key order."""
    out = {}
    for sid in key_students(key):
        for pid, record in problem_records(key["students"][sid]):
            if record.get("kind") == IMPLEMENT and isinstance(record.get("function"), str):
                out.setdefault((pid, record["function"]), grade_id(pid, record["function"]))
    return out


def _cells(path: Path, student: str, key: dict | None) -> tuple[dict[str, str], str]:
    """({grade id: source} of the code cells of the notebook at ``path``, its content hash),
    read as intake reads a handin (bounded, never raising), the file read once."""
    found = Found(student, path, path.name, "folder")
    entry = entry_for(key, student) if key is not None else None
    sub = read_submission(found, key, entry) if entry is not None else read_submission(found)
    return ({c.grade_id: c.source for c in sub.cells if c.grade_id and c.cell_type == "code"},
            sub.content_hash)


def _template_code(build: Path, key: dict, pid: str, function: str, gid: str) -> tuple[frozenset, frozenset, int]:
    """(stub fingerprints, reference fingerprints, notebooks read) of ``function`` of problem
    ``pid``: the release notebook's answer cell (the stub everybody was given) and the
    instructor notebook's (the reference solution), once per template the class's records name."""
    given, reference, read, seen = set(), set(), 0, set()
    for sid in key_students(key):
        entry = key["students"][sid]
        record = dict(problem_records(entry)).get(pid, {})
        if record.get("function") != function or record.get("template_digest") in seen \
                or not isinstance(entry.get("notebook"), str):
            continue
        release = build / entry["notebook"]
        stub = _cells(release, sid, None)[0].get(gid)
        solution = _cells(build / "instructor" / "notebooks" / sid / release.name, sid, None)[0].get(gid)
        if stub is None or solution is None:
            continue
        seen.add(record.get("template_digest"))
        given |= fingerprints(stub).hashes
        reference |= fingerprints(solution).hashes
        read += 2
    return frozenset(given), frozenset(reference - given), read


def _handin_codes(grades, key: dict, gids: dict, skipped: list) -> dict:
    """(problem, function) → student → fingerprints of the implement cell of the counted
    handin, read only when the file is still the notebook graded (its content hash is the
    handin's)."""
    codes: dict[tuple, dict] = {k: {} for k in gids}
    for s in grades:
        if not s.path or not s.handin:
            continue
        sources, content_hash = _cells(Path(s.path), s.id, key)
        if content_hash != s.handin:
            skipped.append({"student": s.id, "reason": "the file is no longer the notebook "
                            "graded (its content changed or it cannot be read): not compared"})
            continue
        for k, gid in gids.items():
            if gid in sources:
                codes[k][s.id] = fingerprints(sources[gid])
    return codes


def _code_flags(pid: str, function: str, codes: dict, given, reference) -> list[Flag]:
    """Two flags per similar pair (one on each student). ``p_coincidence``: the share of the
    class's pairs (n(n − 1)/2, a pair sharing nothing has similarity 0) at least this
    similar, this pair included: how unusual the pair is in this class, an empirical upper
    bound rather than a model's probability."""
    pairs, seen = similar_pairs(codes, given, reference)
    total = max(1, len(codes) * (len(codes) - 1) // 2)
    flags = []
    for pair in pairs:
        share = sum(score >= pair.similarity for score in seen) / total
        for me, other, mine, theirs in ((pair.a, pair.b, pair.lines_a, pair.lines_b),
                                        (pair.b, pair.a, pair.lines_b, pair.lines_a)):
            evidence = (f"similar code in {function}: {len(pair.shared)} fingerprints of normalised "
                        f"tokens outside the given stub and the reference solution are shared "
                        f"(similarity {pair.similarity:.2f}, renamed variables, layout and statement "
                        f"order aside); lines {line_ranges(mine)} of this student's cell match lines "
                        f"{line_ranges(theirs)} of {other}'s")
            flags.append(Flag(me, SIMILAR_CODE, (other,), pid, function, plain(evidence), share))
    return flags


def similar_code_flags(key: dict, grades, build) -> tuple[list[Flag], dict]:
    """Similar implement code (``grader.code_similarity``) of every pair of students, from the
    counted handins' notebooks, and what was read: ``{"problems", "compared", "skipped",
    "notes"}``. ``part`` of a flag is the implement function's name (the answer cell's)."""
    gids = _implement_problems(key)
    info = {"problems": sorted({pid for pid, _ in gids}), "compared": {}, "skipped": [], "notes": []}
    if not gids:
        return [], info
    if build is None or not Path(build).is_dir():
        info["notes"].append("no build folder (--build): the stub and the reference solution are "
                             "unknown, so similar code was not compared")
        return [], info
    codes = _handin_codes(grades, key, gids, info["skipped"])
    flags = []
    for (pid, function), gid in gids.items():
        given, reference, read = _template_code(Path(build), key, pid, function, gid)
        if not read:
            info["notes"].append(f"{pid}: the build's release and instructor notebooks hold no "
                                 f"{function} cell: similar code was not compared")
            continue
        info["compared"][pid] = info["compared"].get(pid, 0) + len(codes[(pid, function)])
        flags += _code_flags(pid, function, codes[(pid, function)], given, reference)
    return flags, info
