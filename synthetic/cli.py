"""The command line, ``python -m synthetic``: submissions for a build, one profile per
student, and their expected grades."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from synthetic.notebooks import SyntheticError
from synthetic.submissions import LAYOUTS, MANIFEST, synthesize


def main(argv=None) -> int:
    from formats.answer_key import AnswerKeyError, load_key

    parser = argparse.ArgumentParser(
        prog="python -m synthetic",
        description="Write synthetic submissions (one profile per student) and their expected grades.")
    parser.add_argument("build_dir", type=Path, help="the build folder (release/, instructor/)")
    parser.add_argument("--key", type=Path, required=True, help="the build's answer_key.json")
    parser.add_argument("--secret-env", required=True, metavar="VAR",
                        help="the environment variable holding the course secret")
    parser.add_argument("--out", type=Path, required=True, help="where the submissions go")
    parser.add_argument("--layout", choices=LAYOUTS, default="nbgrader")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    secret = os.environ.get(args.secret_env, "")
    if not secret:
        print(f"error: the environment variable {args.secret_env} is not set", file=sys.stderr)
        return 2
    try:
        key = load_key(args.key, secret.encode("utf-8"))
        written = synthesize(args.build_dir, key, args.out, args.layout, args.seed)
    except (AnswerKeyError, SyntheticError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    width = max((len(s.profile) for s in written), default=0)
    for s in written:
        print(f"{s.student}  {s.profile:<{width}}  {s.score:g}/{s.max_score:g}  {s.path}")
    print(f"{len(written)} submissions, {len({s.profile for s in written})} profiles; "
          f"expected outcomes: {args.out / MANIFEST}")
    return 0
