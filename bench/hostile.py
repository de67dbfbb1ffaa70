"""What the worst submissions cost the trusted side, against a clean batch, in the same run.

Builds the example assignment for ``--students`` synthetic students and writes their correct
submissions (synthetic/) twice: a clean folder, and a worst folder in which one
student per worst case hands in that case instead (each a known way a submission made the
grader stop, freeze, or spend far more than its share):

    superscript_name   the notebook is named ``²1.ipynb`` (``'²'.isdigit()``, but int('²') fails)
    empty_giant        an answer ``np.zeros((2**31 - 1, 0, 4))``: 0 bytes, 2**31 nested lists
    newline_cell       a code cell of 1 MB of newlines (a line-start regex scanning on)
    heatmap_1e308      a 2-D answer ``[[1e308, -1e308, 0, 1]] * 4`` (its heatmap's range overflows)
    sparse_2gib        the notebook file is a 2 GiB sparse file (``truncate``)
    givens_bomb        three copies of a givens cell, each edited to 1 MB of assignments
    cells_100k         100,000 code cells with a magic line each
    bool_30m           three answers of 30 million booleans each
    frame_flood        a cell writing tiny valid frames to its result pipe until the output cap
    forged_starts      a cell forging ``start`` events for every step, then exiting, every run

Each folder is graded by ``attnkit grade`` in a fresh process (sandbox on, a new gradebook),
inside a small wrapper that reports that process's own resource usage: grader CPU (user + sys,
RUSAGE_SELF: the grading process itself, all its threads; and its judges', which do each
submission's trusted work, as ``grade --json`` reports them), the sandbox servers' CPU
(RUSAGE_CHILDREN less the judges': the servers and the children they forked), the
grader's peak RSS (ru_maxrss) and the wall time; then the gradebook says how many submissions
were recorded and how large their notes are. ``attnkit report`` then writes every page for
both, and the bench checks that every student has each of them. The ratios (worst / clean)
are what to read: times drift on shared machines.

A command that does not finish within ``--max-seconds`` is killed (and reported so); the
wrapper also caps the grader's address space (``--memory-gb``), so a grader bug that would
take the whole machine's memory ends in a MemoryError instead.

    python -m bench.hostile [--students N] [--jobs N] [--scale F] [--cases a,b] [--max-seconds S] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from formats.cells import GIVENS, GradeId, grade_id, parse_grade_id

ROOT = Path(__file__).resolve().parents[1]

CASES = ("superscript_name", "empty_giant", "newline_cell", "heatmap_1e308", "sparse_2gib",
         "givens_bomb", "cells_100k", "bool_30m", "frame_flood", "forged_starts")


# --- the worst cases ------------------------------------------------------------------------

def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _grade_id(cell: dict):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _code_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": {},
            "outputs": [], "source": source}


def _answers(entry: dict, want) -> list[tuple[str, str, str]]:
    """(problem, grade id, variable) of the numeric parts whose expected value ``want`` accepts."""
    from formats.serialize import from_jsonable
    import numpy as np

    found = []
    for pid, record in entry["problems"].items():
        if record["kind"] != "numeric":
            continue
        for part, variable in record["answer_names"].items():
            if want(np.asarray(from_jsonable(record["answers"][part]))):
                found.append((pid, grade_id(pid, part), variable))
    return found


def _set(notebook: dict, grade_id: str, source: str) -> None:
    for cell in notebook["cells"]:
        if _grade_id(cell) == grade_id:
            cell["source"] = source


def _insert_after(notebook: dict, grade_id: str, cell: dict) -> None:
    at = next((i for i, c in enumerate(notebook["cells"]) if _grade_id(c) == grade_id), 0)
    notebook["cells"].insert(at + 1, cell)


def _tiny_frame_loop(frame_expr: str, total_bytes: int, then: str = "") -> str:
    """Child code that writes ``frame_expr`` (bytes of whole frames) to its result pipe (fd 3)
    until ``total_bytes`` have gone, in 1 MiB writes."""
    return f'''\
import os, struct, json
def _frame(header):
    body = struct.pack(">I", len(header)) + header
    return struct.pack(">I", len(body)) + body
_one = {frame_expr}
_chunk = _one * max(1, (1 << 20) // len(_one))
_left = {total_bytes}
try:
    while _left > 0:
        _view = memoryview(_chunk)
        while _view:
            _view = _view[os.write(3, _view):]
        _left -= len(_chunk)
except OSError:
    pass
{then}'''


def _givens_bomb(notebook: dict, size) -> None:
    """Three copies of the givens cell, each just under the characters intake parses."""
    index, givens = next((i, c) for i, c in enumerate(notebook["cells"])
                         if (parse_grade_id(str(_grade_id(c))) or GradeId()).role == GIVENS)
    # just under the 1,000,000 characters up to which intake parses a givens cell
    per_copy = size(999_000) - len(_source(givens)) - 1
    lines, n, total = [], 0, 0
    while total + len(f"given_{n} = {n}\n") <= per_copy:
        lines.append(f"given_{n} = {n}\n")
        total += len(lines[-1])
        n += 1
    for k in range(3):
        copy = json.loads(json.dumps(givens))
        copy["id"] = f"{givens.get('id', 'givens')}-copy{k}"
        copy["source"] = _source(givens) + "\n" + "".join(lines)
        notebook["cells"].insert(index + 1 + k, copy)


def make_case(case: str, notebook: dict, entry: dict, path: Path, scale: float) -> Path:
    """Write student's worst case ``case`` (from their correct ``notebook``) at or beside
    ``path``; the path of the file written."""
    from exercises.render.notebook import notebook_bytes

    def size(n: int) -> int:
        return max(1, int(n * scale))

    two_d = _answers(entry, lambda a: a.ndim == 2 and a.dtype.kind == "f")
    any_numeric = _answers(entry, lambda a: True)
    if case == "superscript_name":
        path = path.with_name("²1.ipynb")
    elif case == "empty_giant":
        _, gid, var = any_numeric[0]
        _set(notebook, gid, f"{var} = np.zeros((2**31 - 1, 0, 4))")
    elif case == "newline_cell":
        notebook["cells"].append(_code_cell("\n" * size(1_000_000) + "_after_the_newlines = 1\n", "newlines"))
    elif case == "heatmap_1e308":
        _, gid, var = two_d[0]
        _set(notebook, gid, f"{var} = np.array([[1e308, -1e308, 0, 1]] * 4)")
    elif case == "givens_bomb":
        _givens_bomb(notebook, size)
    elif case == "cells_100k":
        notebook["cells"] += [_code_cell(f"%time _cell = {i}", f"c{i}") for i in range(size(100_000))]
    elif case == "bool_30m":
        seen = set()
        for pid, gid, var in any_numeric:          # one per problem: each problem is one frame
            if pid not in seen and len(seen) < 3:
                seen.add(pid)
                _set(notebook, gid, f"{var} = np.ones({size(30_000_000)}, dtype=bool)")
    elif case == "frame_flood":
        _, gid, _ = any_numeric[0]
        code = _tiny_frame_loop('_frame(b"null")', 200 * 2**20)
        _insert_after(notebook, gid, _code_cell(code, "frame-flood"))
    elif case == "forged_starts":
        _, gid, _ = any_numeric[0]
        code = _tiny_frame_loop(
            'b"".join(_frame(json.dumps({"d": [["event", "start"], ["step", s]]}).encode()) for s in range(400))',
            size(32 * 2**20), then="os._exit(0)")
        _insert_after(notebook, gid, _code_cell(code, "forged-starts"))
    elif case != "sparse_2gib":
        raise ValueError(f"no worst case {case!r}; the cases are {', '.join(CASES)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = notebook_bytes(notebook)
    if case == "newline_cell":     # the cell's source as ONE string (nbformat allows it): as
        data = json.dumps(notebook, ensure_ascii=False, indent=1).encode("utf-8")   # a list of lines,
    path.write_bytes(data)         # a million newlines would be a million JSON values, refused unread
    if case == "sparse_2gib":
        with open(path, "r+b") as f:            # `truncate -s 2G`: a hole, no disk written
            f.truncate(max(128 * 2**20, int(2 * 2**30 * scale)))
    return path


# --- running a command, measured from inside ----------------------------------------------

def _child(out: str, argv: list[str], memory_gb: float) -> int:
    """``python -m bench.hostile --child OUT -- ARGS``: run ``attnkit ARGS`` in this process and
    write this process's own usage (and its reaped children's) to OUT as JSON."""
    if memory_gb > 0:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = int(memory_gb * 2**30)
        if hard == resource.RLIM_INFINITY or cap <= hard:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    started = time.perf_counter()
    error = ""
    try:
        from attnkit.cli import main
        code = main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException as err:  # noqa: BLE001 — what killed the command is the result
        import traceback
        traceback.print_exc()
        code, error = 1, f"{type(err).__name__}: {str(err)[:300]}"
    seconds = time.perf_counter() - started
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    sys.stdout.flush()
    Path(out).write_text(json.dumps({
        "code": code, "error": error, "seconds_inside": seconds,
        "cpu_user": me.ru_utime, "cpu_sys": me.ru_stime, "peak_rss_mb": me.ru_maxrss / 1024,
        "children_cpu": children.ru_utime + children.ru_stime,
        "children_peak_rss_mb": children.ru_maxrss / 1024}))
    return 0


def measured(args: list[str], env: dict, max_seconds: float, memory_gb: float) -> dict:
    """``attnkit ARGS`` in a fresh process: its exit code, wall time, CPU and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="attnkit-bench-hostile-run-") as scratch:
        usage = Path(scratch) / "usage.json"
        command = [sys.executable, "-m", "bench.hostile", "--child", str(usage),
                   "--memory-gb", str(memory_gb), "--", *args]
        with open(Path(scratch) / "out", "w+b") as out, open(Path(scratch) / "err", "w+b") as err:
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err,
                                       start_new_session=True)
            killed = False
            try:
                process.wait(timeout=max_seconds)
            except subprocess.TimeoutExpired:
                killed = True
                os.killpg(process.pid, signal.SIGKILL)     # the command and its sandbox servers
                process.wait()
            wall = time.perf_counter() - started
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        result = {"wall_seconds": wall, "killed": killed, "stdout": stdout[-20_000:],
                  "stderr_tail": stderr[-3000:]}
        if usage.exists():
            u = json.loads(usage.read_text())
            result.update(code=u["code"], error=u["error"], grader_cpu=u["cpu_user"] + u["cpu_sys"],
                          grader_user=u["cpu_user"], grader_sys=u["cpu_sys"],
                          peak_rss_mb=u["peak_rss_mb"], sandbox_cpu=u["children_cpu"])
        else:
            result.update(code=process.returncode if not killed else None,
                          error=f"killed after {max_seconds:g} s" if killed else
                          f"exited {process.returncode} before reporting its usage",
                          grader_cpu=None, grader_user=None, grader_sys=None, peak_rss_mb=None,
                          sandbox_cpu=None)
        return result


def _with_judges(graded: dict) -> dict:
    """The trusted side's CPU with its judges' (``grade --json``: ``judges_cpu_seconds``): a
    judge process does a submission's trusted work (grader.run.judges), and the grading process's
    children's CPU counts the judges as well as the sandboxes. {} where the summary does not
    say (no judges, or no summary)."""
    try:
        judge = float(json.loads(graded.get("stdout") or "")["judges_cpu_seconds"]["judge"])
    except (ValueError, KeyError, TypeError):
        return {}
    own = graded.get("grader_cpu")
    return {"judges_cpu": judge,
            "trusted_cpu": None if own is None else own + judge,
            "sandbox_cpu": None if graded.get("sandbox_cpu") is None else max(graded["sandbox_cpu"] - judge, 0.0)}


# --- the run --------------------------------------------------------------------------------

def _gradebook_figures(gradebook: Path, assignment_id: str) -> dict:
    figures = {"recorded": 0, "n_graded": 0, "n_error": 0, "notes_bytes": 0, "slowest_ms": 0.0,
               "by_student": {}}
    if not gradebook.exists():
        return figures
    with sqlite3.connect(f"file:{gradebook}?mode=ro", uri=True) as con:
        for student, status, notes, duration in con.execute(
                "SELECT student, status, notes, duration_ms FROM submissions WHERE assignment = ? "
                "AND status != 'missing'", (assignment_id,)):
            figures["recorded"] += 1
            figures[f"n_{status}"] = figures.get(f"n_{status}", 0) + 1
            figures["notes_bytes"] += len(notes.encode("utf-8", "surrogatepass"))
            figures["slowest_ms"] = max(figures["slowest_ms"], float(duration))
            first = json.loads(notes)
            figures["by_student"][student] = {"status": status, "duration_ms": float(duration),
                                              "notes_bytes": len(notes.encode("utf-8", "surrogatepass")),
                                              "note": (first[0][:160] if first else "")}
    return figures


def _pages(out: Path, students: list[str]) -> dict:
    feedback = sum((out / "feedback" / f"{s}.html").is_file() for s in students)
    gradescope = sum((out / "gradescope" / s / "results.json").is_file() for s in students)
    csv_rows = 0
    if (out / "grades.csv").is_file():
        csv_rows = max(0, len((out / "grades.csv").read_text(encoding="utf-8").strip().splitlines()) - 1)
    return {"students": len(students), "feedback": feedback, "gradescope": gradescope,
            "csv_rows": csv_rows,
            "every_page": feedback == gradescope == csv_rows == len(students)}


def run(students: int = 40, jobs: int = 2, scale: float = 1.0, cases=CASES, max_seconds: float = 900.0,
        memory_gb: float = 12.0, timeout: float = 10.0, insecure: bool = False) -> dict:
    from .build import BENCH_SECRET, _secret

    with _secret(BENCH_SECRET):
        return _run(students, jobs, scale, tuple(cases), max_seconds, memory_gb, timeout, insecure,
                    BENCH_SECRET)


def _run(students, jobs, scale, cases, max_seconds, memory_gb, timeout, insecure, secret) -> dict:
    from formats import answer_key
    from exercises.course.assignment import load_assignment
    from exercises.course.build import build
    from synthetic import submission_path, synthesize

    from .build import EXAMPLE, roster

    if students < len(cases) + 1:
        raise ValueError(f"{len(cases)} worst cases need at least {len(cases) + 1} students")
    assignment = load_assignment(EXAMPLE)
    scratch = Path(tempfile.mkdtemp(prefix="attnkit-bench-hostile-"))
    try:
        built = build(assignment, roster(students), scratch / "build", jobs=jobs)
        if built.failures:
            raise RuntimeError(f"build failed: {built.failures[0]}")
        key = answer_key.load_key(built.key_path, secret.encode())
        ids = sorted(key["students"])
        clean = scratch / "clean"
        synthesize(scratch / "build", key, clean, profiles=["correct"])
        worst = scratch / "worst"
        shutil.copytree(clean, worst)
        replaced = {}
        for case, sid in zip(cases, ids):
            path = submission_path(worst, "nbgrader", assignment.id, sid)
            notebook = json.loads(path.read_text(encoding="utf-8"))
            for cell in notebook["cells"]:
                cell["source"] = _source(cell)
            path.unlink()
            written = make_case(case, notebook, key["students"][sid], path, scale)
            replaced[case] = {"student": sid, "bytes": written.stat().st_size, "file": written.name}
        env = {**os.environ, "ATTNKIT_SECRET": secret}
        result = {"assignment": assignment.id, "problems": len(assignment.problems), "students": students,
                  "cpus": os.cpu_count(), "jobs": jobs, "scale": scale, "cases": replaced,
                  "max_seconds": max_seconds}
        for name, folder in (("clean", clean), ("worst", worst)):
            gradebook = scratch / f"{name}.sqlite"
            grade_args = ["grade", str(EXAMPLE), str(folder), "--key", str(built.key_path),
                          "--gradebook", str(gradebook), "--jobs", str(jobs), "--timeout", str(timeout),
                          "--json", *(["--insecure"] if insecure else [])]
            graded = measured(grade_args, env, max_seconds, memory_gb)
            graded.update(_with_judges(graded))
            graded.update(_gradebook_figures(gradebook, assignment.id))
            out = scratch / f"{name}-reports"
            reported = {"code": None, "error": "no gradebook", "wall_seconds": 0.0, "killed": False}
            if gradebook.exists():
                reported = measured(["report", str(EXAMPLE), "--key", str(built.key_path), "--gradebook",
                                     str(gradebook), "--out", str(out), "--json"], env, max_seconds, memory_gb)
            reported.update(_pages(out, ids))
            for r in (graded, reported):
                r.pop("stdout", None)
            result[name] = {"grade": graded, "report": reported}
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --- printing ---------------------------------------------------------------------------------

def _num(x, fmt: str = ".1f", unit: str = "") -> str:
    return "?" if x is None else f"{x:{fmt}}{unit}"


def _ratio(a, b) -> str:
    if a is None or b is None or b <= 0:
        return "?"
    return f"{a / b:.2f}×"


def _grade_line(name: str, g: dict, students: int) -> str:
    ended = ("killed after the time limit" if g["killed"] else
             f"exit {g['code']}" + (f" ({g['error']})" if g.get("error") else ""))
    return (f"  {name}: {g['recorded']}/{students} submissions recorded ({g['n_graded']} graded, "
            f"{g['n_error']} error); {ended}; "
            f"wall {g['wall_seconds']:.1f} s; grader CPU {_num(g['grader_cpu'], '.2f', ' s')} "
            f"(user {_num(g['grader_user'], '.2f')} + sys {_num(g['grader_sys'], '.2f')})"
            + (f" and its judges' {g['judges_cpu']:.2f} s" if g.get("judges_cpu") is not None else "")
            + "; "
            f"sandbox servers' CPU {_num(g['sandbox_cpu'], '.2f', ' s')}; grader peak RSS "
            f"{_num(g['peak_rss_mb'], '.0f', ' MB')}; notes {g['notes_bytes'] / 1e6:.2f} MB; slowest "
            f"submission {g['slowest_ms'] / 1000:.2f} s")


def _report_line(name: str, r: dict) -> str:
    ended = ("killed after the time limit" if r.get("killed") else
             f"exit {r.get('code')}" + (f" ({r['error']})" if r.get("error") else ""))
    pages = ("every page written" if r["every_page"] else "NOT every page written")
    return (f"  report {name}: {pages} ({r['feedback']}/{r['students']} feedback, {r['gradescope']}/"
            f"{r['students']} gradescope, {r['csv_rows']}/{r['students']} CSV rows); {ended}; wall "
            f"{r.get('wall_seconds', 0.0):.1f} s; CPU {_num(r.get('grader_cpu'), '.2f', ' s')}; peak RSS "
            f"{_num(r.get('peak_rss_mb'), '.0f', ' MB')}")


def _trusted(worst: dict, clean: dict) -> tuple:
    """The two runs' trusted-side CPU (the grading process and its judges) where both say it,
    else the grading process's alone."""
    if "trusted_cpu" in worst and "trusted_cpu" in clean:
        return worst["trusted_cpu"], clean["trusted_cpu"]
    return worst["grader_cpu"], clean["grader_cpu"]


def report(r: dict) -> str:
    clean, worst = r["clean"]["grade"], r["worst"]["grade"]
    lines = [f"example assignment {r['assignment']}: {r['problems']} problems, {r['students']} students; "
             f"{len(r['cases'])} of them hand in a worst case in the second batch; {r['cpus']} CPUs, "
             f"{r['jobs']} sandbox servers; attnkit grade as a user runs it (sandbox on, new gradebook)"
             + (f"; sizes scaled by {r['scale']:g}" if r["scale"] != 1 else ""),
             _grade_line("clean", clean, r["students"]),
             _grade_line("worst", worst, r["students"]),
             f"  ratio, worst / clean: grader CPU {_ratio(*_trusted(worst, clean))}"
             + (" (with its judges)" if "trusted_cpu" in worst and "trusted_cpu" in clean else "") + ", "
             f"peak RSS {_ratio(worst['peak_rss_mb'], clean['peak_rss_mb'])}, wall "
             f"{_ratio(worst['wall_seconds'], clean['wall_seconds'])}, sandbox CPU "
             f"{_ratio(worst['sandbox_cpu'], clean['sandbox_cpu'])}"]
    by_student = worst.get("by_student", {})
    for case, info in r["cases"].items():
        row = by_student.get(info["student"])
        said = (f"{row['status']} in {row['duration_ms'] / 1000:.2f} s, notes {row['notes_bytes'] / 1000:.1f} kB"
                + (f": {row['note']!r}" if row["note"] else "") if row else "NOT recorded")
        lines.append(f"    {case} ({info['student']}, {info['file']!r}, {info['bytes'] / 1e6:.1f} MB): {said}")
    lines += [_report_line("clean", r["clean"]["report"]), _report_line("worst", r["worst"]["report"])]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        out, rest = argv[1], argv[2:]
        memory_gb = 0.0
        if rest[:1] == ["--memory-gb"]:
            memory_gb, rest = float(rest[1]), rest[2:]
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return _child(out, rest, memory_gb)
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40, help="batch size (default 40)")
    parser.add_argument("--jobs", type=int, default=2, help="sandbox servers (default 2)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply the worst cases' sizes (default 1: as listed above)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated worst cases (default all)")
    parser.add_argument("--max-seconds", type=float, default=900.0,
                        help="kill a command that runs longer (default 900)")
    parser.add_argument("--memory-gb", type=float, default=12.0,
                        help="address-space cap of the measured command (default 12; 0: none)")
    parser.add_argument("--timeout", type=float, default=10.0, help="attnkit grade --timeout (default 10)")
    parser.add_argument("--insecure", action="store_true", help="pass --insecure to attnkit grade")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    result = run(args.students, args.jobs, args.scale, cases, args.max_seconds, args.memory_gb,
                 args.timeout, args.insecure)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

