"""``attnkit bank list|show|validate`` and ``attnkit preview``: parsing and printing only."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

from .progress import Progress


def load_templates(bank_dirs):
    from exercises.course.bank import BankError, load_bank
    try:
        templates, problems = load_bank(bank_dirs, keep_going=True)
    except BankError as err:
        templates, problems = {}, err.errors
    for problem in problems:
        print(f"attnkit: {problem}", file=sys.stderr)
    return templates, problems


def _counted(n: int, noun: str) -> str:
    """'1 template', '2 templates'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def find_template(templates: dict, problem_id: str):
    """A template by id, or from a YAML path; prints why not and returns None."""
    from exercises.template.model import TemplateError
    from exercises.template.schema import load_template
    if problem_id.endswith((".yaml", ".yml")) or Path(problem_id).is_file():
        try:
            return load_template(problem_id)
        except TemplateError as err:
            print("\n".join(f"attnkit: {p}" for p in err.errors), file=sys.stderr)
            return None
    if problem_id in templates:
        return templates[problem_id]
    hint = difflib.get_close_matches(problem_id, templates, n=3)
    print(f"attnkit: unknown problem '{problem_id}'" +
          (f"; did you mean: {', '.join(hint)}?" if hint else "; see 'attnkit bank list'"),
          file=sys.stderr)
    return None


def _bank_list(args) -> int:
    from exercises.template.texts import format_points
    templates, problems = load_templates(args.bank)
    rows = [{"id": t.id, "objective": t.objective, "kind": t.kind, "points": t.points,
             "title": t.title, "path": t.path} for t in templates.values()]
    rows.sort(key=lambda r: (r["objective"], r["id"]))
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        widths = {k: max([len(k)] + [len(format_points(r[k]) if k == "points" else str(r[k])) for r in rows])
                  for k in ("id", "objective", "kind", "points")}
        print(f"{'id':<{widths['id']}}  {'objective':<{widths['objective']}}  "
              f"{'kind':<{widths['kind']}}  {'points':>{widths['points']}}  title")
        for r in rows:
            print(f"{r['id']:<{widths['id']}}  {r['objective']:<{widths['objective']}}  "
                  f"{r['kind']:<{widths['kind']}}  {format_points(r['points']):>{widths['points']}}  {r['title']}")
        print(f"\n{_counted(len(rows), 'template')} covering "
              f"{len({r['objective'] for r in rows})} of 6 objectives")
    return 1 if problems else 0


def _template_summary(t) -> dict:
    from exercises.template.objectives import OBJECTIVES
    summary = {"id": t.id, "title": t.title, "objective": t.objective,
               "objective_text": OBJECTIVES[t.objective], "kind": t.kind, "points": t.points,
               "path": t.path, "tags": list(t.tags),
               "parameters": {p.name: (p.distribution or "constant") for p in t.parameters},
               "derived": [d.name for d in t.derived], "givens": list(t.givens),
               "constraints": [c.expression.source for c in t.constraints]}
    if t.model:     # a trained toy model the values come from (problem_bank/models)
        summary["model"] = t.model
        summary["model_digest"] = t.model_digest
    if t.kind == "implement":
        summary["function"] = f"{t.function.name}{t.function.signature}"
        summary["reference"] = t.reference
        summary["misconceptions"] = list(t.misconceptions)
        summary["tests"] = [{"family": f.family, "cases": f.cases, "points": f.points} for f in t.tests]
    else:
        summary["parts"] = [{"id": p.id, "points": p.points,
                             **({"rtol": p.rtol, "atol": p.atol} if t.kind == "numeric" else {}),
                             "misconceptions": list(p.misconceptions),
                             "checks": [c for c, _ in p.checks],
                             # unrendered Jinja: the texts take each student's values
                             "rubric": p.rubric.to_record() if p.rubric else None} for p in t.parts]
    return summary


def _rubric_lines(rubric: dict, hand: bool) -> list[str]:
    """A part's rubric as ``bank show`` prints it: its range, the guide, then each item
    numbered as the marking page's keys are, with its signed points, its text as the
    student reads it and its note, marked as graders-only (texts unrendered: Jinja)."""
    use = "" if hand else " (for a grader's override of the automatic score)"
    bounds = f"score {rubric['floor']:g} to {rubric['ceiling']:g}"
    start = f", starting at {rubric['start']:g}" if hand else ""
    if not rubric["items"]:
        lines = [f"    rubric{use}: a guide only, scored by the grader's adjustment ({bounds})"]
    else:
        lines = [f"    rubric{use}: {bounds}{start}; version {rubric['version']}"]
    if rubric["guide"].strip():
        lines.append(f"      guide: {_one_line(rubric['guide'])}")
    for n, item in enumerate(rubric["items"], 1):
        lines.append(f"      [{n}] {item['id']} {item['points']:+g}: {_one_line(item['text'])}")
        if item["note"].strip():
            lines.append(f"          graders only: {_one_line(item['note'])}")
    return lines


def _one_line(text: str) -> str:
    """A YAML text (often a block over several lines) on one line, whitespace collapsed."""
    return " ".join(text.split())


def _bank_show(args) -> int:
    from exercises.render.notebook import points_text
    from exercises.template.texts import format_points
    templates, _ = load_templates(args.bank)
    t = find_template(templates, args.id)
    if t is None:
        return 1
    s = _template_summary(t)
    if args.json:
        print(json.dumps(s, indent=2, ensure_ascii=False))
        return 0
    print(f"{t.title}\n  id {t.id} · {t.kind} · {points_text(t.points)} · {t.path}")
    print(f"  objective: {t.objective} — {s['objective_text']}")
    if t.model:
        print(f"  model: {t.model} ({t.model_file}, weights {t.model_digest[:19]}…): "
              f"see it with attnkit model show {t.model}")
    print("  parameters: " + (", ".join(f"{k} ({v})" for k, v in s["parameters"].items()) or "none"))
    if s["derived"]:
        print("  derived: " + ", ".join(s["derived"]))
    for c in s["constraints"]:
        print(f"  constraint: {c}")
    if t.kind == "implement":
        print(f"  implement: def {s['function']}  (reference: {t.reference})")
        for f in s["tests"]:
            print(f"    tests {f['family']}: {_counted(f['cases'], 'case')}, {format_points(f['points'])} pt")
        print("  diagnoses: " + (", ".join(s["misconceptions"]) or "none"))
    for p in s.get("parts", []):
        extra = f" atol {p['atol']:g} rtol {p['rtol']:g}" if "atol" in p else ""
        print(f"  part {p['id']}: {format_points(p['points'])} pt{extra}"
              + (f"; diagnoses {', '.join(p['misconceptions'])}" if p["misconceptions"] else "")
              + (f"; checks {', '.join(p['checks'])}" if p["checks"] else ""))
        if p["rubric"]:
            for line in _rubric_lines(p["rubric"], hand=t.kind == "free_response"):
                print(line)
    print(f"\n  attnkit preview {t.id} --seed 0 --solution   # see a variant")
    return 0


def _bank_validate(args) -> int:
    from exercises.course.bank import BankError, template_files, validate_template
    try:
        files = template_files(args.paths or None)
    except BankError as err:
        print("\n".join(f"attnkit: {p}" for p in err.errors), file=sys.stderr)
        return 1
    templates, problems = load_templates([str(f) for f in files])
    reports = []
    bar = Progress(len(templates) * args.seeds, "validating")
    for t in templates.values():
        report = validate_template(t, args.seeds, args.first_seed)
        bar.advance(args.seeds, t.id)
        reports.append(report)
    bar.close()
    failed = [r for r in reports if not r.ok]
    if args.json:
        print(json.dumps({"ok": not failed and not problems, "load_errors": problems, "templates": [
            {"id": r.template.id, "path": r.template.path, "seeds": r.seeds, "valid": r.valid,
             "draws": r.draws, "rejection_rate": round(r.rejection_rate, 4),
             "ms_per_variant": round(1000 * r.seconds / max(r.valid, 1), 3),
             "rejections": dict(r.rejections.most_common(5)), "failures": r.failures}
            for r in reports]}, indent=2, ensure_ascii=False))
    else:
        width = max([len("template")] + [len(r.template.id) for r in reports])
        print(f"{'template':<{width}}  {'valid':>9}  {'rejected':>8}  {'ms/variant':>10}  top rejection")
        for r in reports:
            top = r.rejections.most_common(1)
            reason = f"{top[0][0][:60]} ({top[0][1]})" if top else ""
            status = f"{r.valid}/{r.seeds}"
            print(f"{r.template.id:<{width}}  {status:>9}  {100 * r.rejection_rate:7.1f}%  "
                  f"{1000 * r.seconds / max(r.valid, 1):10.2f}  {reason}")
        for r in failed:
            for failure in r.failures:
                print(f"attnkit: FAILED {failure}", file=sys.stderr)
        total = sum(r.valid for r in reports)
        verdict = "all valid" if not failed and not problems else (
            ", ".join(([f"{_counted(len(failed), 'template')} failed"] if failed else [])
                      + ([_counted(len(problems), 'load error')] if problems else [])))
        print(f"\n{_counted(len(reports), 'template')} × {_counted(args.seeds, 'seed')}: "
              f"{_counted(total, 'variant')}; {verdict}")
    return 1 if failed or problems else 0


def _preview(args) -> int:
    from exercises.render.preview import preview
    from exercises.template.model import TemplateError
    from exercises.variant.draw import VariantError, make_variant

    templates, _ = ({}, []) if args.id.endswith((".yaml", ".yml")) else load_templates(args.bank)
    t = find_template(templates, args.id)
    if t is None:
        return 1
    try:
        variant = make_variant(t, args.seed)
    except (VariantError, TemplateError) as err:
        print(f"attnkit: {err}", file=sys.stderr)
        return 1
    print(preview(variant, solution=args.solution, fmt=args.format), end="")
    return 0


def _count(minimum: int):
    """An argparse type: a whole number ≥ minimum."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def add_commands(commands) -> None:
    """Register ``bank`` (list, show, validate) and ``preview`` on the top-level parser."""
    bank = commands.add_parser(
        "bank", help="list, inspect and validate the problem templates",
        description="The problem bank: one YAML template per exercise family "
                    "(problem_bank/README.md explains how to write one).")
    bank_commands = bank.add_subparsers(title="bank commands", metavar="COMMAND")
    bank.set_defaults(handler=lambda args: (bank.print_help(), 2)[1])

    listing = bank_commands.add_parser("list", help="a table of the templates: id, objective, kind, points")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.set_defaults(handler=_bank_list)

    show = bank_commands.add_parser("show", help="one template: parameters, parts, tolerances, diagnoses")
    show.add_argument("id", help="template id (or a path to a .yaml template)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(handler=_bank_show)

    validate = bank_commands.add_parser(
        "validate", help="make and check many variants of every template",
        description="For each seed, sample a variant and check the checkers: the reference "
                    "passes, every listed misconception is caught, nothing is ill-posed. Exits "
                    "non-zero if any template fails to load or any seed yields no valid variant.")
    validate.add_argument("paths", nargs="*", metavar="PATH",
                          help="template files or directories (default: the built-in bank)")
    validate.add_argument("--seeds", type=_count(1), default=200, help="seeds per template (default 200)")
    validate.add_argument("--first-seed", type=_count(0), default=0, help="first seed (default 0)")
    validate.add_argument("--json", action="store_true", help="machine-readable output")
    validate.set_defaults(handler=_bank_validate)

    for sub in (listing, show):
        sub.add_argument("--bank", action="append", metavar="DIR",
                         help="template directory (default: the built-in problem_bank)")

    prev = commands.add_parser(
        "preview", help="print one variant of a problem, optionally with its solution",
        description="Render the variant of a template for one seed, as the student would see "
                    "it; with --solution also the expected answers and the worked steps.")
    prev.add_argument("id", help="template id (or a path to a .yaml template)")
    prev.add_argument("--seed", type=_count(0), default=0, help="variant seed, ≥ 0 (default 0)")
    prev.add_argument("--solution", action="store_true", help="also print answers and worked steps")
    prev.add_argument("--format", choices=("text", "markdown"), default="text",
                      help="text for the terminal (default) or Markdown with LaTeX")
    prev.add_argument("--bank", action="append", metavar="DIR",
                      help="template directory (default: the built-in problem_bank)")
    prev.set_defaults(handler=_preview)
