"""``attnkit forensics``: answer forensics for instructors, parsing and printing only; the
work is grader.forensics.flags'. Never shown to students: it writes no page and no report file."""

from __future__ import annotations

from pathlib import Path

from formats.textfile import terminal_json, terminal_safe

from .course_files import fail, key_options, open_course


def _forensics(args) -> int:
    course = open_course(args)
    if isinstance(course, int):
        return course
    assignment, key, gradebook_path, _ = course
    if not gradebook_path.exists():
        return fail([f"{gradebook_path}: no gradebook yet (run attnkit grade first)"])
    from grader.forensics.flags import follow_through_note, forensics
    from grader.store.gradebook import Gradebook, GradebookError
    build = Path(args.build) if args.build else None
    if build is None and Path(args.key_path).parent.name == "instructor":
        build = Path(args.key_path).parent.parent        # the key's own build folder
    try:
        with Gradebook(gradebook_path) as gradebook:
            result = forensics(gradebook, key, args.threshold, build=build, deadline=assignment.deadline)
    except GradebookError as err:
        return fail([str(err)])
    if args.json:
        print(terminal_json(result))
        return 0
    flags = result["flags"]
    print(terminal_safe(f"answer forensics for {assignment.id}: {len(flags)} flag"
                        f"{'s' if len(flags) != 1 else ''} over {result['students']} students "
                        f"(instructors only; a flag is evidence to look at, not a verdict)"))
    for f in flags:
        print(terminal_safe(f"  {f['student']} {f['problem']}/{f['part']} [{f['kind']}] with "
                            f"{', '.join(f['with'])}: {f['evidence']} (p_coincidence {f['p_coincidence']:.3f})"))
        if follow_through_note(f):
            print(terminal_safe(f"    {follow_through_note(f)}"))
    code = result.get("code", {})
    for note in code.get("notes", []):
        print(terminal_safe(f"  note: {note}"))
    for skipped in code.get("skipped", []):
        print(terminal_safe(f"  code of {skipped['student']} not compared: {skipped['reason']}"))
    return 0


def add_forensics_command(commands) -> None:
    forensics = commands.add_parser(
        "forensics", help="instructors only: answers that are another student's expected answer, "
                          "and similar implement code",
        description="For every student and numeric part they failed: does the counted answer match "
                    "another student's expected answer (within the part's tolerance) while not "
                    "matching their own? Each flag names the partners, the evidence and "
                    "p_coincidence, the share of the class whose expected answer is the same value "
                    "(a value many variants share is no evidence); and pairs of students whose "
                    "implement code is similar once variable names, layout and statement order are "
                    "set aside (winnowed fingerprints, the stub and the reference solution left out). "
                    "Never shown to students.")
    forensics.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec (for its secret)")
    key_options(forensics)
    forensics.add_argument("--threshold", type=float, default=0.1, metavar="P",
                           help="flag a value a few variants can share only when at most this share "
                                "of the class has it (default 0.1)")
    forensics.add_argument("--json", action="store_true",
                           help='print {"flags": [{"student", "kind", "with", "problem", "part", '
                                '"evidence", "p_coincidence"}], "students", "threshold", "code"}; kinds: '
                                'other-variant, shared-wrong, similar-code')
    forensics.set_defaults(handler=_forensics, command="forensics")
