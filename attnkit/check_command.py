"""``attnkit check``: a student's self-check, parsing and printing only; the work is
grader.selfcheck's.

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

from pathlib import Path

from formats.textfile import terminal_json

from .course_files import fail


def _check(args) -> int:
    from grader.sandbox.processes import Limits, start_servers

    # The sandbox server boots (a fresh interpreter importing NumPy) while this process imports
    # NumPy and reads the notebook: the two overlap, which is most of what keeps a check under
    # half a second. So the server starts before anything here imports NumPy (the client does).
    limits = Limits(wall_seconds=args.timeout)
    started = start_servers(1, limits)
    try:
        from grader.sandbox.client import Sandbox
    except BaseException:
        for server in started:
            server.kill()
        raise
    with Sandbox(1, limits, started=started) as sandbox:
        from grader.selfcheck import CheckError, self_check

        try:
            report = self_check(Path(args.notebook), sandbox=sandbox)
        except CheckError as err:
            return fail([str(err)])
    if args.json:
        print(terminal_json(report.as_json()))
    else:
        print(report.table())
    return 0


def add_check_command(commands) -> None:
    check = commands.add_parser(
        "check", help="a student's self-check: run a notebook's visible checks in the sandbox",
        description="Run your notebook's answer cells and its visible checks in the same sandbox "
                    "grading uses, and print a table of every part. It checks the form of your "
                    "answers (shape, rows that sum to 1, …), never their values, and never shows an "
                    "expected value: the hidden checks run at grading.")
    check.add_argument("notebook", metavar="NOTEBOOK", help="your .ipynb file")
    check.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="wall-clock limit for running your cells (default %(default)s)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(handler=_check, command="check")
