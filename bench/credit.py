"""Follow-through credit on every chain of the bank: what garbage earns, what an honest slip earns.

A **chain** starts at a part that later parts' ``follow`` recipes read (directly or through
other steps) and that has no recipe of its own: its **later points** are those steps'. For
each chain and seed, the student answers every other part right, puts one first step in, and
carries it "consistently": each later step is the part's recipe run on the student's own
earlier answers (exactly what follow-through credit checks). The first steps:

* **degenerate**: all zeros; a constant array (every entry 1); 1 on the answer's support (where it is
  not 0: ``tril(ones)`` under a causal mask); one-hot rows (a scaled
  identity, 100 on one entry of every row). A single number has only the first: 1 is a
  plausible number, not a degenerate one. A copy of another variant's chain is consistent
  and real work: forensics finds it, not this rule;
* **honest slip**: the right first step with one entry off by 1, −1 or 2 (an arithmetic
  slip; which entry, and by how much, varies with the seed).

Each is judged by the grader's own functions (``problem_verdicts`` then ``carried``, as
``grader.run.grading`` calls them). The table gives the share of the later points carried
forward: of the later parts that are wrong on their own, the share of their points that
follow-through credit gives back (a case where every later part is right on its own, an
argmax the garbage did not move, has nothing to carry and is left out).
The goal: a degenerate first step earns at most a quarter, and an honest slip never less
than any degenerate one on the same chain and seed.

    python -m bench.credit [--seeds N] [--json] [TEMPLATE ...]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np

from formats import key_shape as shape
from formats.serialize import decode_names
from grader.verdicts.follow_through import recompute, carried
from grader.verdicts.parts import PASSED, problem_verdicts
from synthetic import mistakes as corpus

KINDS = ("zeros", "constant", "support", "one-hot", "slip")
GARBAGE = KINDS[:-1]


def chains(record: dict) -> dict[str, list[str]]:
    """first step → the later parts that read it (in part order), for a record's recipes."""
    recipes = record.get("follow") or {}
    order = [shape.part_id(g) for g in shape.gradings(record)]
    roots = sorted({p for r in recipes.values() for p in r["parts"] if p not in recipes}, key=order.index)
    out = {}
    for root in roots:
        reached = {root}
        for part in order:                       # recipes read earlier parts only
            if part in recipes and reached & set(recipes[part]["parts"]):
                reached.add(part)
        out[root] = [p for p in order if p in reached and p != root]
    return out


def first_step(kind: str, expected, seed: int = 0):
    """The first step a student of ``kind`` puts in (None: that kind has no such value here);
    the slip's entry and size vary with ``seed``."""
    e = np.asarray(expected, dtype=float)
    if kind == "zeros":
        return np.zeros_like(e)
    if kind == "slip":
        slip = e.copy()
        slip.flat[seed % slip.size] += (1.0, -1.0, 2.0)[seed % 3]
        return slip
    if e.ndim == 0:
        return None
    if kind == "constant":
        return np.ones_like(e)
    if kind == "support":                    # 1 wherever the answer is not 0: tril(ones) for a mask
        return (e != 0).astype(float)
    rows = np.zeros_like(e).reshape(-1, e.shape[-1])
    rows[np.arange(len(rows)), np.arange(len(rows)) % e.shape[-1]] = 100.0
    return rows.reshape(e.shape)


def carry(record: dict, root: str, value, later: list[str]) -> dict:
    """A student's values: right everywhere, ``value`` at ``root``, each later step carried."""
    answers = decode_names(record["answers"])
    names = shape.answer_names(record)
    mine = {part: np.asarray(v, dtype=float) if not isinstance(v, str) else v for part, v in answers.items()}
    mine[root] = value
    for part in later:
        recipe = record["follow"][part]
        again = recompute(recipe, {p: mine[p] for p in recipe["parts"]})
        if again is not None:
            mine[part] = again
    return {names[p]: v for p, v in mine.items()}


def earned(record: dict, values: dict, later: list[str]) -> float | None:
    """The share of the points of the later parts that are wrong on their own which
    follow-through credit gives back (None: every later part is right on its own, e.g. an
    argmax the garbage did not move, and there is nothing to carry)."""
    own = problem_verdicts(record, values, {}, {})
    verdicts = carried(record, values, own)
    wrong = [p for p in later if own[p].status != PASSED]
    if not wrong:
        return None
    return sum(verdicts[p].score for p in wrong) / sum(verdicts[p].max_score for p in wrong)


def measure(seeds: int = 10, only=None) -> dict:
    """(template, first step) → kind → [share per seed], and the cases that miss the goal."""
    shares, misses = defaultdict(lambda: defaultdict(list)), []
    for template in sorted(corpus.by_template()):
        if only and template not in only:
            continue
        for seed in range(seeds):
            record = corpus.record(template, seed)
            if record is None or not record.get("follow"):
                continue
            for root, later in chains(record).items():
                expected = decode_names(record["answers"])[root]
                got = {}
                for kind in KINDS:
                    value = first_step(kind, expected, seed)
                    if value is None:
                        continue
                    share = earned(record, carry(record, root, value, later), later)
                    if share is not None:
                        got[kind] = share
                        shares[(template, root)][kind].append(share)
                worst = max((got[k] for k in GARBAGE if k in got), default=0.0)
                if worst > 0.25 or got.get("slip", 1.0) < worst:
                    misses.append({"template": template, "seed": seed, "first_step": root, **got})
    return {"seeds": seeds, "rows": {f"{t}:{r}": {k: float(np.mean(v)) for k, v in kinds.items()}
                                     for (t, r), kinds in shares.items()}, "misses": misses}


def report(result: dict) -> str:
    lines = [f"Follow-through on every chain, {result['seeds']} seeds: the share of the later points "
             "carried forward (mean over seeds)", "",
             f"{'chain (template:first step)':<44}" + "".join(f"{k:>10}" for k in KINDS)]
    for chain, kinds in sorted(result["rows"].items()):
        lines.append(f"{chain:<44}" + "".join(f"{kinds[k]:>10.0%}" if k in kinds else f"{'—':>10}"
                                             for k in KINDS))
    garbage = [v[k] for v in result["rows"].values() for k in GARBAGE if k in v]
    lines += ["", f"largest mean share earned by a degenerate first step: {max(garbage, default=0):.0%} "
                  "(goal ≤ 25 %)",
              f"cases missing the goal (garbage > 25 %, or a slip below garbage): {len(result['misses'])}"]
    for m in result["misses"][:20]:
        lines.append(f"  {m['template']} seed {m['seed']} from {m['first_step']}: "
                     + ", ".join(f"{k} {m[k]:.0%}" for k in KINDS if k in m))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.credit", description=__doc__.splitlines()[0])
    ap.add_argument("templates", nargs="*", help="only these templates (default: every chain of the bank)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="the measurement as JSON")
    args = ap.parse_args(argv)
    result = measure(args.seeds, set(args.templates) or None)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
