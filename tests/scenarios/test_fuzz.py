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
import os
import resource
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, note, settings
from hypothesis import strategies as st

from formats.serialize import from_jsonable
from grader import budget as grader_budget
from formats.key_shape import graded_parts
from grader.store.gradebook import Gradebook
from grader.run.pipeline import grade_folder
from grader.reports.summary import write_csv, write_gradescope
from grader.reports.feedback_page import write_feedback
from grader.sandbox.client import Limits, Sandbox
from synthetic import load_manifest, submission_path, synthesize

# The same build as tests/grader/test_synthetic.py: built once per session for both.
SECRET = "synthetic-test secret, 32 bytes!"
STUDENTS = 6
WORKERS = 2
TIMEOUT = 2.0                    # wall seconds per sandbox try (Limits.wall_seconds)
CPU_SECONDS = grader_budget.CPU_SECONDS
ALLOWED_SECONDS = 2 * CPU_SECONDS + 2 * TIMEOUT
MEMORY_HEADROOM = 3 * 2**30      # the grader's address space may grow this much while grading
MAX_NOTES_BYTES = 256 * 1024     # a submission's notes, as stored (JSON): a few dozen lines at most


# --- the strategies: edits described by numbers and words, applied to any notebook -----------

# Characters a student (or their editor, or an attacker) can put in text: combining marks,
# superscript and other non-ASCII digits, bidi controls, escape sequences (CSI, OSC), other
# control characters, lone surrogates, a BOM, line and paragraph separators, magics' % and !.
HOSTILE_PIECES = [
    "\u0301", "e\u0301", "\u0308" * 8, "²", "³1", "¹²", "٣", "߀", "\u202e", "\u202d", "\u2066",
    "\u200f", "\u200b", "\x1b[31m", "\x1b]0;title\x07", "\x1b]8;;http://x\x1b\\", "\x1b[2J",
    "\x00", "\x07", "\x08", "\x7f", "\x9b", "\r", "\r\n", "\u2028", "\u2029", "\ufeff", "\ud800",
    "\udfff", "\udc80", "\U0001f600", "%", "!", "%%time", "!ls", "\n", " ", "\t", "x", "1", "#",
    "'", '"', "\\", "(", "[", "{", "$", "$$", "*", "_", "<b>", "&amp;",
]
hostile_text = st.one_of(
    st.lists(st.sampled_from(HOSTILE_PIECES), max_size=40).map("".join),
    st.text(max_size=40),
)

# File names: no "/" or NUL, not hidden, at most 255 bytes; "\udcXX" is a byte that is not
# UTF-8 (Python's surrogateescape), so the name on disk is not UTF-8 at all.
FILE_NAMES = ["²1.ipynb", "¹².ipynb", "٣.ipynb", "hw (10).ipynb", "hw (9).ipynb", "e\u0301.ipynb",
              "\u202ebynpi.ipynb", "x\x1b[31m.ipynb", "\x1b]0;t\x07.ipynb", "a\tb\rc.ipynb",
              "\udcff\udcfe.ipynb", "\U0001f600.ipynb", " .ipynb", "-=1+1.ipynb", "99999999999999999999.ipynb"]
_name_chars = st.sampled_from(["²", "³", "1", "0", "9", "\u0301", "\u202e", "\x1b", "a", " ", "\udcff",
                               "\u200f", "٣", "(", ")", "=", "\x7f"])
file_name = st.one_of(
    st.sampled_from(FILE_NAMES),
    st.lists(_name_chars, min_size=1, max_size=12).map(lambda cs: "".join(cs) + ".ipynb"),
)

ODD_JSON = [None, True, 0, -1, 1e308, 10**30, "", "x", [], [None], {}, {"a": [1, {"b": None}]},
            "\ud800", [[[[[[[[[[]]]]]]]]]]]
ODD_TYPES = ["markdown", "raw", "code", "heading", "", "Code", 7, None, ["code"], {"type": "code"}]
ODD_METADATA = ODD_JSON + [{"nbgrader": None}, {"nbgrader": []}, {"nbgrader": "x"},
                           {"nbgrader": {"grade_id": 7}}, {"nbgrader": {"grade_id": ""}},
                           {"nbgrader": {"grade_id": ["setup"]}}, {"nbgrader": {"grade_id": "setup"}},
                           {"nbgrader": {"grade_id": "nonexistent--givens"}}]
ODD_SOURCES = [None, 12, 1e308, True, ["a = 1\n", 2], [], {"source": "x"}, [["x"]], ["\ud800"]]

# Answers: Python expressions the sandbox child evaluates (``np`` is the setup's NumPy).
EDGE_SCALARS = ["1e308", "-1e308", "1.7976931348623157e308", "5e-324", "-5e-324",
                "2.2250738585072014e-308", "float('nan')", "float('inf')", "-float('inf')", "-0.0",
                "0.0", "10**400", "-(10**400)", "2**63", "-2**63 - 1", "2**64", "True", "None"]
TEXT_ANSWERS = ["{run}", "{run}", "''", "' '", "'BC'", "'ABCD'", "'AB'", "'b '", "' D\\t'", "'Z'", "'\\u202eA'",
                "'A\\u0301'", "'\\x1b[31mB'", "'A' * 100000", "'\\ud800'", "['A']"]
SHAPES = ["()", "(0,)", "(1,)", "(4, 4)", "(5, 5)", "(1, 1, 1, 1, 1, 1, 1, 1)",
          "(1, 1, 1, 1, 1, 1, 1, 1, 1)", "(2**31 - 1, 0, 4)", "(0, 2**31 - 1)", "(65536, 0, 0)",
          "(4000, 0)", "(100000,)"]
ARRAY_FORMS = [
    "np.full({shape}, {x})",
    "np.full({expected}, {x})",
    "np.array([[1e308, -1e308, 0, 1]] * 4)",
    "np.array([[1e308, -1e308], [5e-324, -0.0]])",
    "np.array([[float('nan'), float('inf')], [-float('inf'), 1e308]])",
    "np.zeros({shape})",
    "np.ones({n}, dtype=bool)",
    "np.ones(({n},), dtype=np.float16)",
    "[{x}] * {k}",
    "{{'a': {x}, 'b': [{x}, [{x}]]}}",
    "[" * 30 + "{x}" + "]" * 30,
    "({x},) * 3",
    "np.array([{x}, {x}], dtype=object)",
    "np.array([1+2j])",
    "lambda: {x}",
]
answer_expr = st.one_of(
    st.sampled_from(EDGE_SCALARS),
    st.sampled_from(TEXT_ANSWERS),
    st.builds(lambda form, x, shape, n, k: form.format(x=x, shape=shape, n=n, k=k, expected="{expected}"),
              st.sampled_from(ARRAY_FORMS), st.sampled_from(EDGE_SCALARS[:10]), st.sampled_from(SHAPES),
              st.sampled_from([0, 1, 3_000_000, 30_000_000]), st.sampled_from([0, 1, 1000, 50_000])),
)

SIZES = [1, 100, 10_000, 100_000]
LONG_KINDS = ["newlines", "long_line", "code_lines", "magic_lines", "unicode", "blank_indents"]

edit = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("duplicate"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("move"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("retype"), st.integers(0, 10**6), st.sampled_from(ODD_TYPES)),
    st.tuples(st.just("add"), st.integers(0, 10**6), st.sampled_from(["code", "markdown", "raw"]), hostile_text),
    st.tuples(st.just("metadata"), st.integers(0, 10**6), st.sampled_from(ODD_METADATA)),
    st.tuples(st.just("grade_id"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("source"), st.integers(0, 10**6), st.sampled_from(ODD_SOURCES)),
    st.tuples(st.just("text"), st.integers(0, 10**6), hostile_text),
    st.tuples(st.just("cell"), st.integers(0, 10**6), st.sampled_from(ODD_JSON)),
    st.tuples(st.just("field"), st.sampled_from(["nbformat", "nbformat_minor", "metadata", "attnkit",
                                                 "cells", "student", "problems"]),
              st.sampled_from(ODD_JSON + [3, "4", 4.0, 5])),
    st.tuples(st.just("many_cells"), st.sampled_from([1_000, 5_000, 30_000]),
              st.sampled_from(["code", "magic", "markdown", "empty", "answer_copy"])),
    st.tuples(st.just("long"), st.integers(0, 10**6), st.sampled_from(LONG_KINDS), st.sampled_from(SIZES)),
    st.tuples(st.just("answer"), st.integers(0, 10**6), st.sampled_from(["any", "2d", "choice"]), answer_expr),
    st.tuples(st.just("givens"), st.integers(0, 10**6), st.integers(0, 10**6),
              st.sampled_from(EDGE_SCALARS + ["np.full((4, 4), 1e308)", "np.zeros((2**31 - 1, 0))",
                                              "[" * 40 + "1" + "]" * 40, "'\\u202e'"])),
    st.tuples(st.just("givens_bomb"), st.integers(0, 10**6), st.sampled_from([1, 3]),
              st.sampled_from([10_000, 1_000_000])),
)
encoding = st.sampled_from(["plain"] * 6 + ["ascii", "bom", "surrogatepass", "truncated", "trailing",
                                             "utf16", "nul", "document"])
student_edits = st.fixed_dictionaries({
    "edits": st.lists(edit, max_size=4),
    "name": st.one_of(st.none(), st.none(), file_name),
    "copy_as": st.one_of(st.none(), st.none(), st.none(), file_name),
    "encoding": encoding,
})
batch = st.lists(student_edits, min_size=STUDENTS - 1, max_size=STUDENTS - 1)   # + one honest control

PLAIN = {"edits": [], "name": None, "copy_as": None, "encoding": "plain"}


def _known(**by_index) -> list[dict]:
    """A batch that is honest but for the given students' edits (the @example cases)."""
    return [{**PLAIN, **by_index.get(f"s{i}", {})} for i in range(STUDENTS - 1)]


# --- applying the edits ------------------------------------------------------------------

def _src(cell) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _gid(cell) -> str | None:
    try:
        gid = cell["metadata"]["nbgrader"]["grade_id"]
    except (KeyError, TypeError):
        return None
    return gid if isinstance(gid, str) else None


class Student:
    """One student's honest notebook and what an edit needs to know about it."""

    def __init__(self, sid: str, notebook: dict, entry: dict):
        self.sid, self.notebook, self.entry = sid, notebook, entry
        self.answers, self.answers_2d, self.choices, self.givens = [], [], [], []
        for pid, record in entry["problems"].items():
            for part, variable in record.get("answer_names", {}).items():
                expected = from_jsonable(record["answers"][part])
                item = (f"{pid}-{part}", variable, expected)
                self.answers.append(item)
                if record["kind"] == "choice":
                    self.choices.append(item)
                elif np.ndim(expected) == 2:
                    self.answers_2d.append(item)
            if record.get("givens"):
                self.givens.append((f"{pid}--givens", sorted(record["givens"])))


def _pick(items: list, i: int):
    return items[i % len(items)] if items else None


def _cells(nb) -> list | None:
    cells = nb.get("cells") if isinstance(nb, dict) else None
    return cells if isinstance(cells, list) else None


def _set_answer(nb: dict, grade_id: str, code: str) -> None:
    """Every cell carrying ``grade_id`` now holds ``code`` (so a duplicate keeps no honest copy)."""
    for cell in _cells(nb) or []:
        if isinstance(cell, dict) and _gid(cell) == grade_id:
            cell["source"] = code


def _long_text(kind: str, size: int) -> str:
    if kind == "newlines":
        return "\n" * size
    if kind == "long_line":
        return "x = " + "1" * size + "\n"
    if kind == "code_lines":
        return "_z = 1\n" * max(1, size // 7)
    if kind == "magic_lines":
        return "%matplotlib inline\n!ls\n" * max(1, size // 22)
    if kind == "blank_indents":
        return " \t \n" * max(1, size // 4)
    return "e\u0301\u202e²\ud800\x1b[0m" * max(1, size // 8)


def _assignments_text(head: str, length: int, prefix: str) -> str:
    """``head`` and then ``name = n`` lines, ``length`` characters in all (or just ``head``)."""
    lines, total, n = [head], len(head), 0
    while True:
        line = f"{prefix}{n} = {n}\n"
        if total + len(line) > length:
            return "".join(lines)
        lines.append(line)
        total += len(line)
        n += 1


def apply_edit(nb, edit: tuple, student: Student):
    """``nb`` after one edit (in place where it can be; a replaced document is returned)."""
    kind, *args = edit
    cells = _cells(nb)
    if kind == "field":
        field_name, value = args
        if not isinstance(nb, dict):
            return nb
        metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else None
        if field_name in ("nbformat", "nbformat_minor", "metadata", "cells"):
            nb[field_name] = value
        elif field_name == "attnkit" and metadata is not None:
            metadata["attnkit"] = value
        elif metadata is not None and isinstance(metadata.get("attnkit"), dict):
            metadata["attnkit"][field_name] = value
        return nb
    if cells is None:
        return nb
    if kind == "many_cells":
        count, what = args
        honest = next((c for c in cells if isinstance(c, dict) and _gid(c) == student.answers[0][0]), None)
        for n in range(count):
            if what == "answer_copy" and honest is not None:
                cells.append(json.loads(json.dumps(honest)))
                continue
            source = {"code": f"_c{n} = {n}", "magic": f"%time _c = {n}", "markdown": f"note {n}",
                      "empty": ""}.get(what, "")
            cell_type = "markdown" if what == "markdown" else "code"
            cells.append({"cell_type": cell_type, "metadata": {}, "source": source,
                          **({"outputs": [], "execution_count": None} if cell_type == "code" else {})})
        return nb
    if kind == "answer":
        index, where, expr = args
        pool = {"any": student.answers, "2d": student.answers_2d or student.answers,
                "choice": student.choices or student.answers}[where]
        grade_id, variable, expected = _pick(pool, index)
        expr = expr.replace("{expected}", repr(tuple(np.shape(expected))))
        if "{run}" in expr:      # the right letter and the ones after it: right only as a substring
            letter = int(expected) if np.ndim(expected) == 0 and np.asarray(expected).dtype.kind in "iu" else 0
            expr = expr.replace("{run}", repr("ABCD"[letter:] if letter < 3 else ""))
        _set_answer(nb, grade_id, f"{variable} = {expr}")
        return nb
    if kind in ("givens", "givens_bomb"):
        target = _pick(student.givens, args[0])
        if target is None:
            return nb
        grade_id, names = target
        where = [i for i, c in enumerate(cells) if isinstance(c, dict) and _gid(c) == grade_id]
        if not where:
            return nb
        if kind == "givens":
            name = _pick(names, args[1])
            cells[where[0]]["source"] = _src(cells[where[0]]) + f"\n{name} = {args[2]}\n"
        else:                              # copies of the givens cell, each made huge by an edit
            copies, size = args[1], args[2]
            original = cells[where[0]]
            for k in range(copies):      # just under the 1,000,000 characters intake still parses
                copy = json.loads(json.dumps(original))
                copy["source"] = _assignments_text(_src(original) + "\n", size - 1_000, f"g{k}_")
                cells.insert(where[0] + 1, copy)
        return nb
    if not cells:
        return nb
    i = args[0] % len(cells)
    if kind == "delete":
        del cells[i]
    elif kind == "duplicate":
        cells.insert(args[1] % (len(cells) + 1), json.loads(json.dumps(cells[i])))
    elif kind == "move":
        cell = cells.pop(i)
        cells.insert(args[1] % (len(cells) + 1), cell)
    elif kind == "retype" and isinstance(cells[i], dict):
        cells[i]["cell_type"] = args[1]
    elif kind == "add":
        cell_type, text = args[1], args[2]
        cells.insert(i, {"cell_type": cell_type, "metadata": {}, "source": text,
                         **({"outputs": [], "execution_count": None} if cell_type == "code" else {})})
    elif kind == "metadata" and isinstance(cells[i], dict):
        cells[i]["metadata"] = json.loads(json.dumps(args[1]))
    elif kind == "grade_id" and isinstance(cells[i], dict):
        other = _gid(cells[args[1] % len(cells)]) if isinstance(cells[args[1] % len(cells)], dict) else None
        if isinstance(cells[i].get("metadata"), dict):
            cells[i]["metadata"]["nbgrader"] = {"grade_id": other, "locked": False, "solution": True}
    elif kind == "source" and isinstance(cells[i], dict):
        cells[i]["source"] = json.loads(json.dumps(args[1]))
    elif kind == "text" and isinstance(cells[i], dict):
        cells[i]["source"] = _src(cells[i]) + args[1]
    elif kind == "cell":
        cells[i] = json.loads(json.dumps(args[1]))
    elif kind == "long" and isinstance(cells[i], dict):
        cells[i]["source"] = _long_text(args[1], args[2]) + _src(cells[i])
    return nb


def notebook_file(nb, how: str) -> bytes:
    """The file's bytes: JSON as Jupyter writes it, or damaged in one of the ways files are."""
    if how == "document":
        nb = [nb]
    if how == "ascii":           # every non-ASCII character escaped: lone surrogates stay valid JSON
        return json.dumps(nb, ensure_ascii=True, indent=1).encode("ascii")
    text = json.dumps(nb, ensure_ascii=False, indent=1)
    if how == "surrogatepass":   # lone surrogates written raw: the bytes are not UTF-8
        return text.encode("utf-8", "surrogatepass")
    if how == "utf16":
        return text.encode("utf-16", "surrogatepass")
    data = json.dumps(nb, ensure_ascii=True, indent=1).encode("ascii") if "\\ud" in text or any(
        0xD800 <= ord(c) <= 0xDFFF for c in text) else text.encode("utf-8")
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "truncated":
        return data[: len(data) * 2 // 3]
    if how == "trailing":
        return data + b"\n{}garbage\x00"
    if how == "nul":
        return data.replace(b'"cells"', b'"ce\\u0000lls"', 1)
    return data


def _write(path: Path, data: bytes) -> None:
    """Write to ``path`` whatever its name (a name that is not UTF-8 is made of its bytes)."""
    raw = os.fsencode(path)
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    with open(raw, "wb") as f:
        f.write(data)


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
            cell["source"] = _src(cell)
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
        _write(where.with_name(name), data)
        if wanted["copy_as"]:
            _write(where.with_name(wanted["copy_as"]), data)
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
@example(plan=_known(
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
    assert [c["source"] for c in nb["cells"] if _gid(c) == choice_id] == [f"{variable} = 'BC'"]
    apply_edit(nb, ("many_cells", 1_000, "magic"), student)
    assert len(nb["cells"]) == len(student.notebook["cells"]) + 1_000
    apply_edit(nb, ("givens_bomb", 0, 3, 1_000_000), student)
    assert sum(900_000 < len(_src(c)) < 1_000_000 for c in nb["cells"]) == 3
    assert b"\\ud800" in notebook_file({"cells": ["\ud800"]}, "ascii")
    with pytest.raises(UnicodeDecodeError):
        notebook_file({"cells": ["\ud800"]}, "surrogatepass").decode("utf-8")
