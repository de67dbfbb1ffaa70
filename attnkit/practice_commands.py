"""``attnkit practice TEMPLATE``: practice in a terminal — one fresh practice variant, the
student's answers typed as NumPy literals, each judged at once as the grader would judge it.
Parsing, reading and printing only: the variants are exercises.practice's, the verdicts
grader.verdicts.practice's."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from pathlib import Path

from formats.textfile import terminal_safe

from .bank_commands import find_template, load_templates
from .course_files import fail, positive
from .model_commands import seed_number
from .progress import Progress

MAX_TRIES = 3            # unreadable answers to one part before it is skipped


def _read_answer(label: str):
    """The value typed for one part: None when skipped (an empty line), EOFError at the end."""
    from formats.literals import read_literal

    for _ in range(MAX_TRIES):
        print(f"{label} = ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        if not line.strip():
            return None
        try:
            return read_literal(line)
        except ValueError as err:
            print(terminal_safe(f"  cannot read it: {err}; try again (an empty line skips the part)"))
    return None


def _session(template, index: int) -> int:
    from exercises.practice.variants import PracticeError, practice_variants
    from exercises.render.preview import preview
    from grader.verdicts.practice import PRACTISED, judge, practice_record, said

    if template.kind not in PRACTISED:
        kind = {"implement": "an implementation", "free_response": "a free-response"}[template.kind]
        print(terminal_safe(f"attnkit: {template.id} is {kind} problem: it is answered with code or "
                            "words, not typed values; practise it in a notebook"), file=sys.stderr)
        return 1
    try:
        drawn = practice_variants(template, 1, start=index)[0]
    except PracticeError as err:
        print(terminal_safe(f"attnkit: {err}"), file=sys.stderr)
        return 1
    record = practice_record(drawn.variant.record())
    print(terminal_safe(f"Practice variant {drawn.index} of {template.id} (never a graded one; not "
                        f"recorded). Type each answer as a number, a list of rows like [[0.1, 0.9], "
                        f"[0.5, 0.5]], or a choice's letter; an empty line skips a part.\n"))
    print(terminal_safe(preview(drawn.variant)), end="")
    answers: dict = {}
    right = 0
    for letter, part in zip("abcdefghijklmnopqrstuvwxyz", template.parts):
        try:
            value = _read_answer(f"({letter}) {part.id}")
        except EOFError:
            print()
            break
        if value is None:
            continue
        answers[part.id] = value
        verdict = judge(record, answers)[part.id]
        right += verdict.score == verdict.max_score
        print(terminal_safe("  " + said(verdict)))
    print(terminal_safe(f"\n{right} of {len(template.parts)} parts right. Another variant: "
                        f"attnkit practice {template.id}"))
    return 0


def _practice(args) -> int:
    templates, _ = ({}, []) if args.template.endswith((".yaml", ".yml")) else load_templates(args.bank)
    template = find_template(templates, args.template)
    if template is None:
        return 1
    index = args.variant if args.variant is not None else secrets.randbelow(1_000_000)
    return _session(template, index)


def _templates_of(items: list[str], bank) -> tuple[list, object, list[str]]:
    """(templates, the assignment or None, errors) of the command line's assignment or templates."""
    from exercises.course.assignment import AssignmentError, load_assignment

    if len(items) == 1 and items[0].endswith((".yaml", ".yml")) and "problems:" in _head(items[0]):
        try:
            assignment = load_assignment(items[0])
        except AssignmentError as err:
            return [], None, err.errors
        members = {t.id: t for p in assignment.problems for t in p.members}
        return list(members.values()), assignment, []
    templates, _ = ({}, []) if all(i.endswith((".yaml", ".yml")) for i in items) else load_templates(bank)
    found = [find_template(templates, i) for i in items]
    return [t for t in found if t is not None], None, ([] if all(found) else ["unknown templates"])


def _head(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(65536)
    except (OSError, UnicodeDecodeError):
        return ""


def _graded(args, assignment) -> set[str] | int:
    """The givens digests of the built class's graded variants (none without --build/--key)."""
    from exercises.practice.variants import graded_givens
    from formats.answer_key import AnswerKeyError, load_key

    if not (args.build or args.key):
        return set()
    if assignment is None:
        return fail(["--build/--key: give the assignment (its secret opens the key), not templates"])
    path = Path(args.key) if args.key else Path(args.build) / "instructor" / "answer_key.json"
    try:
        return graded_givens(load_key(path, assignment.secret()))
    except AnswerKeyError as err:
        return fail([str(err)])
    except Exception as err:  # noqa: BLE001 — an AssignmentError (secret) names its file and line
        return fail(getattr(err, "errors", [str(err)]))


def _build(args) -> int:
    from exercises.course.bank import load_bank
    from exercises.practice.pack import build_pack, protected_functions, write_pack

    templates, assignment, errors = _templates_of(args.items, args.bank)
    if errors or not templates:
        return fail(errors) if errors else 1
    avoid = _graded(args, assignment)
    if isinstance(avoid, int):
        return avoid
    bar = Progress(len(templates), "practice", enabled=None if not args.json else False)
    built, skipped = build_pack(templates, args.variants, avoid, protected_functions(load_bank()[0]),
                                progress=lambda: bar.advance(1))
    bar.close()
    try:
        paths = write_pack([(t, nb) for t, nb, _ in built], Path(args.out))
    except OSError as err:
        return fail([f"{err.filename or args.out}: {err.strerror or err}"])
    rows = [{"template": t.id, "notebook": str(p), "variants": args.variants,
             "follow_through_left_out": list(left)} for (t, _, left), p in zip(built, paths)]
    if args.json:
        print(json.dumps({"built": rows, "skipped": [s.__dict__ for s in skipped],
                          "graded_variants_avoided": len(avoid)}, indent=2))
    else:
        for r in rows:
            left = f"  (follow-through left out: {', '.join(r['follow_through_left_out'])})" if r["follow_through_left_out"] else ""
            print(terminal_safe(f"{r['template']:<32} {r['variants']} variants  {r['notebook']}{left}"))
        for s in skipped:
            print(terminal_safe(f"{s.template:<32} skipped: {s.why}"))
        print(terminal_safe(f"{len(rows)} practice notebooks in {args.out}"
                            + (f"; no variant has the givens of the {len(avoid)} graded ones" if avoid else
                               "; give --build DIR so that no variant has the givens of a graded one")))
    return 0 if rows else 1


def _summary(args) -> int:
    from exercises.practice.logs import read_log, summarize
    from solutions import TWINS

    logs, errors = [], []
    for path in args.logs:
        try:
            logs.append(read_log(Path(path)))
        except ValueError as err:
            errors.append(str(err))
    if errors:
        fail(errors)
    parts = summarize(logs)
    if args.json:
        print(json.dumps({"logs": len(logs), "parts": [{**p.__dict__, "facility": p.facility} for p in parts]},
                         indent=2))
        return 1 if errors else 0
    print(f"{len(logs)} practice logs")
    for p in parts:
        facility = "—" if p.facility is None else f"{p.facility:.2f}"
        print(terminal_safe(f"{p.template}/{p.part}: {p.logs} logs, {p.attempts} attempts, facility at the "
                            f"first attempt {facility}"))
        for name, n in sorted(p.misconceptions.items(), key=lambda kv: -kv[1]):
            said = TWINS[name].summary if name in TWINS else name
            print(terminal_safe(f"    {n:>4}×  {name} — {said}"))
    return 1 if errors else 0


SUBCOMMANDS = ("build", "summary", "session")


def practice_argv(argv: list[str]) -> list[str]:
    """``attnkit practice TEMPLATE …`` as the parser reads it: ``practice session TEMPLATE``."""
    if len(argv) > 1 and argv[0] == "practice" and argv[1] not in (*SUBCOMMANDS, "-h", "--help"):
        return ["practice", "session", *argv[1:]]
    return argv


def add_practice_command(commands) -> None:
    practice = commands.add_parser(
        "practice", help="practice: fresh variants with answers judged at once (terminal or notebooks)",
        description="Practice variants come from a seed space no graded variant comes from, and are "
                    "judged by the grader's own verdicts: right, a named mistake with its "
                    "explanation, or right given your earlier answer.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  attnkit practice dog_ran_fast               # in the terminal\n"
               "  attnkit practice build problem_bank/assignments/example.yaml --build build/ --out practice/\n"
               "  attnkit practice summary logs/*.practice-log.json")
    sub = practice.add_subparsers(title="subcommands", metavar="SUBCOMMAND", required=True)
    session = sub.add_parser("session", help="(the default: attnkit practice TEMPLATE) practise in the terminal",
                             description="One fresh practice variant of TEMPLATE: type each part's answer "
                                         "(a NumPy literal or a letter) and read its verdict at once. "
                                         "Nothing is recorded.")
    session.add_argument("template", help="a template id of the bank, or a template's .yaml path")
    session.add_argument("--variant", type=seed_number, metavar="N", help="practice variant N (default: a random one)")
    session.add_argument("--bank", action="append", metavar="DIR",
                         help="a folder of templates to use instead of the built-in bank")
    session.set_defaults(handler=_practice, command="practice")
    build = sub.add_parser("build", help="a practice notebook per template (NumPy only, self-checking)",
                           description="Write TEMPLATE.practice.ipynb for each template of an assignment "
                                       "(or each template named): VARIANTS practice variants that check "
                                       "each answer at once, offline, with NumPy alone. With --build (or "
                                       "--key), no variant has the givens of a graded one of that class.")
    build.add_argument("items", nargs="+", metavar="ASSIGNMENT_OR_TEMPLATES",
                       help="an assignment spec (.yaml), or template ids or .yaml paths")
    build.add_argument("--out", metavar="DIR", required=True, help="where the notebooks go")
    build.add_argument("--variants", type=positive, default=10, metavar="N", help="variants per notebook (default 10)")
    build.add_argument("--build", metavar="DIR", help="the class's build folder: its graded variants are avoided")
    build.add_argument("--key", metavar="PATH", help="the answer key (default: DIR/instructor/answer_key.json)")
    build.add_argument("--bank", action="append", metavar="DIR", help="a folder of templates instead of the bank")
    build.add_argument("--json", action="store_true", help="machine-readable output")
    build.set_defaults(handler=_build, command="practice build")
    summary = sub.add_parser("summary", help="what the practice logs students handed in say, per part",
                             description="Per part: the logs that tried it, the attempts, the facility at "
                                         "the first attempt, and the misconceptions met, most frequent first.")
    summary.add_argument("logs", nargs="+", metavar="LOG", help="TEMPLATE.practice-log.json files")
    summary.add_argument("--json", action="store_true", help="machine-readable output")
    summary.set_defaults(handler=_summary, command="practice summary")
