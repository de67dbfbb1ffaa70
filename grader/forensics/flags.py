"""Answer forensics, for instructors only: a submitted value that is *another student's*
expected answer or another student's mistake ("other-variant"), the same wrong numbers
handed in by two students on different variants ("shared-wrong"), and two students' similar
implement code ("similar-code", ``similar_code_flags``: winnowed fingerprints of normalised
tokens, ``grader.forensics.code_similarity``; read from the counted handin's notebook only while its
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

Cost: each part's distinct expected answers are sorted once by a weighted sum (fixed weights
in [1, 2), not the plain sum, which is the same for every softmax matrix); a student's value is
then compared in full only with those whose projection lies within what the tolerance allows
(a binary search), and the listing stops once more than MAX_PARTNERS owners match (a value
the class shares is no evidence). More than ``CROWD`` distinct values near one projection are
no evidence either (answers built to share a projection, or a region too dense for a match to
prove anything), so a class of n costs O(n log n) per part whatever its answers. A pool's members are compared each on its own.
"""

from __future__ import annotations

import bisect
from itertools import accumulate
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from formats.cells import grade_id
from formats.compare import telling, within
from formats.key_shape import IMPLEMENT, entry_for, gradings, key_students, problem_records
from formats.serialize import decode_names, from_jsonable

from grader.forensics.code_similarity import fingerprints, line_ranges, plain, similar_groups
from grader.verdicts.follow_through import FOLLOW_THROUGH
from grader.store.gradebook import omitted_reason
from grader.intake.submissions import Found, read_submission

OTHER_VARIANT, SHARED_WRONG, SIMILAR_CODE = "other-variant", "shared-wrong", "similar-code"
THRESHOLD = 0.1          # at most this share of the class may share the value
MAX_PARTNERS = 3
CROWD = 256              # distinct values near one projection beyond which a value is no evidence


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
    own = decode_names(record["answers"]).get(part)
    return _close(value, own, rtol, atol) or any(
        _close(value, t, rtol, atol) for t in _twin_values(record, part).values())


def other_variant_flags(key: dict, answers: dict, threshold: float = THRESHOLD) -> list[Flag]:
    """``answers``: (student, problem, part) → the counted handin's stored answer, for the
    numeric parts that did not pass. One flag per student and part whose value is some
    classmates' expected answer — or what a listed mistake gives on a classmate's variant (a
    copied *wrong* answer) — and neither the student's own answer nor their own mistake."""
    records = {sid: dict(problem_records(key["students"][sid])) for sid in key_students(key)}
    flags = []
    for (problem, part), given in _by_part(answers).items():
        for grading, members in _members(records, problem, part):
            flags += _other_variant(problem, part, grading, members, given, threshold)
    return flags


def _other_variant(problem, part, grading, records: dict, given: dict, threshold) -> list[Flag]:
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    expected = {sid: decode_names(r["answers"]).get(part) for sid, r in records.items()}
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


def shared_wrong_flags(key: dict, answers: dict) -> list[Flag]:
    """Pairs (and small groups) of students who gave the *same* wrong array for a part:
    their variants differ, so the same wrong numbers did not come from the same honest
    slip. Only telling values (an array of four or more real numbers) count; a value that
    is some variant's expected or listed-mistake answer is other-variant evidence instead."""
    records = {sid: dict(problem_records(key["students"][sid])) for sid in key_students(key)}
    flags = []
    for (problem, part), given in _by_part(answers).items():
        given = {sid: v for sid, v in given.items() if telling(v)}
        for grading, members in _members(records, problem, part):
            flags += _shared_wrong(problem, part, grading, members, given, len(records))
    return flags


def _shared_wrong(problem, part, grading, records: dict, given: dict, students: int) -> list[Flag]:
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    expected = {s: decode_names(r["answers"]).get(part) for s, r in records.items()}
    # a student's own listed mistake is an honest answer, however many classmates share it
    given = {sid: v for sid, v in given.items() if sid in records and not any(
        _close(v, t, rtol, atol) for t in _twin_values(records[sid], part).values())}
    if len(given) < 2 or _mostly_the_same(expected, rtol, atol):
        return []               # a part the same for (nearly) everyone: equal answers prove nothing
    index = _PartIndex(given, rtol, atol)
    flags = []
    for sid, value in given.items():
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
              deadline=None, grades=None) -> dict:
    """Every flag of the class, as ``attnkit forensics --json`` prints it: other-variant and
    shared-wrong numbers, and similar implement code (``grader.code_similarity_flags``;
    ``build``: the build folder, for the stub and the reference solution, by default the
    folder above the gradebook's ``instructor/``; ``code=False`` skips it; ``deadline``: the
    late policy that says which handin counts). ``result["code"]``
    says what the code comparison read and which handins it skipped, and why. ``grades``:
    the class's grades when the caller has them already."""
    from grader.store.grades import class_grades
    grades = class_grades(gradebook, key, deadline) if grades is None else grades
    answers = counted_answers(grades, gradebook)
    flags = other_variant_flags(key, answers, threshold)
    explained = {(f.student, f.problem, f.part) for f in flags}
    flags += [f for f in shared_wrong_flags(key, answers)
              if (f.student, f.problem, f.part) not in explained]
    result = {"flags": [], "students": len(grades), "threshold": threshold}
    if code:
        code_flags, result["code"] = similar_code_flags(key, grades, _build_of(gradebook, build))
        flags += code_flags
    carried = _follow_through_parts(grades)
    result["flags"] = [_with_follow_through(f.as_json(), carried.get((f.student, f.problem), ()))
                       for f in flags]
    return result


def _follow_through_parts(grades) -> dict[tuple[str, str], list[str]]:
    """(student, problem) → the parts that earned follow-through credit on the counted handin:
    credit "given your earlier answers" that a flag says may be another student's."""
    out: dict[tuple[str, str], list[str]] = {}
    for s in grades:
        for p in s.parts:
            r = p.result
            if r is not None and r.status in ("passed", "partial") and r.message.startswith(FOLLOW_THROUGH):
                out.setdefault((s.id, p.problem), []).append(p.part)
    return out


def _with_follow_through(flag: dict, parts) -> dict:
    """A flag with the follow-through parts of its problem named: a copied chain earns them."""
    flag["follow_through"] = list(parts)
    return flag


def class_forensics(gradebook, key: dict, grades, deadline=None, code: bool = True):
    """``forensics`` of the class, or the exception it raised: a failure must cost only the
    output that shows it (a dashboard section, the TA's copied chains), never the others."""
    try:
        return forensics(gradebook, key, deadline=deadline, code=code, grades=grades)
    except Exception as err:  # noqa: BLE001
        return err


def flags_of(found) -> list | None:
    """The flags of a ``class_forensics`` result (None where it failed)."""
    return None if isinstance(found, Exception) else found["flags"]


COPIED_CHAIN = "copied-chain"      # the TA's list: follow-through credit that rests on a flag


def copied_chains(gradebook, key: dict, grades, flags=None, threshold: float = THRESHOLD) -> dict[str, list]:
    """student → the (code, message) issues for the TA's list ("Needs a human look"): one per
    flag whose problem earned follow-through credit on the counted handin — a chain that
    may be another student's, worked "consistently" from a copied first step. Numbers only
    (the code comparison reads notebooks, and an implement problem has no follow-through).
    ``flags``: the class's forensics flags when the caller has them."""
    if flags is None:
        flags = forensics(gradebook, key, threshold, code=False, grades=grades)["flags"]
    out: dict[str, list] = {}
    for flag in flags:
        note = follow_through_note(flag)
        if note:
            out.setdefault(flag["student"], []).append(
                (COPIED_CHAIN, f"{flag['evidence']}; {note}"))
    return out


def follow_through_note(flag: dict) -> str:
    """The words for a flag's follow-through parts ("" without any), for the lists a TA reads."""
    parts = flag.get("follow_through") or ()
    if not parts:
        return ""
    return (f"follow-through credit on {', '.join(parts)} of {flag['problem']} rests on these answers: "
            "it stands or falls with this flag")


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
    """One flag per student whose code is similar to some classmates' (``with``: the
    MAX_PARTNERS most similar; the evidence counts the rest). ``p_coincidence``: the share of
    the n(n − 1)/2 pairs of students who handed in this function (a pair sharing nothing has
    similarity 0) at least this similar, this pair included: how unusual the pair is in this
    class, an empirical upper bound rather than a model's probability."""
    groups, seen = similar_groups(codes, given, reference)
    total = max(1, len(codes) * (len(codes) - 1) // 2)
    seen.sort()
    keys = [score for score, _ in seen]
    at_least = list(accumulate(count for _, count in reversed(seen)))[::-1]   # pairs ≥ keys[i]
    partners: dict[str, list] = {}   # student → [(similarity, the other group, shared, own group)]
    for g in groups:
        for side, other in ((g.a, g.b), (g.b, g.a)) if g.a != g.b else ((g.a, g.a),):
            for sid in side:
                partners.setdefault(sid, []).append((g.similarity, other, g.shared, g.a == g.b))
    flags = []
    for sid, found in sorted(partners.items()):
        # (a group of identical code is listed once per student: never a list of n² pairs)
        found.sort(key=lambda f: -f[0])
        similarity, shared = found[0][0], found[0][2]
        best = next(o for o in found[0][1] if o != sid)
        top = tuple(dict.fromkeys(o for f in found for o in f[1][:MAX_PARTNERS + 1] if o != sid))[:MAX_PARTNERS]
        others = sum(len(f[1]) - f[3] for f in found)       # (sid is in its own group)
        more = f"; {others - len(top)} more students' code is as similar" if others > len(top) else ""
        evidence = (f"similar code in {function}: {len(shared)} fingerprints of normalised tokens "
                    f"outside the given stub and the reference solution are shared with {best} "
                    f"(similarity {similarity:.2f}, renamed variables, layout and statement order "
                    f"aside); lines {line_ranges(codes[sid].lines(shared))} of this student's cell "
                    f"match lines {line_ranges(codes[best].lines(shared))} of {best}'s{more}")
        share = at_least[bisect.bisect_left(keys, similarity)] / total
        flags.append(Flag(sid, SIMILAR_CODE, top, pid, function, plain(evidence), share))
    return flags


def similar_code_flags(key: dict, grades, build) -> tuple[list[Flag], dict]:
    """Similar implement code (``grader.forensics.code_similarity``) of every pair of students, from the
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
