"""Hostile notebooks, generated: whatever a student hands in, the trusted side records it, in
bounded time, and every report is written.

Hypothesis edits the real, correct notebooks of the example assignment (synthetic,
profile ``correct``, built once per session) the way a student, a broken tool or an attacker
might: cells deleted, duplicated, moved, re-typed, given another cell's grade id or metadata
that is not an object; sources that are not text; the notebook's own fields of the wrong JSON
type; thousands of cells, long sources, many newlines, long lines; combining marks, superscript
digits, bidi overrides, lone surrogates (as JSON's ``\\ud800`` escapes), escape sequences and
other control characters in sources and in file names (and file names that are not UTF-8);
answers at the edges of float64 (±1e308, subnormals, NaN, ±inf, -0.0), integers beyond 64 bits,
arrays with an empty axis after huge ones, large boolean arrays; givens cells edited to such
numbers or made huge.

Each example is ONE batch of six students (five edited, the first always honest: a control)
graded through the real pipeline, as ``attnkit grade`` does it (grader.run.pipeline.grade_folder: find → match(read=False) → GradingRun → run_pytest,
a real Sandbox and a real SQLite gradebook), then every report is written (CSV, Gradescope,
feedback pages). It asserts what must hold whatever the input:

- every submission is recorded (status ``graded`` or ``error``, never missing) and every part
  of it has a result row; the control is ``graded`` with exactly its honest score (a grader
  that fails on everything, or a neighbour that costs it, is caught);
- no submission's recorded duration exceeds the grader's budget (grader.budget.CPU_SECONDS)
  by much (ALLOWED_SECONDS: twice the budget, plus a sandbox try or two), none ended in the
  grader's own MemoryError, and none has more than MAX_NOTES_BYTES of notes;
- every report file exists for every student of the key, and the CSV has a row each;
- a choice answer that is not exactly one of the letters never passes, and a numeric answer
  holding NaN or a number beyond ±1e300 never passes (no expected value is either).

The grading runs with a soft address-space limit (the sandbox servers, started before it, are
not affected), so a grader bug that would take all of the machine's memory raises MemoryError
in the grader instead, and is recorded as that submission's ``error``.

Shrinking is off (an example costs seconds, a shrink hundreds of them); a failure prints its
edits (``note``) and the batch's folder, and the ``@example`` cases are the known worst ones.
"""

from __future__ import annotations

import contextlib
import csv
import json
import resource
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, note, settings

from formats.serialize import from_jsonable
from grader import budget as grader_budget
from formats.key_shape import graded_parts
from grader.store.gradebook import Gradebook
from grader.run.pipeline import grade_folder
from grader.reports.summary import write_csv, write_gradescope
from grader.reports.feedback_page import write_feedback
from grader.sandbox.client import Limits, Sandbox
from synthetic import load_manifest, submission_path, synthesize
from tests.scenarios.hostile_edits import (PLAIN, STUDENTS, Student, apply_edit, batch, grade_id_of, known_batch,
                                           notebook_file, source_of, write_file)

# The same build as tests/grader/test_synthetic.py: built once per session for both.
SECRET = "synthetic-test secret, 32 bytes!"
WORKERS = 2
TIMEOUT = 2.0                    # wall seconds per sandbox try (Limits.wall_seconds)
CPU_SECONDS = grader_budget.CPU_SECONDS
ALLOWED_SECONDS = 2 * CPU_SECONDS + 2 * TIMEOUT
MEMORY_HEADROOM = 3 * 2**30      # the grader's address space may grow this much while grading
MAX_NOTES_BYTES = 256 * 1024     # a submission's notes, as stored (JSON): a few dozen lines at most


# --- the batch, graded for real -----------------------------------------------------------

@contextlib.contextmanager
def address_space_cap(headroom: int):
    """A soft RLIMIT_AS of (this process's size now + ``headroom``) while grading: a grader bug
    that would take the machine's memory raises MemoryError in the grader instead. The hard
    limit is left alone (a sandbox server started meanwhile sets its own limits)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    size = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                size = int(line.split()[1]) * 1024
    cap = size + headroom if size else resource.RLIM_INFINITY
    if hard != resource.RLIM_INFINITY and cap != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        cap = None
    try:
        yield
    finally:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class Honest(tuple):
    """(key, {student: Student}, manifest), with a short repr: Hypothesis prints its arguments."""

    def __repr__(self) -> str:
        return f"<the correct notebooks of {len(self[1])} students>"


@pytest.fixture(scope="module")
def honest(example_build, tmp_path_factory):
    """(key, {student: Student}, manifest) for the correct notebooks of six students."""
    build_dir, key = example_build(STUDENTS, SECRET)
    out = tmp_path_factory.mktemp("fuzz-honest")
    synthesize(build_dir, key, out, profiles=["correct"])
    assignment_id = key["assignment"]["id"]
    students = {}
    for sid in sorted(key["students"]):
        notebook = json.loads(submission_path(out, "nbgrader", assignment_id, sid).read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            cell["source"] = source_of(cell)
        students[sid] = Student(sid, notebook, key["students"][sid])
    assert len(students) == STUDENTS
    return Honest((key, students, load_manifest(out)))


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(WORKERS, Limits(wall_seconds=TIMEOUT)) as box:
        yield box


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-batches")
    yield root
    shutil.rmtree(root, ignore_errors=True)      # the batches hold notebooks of megabytes


def grade_batch(key: dict, students: dict, plan: list[dict], sandbox: Sandbox, root: Path) -> dict:
    """Write the batch, grade it, write every report; what the assertions need."""
    assignment_id = key["assignment"]["id"]
    folder = root / "submitted"
    control, *others = students
    for sid, wanted in [(control, PLAIN), *zip(others, plan, strict=True)]:
        student = students[sid]
        nb = json.loads(json.dumps(student.notebook))
        for e in wanted["edits"]:
            nb = apply_edit(nb, e, student)
        data = notebook_file(nb, wanted["encoding"])
        where = submission_path(root, "nbgrader", assignment_id, sid)
        name = wanted["name"] or where.name
        write_file(where.with_name(name), data)
        if wanted["copy_as"]:
            write_file(where.with_name(wanted["copy_as"]), data)
    assert folder.is_dir()
    gradebook_path = root / "gradebook.sqlite"
    out = root / "reports"
    with Gradebook(gradebook_path) as gradebook, address_space_cap(MEMORY_HEADROOM):
        run = grade_folder(key, root, gradebook, sandbox, servers=WORKERS, cpu_seconds=CPU_SECONDS,
                           kit_version="")
        code, missing = run.code, run.missing
        rows = {s.student: s for s in gradebook.submissions(assignment_id)}
        results: dict[str, list] = {}
        for r in gradebook.results(assignment_id):
            results.setdefault(r.student, []).append(r)
        write_csv(gradebook, key, out / "grades.csv")
        write_gradescope(gradebook, key, out / "gradescope")
        write_feedback(gradebook, key, out / "feedback")
    return {"code": code, "missing": missing, "rows": rows, "results": results, "out": out,
            "failed": list(run.failed)}


def _never_passes(record: dict, answer) -> bool:
    """An answer no correct value can be: a choice that is not exactly one letter, a number
    that is NaN or beyond ±1e300 (no expected value of the example assignment is either)."""
    if record["kind"] == "choice":
        letters = [chr(ord("A") + i) for i in range(4)]
        value = answer if isinstance(answer, str) else None
        return value is not None and value.strip().upper() not in letters
    if record["kind"] != "numeric" or answer is None or isinstance(answer, str):
        return False
    try:
        value = np.asarray(from_jsonable(answer), dtype=float)
    except Exception:  # noqa: BLE001 — not a number: nothing to say here
        return False
    with np.errstate(invalid="ignore"):
        return bool(value.size and (np.isnan(value).any() or (np.isfinite(value) & (np.abs(value) > 1e300)).any()))


SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=SLOW + [HealthCheck.function_scoped_fixture])
@example(plan=known_batch(
    s0={"name": "²1.ipynb",                                                         # int('²') in the sort
        "edits": [("answer", i, "choice", "{run}") for i in range(4)]},             # letters as substrings
    s1={"edits": [("answer", 0, "2d", "np.array([[1e308, -1e308, 0, 1]] * 4)")],     # the report's heatmap
        "copy_as": "x\x1b]0;t\x07\u202e.ipynb"},
    s2={"edits": [("answer", 0, "any", "np.zeros((2**31 - 1, 0, 4))")]},            # 2**31 empty lists
    s3={"edits": [("add", 3, "code", "\n" * 100_000 + "_z = 1"), ("many_cells", 30_000, "magic")]},
    s4={"edits": [("answer", 1, "any", "np.ones(30_000_000, dtype=bool)"), ("givens_bomb", 0, 3, 1_000_000)]},
))
@given(plan=batch)
def test_hostile_notebooks_are_all_recorded_in_bounded_time_and_reported(honest, sandbox, scratch, plan):
    key, students, manifest = honest
    note(f"plan: {plan!r}")
    root = Path(tempfile.mkdtemp(prefix="batch-", dir=scratch))
    try:
        got = grade_batch(key, students, plan, sandbox, root)
        rows, results = got["rows"], got["results"]
        assert not got["failed"], got["failed"]
        # every submission recorded, graded or the grader's own error, never missing
        for sid in students:
            assert sid in rows, f"{sid}: no submission row (code {got['code']}, missing {got['missing']})"
            assert rows[sid].status in ("graded", "error"), (sid, rows[sid].status, rows[sid].notes[:3])
        # the honest control, graded in the same batch, loses nothing to its neighbours
        control = next(iter(students))
        assert rows[control].status == "graded", rows[control].notes[:3]
        assert rows[control].score == manifest["students"][control]["score"] > 0
        # every part has a row
        for sid, student in students.items():
            wanted = {(pid, part) for pid, record in student.entry["problems"].items()
                      for part, _ in graded_parts(record)}
            assert {(r.problem, r.part) for r in results.get(sid, [])} == wanted, sid
        # no submission exhausted the grader (a MemoryError under the cap), nor wrote unbounded notes
        for sid in students:
            notes = rows[sid].notes
            assert not any("MemoryError" in n and "internal grader error" in n for n in notes), (sid, notes[:3])
            size = len(json.dumps(list(notes), ensure_ascii=False).encode("utf-8", "surrogatepass"))
            assert size <= MAX_NOTES_BYTES, f"{sid}: {size:,} bytes of notes"
        # bounded grader time per submission
        for sid in students:
            seconds = rows[sid].duration_ms / 1000
            assert seconds <= ALLOWED_SECONDS, (f"{sid}: {seconds:.1f} s recorded, more than "
                                                f"{ALLOWED_SECONDS:g} s (budget {CPU_SECONDS:g} s CPU)")
        # answers that cannot be right never pass
        for sid, student in students.items():
            for r in results.get(sid, []):
                record = student.entry["problems"][r.problem]
                if r.status == "passed":
                    assert not _never_passes(record, r.answer), (sid, r.problem, r.part, r.answer)
        # every report, for every student of the key
        out = got["out"]
        with open(out / "grades.csv", newline="", encoding="utf-8") as f:
            table = list(csv.reader(f))
        assert sorted(row[0] for row in table[1:]) == sorted(key["students"])
        for sid in key["students"]:
            assert (out / "gradescope" / sid / "results.json").is_file(), sid
            json.loads((out / "gradescope" / sid / "results.json").read_text(encoding="utf-8"))
            page = out / "feedback" / f"{sid}.html"
            assert page.is_file() and page.stat().st_size > 0, sid
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- the edits themselves --------------------------------------------------------------------

def test_the_edits_make_what_they_say(honest):
    """The strategies' vocabulary does what the docstring claims (a fuzz test that edits
    nothing would pass forever)."""
    key, students, _ = honest
    student = next(iter(students.values()))
    nb = json.loads(json.dumps(student.notebook))
    apply_edit(nb, ("answer", 0, "choice", "'BC'"), student)
    choice_id, variable, _ = student.choices[0]
    assert [c["source"] for c in nb["cells"] if grade_id_of(c) == choice_id] == [f"{variable} = 'BC'"]
    apply_edit(nb, ("many_cells", 1_000, "magic"), student)
    assert len(nb["cells"]) == len(student.notebook["cells"]) + 1_000
    apply_edit(nb, ("givens_bomb", 0, 3, 1_000_000), student)
    assert sum(900_000 < len(source_of(c)) < 1_000_000 for c in nb["cells"]) == 3
    assert b"\\ud800" in notebook_file({"cells": ["\ud800"]}, "ascii")
    with pytest.raises(UnicodeDecodeError):
        notebook_file({"cells": ["\ud800"]}, "surrogatepass").decode("utf-8")
