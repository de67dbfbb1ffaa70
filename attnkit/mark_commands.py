"""``attnkit mark``: hand grading — the local marking page (``serve``, the default) and the
grading sheet (``export``, ``import``). Parsing, printing and exit codes only; the work is
``grader.marking``'s.

Everything printed that can hold a student's, a TA's or a file system's text goes through
``terminal_safe`` first: an escape sequence in a comment is shown, never run by the terminal.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from formats.textfile import terminal_safe

from .course_files import fail, key_options, open_course

SUBCOMMANDS = ("serve", "export", "import")


class _RoutingParser(argparse.ArgumentParser):
    """``attnkit mark ASSIGNMENT …`` means ``attnkit mark serve ASSIGNMENT …``: the word
    after ``mark`` is a subcommand, or help, or else ``serve`` is put before it."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        if args and args[0] not in (*SUBCOMMANDS, "-h", "--help"):
            args.insert(0, "serve")
        return super().parse_known_args(args, namespace)


def _course(args):
    """(assignment, key, gradebook path), or an exit code when one is missing or unreadable."""
    course = open_course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path, _roster = course
    if not gradebook_path.exists():
        return fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])
    return assignment, key, gradebook_path


def _print_rescored(entries) -> None:
    """Which grades made under an older version of a rubric the server re-scored."""
    if not entries:
        print("rubrics: every grade is scored under the current rubric")
        return
    print(f"rubrics changed: re-scored {len(entries)} grade{'s' if len(entries) != 1 else ''}:")
    for e in entries:
        print(terminal_safe(f"  {e.student} {e.problem}/{e.part}: {e.note}", newlines=False))


def _stop_on_sigterm() -> None:
    """SIGTERM stops the server like Ctrl-C: the socket and the gradebook closed, exit 0."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)


def _open_browser(url: str) -> Path:
    """Open the page through a redirect file only this user can read (as Jupyter does): a
    browser started with the URL itself would show the token to every user of the machine
    in its command line (``ps``)."""
    import html
    import os
    import tempfile
    import webbrowser

    fd, path = tempfile.mkstemp(prefix="attnkit-mark-", suffix=".html")   # (mode 0600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" '
                f'content="0;url={html.escape(url, quote=True)}"><title>attnkit mark</title>')
    # in a thread: a text-mode browser must not hold up the server
    threading.Thread(target=webbrowser.open, args=(Path(path).as_uri(),), daemon=True).start()
    return Path(path)


def _serve(args) -> int:
    course = _course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path = course
    from grader.store.gradebook import GradebookError
    from grader.marking.web import MarkingPage

    try:
        server = MarkingPage(gradebook_path, key, assignment.deadline, grader=args.grader, port=args.port)
    except GradebookError as err:
        return fail([str(err)])
    except OSError as err:
        return fail([f"cannot listen on 127.0.0.1:{args.port}: {err.strerror or err}"])
    _print_rescored(server.rescored)
    print(terminal_safe(f"marking page for {assignment.id}, grading as {args.grader}:"))
    print(f"  {server.url}", flush=True)
    print("  (the URL holds the access token: anyone with it can grade; it changes at every start)")
    print("Ctrl-C stops it; every grade is saved as it is made.", flush=True)
    redirect = None if args.no_browser else _open_browser(server.url)
    _stop_on_sigterm()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        if redirect is not None:          # (its token died with the server; tidy all the same)
            redirect.unlink(missing_ok=True)
    print("attnkit mark: stopped", flush=True)
    return 0


def _parts(values) -> list[tuple[str, str]] | None | int:
    if not values:
        return None
    out = []
    for value in values:
        problem, slash, part = value.partition("/")
        if not slash or not problem or not part or "/" in part:
            return fail([f"--part {value!r}: give PROBLEM/PART, e.g. motivation/static"])
        out.append((problem, part))
    return out


def _export(args) -> int:
    parts = _parts(args.part)
    if isinstance(parts, int):
        return parts
    course = _course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path = course
    from grader.store.gradebook import Gradebook, GradebookError
    from grader.marking.sheet import SheetError, export_sheet
    from grader.marking.sheet_format import legend_path

    try:
        with Gradebook(gradebook_path) as gb:
            rows = export_sheet(gb, key, Path(args.out), parts=parts, deadline=assignment.deadline)
    except SheetError as err:
        return fail(err.errors)
    except GradebookError as err:
        return fail([str(err)])
    except OSError as err:
        return fail([f"{err.filename or args.out}: {err.strerror or err}"])
    print(terminal_safe(f"wrote {rows} row{'s' if rows != 1 else ''} to {args.out}; what each column means, "
                        f"with the rubric items' points and texts: {legend_path(Path(args.out))}"))
    return 0


def _print_plan(plan) -> None:
    for change in plan.changes:
        print(terminal_safe(f"  {change.describe()}", newlines=False))
    for line in plan.refused:
        print(terminal_safe(f"  refused: {line}", newlines=False))
    for line in plan.errors:
        print(terminal_safe(f"  problem: {line}", newlines=False), file=sys.stderr)
    kinds = plan.refused_why
    why = "; ".join(reason if len(kinds) == 1 else f"{reason}: {n}" for reason, n in kinds.items())
    print(f"{len(plan.changes)} to change, {plan.unchanged} unchanged, {len(plan.refused)} refused"
          f"{f' ({why})' if why else ''}, {len(plan.errors)} problems")


def _import(args) -> int:
    course = _course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path = course
    if not Path(args.sheet).is_file():
        return fail([f"{args.sheet}: no such file"])
    from grader.store.gradebook import Gradebook, GradebookError
    from grader.marking.sheet import SheetError, apply_import, plan_import

    try:
        with Gradebook(gradebook_path) as gb:
            plan = plan_import(gb, key, Path(args.sheet), deadline=assignment.deadline)
            _print_plan(plan)
            if not args.apply or plan.errors:
                if plan.errors and args.apply:
                    print("nothing saved: fix the problems, then import again", file=sys.stderr)
                elif plan.changes:
                    print("nothing saved yet: run again with --apply to save these changes")
                return 1 if plan.errors or plan.refused else 0
            applied = apply_import(gb, key, plan, args.grader)
    except SheetError as err:
        return fail(err.errors)
    except GradebookError as err:
        return fail([str(err)])
    conflicts = list(getattr(applied, "conflicts", []))
    for line in conflicts:
        print(terminal_safe(f"  not saved (someone saved it meanwhile): {line}", newlines=False))
    print(f"saved {len(applied)} grade{'s' if len(applied) != 1 else ''}")
    return 1 if plan.refused or conflicts else 0


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port


def add_mark_command(commands) -> None:
    mark = commands.add_parser(
        "mark", help="grade by hand: the local marking page, or a CSV sheet",
        description="Hand grading: free-response parts, and overrides of automatic scores.\n\n"
                    "  attnkit mark ASSIGNMENT.yaml --build DIR   (that is, 'mark serve') serves the\n"
                    "      marking page on 127.0.0.1, with an access token in its URL, until Ctrl-C\n"
                    "  attnkit mark export ...   writes a CSV sheet to grade without a browser\n"
                    "  attnkit mark import ...   checks a filled-in sheet and, with --apply, saves it",
        epilog="examples:\n"
               "  attnkit mark problem_bank/assignments/example.yaml --build build/demo\n"
               "  attnkit mark export problem_bank/assignments/example.yaml --build build/demo --out sheet.csv\n"
               "  attnkit mark import problem_bank/assignments/example.yaml sheet.csv --build build/demo --apply\n"
               "Run 'attnkit mark SUBCOMMAND --help' for a subcommand's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mark.__class__ = _RoutingParser            # argparse makes it; it routes the default subcommand
    mark.set_defaults(handler=lambda _args: (mark.print_help(sys.stderr), 2)[1])
    sub = mark.add_subparsers(title="subcommands", metavar="SUBCOMMAND", parser_class=argparse.ArgumentParser)

    serve = sub.add_parser(
        "serve", help="the marking page in your browser (the default: 'attnkit mark ASSIGNMENT ...')",
        description="Serve the marking page on 127.0.0.1 only, with a random access token in the "
                    "printed URL, until Ctrl-C. One part at a time across the class: keys 1-9 toggle "
                    "rubric items, arrows move, n goes to the next ungraded answer; identical answers "
                    "are graded at once as a group; names are hidden until asked. Grades made under "
                    "an older version of a rubric are re-scored first.")
    serve.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    key_options(serve)
    serve.add_argument("--port", type=_port, default=0, help="the port (default: any free one)")
    serve.add_argument("--grader", default="ta", metavar="NAME",
                       help="the name grades are saved under (the page can change it; default %(default)s)")
    serve.add_argument("--no-browser", action="store_true", help="only print the URL; open no browser")
    serve.set_defaults(handler=_serve, command="mark")

    export = sub.add_parser(
        "export", help="write a CSV sheet of hand grades to fill in without a browser",
        description="One row per student and part: the answer, a column per rubric item (1 when "
                    "applied), adjustment, comment, reason, and the grade's version at the export. "
                    "Beside it, SHEET-rubric.csv says what each column means, with each rubric item's "
                    "points and text. Control characters in a text are written visibly, as ⟨U+0000⟩.")
    export.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    key_options(export)
    export.add_argument("--out", metavar="SHEET.csv", required=True, help="where to write the sheet")
    export.add_argument("--part", metavar="PROBLEM/PART", action="append",
                        help="only this part (repeatable; default: every free-response part)")
    export.set_defaults(handler=_export, command="mark export")

    imp = sub.add_parser(
        "import", help="check a filled-in sheet, show what it changes, and with --apply save it",
        description="Validate the sheet (students, parts, rubric versions, points in range) and "
                    "show what it would change. Rows changed both in the sheet and in the gradebook "
                    "since the export, and rows whose answer changed since, are refused. Nothing is "
                    "saved without --apply; with it, the sheet is saved in one transaction (all or "
                    "nothing). Exit 1 when a row has problems or is refused.")
    imp.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    imp.add_argument("sheet", metavar="SHEET.csv", help="the sheet `attnkit mark export` wrote, filled in")
    key_options(imp)
    imp.add_argument("--apply", action="store_true", help="save the changes (default: only show them)")
    imp.add_argument("--grader", default="ta", metavar="NAME", help="the name grades are saved under")
    imp.set_defaults(handler=_import, command="mark import")
