"""Assignment build rate against nbgrader, in the same run.

Builds the example assignment (7 problems, every kind) for a synthetic roster with
``attnkit build``'s engine — per student a validated variant of every problem, the student
and the instructor notebook, the signed answer key — and reports student notebooks per
second, serial and with ``--jobs`` workers. In the same run it times the real
``nbgrader generate_assignment`` on the class-wide source notebook of the same assignment
(course mode): nbgrader makes one notebook for the whole class, so its rate is 1 / that
time, and the ratios compare the two rates. nbgrader is timed as a user runs it (the
command; the first call also creates its gradebook, the second is the baseline) and, to
be fair to it, its converter alone, called in a warm process with nothing to start or
import. Times drift on these shared machines: read the ratios.

Then, in one process, where a student's time goes (``bench.build_split``): each problem's
variant, the notebooks, the key entry, and the floor under the variants — the reference and
twin functions they call, replayed bare — against the budget a student has at 100
notebooks/s with the measured speed-up.

    python -m bench.build [--students N] [--jobs N] [--html N] [--split N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from exercises.course.assignment import load_assignment
from exercises.course.build import build, build_nbgrader
from exercises.course.roster import Student

from . import build_split
from .nbgrader_course import generate_in_process, hermetic_env, nbgrader

EXAMPLE = Path(__file__).resolve().parents[1] / "problem_bank" / "assignments" / "example.yaml"
BENCH_SECRET = "benchmark secret: not for a real course"


def roster(n: int) -> list[Student]:
    return [Student(f"s{i:05d}", f"Student {i}", f"s{i:05d}@example.edu", i + 2) for i in range(n)]


def _rate(assignment, students, folder: Path, jobs: int, formats=("notebook",)) -> dict:
    started = time.perf_counter()
    result = build(assignment, students, folder, jobs=jobs, formats=formats)
    seconds = time.perf_counter() - started
    if result.failures:
        raise RuntimeError(f"build failed for {len(result.failures)} students: {result.failures[0]}")
    size = sum(p.stat().st_size for p in folder.rglob("*.ipynb"))
    return {"jobs": jobs, "students": len(students), "seconds": seconds,
            "notebooks_per_s": len(students) / seconds, "megabytes": size / 1e6}


def _nbgrader_generate(assignment, scratch: Path) -> dict:
    """nbgrader generate_assignment on the class notebook: as a user runs it (the command,
    first and warm), and its converter alone in a warm process (best of 3)."""
    course = scratch / "course"
    build_nbgrader(assignment, course)
    env = hermetic_env(scratch / "env")
    times = []
    for _ in range(2):
        done, seconds = nbgrader(["generate_assignment", assignment.id, "--force"], course, env)
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader generate_assignment failed:\n{done.stderr[-2000:]}")
        times.append(seconds)
    converter = min(generate_in_process(course, assignment.id, env))
    return {"first_s": times[0], "command_s": times[1], "converter_s": converter}


@contextmanager
def _secret(value: str):
    """The benchmark's own course secret, for the duration of the run only."""
    old = os.environ.get("ATTNKIT_SECRET")
    os.environ["ATTNKIT_SECRET"] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ["ATTNKIT_SECRET"]
        else:
            os.environ["ATTNKIT_SECRET"] = old


def run(students: int = 1000, jobs: int = 2, html: int = 50, serial: int = 200,
        with_nbgrader: bool = True, split: int = 40) -> dict:
    with _secret(BENCH_SECRET):
        return _run(students, jobs, html, serial, with_nbgrader, split)


def _run(students, jobs, html, serial, with_nbgrader, split) -> dict:
    assignment = load_assignment(EXAMPLE)
    people = roster(students)
    scratch = Path(tempfile.mkdtemp(prefix="attnkit-bench-"))
    try:
        result = {"assignment": assignment.id, "problems": len(assignment.problems),
                  "points": assignment.points, "cpus": os.cpu_count()}
        result["parallel"] = _rate(assignment, people, scratch / "parallel", jobs)
        if serial:
            result["serial"] = _rate(assignment, people[:serial], scratch / "serial", 1)
        if html:
            result["html"] = _rate(assignment, people[:html], scratch / "html", jobs, ("notebook", "html"))
        if with_nbgrader:
            n = result["nbgrader"] = _nbgrader_generate(assignment, scratch / "nbgrader")
            rate = result["parallel"]["notebooks_per_s"]
            result["ratio_command"] = rate * n["command_s"]
            result["ratio_converter"] = rate * n["converter_s"]
        if split:
            result["split"] = build_split.split(assignment, roster(split + build_split.WARM),
                                                assignment.secret())
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def report(r: dict) -> str:
    p = r["parallel"]
    lines = [f"example assignment {r['assignment']}: {r['problems']} problems, {r['points']:g} points; "
             f"{r['cpus']} CPUs",
             f"  attnkit build, {p['jobs']} jobs: {p['students']} students in {p['seconds']:.1f} s = "
             f"{p['notebooks_per_s']:.1f} student notebooks/s "
             f"(+ instructor notebooks and the signed key; {p['megabytes']:.0f} MB of notebooks)"]
    if "serial" in r:
        s = r["serial"]
        lines.append(f"  attnkit build, 1 job:  {s['students']} students = {s['notebooks_per_s']:.1f}/s "
                     f"(parallel speed-up {p['notebooks_per_s'] / s['notebooks_per_s']:.2f}×)")
    if "html" in r:
        h = r["html"]
        lines.append(f"  with --format html:   {h['students']} students = {h['notebooks_per_s']:.1f}/s")
    if "nbgrader" in r:
        n = r["nbgrader"]
        lines.append(f"  nbgrader generate_assignment, one class-wide notebook: the command {n['command_s']:.2f} s "
                     f"({n['first_s']:.2f} s the first time, which creates its gradebook); "
                     f"its converter alone in a warm process {n['converter_s']:.3f} s")
        lines.append(f"  ratio of notebooks per second: {r['ratio_command']:.0f}× the nbgrader command, "
                     f"{r['ratio_converter']:.1f}× its converter alone "
                     f"(each attnkit notebook is a different, validated variant; nbgrader's is one copy)")
    if "split" in r:
        speedup = (p["notebooks_per_s"] / r["serial"]["notebooks_per_s"]) if "serial" in r else None
        lines += build_split.report(r["split"], speedup)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=1000, help="roster size (default 1000)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--serial", type=int, default=200, help="students for the 1-job run (0: skip)")
    parser.add_argument("--html", type=int, default=50, help="students for the --format html run (0: skip)")
    parser.add_argument("--split", type=int, default=40,
                        help="students for where a student's time goes, in one process (0: skip)")
    parser.add_argument("--no-nbgrader", action="store_true", help="skip the nbgrader baseline")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    result = run(args.students, args.jobs, args.html, args.serial, not args.no_nbgrader, args.split)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
