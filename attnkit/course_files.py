"""What the grading commands share: the course's files (the assignment, its signed key,
the gradebook) found from the command line, and errors printed safely.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from formats.key_shape import assignment_id
from formats.textfile import terminal_safe



def fail(problems) -> int:
    """Each problem on stderr, shown safely (problems name files, keys, students); exit code 1."""
    for problem in problems:
        print(f"attnkit: {terminal_safe(problem)}", file=sys.stderr)
    return 1


def positive(text: str) -> int:
    """An argument that counts something: a whole number, at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def warn(text: str) -> None:
    """A line on stderr, shown safely."""
    print(terminal_safe(text), file=sys.stderr)


def key_and_gradebook(args) -> tuple[Path, Path] | None:
    if not args.key and not args.build:
        print(f"attnkit {args.command}: give --build DIR (the folder `attnkit build --out` wrote) "
              "or --key PATH (its instructor/answer_key.json)", file=sys.stderr)
        return None
    key = Path(args.key) if args.key else Path(args.build) / "instructor" / "answer_key.json"
    gradebook = Path(args.gradebook) if args.gradebook else key.parent / "gradebook.sqlite"
    return key, gradebook


def load(args):
    """(assignment, key) or an exit code."""
    from formats.answer_key import AnswerKeyError, load_key
    from exercises.course.assignment import AssignmentError, load_assignment

    try:
        assignment = load_assignment(args.assignment, templates=False)
        key = load_key(args.key_path, assignment.secret())
    except AssignmentError as err:
        return fail(err.errors)
    except AnswerKeyError as err:
        return fail([str(err)])
    if assignment_id(key) != assignment.id:
        return fail([f"{args.key_path}: this key is for assignment {assignment_id(key)!r}, "
                      f"not {assignment.id!r}"])
    return assignment, key


def open_course(args):
    """(assignment, key, gradebook path, roster or None) of the command line, or an exit code:
    the course's files found (``key_and_gradebook``), read (``load``) and ``--roster`` read."""
    paths = key_and_gradebook(args)
    if paths is None:
        return 2
    args.key_path, gradebook_path = paths
    loaded = load(args)
    if isinstance(loaded, int):
        return loaded
    roster = roster_of(args)
    if isinstance(roster, int):
        return roster
    return (*loaded, gradebook_path, roster)


def key_options(parser) -> None:
    parser.add_argument("--build", metavar="DIR", help="the folder `attnkit build --out` wrote")
    parser.add_argument("--key", metavar="PATH", help="the answer key (default: DIR/instructor/answer_key.json)")
    parser.add_argument("--gradebook", metavar="PATH",
                        help="the SQLite gradebook (default: gradebook.sqlite beside the key)")


def roster_of(args):
    """``--roster``'s students (None without one), or an exit code when it cannot be read."""
    if not getattr(args, "roster", None):
        return None
    from exercises.course.roster import RosterError, load_roster

    try:
        return load_roster(args.roster)
    except RosterError as err:
        return fail(err.errors)
