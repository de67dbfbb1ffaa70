"""How well answer forensics finds planted copying, and how often it flags honest students.

A class of N students (default 200) gets the example assignment's variants (the engine of
``attnkit build``, no notebooks). Honest students answer as the synthetic profiles do:
right, or with one of their own variant's listed mistakes on every part it changes (each
twin in turn), or right except a few parts with a slip of their own. Planted colluders copy
from a classmate: every numeric answer, some of them, the answers rounded to the shown
decimals, or a pair that shares one invented wrong answer. Forensics (``grader.forensics.flags``)
then reads the failed answers the grader would have stored. Similar code is planted too
(``grader.forensics.fingerprints``, on code, no notebooks): honest students hand in the reference
solution, the reference with one of the synthetic misconception edits (a large class hands in
each edit several times), or an independent implementation of their own
(``synthetic.colluders.ALTERNATIVES``); a planted pair is a student's own implementation and
a classmate's renamed, reformatted and reordered copy of it (``disguise``). Recall: the
planted cases flagged with the right partner; false flags: flags on honest students.

    python -m bench.forensics [--students N] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np

from exercises.course.assignment import load_assignment
from exercises.course.build import problem_variants
from formats.compare import within
from formats.key_shape import gradings
from formats.serialize import decode_names, from_jsonable, to_jsonable
from grader.forensics.fingerprints import fingerprints, similar_pairs
from grader.forensics.copied_numbers import other_variant_flags, shared_wrong_flags
from synthetic.colluders import ALTERNATIVES, disguise
from synthetic.twin_edits import CODE_EDITS, edit_code

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


def _template_code() -> tuple[str, str]:
    """(stub, reference) of the example's implement problem, as its notebooks hold them."""
    assignment = load_assignment(EXAMPLE)
    problem = next(p for p in problem_variants(assignment, SECRET, "b0000") if p.variant.record().get("kind") == "implement")
    signature, body = problem.variant.template.reference_code()
    return f"{signature}\n    raise NotImplementedError()\n", f"{signature}\n{body}\n"


def code_cases(key: dict, busy: set, rng: random.Random, cases: int = 4) -> tuple[list[dict], list]:
    """Planted similar code among an honest class (see the module's docstring), and the
    pairs ``similar_pairs`` finds, with the stub and the reference left out."""
    stub, reference = _template_code()
    edits = [e for e in (edit_code(reference, t) for t in CODE_EDITS) if e]
    free = [s for s in sorted(key["students"]) if s not in busy]
    pairs = iter(rng.sample(free, min(len(free), 2 * cases + 1)))
    planted, codes = [], {}
    for i in range(min(cases, 5, len(free) // 4)):
        author, copier = next(pairs), next(pairs)
        codes[author], codes[copier] = ALTERNATIVES[i], disguise(ALTERNATIVES[i], rng)
        planted.append({"student": copier, "with": author, "kind": "similar-code",
                        "parts": [("implement", "masked_attention")]})
    independent = next(pairs, None)
    if independent is not None:
        codes[independent] = ALTERNATIVES[5]
    for n, sid in enumerate(s for s in free if s not in codes):
        codes[sid] = reference if n % 2 else edits[n % len(edits)]
    given = fingerprints(stub).hashes
    found = similar_pairs({s: fingerprints(c) for s, c in codes.items()}, given,
                          fingerprints(reference).hashes - given)[0]
    return planted, found


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
    started = time.perf_counter()
    code_planted, pairs = code_cases(key, colluders | {p["with"] for p in planted}, rng)
    code_seconds = time.perf_counter() - started
    flags += [f for pair in pairs for f in (_code_flag(pair.a, pair.b), _code_flag(pair.b, pair.a))]
    planted += code_planted
    colluders |= {p["student"] for p in code_planted} | {p["with"] for p in code_planted}
    found = [p for p in planted if p["parts"] and any(
        f.student == p["student"] and p["with"] in f.partners for f in flags)]
    false = [f for f in flags if f.student not in colluders]
    return {"students": students, "planted": len([p for p in planted if p["parts"]]),
            "found": len(found), "recall": len(found) / max(1, len([p for p in planted if p["parts"]])),
            "false_flags": len(false), "flags": len(flags), "forensics_seconds": round(seconds, 3),
            "code_planted": len(code_planted), "code_found": len([p for p in found if p in code_planted]),
            "code_seconds": round(code_seconds, 3),
            "variants_seconds": round(built, 1),
            "missed": [p for p in planted if p["parts"] and p not in found]}


def _code_flag(student: str, partner: str):
    from grader.forensics.flag_kinds import SIMILAR_CODE, Flag
    return Flag(student, SIMILAR_CODE, (partner,), "implement", "masked_attention", "", 0.0)


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
          f"({r['flags']} flags in all; forensics took {r['forensics_seconds']} s; similar code "
          f"{r['code_found']} of {r['code_planted']} in {r['code_seconds']} s)")
    for p in r["missed"]:
        print(f"  missed: {p['student']} copying {p['with']} ({p['kind']}, {len(p['parts'])} parts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
