"""``attnkit``: the command line. Parsing, printing and exit codes only."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import __version__


def _demo(args: argparse.Namespace) -> int:
    from .walkthrough import lecture_walkthrough

    print(lecture_walkthrough())
    return 0


def _misconceptions(args: argparse.Namespace) -> int:
    from solutions import TWINS

    twins = [m for m in TWINS.values() if not args.function or m.shadows == args.function]
    if not twins:
        known = sorted({m.shadows for m in TWINS.values()})
        print(f"attnkit: no misconceptions for '{args.function}'; functions with twins: "
              f"{', '.join(known)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([{"name": m.name, "shadows": m.shadows, "summary": m.summary,
                           "explanation": m.explanation, "code": m.code} for m in twins], indent=2,
                         ensure_ascii=False))
        return 0
    width = max(len(m.name) for m in twins)
    for shadows in dict.fromkeys(m.shadows for m in twins):
        print(f"{shadows}:")
        for m in (m for m in twins if m.shadows == shadows):
            print(f"  {m.name:<{width}}  {m.summary}")
            if args.verbose:
                print(f"  {'':<{width}}  why: {m.explanation}")
                print(f"  {'':<{width}}  code: {m.code}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    # (the commands' modules import NumPy and the kit: imported here, not with this module,
    # so that main can start a local cluster's processes before them)
    from .bank_commands import add_commands
    from .build_commands import add_build_command
    from .check_command import add_check_command
    from .forensics_commands import add_forensics_command
    from .grade_commands import add_grade_command
    from .mark_commands import add_mark_command
    from .model_commands import add_model_command
    from .practice_commands import add_practice_command
    from .report_commands import add_report_command

    parser = argparse.ArgumentParser(
        prog="attnkit",
        description="Attention Kit: randomized, auto-graded exercises on attention and "
                    "Transformers, with a reference NumPy implementation as the answer key.",
        epilog="Run 'attnkit COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="print the lecture's scaled dot-product walkthrough, computed step by step",
        description="The lecture's 'The dog ran fast' walkthrough: raw scores → ÷√d_k → "
                    "softmax → Z, every number computed by the reference implementation.")
    demo.set_defaults(handler=_demo)
    twins = commands.add_parser(
        "misconceptions", help="list the student mistakes the kit can diagnose",
        description="The misconception twins: deliberately wrong versions of the reference "
                    "functions, each modelling one mistake students make. A wrong answer that "
                    "matches a twin gets the twin's explanation as feedback.")
    twins.add_argument("function", nargs="?", help="only the twins of this reference function")
    twins.add_argument("-v", "--verbose", action="store_true",
                       help="also print each explanation and the wrong line of code")
    twins.add_argument("--json", action="store_true", help="machine-readable output")
    twins.set_defaults(handler=_misconceptions)
    add_commands(commands)
    add_build_command(commands)
    add_grade_command(commands)
    add_report_command(commands)
    add_mark_command(commands)
    add_forensics_command(commands)
    add_check_command(commands)
    add_model_command(commands)
    add_practice_command(commands)
    return parser


def local_cluster_asked(argv: list[str]) -> str | None:
    """``--cluster local:N`` (or ``--cluster=local:N``) as ``argv`` gives it, before parsing."""
    for i, word in enumerate(argv):
        value = (argv[i + 1] if word == "--cluster" and i + 1 < len(argv)
                 else word.partition("=")[2] if word.startswith("--cluster=") else "")
        if value.startswith("local:"):
            return value
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cluster = local_cluster_asked(argv)
    if cluster:     # (its processes start while this one imports the rest and reads the course)
        from grader.run.workers import prepare_local_cluster
        prepare_local_cluster(cluster)
    from .practice_commands import practice_argv

    parser = build_parser()
    args = parser.parse_args(practice_argv(argv))
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    try:
        return args.handler(args)
    except BrokenPipeError:
        # `attnkit … | head` closed the pipe: not an error of ours; stay quiet on exit too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
