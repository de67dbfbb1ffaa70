"""Similar implement code, for answer forensics (``grader.forensics.flags``): two students'
implement cells compared by winnowed fingerprints of normalised tokens
(``grader.forensics.fingerprints``), read from the counted handin's notebook only while its
content hash is still the handin's; what everybody was given (the stub) and the reference
solution, read from the build's release and instructor notebooks, are no evidence. A flag's
``part`` is the implement function's name."""

from __future__ import annotations

import bisect
from itertools import accumulate
from pathlib import Path

from formats.cells import grade_id
from formats.key_shape import IMPLEMENT, entry_for, entry_outline, key_students, problem_records

from grader.forensics.fingerprints import fingerprints, line_ranges, plain, similar_groups
from grader.forensics.flag_kinds import MAX_PARTNERS, SIMILAR_CODE, Flag
from grader.intake.reading import read_submission
from grader.intake.records import Found


def _implement_problems(key: dict) -> dict[tuple[str, str], str]:
    """(problem id, function) → the answer cell's grade id, for every function an implement
    problem asks for (a pool of implement problems asks for one per member), in key order."""
    out = {}
    for sid in key_students(key):
        for pid, record in problem_records(entry_outline(key, sid)):
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
        entry = entry_outline(key, sid)              # (the function, digest and notebook only)
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
    """Similar implement code (``grader.forensics.fingerprints``) of every pair of students, from the
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
