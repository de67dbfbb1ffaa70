"""The hostile profiles: notebooks that attack the grader, each otherwise correct so that
what the attack must cost is exactly known (``PROFILES`` in ``synthetic.profiles`` says what).

The payloads are text written into answer cells; nothing here runs them. They are for the
sandbox: do not open these notebooks in Jupyter (the forged frames would go to the kernel's
own sockets; the loop never ends)."""

from __future__ import annotations

import ast
import random

import numpy as np

from exercises.render.notebook import notebook_bytes
from formats import key_shape as shape
from formats.cells import GIVENS, grade_id
from formats.literals import assignment, literal
from formats.serialize import decode_names, same_value
from synthetic.notebooks import Answer, Draft, answer_cells, fill_correct
from synthetic.oracle import LOST, close
from synthetic.profiles import far_off


def _middle(answers: list, rng: random.Random, avoid=()):
    """An answer cell from the middle third of ``answers`` (not one in ``avoid``)."""
    pool = [a for a in answers if a.cell_id not in avoid]
    if not pool:
        return None
    n = len(pool)
    lo, hi = n // 3, max(n // 3, (2 * n) // 3 - 1)
    return pool[rng.randint(lo, min(hi, n - 1))]


_PATCHES = '''\
# Make every comparison and every assertion succeed (a grader comparing in this process
# would be fooled), and hand in wrong numbers.
import builtins
import sys

import numpy as np


class _Equal(float):
    """A number equal to everything, whose distance to anything is 0."""
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __abs__(self):
        return 0.0

    def __sub__(self, other):
        return _Equal(0.0)

    __rsub__ = __sub__
    __hash__ = float.__hash__


try:
    np.allclose = lambda *args, **kwargs: True
    np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
    np.array_equal = lambda *args, **kwargs: True
    np.testing.assert_allclose = lambda *args, **kwargs: None
    np.testing.assert_array_equal = lambda *args, **kwargs: None
    np.testing.assert_array_almost_equal = lambda *args, **kwargs: None
    builtins.abs = lambda x: 0.0              # |actual − expected| is 0 from now on
    sys.excepthook = lambda *args: None
except Exception:
    pass
abs = lambda x: 0.0
isinstance = lambda obj, kind: True
AssertionError = type("AssertionError", (Warning,), {})
try:                                          # later cells compiled without their asserts
    import ctypes
    ctypes.c_int.in_dll(ctypes.pythonapi, "Py_OptimizeFlag").value = 2
except Exception:
    pass
'''


def _allclose_patch(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    by_problem: dict[str, list[Answer]] = {}
    for a in draft.numeric():
        by_problem.setdefault(a.problem, []).append(a)
    if not by_problem:
        return
    several = [p for p, cells in by_problem.items() if len(cells) > 1] or list(by_problem)
    cells = by_problem[rng.choice(several)]
    equal_used = False
    for n, a in enumerate(cells):
        wrong = far_off(draft.expected_value(a))
        draft.write(a, wrong)
        if not equal_used and isinstance(wrong, float):
            draft.cell(a)["source"] = f"{a.variable} = _Equal({literal(wrong)})"
            equal_used = True
        if n == 0:
            draft.cell(a)["source"] = _PATCHES + "\n" + draft.cell(a)["source"]
    draft.notes.append(f"{cells[0].cell_id}: np.allclose, np.isclose, assert helpers and builtins "
                       f"patched; {', '.join(a.cell_id for a in cells)} wrong")


def _exit_midway(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, "import os\nos._exit(0)   # leave in the middle of the notebook\n"
                   + draft.cell(a)["source"], "os._exit(0) at the top")


def _infinite_loop(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, "while True:   # never ends: only the grader's timeout stops it\n    pass\n"
                   + draft.cell(a)["source"], "while True: pass at the top")


_MEMORY_BOMB = '''\
# Hoard memory until something stops it: 256 MiB at a time, every page written. Capped at
# 3 GiB so that, run without a sandbox, it cannot take the machine down.
def _hoard(chunks=12, size=256 * 2**20):
    hoard = []
    for _ in range(chunks):
        hoard.append(np.ones(size // 8))
    raise MemoryError(f"the memory bomb held {chunks * size >> 20} MiB and nothing stopped it")


_hoard()'''


def _memory_bomb(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, _MEMORY_BOMB, "replaced by a memory bomb")


_FORK_BOMB = '''\
# A fork bomb, bounded so that run without a sandbox it cannot hurt the machine: every
# process forks at most 5 times (2^5 = 32 processes), and every child exits after 0.2 s.
import os
import time

_root = os.getpid()
try:
    for _ in range(5):
        os.fork()
finally:
    if os.getpid() != _root:
        time.sleep(0.2)
        os._exit(0)
    while True:                     # the first process reaps its children
        try:
            os.wait()
        except ChildProcessError:
            break'''


def _fork_bomb(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if a:
        draft.lose(a, _FORK_BOMB, "replaced by a bounded fork bomb")


_READ_KEY = '''\
# Look for the answer key and the grader's secrets, then hand in whatever was found.
import json
import os

_found = []
_key = None


def _from_shards(path, index):
    from formats.key_shards import References    # the kit's own decoder, where it imports
    references = References(index["references"])
    folder = path[:-len(".json")] + ".shards/"
    for shard in index["shards"]:
        with open(folder + shard["file"], "rb") as f:
            header = json.loads(f.readline())
            for sid, size, *_ in header["students"]:
                data = f.read(size)
                if sid == {student!r}:
                    return {{"students": {{sid: references.unpack(data)}}}}
    return None


for _path in {paths}:
    try:
        with open(_path, "rb") as _f:
            _data = _f.read()
        _found.append(f"{{_path}}: {{len(_data)}} bytes")
        _key = json.loads(_data)
        if "shards" in _key:         # a sharded key: this student's entry from its shard
            _key = _from_shards(_path, _key)
        break
    except Exception as _err:
        _found.append(f"{{_path}}: {{type(_err).__name__}}")
_pid = os.getppid()
for _ in range(6):                   # the parent, the grandparent, … up to init
    for _name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{{_pid}}/{{_name}}", "rb") as _f:
                _text = _f.read(4096).replace(b"\\0", b" ").decode("utf-8", "replace")
            _found.append(f"/proc/{{_pid}}/{{_name}}: {{_text}}")
        except Exception as _err:
            _found.append(f"/proc/{{_pid}}/{{_name}}: {{type(_err).__name__}}")
    try:                             # a little of the process's memory
        with open(f"/proc/{{_pid}}/maps") as _f:
            _start = int(_f.readline().split("-")[0], 16)
        with open(f"/proc/{{_pid}}/mem", "rb") as _f:
            _f.seek(_start)
            _found.append(f"/proc/{{_pid}}/mem: {{_f.read(64)!r}}")
    except Exception as _err:
        _found.append(f"/proc/{{_pid}}/mem: {{type(_err).__name__}}")
    try:
        with open(f"/proc/{{_pid}}/status") as _f:
            _pid = int(next(l for l in _f if l.startswith("PPid:")).split()[1])
    except Exception:
        break
    if _pid <= 1:
        break
try:
    _found.append("own environment: " + " ".join(f"{{k}}={{v}}" for k, v in os.environ.items()))
except Exception:
    pass


def _decoded(value):
    if isinstance(value, dict) and "array" in value:
        return np.array(value["array"], dtype=value["dtype"]).reshape(value["shape"])
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


try:
    {variable} = _decoded(_key["students"][{student!r}]["problems"][{problem!r}]["answers"][{part!r}])
except Exception:
    {variable} = "\\n".join(_found)[:4000]'''


def _read_key(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    a = _middle(draft.numeric(), rng)
    if not a:
        return
    paths = ["../" * depth + "instructor/answer_key.json" for depth in range(6)]
    paths.append(str(context.key_path))
    source = _READ_KEY.format(paths=repr(paths), variable=a.variable, student=draft.student,
                              problem=a.problem, part=a.part)
    draft.cell(a)["source"] = source
    draft.values[(a.problem, a.part)] = "the text of whatever it could read"
    draft.notes.append(f"{a.cell_id}: reads the key and /proc/<ancestors>/environ|cmdline|mem, "
                       "assigns the text found (right only if the key was readable)")


def _zero_like(value):
    if isinstance(value, np.ndarray):
        return np.zeros_like(value)
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (int, np.integer)):
        return 0
    if isinstance(value, (float, np.floating)):
        return 0.0
    if isinstance(value, str):
        return "Z"
    if isinstance(value, (list, tuple)):
        return [_zero_like(v) for v in value]
    return None


_FAKE_FRAMES = '''\
# Forge result frames (4-byte big-endian length, then the body) on every descriptor that
# might lead to the grader: values and outputs it never computed, then "done" and "exit",
# then a length of 2 GB.
import json
import os
import struct


def _frame(event):
    try:
        from grader.sandbox.frames import encode
        body = encode(event)
    except Exception:
        body = json.dumps(event, default=lambda v: v.tolist()).encode()
    return struct.pack(">I", len(body)) + body


_forged = {events}
_data = b"".join(_frame(e) for e in _forged) + struct.pack(">I", 0x7FFFFFF0)
for _fd in range(1, 21):
    try:
        os.write(_fd, _data)
    except OSError:
        pass'''


def _fake_frames(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    events = []
    for pid, record in shape.problem_records(draft.entry):
        kind = shape.kind(record)
        if kind in ("numeric", "choice"):
            answers, names = decode_names(record["answers"]), shape.answer_names(record)
            values = {names[part]: (_zero_like(v) if kind == "numeric" else "Z")
                      for part, v in answers.items()}
            events.append({"event": "values", "problem": pid, "values": values, "missing": []})
        elif kind == shape.IMPLEMENT:
            events += [{"event": "output", "problem": pid, "case": i, "ok": True, "value": 0.0}
                       for i in range(len(record["tests"]))]
    events += [{"event": "done"}, {"event": "exit", "reason": "done"}]
    a = _middle(draft.numeric(), rng) or (draft.answers[len(draft.answers) // 2] if draft.answers else None)
    cell = {"cell_type": "code", "execution_count": None, "id": "forged-frames", "metadata": {},
            "outputs": [], "source": _FAKE_FRAMES.format(events=literal(events, indent=10))}
    at = a.index + 1 if a else len(draft.notebook["cells"])
    draft.notebook["cells"].insert(at, cell)
    draft.answers = answer_cells(draft.notebook, draft.entry)
    draft.notes.append(f"forged-frames (a cell of its own after {a.cell_id if a else 'the last cell'}): "
                       "forged frames to fds 1..20")


def _edited_givens(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    problems = [pid for pid, r in shape.problem_records(draft.entry) if shape.kind(r) == "numeric"]
    rng.shuffle(problems)
    for pid in problems:
        record = shape.problem_record(draft.entry, pid)
        givens = decode_names(shape.givens_of(record))
        edited = {name: easier(value) for name, value in givens.items()}
        edited = {name: value for name, value in edited.items() if not same_value(value, givens[name])}
        givens_id = grade_id(pid, role=GIVENS)
        cell = next((c for c in draft.notebook["cells"] if c["id"] == givens_id), None)
        if not edited or cell is None:
            continue
        answers = context.recompute(record, edited)
        if answers is None:
            continue
        cells = [a for a in draft.numeric() if a.problem == pid and a.part in answers]
        expected = decode_names(record["answers"])
        changed = [a for a in cells if not close(answers[a.part], expected[a.part],
                                                 *_tolerance(record, a.part))]
        if not changed:
            continue
        cell["source"] = _replace_assignments(cell["source"], edited)
        draft.follow_through = False
        for a in cells:
            draft.write(a, answers[a.part])
        draft.notes.append(f"{givens_id}: {', '.join(sorted(edited))} made easier; the answers of "
                           f"{pid} computed for those")
        return
    draft.notes.append("no problem's givens could be edited: the notebook is correct")


def _tolerance(record: dict, part: str) -> tuple[float, float]:
    g = next(g for g in shape.gradings(record) if shape.part_id(g) == part)
    return float(g["rtol"]), float(g["atol"])


def easier(value):
    """Easier numbers: decimals rounded away; whole numbers without their minus signs."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.isfinite(value).all():
        rounded = np.round(value) + 0.0
        return rounded if not np.array_equal(rounded, value) else np.abs(value) + 0.0
    return value


def _replace_assignments(source: str, values: dict) -> str:
    """The givens cell with the top-level assignments of ``values`` written anew."""
    lines = source.split("\n")
    spans = []
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in values):
            spans.append((node.lineno - 1, node.end_lineno, node.targets[0].id))
    for start, end, name in sorted(spans, reverse=True):
        lines[start:end] = assignment(name, values[name]).split("\n")
    return "\n".join(lines)


def _wrong_student(draft: Draft, rng: random.Random, context) -> None:
    others = [s for s in shape.key_students(context.key) if s != draft.student]
    if not others:
        fill_correct(draft)
        draft.notes.append("no other student to take a notebook from: the notebook is correct")
        return
    later = [s for s in others if s > draft.student]
    owner = (later or others)[0]
    theirs = context.build.draft(owner)
    fill_correct(theirs)
    draft.notebook = theirs.notebook
    draft.notebook_of = owner
    draft.issues.append("wrong_student")
    draft.follow_through = False
    # As if graded against this student's key: their own answers, other numbers.
    for (pid, part), value in theirs.values.items():
        draft.values[(pid, part)] = value
    draft.modes.update(theirs.modes)
    draft.notes.append(f"the correct notebook issued to {owner}")


def _broken_json(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    data = notebook_bytes(draft.notebook)
    draft.raw = data[:len(data) * 3 // 5]
    draft.issues.append("unreadable")
    for a in draft.answers:
        draft.values[(a.problem, a.part)] = LOST
        if a.kind == shape.IMPLEMENT:
            draft.modes[a.problem] = "missing"
    draft.notes.append(f"truncated to {len(draft.raw)} of {len(data)} bytes")


def _stripped_metadata(draft: Draft, rng: random.Random, context) -> None:
    fill_correct(draft)
    for cell in draft.notebook["cells"]:
        cell["metadata"] = {}
    draft.issues.append("no_cell_metadata")
    draft.notes.append("every cell's metadata removed; cell ids kept")


HOSTILE_FILLERS = {
    "allclose_patch": _allclose_patch, "exit_midway": _exit_midway, "infinite_loop": _infinite_loop,
    "memory_bomb": _memory_bomb, "fork_bomb": _fork_bomb, "read_key": _read_key,
    "fake_frames": _fake_frames, "edited_givens": _edited_givens, "wrong_student": _wrong_student,
    "broken_json": _broken_json, "stripped_metadata": _stripped_metadata,
}
