"""How well answer forensics finds planted copying, and how often it flags honest students.

A class of N students (default 200) gets the example assignment's variants (the engine of
``attnkit build``, no notebooks). Honest students answer as the synthetic profiles do:
right, or with one of their own variant's listed mistakes on every part it changes (each
twin in turn), or right except a few parts with a slip of their own. Planted colluders copy
from a classmate: every numeric answer, some of them, the answers rounded to the shown
decimals, or a pair that shares one invented wrong answer. Forensics (``grader.forensics``)
then reads the failed answers the grader would have stored. Recall: the planted cases
flagged with the right partner; false flags: flags on honest students.

    python -m bench.forensics [--students N] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np

from exercises.assignment import load_assignment
from exercises.build import problem_variants
from formats.compare import within
from formats.key_shape import gradings
from formats.serialize import decode_names, from_jsonable, to_jsonable
from grader.forensics import other_variant_flags, shared_wrong_flags

EXAMPLE = "problem_bank/assignments/example.yaml"
SECRET = b"bench forensics secret"


def class_key(students: int) -> dict:
    assignment = load_assignment(EXAMPLE)
    key = {"students": {}}
    for i in range(students):
        sid = f"b{i:04d}"
        key["students"][sid] = {"problems": {p.id: p.variant.record()
                                             for p in problem_variants(assignment, SECRET, sid)}}
    return key


def _numeric(entry):
    for pid, record in entry["problems"].items():
        if record.get("kind") == "numeric":
            answers = decode_names(record["answers"])
            for g in gradings(record):
                yield pid, g["id"], answers[g["id"]], g, record


def _failed(value, expected, g) -> bool:
    try:
        return not within(np.asarray(value, dtype=float), np.asarray(expected, dtype=float),
                          float(g["rtol"]), float(g["atol"]))
    except (TypeError, ValueError):
        return True


def honest_answers(key: dict, rng: random.Random) -> dict:
    """(student, problem, part) → a failed answer, for honest students of every profile."""
    answers = {}
    for n, (sid, entry) in enumerate(sorted(key["students"].items())):
        profile = n % 3                      # right; a mistake of their own variant; slips
        for pid, part, expected, g, record in _numeric(entry):
            if profile == 1:
                twins = [from_jsonable(v) for v in record.get("twins", {}).values()]
                twins = [t[part] for t in twins if isinstance(t, dict) and part in t]
                if twins:
                    value = twins[n % len(twins)]
                    if _failed(value, expected, g):
                        answers[(sid, pid, part)] = to_jsonable(value)
            elif profile == 2 and rng.random() < 0.3:
                value = np.asarray(expected, dtype=float) * (1 + rng.choice([-1, 1]) * 0.1) + 0.05
                answers[(sid, pid, part)] = to_jsonable(value)
    return answers


def plant(key: dict, answers: dict, rng: random.Random, cases: int) -> list[dict]:
    """Colluders among the honest class: (copier, source, kind), their answers replacing the
    copier's own."""
    students = sorted(key["students"])
    cases = min(cases, len(students) // 4)                         # most of the class stays honest
    planted, pairs = [], iter(rng.sample(students, 2 * cases))     # every student in one case at most
    for c in range(cases):
        copier, source = next(pairs), next(pairs)
        kind = ("all", "some", "rounded", "shared-wrong")[c % 4]
        for k in [k for k in answers if k[0] == copier]:
            del answers[k]
        mine = {(pid, part): (exp, g) for pid, part, exp, g, _ in _numeric(key["students"][copier])}
        theirs = [(pid, part, exp) for pid, part, exp, _, _ in _numeric(key["students"][source])]
        if kind == "shared-wrong":
            pid, part, exp = next((t for t in theirs if np.asarray(t[2]).size >= 4), theirs[0])
            invented = to_jsonable(np.asarray(exp, dtype=float) * 0 + rng.random())
            for k in [k for k in answers if k[0] == source]:
                del answers[k]
            answers[(copier, pid, part)] = answers[(source, pid, part)] = invented
            planted.append({"student": copier, "with": source, "kind": kind, "parts": [(pid, part)]})
            continue
        chosen = theirs if kind != "some" else rng.sample(theirs, max(1, len(theirs) // 3))
        parts = []
        for pid, part, exp in chosen:
            value = np.round(np.asarray(exp, dtype=float), 2) if kind == "rounded" else exp
            own, g = mine[(pid, part)]
            if _failed(value, own, g):
                answers[(copier, pid, part)] = to_jsonable(value)
                parts.append((pid, part))
        planted.append({"student": copier, "with": source, "kind": kind, "parts": parts})
    return planted


def measure(students: int = 200, cases: int = 24, seed: int = 0) -> dict:
    rng = random.Random(seed)
    started = time.perf_counter()
    key = class_key(students)
    built = time.perf_counter() - started
    answers = honest_answers(key, rng)
    planted = plant(key, answers, rng, cases)
    started = time.perf_counter()
    flags = other_variant_flags(key, answers) + shared_wrong_flags(key, answers)
    seconds = time.perf_counter() - started
    colluders = {p["student"] for p in planted} | {p["with"] for p in planted if p["kind"] == "shared-wrong"}
    found = [p for p in planted if p["parts"] and any(
        f.student == p["student"] and p["with"] in f.partners for f in flags)]
    false = [f for f in flags if f.student not in colluders]
    return {"students": students, "planted": len([p for p in planted if p["parts"]]),
            "found": len(found), "recall": len(found) / max(1, len([p for p in planted if p["parts"]])),
            "false_flags": len(false), "flags": len(flags), "forensics_seconds": round(seconds, 3),
            "variants_seconds": round(built, 1),
            "missed": [p for p in planted if p["parts"] and p not in found]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.forensics", description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    r = measure(args.students)
    if args.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    print(f"answer forensics on {r['students']} students with {r['planted']} planted colluders: "
          f"recall {r['found']} of {r['planted']} ({100 * r['recall']:.1f} %), "
          f"{r['false_flags']} false flags among honest students "
          f"({r['flags']} flags in all; forensics took {r['forensics_seconds']} s)")
    for p in r["missed"]:
        print(f"  missed: {p['student']} copying {p['with']} ({p['kind']}, {len(p['parts'])} parts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
