"""How often the grader names a plausible mistake, and how often it names it wrongly.

Every mistake of the corpus (``synthetic.mistakes``: wrong answers computed independently of
the kit's twins) is answered on several seeds of its template and judged by the grader's own
verdict function (``grader.verdicts.parts.problem_verdicts``, as ``grade_record`` calls it). Each
(mistake, seed) case is

* named correctly: the grader's name (or, where the entry allows it, one of the alternatives
  it lists) is one of the entry's ``accept`` names;
* named wrongly: it gives a name outside ``accept`` — worse than no name;
* unnamed: a plain "wrong" without a name.

A choice part's wrong option counts as named when the template wrote feedback for that
option and the student sees it: that text is the diagnosis of exactly that choice.

A case where the mistake gives the right answer (nothing to act on in that variant) is
skipped. The baseline, measured in the same run: every twin a part lists, its stored answer
fed back, must be named as itself ("every twin still named").

    python -m bench.diagnosis [--seeds N] [--json] [--unnamed] [TEMPLATE ...]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from formats import key_shape as shape
from formats.cells import LETTERS
from formats.compare import telling
from formats.serialize import decode_names, from_jsonable
from grader.verdicts import parts as grader_verdicts
from grader.verdicts.parts import MAX_ALTERNATIVES, PASSED, CaseOutcome, problem_verdicts
from solutions.same_error import same_error
from synthetic import mistakes as corpus

CORRECT, WRONG, UNNAMED = "named correctly", "named wrongly", "unnamed"


def names_given(verdict, alternatives=()) -> list[str]:
    """The names a verdict gives: its misconception, or — when it records none because
    several mistakes explain the value ("matches either … or …") — the alternatives its
    message lists (``alternatives``, recomputed with the grader's own ``diagnoses``)."""
    if verdict.status == PASSED:
        return []
    if verdict.misconception:
        return [verdict.misconception]
    return list(alternatives) if len(alternatives) > 1 else []


def _part_alternatives(record: dict, part: str, value, limit: bool = True) -> list[str]:
    """Every explanation the grader finds for ``value`` on this part, as ``problem_verdicts``
    computes it (the twins and lookalikes the key stores for the part)."""
    grading = next(g for g in shape.gradings(record) if shape.part_id(g) == part)
    def for_part(stored):
        return {name: by_part[part] for name, by_part in
                ((n, from_jsonable(v)) for n, v in stored.items())
                if isinstance(by_part, dict) and part in by_part}
    expected = decode_names(record["answers"])[part]
    return grader_verdicts.diagnoses(value, for_part(record.get("twins", {})),
                                     grading.get("misconceptions", ()), float(grading["rtol"]),
                                     float(grading["atol"]), for_part(record.get("lookalikes", {})),
                                     nameable=telling(expected), limit=limit)


def _family_alternatives(record: dict, family: str, outcomes: dict) -> list[str]:
    """The same for an implement family: every twin or lookalike that gives what the
    function gave on each case it failed."""
    rtol, atol = float(record["rtol"]), float(record["atol"])
    failed = [i for i, t in enumerate(record["tests"]) if t["family"] == family
              and not _passes(outcomes.get(i), from_jsonable(t["expected"]), rtol, atol)]
    return grader_verdicts._diagnose_function(outcomes, failed, record.get("twins", {}),
                                              record.get("misconceptions", ()), rtol, atol,
                                              record.get("lookalikes", {}))


def _passes(outcome, expected, rtol, atol) -> bool:
    return outcome is not None and outcome.ok and not grader_verdicts._case_problem(
        outcome, expected, rtol, atol)


def classify(mistake, names: list[str]) -> str:
    """The outcome of one case, given the names the grader gave (a choice part's wrong
    option is named by the feedback the template wrote for that very option)."""
    if not names:
        return UNNAMED
    if names == [OPTION_FEEDBACK]:
        return CORRECT
    right = [n for n in names if any(same_error(n, a) for a in mistake.accept)]
    if len(right) == len(names):
        return CORRECT
    if mistake.alternatives_ok and len(names) > 1 and right:
        return CORRECT
    return WRONG


def _outcomes(outputs) -> dict:
    return {i: CaseOutcome(ran, value, error) for i, (ran, value, error) in enumerate(outputs)}


def judge(mistake, record: dict) -> list[str] | None:
    """The names the grader gives the mistake on this record; None when the case is skipped
    (the mistake has nothing to act on here, or does not apply)."""
    if mistake.kind == corpus.IMPLEMENT:
        outputs = corpus.case_outputs(mistake, record)
        if corpus.equals_answer(mistake, record, outputs):
            return None
        outcomes = _outcomes(outputs)
        names: list[str] = []
        for family, verdict in problem_verdicts(record, {}, outcomes, {}).items():
            given = names_given(verdict, _family_alternatives(record, family, outcomes)
                                if verdict.status != PASSED and not verdict.misconception else ())
            names += [n for n in given if n not in names]
        return names
    if mistake.part not in {shape.part_id(g) for g in shape.gradings(record)}:
        return None                     # the template no longer has this part
    value = corpus.answer(mistake, record)
    if value is None or corpus.equals_answer(mistake, record, value):
        return None
    verdict = problem_verdicts(record, {corpus.variable_of(mistake.part): value}, {}, {})[mistake.part]
    if verdict.status == PASSED:
        return None
    if mistake.kind == corpus.CHOICE:
        feedback = _option_feedback(record, mistake.part, value)
        return [OPTION_FEEDBACK] if feedback and feedback in verdict.message else []
    return names_given(verdict, () if verdict.misconception else
                       _part_alternatives(record, mistake.part, value))


OPTION_FEEDBACK = "the option's own feedback"


def _option_feedback(record: dict, part: str, letter: str) -> str:
    """The feedback the template wrote for the chosen wrong option ("" when it has none, which
    never counts as a name): on a choice part, that text is the diagnosis of choosing it."""
    options = record.get("options", {}).get(part, [])
    index = LETTERS.find(str(letter).strip().upper()[:1]) if str(letter).strip() else -1
    return options[index].get("feedback", "").strip() if 0 <= index < len(options) else ""


def measure(seeds: int = 10, only=None) -> dict:
    """Every (mistake, seed) case judged, per template: counts, the wrongly named cases and
    the twins baseline."""
    rows, wrong, unnamed, unbuilt = {}, [], [], {}
    for template, mistakes in sorted(corpus.by_template().items()):
        if only and template not in only:
            continue
        counts = defaultdict(int)
        built = 0
        for seed in range(seeds):
            record = corpus.record(template, seed)
            if record is None:
                continue
            built += 1
            for m in mistakes:
                names = judge(m, record)
                if names is None:
                    counts["skipped"] += 1
                    continue
                outcome = classify(m, names)
                counts[outcome] += 1
                counts["alternatives"] += outcome == CORRECT and len(names) > 1
                case = {"template": template, "seed": seed, "part": m.part, "mistake": m.id,
                        "description": m.description, "names": names, "accept": sorted(m.accept)}
                (wrong if outcome == WRONG else unnamed if outcome == UNNAMED else []).append(case)
        if built < seeds:
            unbuilt[template] = seeds - built
        rows[template] = {"entries": len(mistakes), "cases": sum(counts[k] for k in (CORRECT, WRONG, UNNAMED)),
                          **{k: counts[k] for k in (CORRECT, WRONG, UNNAMED, "skipped", "alternatives")}}
    return {"seeds": seeds, "rows": rows, "wrongly_named": wrong, "unnamed": unnamed,
            "unbuilt": unbuilt, "twins": twins_baseline(seeds, only)}


# --- the baseline: every twin still named --------------------------------------------------

def _numeric_twins(record: dict):
    """(part, twin, its stored answer) for every twin a numeric part lists and the key stores."""
    stored = {name: from_jsonable(v) for name, v in record.get("twins", {}).items()}
    for grading in shape.gradings(record):
        part = shape.part_id(grading)
        for name in grading.get("misconceptions", ()):
            answers = stored.get(name)
            if isinstance(answers, dict) and part in answers:
                yield part, name, answers[part]


def _twin_named(record: dict) -> list[tuple[str, str, bool]]:
    """(part or family, twin, named as itself) for every listed twin of this record that fails
    (an implement twin only on the families where it returns a value on every case)."""
    results = []
    if shape.kind(record) == shape.IMPLEMENT:
        for name in record.get("misconceptions", ()):
            outputs = record.get("twins", {}).get(name)
            if outputs is None:
                continue
            outcomes = {i: CaseOutcome(out is not None, None if out is None else from_jsonable(out),
                                       "" if out is not None else "raised")
                        for i, out in enumerate(outputs)}
            crashed = {t["family"] for t, out in zip(record["tests"], outputs) if out is None}
            for family, verdict in problem_verdicts(record, {}, outcomes, {}).items():
                # a twin that raises on a case of the family gives nothing to name it by there
                if verdict.status != PASSED and family not in crashed:
                    given = names_given(verdict, () if verdict.misconception else
                                        _family_alternatives(record, family, outcomes))
                    results.append((family, name, _named(name, given)))
        return results
    if shape.kind(record) in ("choice", shape.FREE_RESPONSE):
        return results
    for part, name, value in _numeric_twins(record):
        verdict = problem_verdicts(record, {corpus.variable_of(part): value}, {}, {})[part]
        if verdict.status != PASSED:
            given = names_given(verdict, () if verdict.misconception else
                                _part_alternatives(record, part, value))
            if not given and len(_part_alternatives(record, part, value, limit=False)) > MAX_ALTERNATIVES:
                results.append((part, name, None))   # many mistakes give it: none named (verdicts.few)
                continue
            results.append((part, name, _named(name, given)))
    return results


def _named(twin: str, given: list[str]) -> bool:
    """Is the twin named: by its own code, or by one of its error's (``solutions.same_error``)."""
    return any(same_error(twin, g) for g in given)


def twins_baseline(seeds: int, only=None) -> dict:
    """Per template: how many listed twins' own answers the grader names as themselves."""
    rows, missed, shared = {}, [], 0
    for template in sorted(corpus.templates()):
        if only and template not in only:
            continue
        named = total = 0
        for seed in range(seeds):
            record = corpus.record(template, seed)
            if record is None:
                continue
            for part, name, ok in _twin_named(record):
                if ok is None:
                    shared += 1
                    continue
                total += 1
                named += ok
                if not ok:
                    missed.append({"template": template, "seed": seed, "part": part, "twin": name})
        if total:
            rows[template] = {"twins": total, "named": named}
    return {"rows": rows, "missed": missed, "shared": shared,
            "twins": sum(r["twins"] for r in rows.values()),
            "named": sum(r["named"] for r in rows.values())}


# --- the report ----------------------------------------------------------------------------

def _share(n: int, of: int) -> str:
    return f"{100 * n / of:5.1f} %" if of else "    – "


def totals(result: dict) -> dict:
    rows = result["rows"].values()
    return {k: sum(r[k] for r in rows)
            for k in ("entries", "cases", CORRECT, WRONG, UNNAMED, "skipped", "alternatives")}


def report(result: dict, show_unnamed: bool = False) -> str:
    lines = [f"Diagnosis of {totals(result)['entries']} plausible mistakes over {result['seeds']} seeds "
             "per template (cases = mistake × seed where the answer is wrong)", "",
             "(named: the right name, alone or among the alternatives the feedback lists; "
             "of which as alternatives: 'alt.')", "",
             f"{'template':32} {'entries':>7} {'cases':>6} {'named':>8} {'alt.':>8} {'wrongly':>8} "
             f"{'unnamed':>8}"]
    for template, r in [*result["rows"].items(), ("all families", totals(result))]:
        lines.append(f"{template:32} {r['entries']:7d} {r['cases']:6d} {_share(r[CORRECT], r['cases']):>8} "
                     f"{_share(r['alternatives'], r['cases']):>8} {_share(r[WRONG], r['cases']):>8} "
                     f"{_share(r[UNNAMED], r['cases']):>8}")
    lines.append("")
    twins = result["twins"]
    lines.append(f"baseline, every twin still named: {twins['named']} of {twins['twins']} twin answers "
                 f"named as themselves ({_share(twins['named'], twins['twins']).strip()})"
                 + (f"; {twins['shared']} more that more than {MAX_ALTERNATIVES} mistakes give (none named)"
                    if twins.get("shared") else ""))
    for miss in twins["missed"]:
        lines.append(f"  twin not named as itself: {miss['template']} seed {miss['seed']} "
                     f"{miss['part']}: {miss['twin']}")
    if result["unbuilt"]:
        lines.append("seeds without a valid variant (skipped): " + ", ".join(
            f"{t} {n}" for t, n in sorted(result["unbuilt"].items())))
    lines += ["", f"named wrongly ({len(result['wrongly_named'])} cases):"]
    lines += [_case_line(c) for c in result["wrongly_named"]] or ["  none"]
    if show_unnamed:
        lines += ["", f"unnamed ({len(result['unnamed'])} cases):"]
        lines += [_case_line(c) for c in result["unnamed"]]
    return "\n".join(lines)


def _case_line(case: dict) -> str:
    given = " / ".join(case["names"]) or "no name"
    right = ", ".join(case["accept"]) or "no twin yet"
    return (f"  {case['template']} seed {case['seed']} {case['part']}: {case['mistake']} "
            f"({case['description']}) → {given}  [right: {right}]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.diagnosis", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per template (default 10)")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    parser.add_argument("--unnamed", action="store_true", help="also list every unnamed case")
    parser.add_argument("templates", nargs="*", help="only these template ids")
    args = parser.parse_args(argv)
    result = measure(args.seeds, set(args.templates) or None)
    print(json.dumps({**result, "totals": totals(result)}, indent=2, default=str) if args.json
          else report(result, args.unnamed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
