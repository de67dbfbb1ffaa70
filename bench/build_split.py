"""Where a student's build time goes, in one process: each problem's variant, the notebooks,
the key entry, and the floor under the variants — the reference and twin functions they
call, replayed bare.

A variant's validation calls the reference functions (the answers, the hidden cases'
expected outputs) and every twin of them (each listed misconception, each mistake the
search tries): the key holds what they give. Those calls, the outermost ones only, are
recorded while the same students are built a second time (their arguments copied: the
first build is the timed one) and then replayed in a plain loop: what the key's values cost
as arithmetic, without the engine around them (expressions, comparisons, the search's
bookkeeping, rendering). The rest of a student's time is the engine's.

Used by ``python -m bench.build`` (``--split N``); nothing here is timed in a test.
"""

from __future__ import annotations

import copy
import inspect
import time
from contextlib import contextmanager

from exercises.variant import evaluation, twin_values, draw as variant
from exercises.template import expressions, references
from exercises.course.build import collector_paced, header, key_entry
from exercises.render.notebook import ProblemVariant, notebook_bytes, student_and_instructor
from exercises.variant.seeds import variant_seed
from formats import answer_key


WARM = 8        # students built first and not counted (caches, first imports)


def split(assignment, students, secret: bytes, warm: int = WARM) -> dict:
    """Per-student milliseconds of each phase for ``students`` after the first ``warm`` (built
    and not counted), and of the reference and twin calls replayed bare."""
    if any(p.pool for p in assignment.problems) or len(students) <= warm:
        raise ValueError(f"the split is measured on an assignment without pools, for more than "
                         f"{warm} students (the first {warm} warm it up)")
    for student in students[:warm]:
        _student(assignment, student, secret, {})
    students = students[warm:]
    phases: dict = {}
    started = time.perf_counter()
    for student in students:
        _student(assignment, student, secret, phases)
    seconds = time.perf_counter() - started
    with recorded_calls() as calls:     # again, recorded (the same variants: a pure function)
        for student in students:
            _student(assignment, student, secret, {})
    bare = min(_replay(calls) for _ in range(3))
    n = len(students)
    return {"students": n, "ms": 1e3 * seconds / n,
            "phases_ms": {name: 1e3 * s / n for name, s in phases.items()},
            "calls": len(calls) / n, "bare_ms": 1e3 * bare / n}


def _student(assignment, student, secret: bytes, phases: dict) -> None:
    """What ``exercises.course.build`` does for one student, phase by phase, written nowhere."""
    def timed(name, make, *args):
        started = time.perf_counter()
        out = make(*args)
        phases[name] = phases.get(name, 0.0) + time.perf_counter() - started
        return out

    with collector_paced():
        problems = []
        for p in assignment.problems:
            seed = variant_seed(secret, assignment.id, student.id, p.id)
            made = timed(f"variant {p.id}", variant.make_variant, p.template, seed)
            problems.append(ProblemVariant(p.id, p.title_of(p.template), made))
        release, solved = timed("notebooks", student_and_instructor, header(assignment, student), problems)
        timed("notebook bytes", lambda: (notebook_bytes(release), notebook_bytes(solved)))
        notebook = f"release/{student.id}/{assignment.id}.ipynb"
        timed("key entry", lambda: answer_key.canonical(key_entry(problems, notebook, student)))


@contextmanager
def recorded_calls():
    """Every outermost call a variant makes to a function of ``solutions``, as (function,
    args, kwargs) with the arguments deep-copied: the reference functions wherever the
    engine takes them from its tables (``references.FUNCTIONS``, and the guarded table a
    template without fully masked rows uses), a twin put in a reference's place in an
    expression (``expressions._function``), and a twin run on a hidden case
    (``twin_values._called``). The function kept is the bare one, not the engine's guard."""
    calls: list = []
    depth = [0]

    def recorder(function):
        bare = inspect.unwrap(function)

        def record(*args, **kwargs):
            if depth[0] == 0:
                calls.append((bare, copy.deepcopy(args), copy.deepcopy(kwargs)))
            depth[0] += 1
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
        record.recording = True
        return record

    lookup, call_on_case = expressions._function, twin_values._called

    def function_of(name, scope):
        function = lookup(name, scope)
        if getattr(function, "recording", False) or not _of_solutions(function):
            return function
        return recorder(function)

    def called(function, case):
        if depth[0]:
            return call_on_case(function, case)
        calls.append((inspect.unwrap(function), (), copy.deepcopy(case.args)))
        depth[0] += 1
        try:
            return call_on_case(function, case)
        finally:
            depth[0] -= 1

    tables = [references.FUNCTIONS, evaluation.GUARDED]
    saved = [dict(table) for table in tables]
    for table in tables:
        table.update({name: recorder(f) for name, f in table.items() if _of_solutions(f)})
    expressions._function, twin_values._called = function_of, called
    try:
        yield calls
    finally:
        expressions._function, twin_values._called = lookup, call_on_case
        for table, before in zip(tables, saved):
            table.update(before)


def _of_solutions(function) -> bool:
    return str(getattr(function, "__module__", "")).startswith("solutions")


def _replay(calls: list) -> float:
    """Seconds to make every recorded call once, on copies of its arguments made beforehand
    (a call that raised raises again: it is part of the work)."""
    copies = [(f, copy.deepcopy(args), copy.deepcopy(kwargs)) for f, args, kwargs in calls]
    started = time.perf_counter()
    for function, args, kwargs in copies:
        try:
            function(*args, **kwargs)
        except Exception:  # noqa: BLE001
            pass
    return time.perf_counter() - started


def report(s: dict, speedup: float | None = None) -> list[str]:
    phases = s["phases_ms"]
    variants = {k.split(" ", 1)[1]: v for k, v in phases.items() if k.startswith("variant ")}
    total_variants = sum(variants.values())
    share = lambda ms: f"{100 * ms / s['ms']:.0f} %"     # noqa: E731
    lines = [f"  where a student's time goes, one process, {s['students']} students: "
             f"{s['ms']:.1f} ms a student (files not written)",
             f"    variants, validated: {total_variants:.1f} ms ({share(total_variants)}) — " + ", ".join(
                 f"{k} {v:.1f}" for k, v in sorted(variants.items(), key=lambda kv: -kv[1])),
             f"    notebooks: cells and records {phases['notebooks']:.1f} ms, their bytes "
             f"{phases['notebook bytes']:.1f} ms; key entry {phases['key entry']:.1f} ms",
             f"    the floor under the variants: their {s['calls']:.0f} calls to reference and twin "
             f"functions, replayed bare, {s['bare_ms']:.1f} ms ({share(s['bare_ms'])}); "
             f"the engine around them {total_variants - s['bare_ms']:.1f} ms"]
    if speedup:
        lines.append(f"    100 notebooks/s with {speedup:.2f}× from the second core needs ≤ "
                     f"{10 * speedup:.1f} ms a student on one core")
    return lines
