"""Variants per second over the whole bank: sampling plus validation ("check the checkers").

For every template, the same seeds are made twice in the same run, interleaved:

* validated: what ``attnkit build`` and ``bank validate`` do — sample, compute the answers,
  re-check the reference, run every misconception twin, render prompt and solution;
* bare: sampling and answers only (``make_variant(..., validate=False)``) — the baseline,
  so the ratio is what validation costs (absolute times drift on these shared machines).

    python -m bench.variants [--seeds N] [--json] [PATH ...]
"""

from __future__ import annotations

import argparse
import json
import time

from exercises.course.bank import load_bank
from exercises.variant.draw import make_variant


def _time(template, seeds, validate: bool) -> tuple[float, int]:
    start = time.perf_counter()
    draws = 0
    for seed in seeds:
        draws += make_variant(template, seed, validate=validate).attempts
    return time.perf_counter() - start, draws


def run(seeds: int = 100, paths=None, rounds: int = 2) -> dict:
    """Time ``seeds`` variants of every template, validated and bare, best of ``rounds``."""
    templates, _ = load_bank(paths)
    rows = []
    for template in templates.values():
        seed_list = range(seeds)
        best_validated = best_bare = float("inf")
        draws = 0
        for _ in range(rounds):  # interleaved; best of the rounds for each
            bare, _ = _time(template, seed_list, validate=False)
            validated, draws = _time(template, seed_list, validate=True)
            best_bare, best_validated = min(best_bare, bare), min(best_validated, validated)
        rows.append({"id": template.id, "kind": template.kind,
                     "validated_per_s": seeds / best_validated, "bare_per_s": seeds / best_bare,
                     "ratio": best_validated / best_bare, "draws_per_variant": draws / seeds,
                     "twins": len(template.all_misconceptions)})
    total_validated = sum(seeds / r["validated_per_s"] for r in rows)
    total_bare = sum(seeds / r["bare_per_s"] for r in rows)
    n = seeds * len(rows)
    return {"templates": len(rows), "seeds": seeds, "rows": rows,
            "validated_per_s": n / total_validated, "bare_per_s": n / total_bare,
            "ratio": total_validated / total_bare}


def main(argv=None) -> int:
    """Print the per-template table (or JSON) and the whole-bank line."""
    parser = argparse.ArgumentParser(prog="python -m bench.variants", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="template files or directories (default: the bank)")
    parser.add_argument("--seeds", type=int, default=100, help="variants per template (default 100)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds, best kept (default 2)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    result = run(args.seeds, args.paths or None, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    width = max(len(r["id"]) for r in result["rows"])
    print(f"{'template':<{width}}  {'kind':<13} {'twins':>5} {'draws':>6} {'validated/s':>12} "
          f"{'bare/s':>9} {'ratio':>6}")
    for r in sorted(result["rows"], key=lambda r: r["validated_per_s"]):
        print(f"{r['id']:<{width}}  {r['kind']:<13} {r['twins']:>5} {r['draws_per_variant']:>6.2f} "
              f"{r['validated_per_s']:>12.0f} {r['bare_per_s']:>9.0f} {r['ratio']:>5.1f}×")
    print(f"\nwhole bank ({result['templates']} templates × {result['seeds']} seeds): "
          f"{result['validated_per_s']:.0f} validated variants/s, {result['bare_per_s']:.0f} bare "
          f"variants/s — validation costs {result['ratio']:.1f}× the bare sampling")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
