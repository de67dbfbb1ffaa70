"""``attnkit check``: a student's self-check, parsing and printing only; the work is
grader.selfcheck.check's.

Exit codes (``EPILOG``, and grader.selfcheck.report's READY, NOT_READY, CANNOT_CHECK): 0 ready, 1 not
ready, 2 the check could not run (argparse exits 2 for a usage error itself).

Everything printed that can hold a student's, a roster's or a file system's text (names,
notes, messages, file names) goes through ``terminal_safe`` or ``terminal_json`` first: an
escape sequence in a student's exception message is shown, never run by the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from formats.textfile import terminal_json

from .course_files import fail

# grader.selfcheck.report.CANNOT_CHECK, named here too: importing grader.selfcheck.check imports NumPy,
# which must wait until the sandbox server has started.
CANNOT_CHECK = 2

DESCRIPTION = """\
Run your notebook's answer cells and its visible checks in the same sandbox grading uses,
and print a table of every part. It checks the form of your answers (shape, rows that sum
to 1, one of the letters, ...), never their values, and never shows an expected value: the
values are checked by hidden tests at grading. Notes under the table say where grading will
run your notebook differently (a deleted or changed givens cell, a deleted kit cell, IPython
magics, a notebook issued to someone else)."""

EPILOG = """\
exit codes:
  0  ready: every part is answered and passes its form checks ("form OK"; a part graded
     by hand counts once it is written, an implement problem's hidden tests run at grading)
  1  not ready: some part is not answered, fails its form check, raised an error, or is
     not checked (its check cell was deleted); or --student is not the student the
     notebook was issued to
  2  the check could not run: a usage error, a file that is not a readable Attention Kit
     notebook (missing, not JSON, no attnkit record), or a sandbox that could not start

Exit code 0 means the form is right, not the values. In CI (e.g. GitHub Classroom's
autograding), run `attnkit check NOTEBOOK` as a test: it passes on 0. With --json the
same verdict is printed as data: "ok", "exit_code", "reason", "counts" (parts per status
code: form-ok, not-answered, check-fails, error, not-checked, by-hand, at-grading),
"parts" and "notes" (each with a "code", "cell" and "message")."""


def _check(args) -> int:
    from grader.sandbox.processes import Limits, SandboxError, start_servers

    # The sandbox server boots (a fresh interpreter importing NumPy) while this process imports
    # NumPy and reads the notebook: the two overlap, which is most of what keeps a check under
    # half a second. So the server starts before anything here imports NumPy (the client does).
    limits = Limits(wall_seconds=args.timeout)
    try:
        started = start_servers(1, limits)
    except (SandboxError, OSError) as err:
        fail([f"the sandbox could not start: {err}"])
        return CANNOT_CHECK
    try:
        from grader.sandbox.client import Sandbox
    except BaseException:
        for server in started:
            server.kill()
        raise
    try:
        with Sandbox(1, limits, started=started) as sandbox:
            from grader.selfcheck.check import CheckError, self_check

            try:
                report = self_check(Path(args.notebook), sandbox=sandbox, student=args.student)
            except CheckError as err:
                fail([str(err)])
                return CANNOT_CHECK
    except SandboxError as err:
        fail([f"the sandbox could not run the notebook: {err}"])
        return CANNOT_CHECK
    if args.json:
        print(terminal_json(report.as_json()))
    else:
        print(report.table())
    return report.exit_code


def add_check_command(commands) -> None:
    check = commands.add_parser(
        "check", help="a student's self-check: run a notebook's visible checks in the sandbox",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("notebook", metavar="NOTEBOOK", help="your .ipynb file")
    check.add_argument("--student", metavar="ID",
                       help="your student id: the check then also says (and exits 1) when the "
                            "notebook was issued to someone else")
    check.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                       help="wall-clock limit for running your cells (default %(default)s)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(handler=_check, command="check")
