"""``attnkit build``: parsing, printing and exit codes; the build itself is exercises.course.build."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from formats.textfile import terminal_safe

from .course_files import fail, positive
from .progress import Progress


def _build(args) -> int:
    from exercises.course.assignment import AssignmentError, load_assignment
    from exercises.course.build import build_nbgrader
    from exercises.course.roster import RosterError, load_roster
    from exercises.template.model import TemplateError
    from exercises.variant.draw import VariantError

    if not args.out and not args.nbgrader:
        print("attnkit build: give --out DIR (per-student notebooks, with --roster) and/or "
              "--nbgrader COURSE_DIR (one class-wide source notebook)", file=sys.stderr)
        return 2
    if args.out and not args.roster:
        print("attnkit build: --out needs --roster roster.csv (student_id,name,email)", file=sys.stderr)
        return 2
    try:
        assignment = load_assignment(args.assignment)
        roster = load_roster(args.roster) if args.roster else ()
        assignment.secret()          # fail before any work when the secret is missing
    except (AssignmentError, RosterError) as err:
        return fail(err.errors)
    report = {"assignment": assignment.id, "problems": len(assignment.problems),
              "points": assignment.points}
    failures = []
    if args.out:
        built = _build_students(args, assignment, roster, report)
        if isinstance(built, int):
            return built
        failures += built
    if args.nbgrader:
        try:
            course = build_nbgrader(assignment, Path(args.nbgrader))
        except (TemplateError, VariantError) as err:
            return fail(str(err).splitlines())
        except OSError as err:
            return fail([f"{args.nbgrader}: {err.strerror or err}"])
        if course.failures:
            return fail(course.failures)
        report["nbgrader"] = {"course": str(args.nbgrader),
                              "source": str(Path(args.nbgrader) / "source" / assignment.id),
                              "answer_key": str(course.key_path)}
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print(report, args)
    return fail(failures) if failures else 0


def _build_students(args, assignment, roster, report: dict):
    """Every student's notebooks built into --out (exercises.course.build.build), ``report``
    filled in; the failures to report, or an exit code when the build was refused or failed."""
    from exercises.course.build import build

    cluster = _cluster(args)
    if isinstance(cluster, int):
        return cluster
    progress = Progress(len(roster), "build", enabled=None if not args.json else False)
    try:
        result = build(assignment, list(roster), Path(args.out), jobs=args.jobs,
                       formats=("notebook", "html") if args.format == "html" else ("notebook",),
                       progress=progress, remove_stale=args.remove_stale,
                       new_variants=args.new_variants, runner=_on_cluster(cluster[0]) if cluster else None)
    except OSError as err:
        return fail([f"{err.filename or args.out}: {err.strerror or err}"])
    finally:
        progress.close()
        for part in cluster or ():
            if part is not None:
                part.close()
    if result.refused:
        changed = [f"  {sid}: {', '.join(pids)}" for sid, pids in sorted(result.changed.items())]
        if args.json:
            print(json.dumps({**report, "refused": True, "changed": result.changed,
                              "failures": result.failures}, indent=2, ensure_ascii=False))
        return fail(([f"refused: this rebuild would give {_counted(len(result.changed), 'student')} "
                       "new numbers in notebooks already issued (the earlier key is kept, their "
                       "files are unchanged); rebuild with --new-variants to issue them anyway:",
                       *changed] if result.changed else result.failures))
    failures = list(result.failures)
    if not result.built:
        failures.append(f"no student was built (of {_counted(result.students, 'student')} "
                        f"in the roster), so no answer key was written (the reasons are above)")
    report.update(out=str(args.out), students=result.students,
                  built=result.built, files=result.files,
                  seconds=round(result.seconds, 3),
                  students_per_second=round(result.students / max(result.seconds, 1e-9), 1),
                  answer_key=str(result.key_path) if result.key_path else None,
                  answer_key_bytes=result.key_bytes if result.key_path else None,
                  failures=result.failures,
                  stale=[p for p in result.stale if p not in result.removed],
                  removed=result.removed, new_variants=result.changed, pools=result.pools)
    return failures


def _on_cluster(client):
    from functools import partial

    from exercises.course.cluster_build import built_on_cluster
    return partial(built_on_cluster, client)


def _cluster(args):
    """(Dask client, its LocalCluster or None) for --cluster, None without it, or an exit code."""
    if not args.cluster:
        return None
    try:
        from grader.run.workers import connect, workers_of_another_kit
        client, local = connect(args.cluster)
    except ImportError:
        return fail(["--cluster needs Dask's distributed: pip install 'attention-kit[cluster]'"])
    except (OSError, ValueError, TimeoutError) as err:
        return fail([f"--cluster {args.cluster}: {err}"])
    other = workers_of_another_kit(client)
    if other:
        client.close()
        return fail([f"--cluster {args.cluster}: workers running another kit would build other bytes: "
                     + ", ".join(other)])
    return client, local


def _print(report: dict, args) -> None:
    from exercises.render.notebook import points_text
    print(f"{report['assignment']}: {report['problems']} problems, {points_text(report['points'])}")
    if "students" in report:
        out = report["out"]
        print(f"built {report['built']}/{report['students']} students in {report['seconds']:.2f} s "
              f"({report['students_per_second']:g}/s, "
              + (f"on the cluster {args.cluster})" if args.cluster else f"{args.jobs} job{'s' if args.jobs > 1 else ''})"))
        if report["answer_key"] is None:
            print("  nothing written: no student was built, and there is no answer key")
            return
        print(f"  student notebooks:    {os.path.join(out, 'release', '<student>', report['assignment'] + '.ipynb')}")
        print(f"  instructor notebooks: {os.path.join(out, 'instructor', 'notebooks', '<student>', report['assignment'] + '.ipynb')}")
        if args.format == "html":
            print(f"  printable sets:       {os.path.join(out, 'print', '<student>.html')}")
            print(f"  answer-key pages:     {os.path.join(out, 'instructor', 'print', '<student>.html')}")
        print(f"  answer key (private): {report['answer_key']}")
        for pid, members in report["pools"].items():
            print(terminal_safe(f"  pool {pid}: " + ", ".join(f"{m} {n}" for m, n in members.items())
                                + " students"))
        _print_stale(report)
    if "nbgrader" in report:
        print(f"nbgrader source notebook: {report['nbgrader']['source']} "
              f"(then: cd {report['nbgrader']['course']} && nbgrader generate_assignment {report['assignment']})")
        print(f"  class answer key (private): {report['nbgrader']['answer_key']}")


def _students_in(paths: list[str]) -> list[str]:
    from exercises.course.stale_files import student_of
    return sorted({student_of(p) for p in paths})


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _print_stale(report: dict) -> None:
    """The files an earlier build left for students the new key does not hold."""
    removed, stale = report["removed"], report["stale"]
    if removed:
        students = _students_in(removed)
        print(f"removed {_counted(len(removed), 'stale file')} of "
              f"{_counted(len(students), 'student')} not in this build: {', '.join(students)}")
    if stale:
        students = _students_in(stale)
        print(f"stale: {_counted(len(stale), 'file')} of an earlier build, for "
              f"{_counted(len(students), 'student')} not in this build's answer key "
              f"({', '.join(students)}):")
        for path in stale:
            print(f"  {os.path.join(report['out'], path)}")
        if not removed:
            print("  (attnkit build --remove-stale removes these files, and nothing else)")


def add_build_command(commands) -> None:
    build = commands.add_parser(
        "build", help="build an assignment: a notebook per student, instructor notebooks, signed key",
        description="Build ASSIGNMENT.yaml for every student of the roster: their own randomized "
                    "variant of every problem as a Jupyter notebook (nbgrader-compatible), the "
                    "instructor's version with answers and worked solutions, and the signed answer "
                    "key that grading reads. The course secret comes from the assignment's "
                    "`secret:` (an environment variable or a file). Rebuilding with the same "
                    "inputs writes the same bytes.",
        epilog="example: ATTNKIT_SECRET=$(cat secret.txt) attnkit build "
               "problem_bank/assignments/example.yaml --roster "
               "problem_bank/assignments/sample_roster.csv --out build/ --jobs 2")
    build.add_argument("assignment", metavar="ASSIGNMENT.yaml", help="the assignment spec")
    build.add_argument("--roster", metavar="roster.csv", help="student_id,name,email (UTF-8 CSV)")
    build.add_argument("--out", metavar="DIR", help="where to write release/, instructor/, print/")
    build.add_argument("--jobs", "-j", type=positive, default=os.cpu_count() or 1,
                       help="worker processes (default: one per core, %(default)s here)")
    build.add_argument("--cluster", metavar="WHERE",
                       help="build on a Dask cluster instead (local:N workers here, tcp://HOST:PORT, or "
                            "a scheduler file): the same files and key, byte for byte; needs "
                            "pip install 'attention-kit[cluster]'")
    build.add_argument("--format", choices=("notebook", "html"), default="notebook",
                       help="html: also a printable page per student and an answer-key page")
    build.add_argument("--nbgrader", metavar="COURSE_DIR",
                       help="also write one class-wide variant as COURSE_DIR/source/<id>/<id>.ipynb "
                            "with hidden tests, for nbgrader's generate_assignment/autograde")
    build.add_argument("--remove-stale", action="store_true",
                       help="remove the files an earlier build into --out wrote for students this "
                            "build's answer key does not hold (a smaller roster, a student whose "
                            "variant failed): their notebooks and printable pages, and their "
                            "folders once empty; nothing else")
    build.add_argument("--new-variants", action="store_true",
                       help="a rebuild that would give students already issued a notebook new numbers "
                            "is refused (and says who and which problems): this issues them anyway")
    build.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    build.set_defaults(handler=_build)
