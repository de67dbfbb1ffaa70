"""Grading rate against nbgrader autograde, in the same run.

Builds the example assignment (7 problems, every kind) for a synthetic roster, writes one
synthetic submission per student (an ordinary mix: correct, partial, wrongly typed and one per
diagnosable misconception; synthetic/) and grades them with ``attnkit grade`` as a
user runs it: a fresh process, the sandbox on, a new gradebook; twice, one run after the
other, for the CPU a submission costs (the lower of the two, each shown: ``least_cpu``). It
reports submissions per second (over the whole command, start-up included), the p50/p99
latency of a submission (from the start of its sandbox run to its verdict, as the gradebook
records it) and the grader's peak resident memory, for ``--submissions`` and for ``--large``
submissions.

The large batch reuses the variants of the first: each student's key entry and submission
is copied under new student ids (re-signed with the benchmark's own secret), because
building ten thousand distinct variants takes minutes and measures the builder, not the
grader. The grader does the same work per submission either way.

In the same run, the real ``nbgrader autograde`` (course mode) grades ``--nbgrader``
correct submissions of the class-wide notebook, and ``attnkit grade`` grades the very same
files against the class key: the ratio compares notebooks per second. Times drift on
these shared machines: read the ratios.

With ``--cluster local:2`` the batch is also graded on a Dask cluster (``attnkit grade
--cluster``), with shards of 100 and of 50, and again with ``--jobs``, twice each,
interleaved: the shards of 100's rate against ``--jobs`` on this machine (each the faster of
its two runs), and one shard's overhead from the difference.

    python -m bench.grade [--submissions N] [--large N] [--nbgrader N] [--jobs N] [--cluster WHERE] [--json]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from formats import answer_key
from exercises.course.assignment import load_assignment
from exercises.course.build import CLASS_STUDENT, build, build_nbgrader, header, problem_variants
from exercises.render.notebook import build_notebook
from formats.key_shards import ShardWriter
from formats.textfile import write_atomic
from synthetic import profile_names, submission_path, synthesize

from .build import BENCH_SECRET, EXAMPLE, _secret, roster
from .nbgrader_course import hermetic_env, nbgrader

ROOT = Path(__file__).resolve().parents[1]
ORDINARY = ("correct", "partial", "typed_wrong")      # + every misconception profile


# --- the submissions --------------------------------------------------------------------

def prepare(assignment, students: int, folder: Path, jobs: int) -> tuple[Path, Path]:
    """(answer key, submissions folder) for ``students`` synthetic students."""
    result = build(assignment, roster(students), folder / "build", jobs=jobs)
    if result.failures:
        raise RuntimeError(f"build failed: {result.failures[0]}")
    key = answer_key.load_key(result.key_path, BENCH_SECRET.encode())
    profiles = [p for p in profile_names(key) if p in ORDINARY or p.startswith("misconception:")]
    synthesize(folder / "build", key, folder / "submissions", profiles=profiles)
    return result.key_path, folder / "submissions"


def enlarge(key_path: Path, submissions: Path, factor: int, folder: Path) -> tuple[Path, Path]:
    """A key and submissions ``factor`` times as many: copies of every student under new ids
    ("<id>c<k>"), the key re-signed with the benchmark secret and each notebook's record naming
    its new student."""
    key = answer_key.load_key(key_path, BENCH_SECRET.encode())
    out, path = folder / "submissions", folder / "answer_key.json"
    assignment_id = key["assignment"]["id"]
    references = key["students"].references            # a sharded key, as a build writes it
    clones = [f"{sid}c{k}" for sid in key["students"] for k in range(factor)]
    writer = ShardWriter(path, clones, references, BENCH_SECRET.encode(), key["assignment"]["digest"])
    for sid in sorted(key["students"]):
        entry = key["students"][sid]
        notebook = json.loads(submission_path(submissions, "nbgrader", assignment_id, sid).read_bytes())
        for k in range(factor):
            clone = f"{sid}c{k}"
            renamed = {**entry, "name": f"{entry['name']} ({k})"}
            digest = hashlib.sha256(answer_key.canonical(renamed).encode()).hexdigest()
            writer.add(clone, references.pack(renamed), digest)
            copied = copy.deepcopy(notebook)
            copied["metadata"]["attnkit"]["student"] = clone
            _write_notebook(submission_path(out, "nbgrader", assignment_id, clone), copied)
    writer.finish({"kit_version": key["kit_version"], "assignment": key["assignment"]})
    return path, out


def _write_notebook(path: Path, notebook: dict) -> None:
    write_atomic(path, json.dumps(notebook, ensure_ascii=False, indent=1).encode("utf-8"))


# --- attnkit grade, as a user runs it ---------------------------------------------------------

def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def grade(key: Path, submissions: Path, gradebook: Path, jobs: int, extra: tuple = ()) -> dict:
    """Run ``attnkit grade`` on ``submissions``; its figures and the gradebook's latencies
    (``extra``: more options, e.g. ``--cluster local:2``)."""
    command = [sys.executable, "-m", "attnkit", "grade", str(EXAMPLE), str(submissions),
               "--key", str(key), "--gradebook", str(gradebook), "--jobs", str(jobs), "--json", *extra]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:   # (a pipe could fill)
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=err,
                                   env={**os.environ, "ATTNKIT_SECRET": BENCH_SECRET})
        peak, own_cpu = 0.0, 0.0
        while True:        # (os.wait4, not poll: the process's CPU, its children's included, when it ends)
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _peak_rss_mb(process.pid) or 0.0)   # VmHWM only grows: the last is the peak
            own_cpu = _own_cpu_seconds(process.pid) or own_cpu
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
        total_cpu = usage.ru_utime + usage.ru_stime
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"attnkit grade exited {process.returncode}:\n"
                               f"{err.read().decode(errors='replace')[-2000:]}")
        summary = json.loads(out.read())
    with sqlite3.connect(f"file:{gradebook}?mode=ro", uri=True) as con:
        durations = sorted(r[0] for r in con.execute("SELECT duration_ms FROM submissions"))
    graded = summary["graded"]
    per = 1000 / max(graded, 1)
    judged = summary.get("judges_cpu_seconds") or {}
    return {"submissions": graded, "seconds": seconds, "per_second": graded / seconds,
            "in_run_per_second": summary["submissions_per_second"],
            "p50_ms": _percentile(durations, 50), "p99_ms": _percentile(durations, 99),
            "peak_rss_mb": peak,
            # CPU per submission: the grading process itself (start-up included), and its
            # children (sandbox servers and the forks that run student code); on a cluster the
            # client's alone (a LocalCluster's workers are forked by Dask's fork server, not by
            # the command: their CPU is not its children's)
            "cpu_ms": {"client": own_cpu * per} if "--cluster" in extra else
                      {"grader": own_cpu * per, "children": max(total_cpu - own_cpu, 0.0) * per,
                       # of the children: the judges' own work (grader.run.judges) and their sandboxes'
                       **({"judges": judged["judge"] * per, "sandbox": judged["sandbox"] * per}
                          if judged else {})},
            "judges": summary.get("judges", 0), "judges_peak_rss_mb": summary.get("judges_peak_rss_mb", 0.0),
            **({"shards": summary["cluster"]["shards"]} if "cluster" in summary else {})}


def _own_cpu_seconds(pid: int) -> float | None:
    """User + system CPU of the process itself (not its children), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return float(values[0]) if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if q < 100 else max(values)


# --- nbgrader autograde on the same (class-wide) submissions --------------------------------

def nbgrader_baseline(assignment, count: int, folder: Path, jobs: int) -> dict:
    """nbgrader autograde and attnkit grade on ``count`` correct submissions of the course's
    class-wide notebook."""
    course = folder / "course"
    build_nbgrader(assignment, course)
    env = hermetic_env(folder / "env")
    done, _ = nbgrader(["generate_assignment", assignment.id, "--force"], course, env)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{done.stderr[-2000:]}")
    release = json.loads((course / "release" / assignment.id / f"{assignment.id}.ipynb").read_bytes())
    solved = build_notebook(header(assignment), problem_variants(assignment, BENCH_SECRET.encode(),
                                                                 CLASS_STUDENT), "instructor")
    answers = {c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in solved["cells"]
               if c["metadata"].get("nbgrader", {}).get("solution")}
    for i in range(count):
        notebook = copy.deepcopy(release)
        for cell in notebook["cells"]:
            gid = cell["metadata"].get("nbgrader", {}).get("grade_id")
            if gid in answers:
                cell["source"] = answers[gid]
        _write_notebook(course / "submitted" / f"c{i:03d}" / assignment.id / f"{assignment.id}.ipynb",
                        notebook)
    done, seconds = nbgrader(["autograde", assignment.id, "--force"], course, env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"nbgrader autograde failed:\n{done.stderr[-2000:]}")
    ours = grade(course / "attnkit" / assignment.id / "answer_key.json", course / "submitted",
                 folder / "attnkit.sqlite", jobs)
    return {"submissions": count, "nbgrader_seconds": seconds, "nbgrader_per_second": count / seconds,
            "attnkit": ours, "ratio": ours["per_second"] / (count / seconds)}


# --- the run ----------------------------------------------------------------------------------

def run(submissions: int = 1000, large: int = 10000, with_nbgrader: int = 20, jobs: int = 2,
        cluster: str | None = None) -> dict:
    with _secret(BENCH_SECRET):
        return _run(submissions, large, with_nbgrader, jobs, cluster)


SHARD_SIZES = (100, 50)      # the cluster runs: their difference in time per extra shard is its overhead


def on_cluster(key: Path, folder: Path, scratch: Path, jobs: int, cluster: str) -> dict:
    """The batch graded on ``cluster`` with two shard sizes and on this machine (``--jobs``),
    twice each, interleaved (each cluster run starts its cluster, as ``attnkit grade --cluster``
    does): the cluster's rate against local grading's, each the faster of its two runs (the
    machine's speed drifts from minute to minute: a local run timed minutes before would
    favour whichever ran in the faster minutes), and the overhead of one shard,
    (T(small shards) − T(large shards)) / the shards added, from the faster run of each size."""
    runs: dict = {}
    for attempt in range(2):      # interleaved, the faster of two each: the machine is shared
        for size in ("local", *SHARD_SIZES):
            extra = () if size == "local" else ("--cluster", cluster, "--shard-size", str(size))
            r = grade(key, folder, scratch / f"cluster-{size}-{attempt}.sqlite", jobs, extra)
            if size not in runs or r["seconds"] < runs[size]["seconds"]:
                runs[size] = r
    shards = {size: runs[size]["shards"] for size in SHARD_SIZES}
    big, small = SHARD_SIZES
    overhead = (runs[small]["seconds"] - runs[big]["seconds"]) / max(shards[small] - shards[big], 1)
    local = runs.pop("local")
    return {"cluster": cluster, "runs": {str(k): v for k, v in runs.items()}, "local": local,
            "shards": {str(k): v for k, v in shards.items()},
            "ratio_to_local": runs[big]["per_second"] / local["per_second"],
            "in_run_ratio_to_local": runs[big]["in_run_per_second"] / local["in_run_per_second"],
            "shard_overhead_s": overhead}


PACKAGES = ("solutions", "formats", "exercises", "grader", "attnkit")


def bytecode() -> int:
    """The kit's modules compiled to bytecode, as an installed kit has them (pip compiles a
    wheel's modules when it installs them; nbgrader, the baseline, is installed so). A
    checkout run with PYTHONDONTWRITEBYTECODE=1, as on these machines, never writes them, and
    then every ``attnkit grade`` and every sandbox server it starts compiles the kit from
    source (measured: 0.12 s per command). Returns how many modules had none."""
    import compileall
    import importlib.util

    sources = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    missing = sum(not Path(importlib.util.cache_from_source(str(p))).exists() for p in sources)
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1)
    return missing


def _run(submissions, large, with_nbgrader, jobs, cluster=None) -> dict:
    assignment = load_assignment(EXAMPLE)
    scratch = Path(tempfile.mkdtemp(prefix="attnkit-bench-grade-"))
    try:
        result = {"assignment": assignment.id, "problems": len(assignment.problems),
                  "cpus": os.cpu_count(), "jobs": jobs, "compiled_modules": bytecode()}
        key, folder = prepare(assignment, submissions, scratch / "small", jobs)
        result["batch"] = grade(key, folder, scratch / "small" / "gradebook.sqlite", jobs)
        result["batch_again"] = grade(key, folder, scratch / "small" / "again.sqlite", jobs)
        result["cpu_ms"] = least_cpu([result["batch"], result["batch_again"]])
        if cluster:
            result["cluster"] = on_cluster(key, folder, scratch / "small", jobs, cluster)
        if large:
            factor = max(1, round(large / submissions))
            big_key, big_folder = enlarge(key, folder, factor, scratch / "large")
            result["large"] = grade(big_key, big_folder, scratch / "large" / "gradebook.sqlite", jobs)
        if with_nbgrader:
            result["nbgrader"] = nbgrader_baseline(assignment, with_nbgrader, scratch / "nbgrader", jobs)
            result["ratio"] = result["batch"]["per_second"] / result["nbgrader"]["nbgrader_per_second"]
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def least_cpu(runs: list[dict]) -> dict:
    """CPU per submission of the same batch graded in runs one after the other: each run's
    (grading process and children) and the least of them, the figure the goal is held to.
    The machine's speed drifts from minute to minute (docs/performance.md): the least is the
    run the machine disturbed least, every run is shown beside it."""
    totals = [r["cpu_ms"]["grader"] + r["cpu_ms"]["children"] for r in runs]
    return {"runs": totals, "least": min(totals)}


def _line(name: str, r: dict) -> str:
    return (f"  {name}: {r['submissions']} submissions in {r['seconds']:.1f} s = {r['per_second']:.1f}/s "
            f"({r['in_run_per_second']:.1f}/s once started); latency p50 {r['p50_ms']:.0f} ms, "
            f"p99 {r['p99_ms']:.0f} ms; peak grader RSS {r['peak_rss_mb']:.0f} MB"
            + (f" (each judge's {r['judges_peak_rss_mb']:.0f} MB, shared pages included)"
               if r.get("judges_peak_rss_mb") else "")
            + (_cpu(r["cpu_ms"]) if "cpu_ms" in r else ""))


def _cpu(cpu: dict) -> str:
    if "client" in cpu:
        return f"; CPU per submission {cpu['client']:.1f} ms in the client (the workers' is not counted)"
    line = f"; CPU per submission {cpu['grader']:.1f} ms grader + {cpu['children']:.1f} ms children"
    if "judges" in cpu:
        line += f" ({cpu['judges']:.1f} ms judges, {cpu['sandbox']:.1f} ms their sandboxes)"
    return line


def report(r: dict) -> str:
    lines = [f"example assignment {r['assignment']}: {r['problems']} problems; {r['cpus']} CPUs, "
             f"{r['jobs']} sandbox servers; attnkit grade as a user runs it (sandbox on, new gradebook, "
             f"the kit compiled to bytecode as an install has it: {r.get('compiled_modules', 0)} modules "
             "compiled first)",
             _line("batch", r["batch"])]
    if "batch_again" in r:
        lines.append(_line("the batch again", r["batch_again"]))
        runs = ", ".join(f"{ms:.1f}" for ms in r["cpu_ms"]["runs"])
        lines.append(f"  CPU per submission, grading process and children: {r['cpu_ms']['least']:.1f} ms, "
                     f"the lower of the batch's two runs ({runs} ms)")
    if "cluster" in r:
        c = r["cluster"]
        big, small = (str(x) for x in SHARD_SIZES)
        lines.append(_line(f"cluster {c['cluster']}, shards of {big}", c["runs"][big]))
        lines.append(_line(f"--jobs {r['jobs']}, interleaved with the cluster's runs", c["local"]))
        lines.append(f"  cluster / --jobs {r['jobs']} on this machine: {c['ratio_to_local']:.2f}× "
                     f"({c['in_run_ratio_to_local']:.2f}× once started; each the faster of two runs, "
                     f"interleaved); one shard's overhead "
                     f"{1000 * c['shard_overhead_s']:.0f} ms ({c['shards'][small]} shards of {small}: "
                     f"{c['runs'][small]['seconds']:.1f} s, against {c['shards'][big]} of {big})")
    if "large" in r:
        lines.append(_line("large", r["large"]) + " (copies of the batch's variants under new ids)")
        lines.append(f"  peak RSS, large / batch: {r['large']['peak_rss_mb'] / r['batch']['peak_rss_mb']:.2f}×")
    if "nbgrader" in r:
        n = r["nbgrader"]
        lines.append(f"  nbgrader autograde, {n['submissions']} correct class-wide notebooks: "
                     f"{n['nbgrader_seconds']:.1f} s = {n['nbgrader_per_second']:.2f}/s; attnkit grade on "
                     f"the same files {n['attnkit']['per_second']:.1f}/s ({n['ratio']:.0f}×)")
        lines.append(f"  ratio, the batch's rate against nbgrader's: {r['ratio']:.0f}×")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000, help="batch size (default 1000)")
    parser.add_argument("--large", type=int, default=10000,
                        help="submissions of the large batch, for peak memory (default 10000; 0: skip)")
    parser.add_argument("--nbgrader", type=int, default=20,
                        help="submissions nbgrader autograde grades (default 20; 0: skip)")
    parser.add_argument("--jobs", type=int, default=2, help="sandbox servers (default 2)")
    parser.add_argument("--cluster", metavar="WHERE",
                        help="also grade the batch on a Dask cluster (e.g. local:2), beside --jobs")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    result = run(args.submissions, args.large, args.nbgrader, args.jobs, args.cluster)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
