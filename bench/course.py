"""A whole course, end to end, at the size of a MOOC: build, grade and report N students with
the real commands, and what each costs per student.

For each class size: ``attnkit build --cluster`` (or ``--jobs``) for a synthetic roster, the
synthetic class's submissions written (the students' part: not counted), ``attnkit grade``
on the same cluster, ``attnkit report``. Each command is timed as a user runs it: its wall
time; its CPU, with that of the children it reaped (a local run's judges and sandboxes); the
machine's CPU while it ran (every core's busy time, from /proc/stat: a LocalCluster's
workers are forked by Dask's fork server, which the command never reaps, so their CPU is
counted only there; the bench expects nothing else to run); and the peak memory
of every process: the command's own (its VmHWM, which it reports as it exits) and, sampled,
the largest of its descendants' (the cluster's workers and nanny processes, the judges, the
sandbox servers). The key's bytes per student (its index
and shards) and the notebooks' are read from the build. The per-student costs are
extrapolated to 100,000 students, and the memory of the smallest and largest sizes compared:
flat memory is what makes the extrapolation honest.

    python -m bench.course --students 1000 10000 --cluster local:2 [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from formats import answer_key
from synthetic import profile_names, synthesize

from .grade import _peak_rss_mb

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "bench.course secret, never a course's"
ORDINARY = {"correct", "partial", "typed_wrong"}
MOOC = 100_000


def _vm_hwm_mb(pid: int) -> float:
    return _peak_rss_mb(pid) or 0.0


def _kb_mb(path: str) -> float:
    try:
        return int(Path(path).read_text() or 0) / 1024
    except (OSError, ValueError):
        return 0.0


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (read from /proc: each task's children)."""
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue                                 # it ended meanwhile
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


# The command's own peak, read by itself as it exits: its VmHWM, which exec starts afresh.
# (Not wait4's ru_maxrss: Linux carries the forking process's peak over exec into it, so
# every command would seem as large as this benchmark, which holds the class it wrote.)
_OWN_PEAK = """\
import atexit, os, runpy, sys
def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            with open(os.environ["BENCH_COURSE_PEAK"], "w") as f:
                f.write(line.split()[1])
atexit.register(_peak)
sys.argv = ["attnkit", *sys.argv[1:]]
runpy.run_module("attnkit", run_name="__main__", alter_sys=True)
"""


def timed(*args: str) -> dict:
    """``attnkit ARGS``: wall seconds, CPU seconds (its own and its children's), the peak MB of
    its process, and what it printed (``--json``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile() as own:
        env = {**os.environ, "ATTNKIT_SECRET": SECRET, "BENCH_COURSE_PEAK": own.name}
        busy = machine_busy_seconds()
        started = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", _OWN_PEAK, *args], cwd=ROOT, env=env,
                                   stdout=out, stderr=err)
        peak, below = 0.0, {}
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _vm_hwm_mb(process.pid))
            for child in _descendants(process.pid):
                below[child] = max(below.get(child, 0.0), _vm_hwm_mb(child))
            time.sleep(0.05)
        seconds = time.perf_counter() - started
        after = machine_busy_seconds()
        busy = None if busy is None or after is None else after - busy
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise RuntimeError(f"attnkit {args[0]} failed:\n{err.read().decode(errors='replace')[-2000:]}")
        printed = out.read().decode()
    return {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "machine_cpu_seconds": busy,
            "peak_mb": round(_kb_mb(own.name) or peak, 1),     # (sampled: only if it did not say)
            "child_peak_mb": round(max(below.values(), default=0.0), 1), "processes": 1 + len(below),
            "printed": printed}


def machine_busy_seconds() -> float | None:
    """Every core's busy time since boot (user, nice, system, interrupts: /proc/stat's first
    line), or None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            ticks = stat.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(t) for t in ticks[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def roster(folder: Path, students: int) -> Path:
    path = folder / "roster.csv"
    path.write_text("student_id,name,email\n" + "".join(
        f"m{i:06d},Student {i},m{i:06d}@example.edu\n" for i in range(students)), encoding="utf-8")
    return path


def course(students: int, where: list[str], folder: Path) -> dict:
    """One class of ``students``: each phase's costs, in total and per student."""
    build_dir, submissions = folder / "build", folder / "submissions"
    built = timed("build", str(EXAMPLE), "--roster", str(roster(folder, students)), "--out", str(build_dir),
                  *where, "--json")
    key_path = build_dir / "instructor" / "answer_key.json"
    key = answer_key.load_key(key_path, SECRET.encode())
    profiles = [p for p in profile_names(key) if p in ORDINARY or p.startswith("misconception:")]
    started = time.perf_counter()
    synthesize(build_dir, key, submissions, profiles=profiles)
    handed_in = time.perf_counter() - started
    graded = timed("grade", str(EXAMPLE), str(submissions), "--build", str(build_dir), *where,
                   "--timeout", "10", "--json")
    reported = timed("report", str(EXAMPLE), "--build", str(build_dir), "--out", str(folder / "reports"), "--json")
    notebooks = sum(p.stat().st_size for p in (build_dir / "release").rglob("*.ipynb"))
    phases = {"build": built, "grade": graded, "report": reported}
    for phase in phases.values():
        phase.pop("printed")
        phase["ms_per_student"] = round(1000 * phase["seconds"] / students, 3)
        phase["cpu_ms_per_student"] = round(1000 * phase["cpu_seconds"] / students, 3)
        busy = phase["machine_cpu_seconds"]
        phase["machine_cpu_ms_per_student"] = None if busy is None else round(1000 * busy / students, 3)
    return {"students": students, "phases": phases, "synthesize_seconds": round(handed_in, 2),
            "key_bytes_per_student": round(_key_bytes(key_path) / students),
            "notebook_bytes_per_student": round(notebooks / students)}


def _key_bytes(index: Path) -> int:
    """The key's bytes: its index and, of a sharded key, every shard."""
    shards = index.with_name(index.stem + ".shards")
    return index.stat().st_size + sum(p.stat().st_size for p in shards.glob("*.shard"))


def run(sizes: list[int], cluster: str | None, jobs: int) -> dict:
    where = ["--cluster", cluster] if cluster else ["--jobs", str(jobs)]
    runs = []
    for n in sizes:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-course-{n}-"))
        try:
            runs.append(course(n, where, folder))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"where": " ".join(where), "runs": runs, "extrapolated": extrapolated(runs)}


def extrapolated(runs: list[dict]) -> dict:
    """100,000 students from the largest run's per-student costs; memory growth from the
    smallest run to the largest (flat: the extrapolation holds)."""
    small, large = runs[0], runs[-1]
    growth = {phase: round(large["phases"][phase]["peak_mb"] / max(small["phases"][phase]["peak_mb"], 1e-9), 2)
              for phase in large["phases"]}
    child_growth = {phase: round(large["phases"][phase]["child_peak_mb"]
                                 / max(small["phases"][phase]["child_peak_mb"], 1e-9), 2)
                    for phase in large["phases"] if small["phases"][phase]["child_peak_mb"]}
    return {"students": MOOC,
            "hours": {phase: round(p["ms_per_student"] * MOOC / 3.6e6, 2) for phase, p in large["phases"].items()},
            "key_gb": round(large["key_bytes_per_student"] * MOOC / 1e9, 2),
            "peak_memory_growth": growth, "child_peak_memory_growth": child_growth, "from_students": [small["students"], large["students"]]}


def report(result: dict) -> str:
    lines = [f"A whole course, {result['where']} (per student; peak memory of the command's process and "
             "of the largest of the others it started)", ""]
    for r in result["runs"]:
        lines.append(f"{r['students']:,} students: key {r['key_bytes_per_student'] / 1000:.1f} kB, notebooks "
                     f"{r['notebook_bytes_per_student'] / 1000:.1f} kB a student; the class handed in in "
                     f"{r['synthesize_seconds']} s (not counted)")
        for phase, p in r["phases"].items():
            own, machine = p["cpu_ms_per_student"], p.get("machine_cpu_ms_per_student")
            cpu = (f"{own:7.2f} ms/student" if machine is None else
                   f"{machine:7.2f} ms/student (the machine's; the command's and what it reaped {own:.2f})")
            lines.append(f"  {phase:<7} {p['seconds']:8.1f} s  {p['ms_per_student']:7.2f} ms/student  CPU {cpu}"
                         f"  peak {p['peak_mb']:.0f} MB"
                         f" (largest of {p['processes'] - 1} other processes {p['child_peak_mb']:.0f} MB)")
    e = result["extrapolated"]
    lines += ["", f"{e['students']:,} students, from the {e['from_students'][1]:,}-student run: "
              + ", ".join(f"{phase} {h} h" for phase, h in e["hours"].items())
              + f"; the key {e['key_gb']} GB",
              f"peak memory, {e['from_students'][0]:,} → {e['from_students'][1]:,} students: "
              + ", ".join(f"{phase} ×{g}" for phase, g in e["peak_memory_growth"].items())
              + "; the largest other process: "
              + ", ".join(f"{phase} ×{g}" for phase, g in e["child_peak_memory_growth"].items())]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.course", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[1000],
                        help="class sizes, smallest first (default 1000)")
    parser.add_argument("--cluster", help="build and grade on this Dask cluster (e.g. local:2)")
    parser.add_argument("--jobs", type=int, default=2, help="without --cluster: local processes (default 2)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.students):
        parser.error("--students: at least 1")
    result = run(sorted(args.students), args.cluster, args.jobs)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
