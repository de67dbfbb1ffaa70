"""``attnkit``: the command line. Parsing, printing and exit codes only."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def _demo(args: argparse.Namespace) -> int:
    from .walkthrough import lecture_walkthrough

    print(lecture_walkthrough())
    return 0


def build_parser() -> argparse.ArgumentParser:
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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
