"""Variant pools: which member of a pool each student gets.

A pool is an assignment problem made of several templates (same objective, same points);
each student gets one. Randomised numbers alone leave copying worth 13 percentage points in
a 425-student course, drawing each problem from a pool of 2–4 cut it to 2–3 (Chen, West &
Zilles, L@S 2018), so the draw must be unpredictable to students and even across the class.

The draw is a pure function of the course secret, the assignment, the roster and the
earlier key: students are ordered by HMAC(secret, assignment, student, "<problem>#pool")
(``seeds.variant_seed``), and each in turn gets the member the fewest students have so far
(ties go to the members in an order the same HMAC fixes). So the counts per member differ by
at most one, and no student can work out a classmate's member without the secret.

A rebuild keeps what was issued: a student the earlier key gave a member keeps it (the key's
head records every draw, also of students since removed from the roster, so one who comes
back gets the same problem), and the students new to the roster fill the emptiest members,
so a course that adds late enrolments never sees an issued notebook change. The counts
differ by at most one on a first build and stay so while students are only added; removals
can leave them further apart, since issued members are never moved to even them out.
"""

from __future__ import annotations

from collections import Counter

from exercises.variant.seeds import variant_seed


def _order(secret: bytes, assignment_id: str, pid: str, names) -> list[str]:
    return sorted(names, key=lambda name: variant_seed(secret, assignment_id, name, f"{pid}#pool"))


def draw(secret: bytes, assignment_id: str, pid: str, members: list[str], students: list[str],
         earlier: dict[str, str] | None = None) -> dict[str, str]:
    """student → the member (template id) they get, for one pool. ``earlier``: student →
    the member an earlier key gave them (kept when it is still in the pool)."""
    roster = set(students)
    kept = {s: m for s, m in (earlier or {}).items() if m in members and s in roster}
    counts = Counter({m: 0 for m in members})
    counts.update(kept.values())
    rank = {m: i for i, m in enumerate(_order(secret, assignment_id, pid + "#members", members))}
    out = dict(kept)
    for student in _order(secret, assignment_id, pid, [s for s in students if s not in kept]):
        member = min(members, key=lambda m: (counts[m], rank[m]))
        out[student] = member
        counts[member] += 1
    return out


def draws(assignment, secret: bytes, students: list[str],
          earlier_key: dict | None = None) -> dict[str, dict[str, str]]:
    """student → {pool problem id → member template id} for every pool of ``assignment``
    (an assignment without pools: every student maps to {}). ``earlier_key``: a student it
    gave a member keeps it — their entry's, or for a student since removed from the roster
    and now back, the draw its head recorded (``recorded``)."""
    out: dict[str, dict[str, str]] = {s: {} for s in students}
    for problem in assignment.problems:
        if not problem.pool:
            continue
        drawn = draw(secret, assignment.id, problem.id, [t.id for t in problem.pool], students,
                     _earlier(earlier_key, problem.id))
        for student, member in drawn.items():
            out[student][problem.id] = member
    return out


def _earlier(key: dict | None, pid: str) -> dict[str, str]:
    """student → the member an earlier key gave them for pool ``pid``."""
    if not key:
        return {}
    head = next((p for p in key.get("assignment", {}).get("problems", []) if p.get("id") == pid), {})
    out = dict(head.get("drawn", {})) if isinstance(head.get("drawn"), dict) else {}
    for sid, entry in key.get("students", {}).items():
        record = entry.get("problems", {}).get(pid)
        if isinstance(record, dict) and isinstance(record.get("template"), str):
            out[sid] = record["template"]
    return out


def recorded(assignment, drawn: dict[str, dict[str, str]], earlier_key: dict | None) -> dict[str, dict[str, str]]:
    """pool problem → student → member, for the key's head: this build's draws and every
    earlier one of a student no longer in the roster, so one who comes back gets the same
    problem again."""
    out = {}
    for problem in assignment.problems:
        if problem.pool:
            members = {t.id for t in problem.pool}
            kept = {s: m for s, m in _earlier(earlier_key, problem.id).items() if m in members}
            kept.update({s: d[problem.id] for s, d in drawn.items() if problem.id in d})
            out[problem.id] = dict(sorted(kept.items()))
    return out


def counts(assignment, drawn: dict[str, dict[str, str]]) -> dict[str, dict[str, int]]:
    """pool problem id → member → how many students got it (every member listed)."""
    return {p.id: {t.id: sum(1 for d in drawn.values() if d.get(p.id) == t.id) for t in p.pool}
            for p in assignment.problems if p.pool}
