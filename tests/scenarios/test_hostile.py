"""The hostile corpus: submissions written to cheat, crash, leak or sabotage, each with the
outcome a correct grader must give it, graded in ONE batch through the real pipeline
(grader.run.pipeline.grade_folder: intake → GradingRun → plugin.run_pytest, with the real Sandbox and
a real SQLite gradebook).

Every hostile notebook starts from its student's own correct synthetic notebook
(synthetic, profile ``correct``) and changes a few cells, so what the attack must cost
is exactly known: the synthetic manifest of the correct notebooks is the honest baseline
(computed from the key by synthetic, never by the grader's code). For every case:

- the grader survives: the batch ends, every student has a submission row (status
  ``graded``: never the grader's own ``error``) and a result row for every part;
- every part that did not pass has a non-empty reason;
- no part scores more than the honest answer scores, nor does the whole;
- each part has exactly the status the case expects (the sabotaged part missing or failed,
  every other part as honest), and the total is exactly what those statuses are worth.

Two correct control students are graded in the same batch (first and last in order) and
must come out exactly as the manifest says: hostile neighbours cost nobody else anything.

What a case does that the sandbox should stop (read a file, write one, connect, signal) is
written back through the answer channel: the cell assigns a report of each attempt to an
answer variable, so the gradebook row shows what happened inside (and the part fails, since
text is not a number). A hole found here is a case with ``hole=`` (its test is then an
``xfail(strict=True)`` asserting the correct behaviour) until it is fixed; the two found
while writing this file are fixed (the deeply nested cells, here and at the end).
"""

from __future__ import annotations

import copy
import json
import math
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import build
from formats.cells import LETTERS
from formats.compare import compare
from formats.literals import assignment
from exercises.render.notebook import notebook_bytes
from exercises.course.roster import load_roster
from formats.serialize import decode_names, from_jsonable
from grader.store.gradebook import Gradebook
from grader.store.rows import RESULT_STATUSES
from grader.run.pipeline import grade_folder
from grader.sandbox.client import Limits, Sandbox
from synthetic import far_off, load_manifest, submission_path, synthesize

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "hostile corpus: a course secret that must reach no gradebook byte, 7f3c9a"
WORKERS = 2
TIMEOUT = 2.0          # wall seconds per try of a submission: each looping case pays it once
PASSED, FAILED, MISSING = "passed", "failed", "missing"

STD = ("scaling", "std")             # the part most cases sabotage: a scalar, mid-notebook
VARIANCE = ("scaling", "variance")   # an integer answer
WEIGHTS = ("dog_ran_fast", "weights")
Z_THE = ("dog_ran_fast", "z_the")
EXP_SCORES = ("masks", "exp_scores")
COUNTS = ("bert_mlm", "counts")      # a choice
STATIC = ("motivation", "static")    # a free response


# --- editing notebooks ----------------------------------------------------------------------

def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def grade_id(cell: dict) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def index_of(nb: dict, gid: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if grade_id(c) == gid)


def cell(nb: dict, gid: str) -> dict:
    return nb["cells"][index_of(nb, gid)]


def answer_id(part: tuple[str, str]) -> str:
    return f"{part[0]}-{part[1]}"


def set_source(nb: dict, gid: str, code: str) -> None:
    cell(nb, gid)["source"] = code


def prepend(nb: dict, gid: str, code: str) -> None:
    c = cell(nb, gid)
    c["source"] = code.rstrip("\n") + "\n" + _source(c)


def insert_after(nb: dict, gid: str, code: str, cell_type: str = "code") -> None:
    """A cell the student added after the kit cell ``gid``."""
    new = {"cell_type": cell_type, "id": f"added-{uuid.uuid4().hex[:8]}", "metadata": {},
           "source": code}
    if cell_type == "code":
        new.update(execution_count=None, outputs=[])
    nb["cells"].insert(index_of(nb, gid) + 1, new)


# --- the context a case is made in --------------------------------------------------------

@dataclass
class Ctx:
    """What a case may use to write its notebook: the student's correct notebook (a copy to
    edit), their key entry, and the paths an attacker would aim at."""
    student: str
    notebook: dict
    entry: dict
    key: dict
    key_path: Path
    gradebook: Path
    own_path: Path              # where this notebook is handed in
    other: str                  # another student (a control)
    other_path: Path            # their handed-in notebook
    other_notebook: dict        # their correct notebook
    canary: Path                # a file in /tmp nobody should be able to create
    port: int                   # a TCP listener of the trusted side on 127.0.0.1

    def variable(self, part) -> str:
        return self.entry["problems"][part[0]]["answer_names"][part[1]]

    def expected(self, part):
        return from_jsonable(self.entry["problems"][part[0]]["answers"][part[1]])

    def write(self, part, value) -> None:
        """The answer cell of ``part`` assigns ``value``."""
        set_source(self.notebook, answer_id(part), assignment(self.variable(part), value))

    def numeric_parts(self, pid: str) -> list[tuple[str, str]]:
        record = self.entry["problems"][pid]
        assert record["kind"] == "numeric"
        return [(pid, g["id"]) for g in record["grading"]]

    def families(self, pid: str) -> list[tuple[str, str]]:
        record = self.entry["problems"][pid]
        assert record["kind"] == "implement"
        return [(pid, g["family"]) for g in record["grading"]]

    def implement_cell(self) -> str:
        record = self.entry["problems"]["implement"]
        return f"implement-{record['function']}"


@dataclass(frozen=True)
class Expect:
    """A case's exact outcome. ``parts``: (problem, part) → the status it must have; every
    other part must come out as the honest notebook's (passed, or manual for free
    responses). ``every``: every part has this status (a notebook that cannot be read)."""
    parts: dict = field(default_factory=dict)
    every: str | None = None
    says: dict = field(default_factory=dict)      # (problem, part) → text its message holds
    notes: tuple = ()                             # text some note of the submission holds
    check: Callable | None = None                 # check(corpus, student): anything else


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable              # make(ctx) → the notebook (dict) or the file's bytes
    expect: Callable            # expect(ctx) → Expect
    why: str = ""
    hole: str = ""              # a hole this case shows: its test is xfail(strict=True)


# --- the attacks --------------------------------------------------------------------------

def report_cell(variable: str, attempts: str) -> str:
    """Code that runs each attempt (a list of (label, zero-argument function)) and assigns a
    line per attempt to ``variable``: 'label: OK …' or 'label: ErrorType: message'."""
    return f'''\
_report = []
{attempts}
for _label, _attempt in _attempts:
    try:
        _report.append(f"{{_label}}: OK {{_attempt()!r:.300}}")
    except BaseException as _err:
        _report.append(f"{{_label}}: {{type(_err).__name__}}: {{_err}}")
{variable} = "\\n".join(_report)
'''


def answer_of(corpus, student, part) -> str:
    answer = corpus.rows(student)[part].answer
    assert isinstance(answer, str), answer
    return answer


def every_attempt_refused(corpus, student, part, labels) -> None:
    answer = answer_of(corpus, student, part)
    lines = answer.split("\n")
    assert [line.split(":")[0] for line in lines] == list(labels), answer
    assert all(": OK " not in line for line in lines), answer


# 1. NumPy's comparisons patched, wrong answers handed in -----------------------------------

NUMPY_PATCH = '''\
# Every comparison NumPy offers now says "equal"; the answers below are wrong.
np.allclose = lambda *args, **kwargs: True
np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.array_equal = lambda *args, **kwargs: True
np.array_equiv = lambda *args, **kwargs: True
np.abs = np.absolute = lambda x, *args, **kwargs: np.zeros(np.shape(x))
np.max = np.amax = lambda *args, **kwargs: 0.0
try:
    np.testing.assert_allclose = lambda *args, **kwargs: None
    np.testing.assert_array_equal = lambda *args, **kwargs: None
except Exception:            # numpy.testing cannot even be imported in the sandbox
    pass
'''


def make_numpy_patch(ctx: Ctx):
    insert_after(ctx.notebook, "bahdanau--givens", NUMPY_PATCH)
    for part in ctx.numeric_parts("bahdanau"):
        ctx.write(part, far_off(ctx.expected(part)))
    return ctx.notebook


# 2. builtins redefined, wrong answers -------------------------------------------------------

BUILTINS_PATCH = '''\
# Make |a - b| zero, every isinstance true, every float equal to everything.
import builtins


class _Equal(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


builtins.abs = lambda x: 0.0
builtins.isinstance = lambda obj, kind: True
builtins.float = _Equal
builtins.round = lambda x, *args: x
builtins.max = lambda *args, **kwargs: 0.0
builtins.len = lambda obj: 0
builtins.all = lambda iterable: True
'''


def make_builtins_patch(ctx: Ctx):
    insert_after(ctx.notebook, "scaling--givens", BUILTINS_PATCH)
    for part in ctx.numeric_parts("scaling"):
        ctx.write(part, far_off(ctx.expected(part)))
    return ctx.notebook


def sabotage(code: str):
    """A maker that puts ``code`` at the top of the STD answer cell."""
    def make(ctx: Ctx):
        prepend(ctx.notebook, answer_id(STD), code)
        return ctx.notebook
    return make


def std_lost(status: str = MISSING, says: str = "", notes: tuple = ()):
    return lambda ctx: Expect(parts={STD: status}, says={STD: says} if says else {}, notes=notes)


SWALLOW_INTERRUPTS = '''\
import signal
import time
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU):
    try:
        signal.signal(_sig, signal.SIG_IGN)
    except BaseException:
        pass
while True:
    try:
        time.sleep(0.01)
    except BaseException:   # KeyboardInterrupt, SystemExit, anything: keep going
        pass
'''

FORK_BOMB = '''\
import os
while True:
    os.fork()
'''

MEMORY_BOMB = '''\
def _hoard():
    hoard = []
    while True:                       # 256 MiB a step until something stops it
        hoard.append(np.empty(2**25))
        hoard.append(bytearray(2**28))
_hoard()
'''

HUGE_PRINTS = '''\
import os
import sys
_line = "x" * 1_000_000
for _ in range(100):                      # 100 MB to stdout
    print(_line)
for _ in range(20):                       # and 20 MB more each way
    sys.stderr.write(_line)
    os.write(1, _line.encode())
'''


def make_huge_arrays(ctx: Ctx):
    set_source(ctx.notebook, answer_id(STD), f"{ctx.variable(STD)} = np.zeros((20000, 20000))   # 3.2 GB")
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.zeros((2100, 2100))   # 35 MB: over a 32 MB frame")
    return ctx.notebook


def make_broadcast_view(ctx: Ctx):
    # 10^9 entries (8 GB if ever copied) in a view of one number
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.broadcast_to(np.float64(0.25), (31623, 31623))")
    return ctx.notebook


OBJECT_ARRAYS = '''\
class _Liar:
    def __eq__(self, other):
        return True
    def __float__(self):
        return 0.25
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    __hash__ = object.__hash__
'''


def make_object_dtype(ctx: Ctx):
    insert_after(ctx.notebook, "dog_ran_fast--givens", OBJECT_ARRAYS)
    shape = np.shape(ctx.expected(WEIGHTS))
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.full({shape!r}, _Liar(), dtype=object)")
    # the right number, but as an object array
    set_source(ctx.notebook, answer_id(Z_THE),
               f"{ctx.variable(Z_THE)} = np.array({float(ctx.expected(Z_THE))!r}, dtype=object)")
    return ctx.notebook


SUBCLASSES = '''\
class _LyingArray(np.ndarray):
    """Equal to everything, converts to anything, every ufunc gives zero."""
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)
    def __ne__(self, other):
        return np.zeros(np.shape(self), dtype=bool)
    def __array__(self, dtype=None, copy=None):
        return np.full(np.shape(self), 0.25)
    def __float__(self):
        return 0.0
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(np.broadcast(*[np.asarray(i) for i in inputs if hasattr(i, "shape")]).shape)
    def __array_function__(self, func, types, args, kwargs):
        return True
    __hash__ = None


class _LyingFloat(float):
    def __eq__(self, other):
        return True
    def __sub__(self, other):
        return _LyingFloat(0.0)
    __rsub__ = __sub__
    def __abs__(self):
        return 0.0
    __hash__ = float.__hash__


class _LyingInt(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
'''


def make_subclasses(ctx: Ctx):
    insert_after(ctx.notebook, "dog_ran_fast--givens", SUBCLASSES)
    shape = np.shape(ctx.expected(WEIGHTS))
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.zeros({shape!r}).view(_LyingArray)")
    set_source(ctx.notebook, answer_id(Z_THE), f"{ctx.variable(Z_THE)} = _LyingFloat(-1.0)")
    set_source(ctx.notebook, answer_id(STD), f"{ctx.variable(STD)} = np.zeros(()).view(_LyingArray)")
    set_source(ctx.notebook, answer_id(VARIANCE), f"{ctx.variable(VARIANCE)} = _LyingInt(-1)")
    return ctx.notebook


def make_nan_payloads(ctx: Ctx):
    nb = ctx.notebook
    set_source(nb, answer_id(STD), f"{ctx.variable(STD)} = float('nan')")
    set_source(nb, answer_id(VARIANCE), f"{ctx.variable(VARIANCE)} = float('inf')")
    set_source(nb, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.full({np.shape(ctx.expected(WEIGHTS))!r}, np.nan)")
    set_source(nb, answer_id(EXP_SCORES), f"{ctx.variable(EXP_SCORES)} = np.full({np.shape(ctx.expected(EXP_SCORES))!r}, np.inf)")
    set_source(nb, answer_id(COUNTS), f"{ctx.variable(COUNTS)} = float('nan')")
    function = ctx.entry["problems"]["implement"]["function"]
    set_source(nb, ctx.implement_cell(),
               f"def {function}(Q, K, V, mask=None):\n    return np.full(np.shape(Q)[:-1] + np.shape(V)[-1:], np.nan)\n")
    return nb


def expect_nan_payloads(ctx: Ctx) -> Expect:
    lost = dict.fromkeys([STD, VARIANCE, WEIGHTS, EXP_SCORES, COUNTS], FAILED)
    lost.update(dict.fromkeys(ctx.families("implement"), FAILED))
    return Expect(parts=lost, says={STD: "NaN", VARIANCE: "inf", WEIGHTS: "NaN"})


# reading files ------------------------------------------------------------------------------

def make_read(target: str):
    """Replace the STD answer cell by code that reads ``target`` (a Ctx attribute) and, for
    the key, digs this student's own answer out of it; else assigns what it read."""
    def make(ctx: Ctx):
        path = str(getattr(ctx, target))
        code = f'''\
import json
_path = {path!r}
try:
    with open(_path, "rb") as _f:
        _data = _f.read()
    try:
        {ctx.variable(STD)} = float(json.loads(_data)["students"][{ctx.student!r}]["problems"]["scaling"]["answers"]["std"])
    except Exception:
        {ctx.variable(STD)} = "READ " + _data[:5000].decode("utf-8", "replace")
except BaseException as _err:
    {ctx.variable(STD)} = f"{{_path}}: {{type(_err).__name__}}: {{_err}}"
try:
    import os
    {ctx.variable(STD)} += "\\nlisting: " + repr(os.listdir(os.path.dirname(_path)))
except BaseException as _err:
    {ctx.variable(STD)} += f"\\nlisting: {{type(_err).__name__}}"
'''
        set_source(ctx.notebook, answer_id(STD), code)
        return ctx.notebook
    return make


def refused_read(target: str, secret_texts: Callable):
    """The read failed inside (PermissionError), and none of the file's text reached the
    gradebook (``secret_texts(corpus, student)``: strings of the file that must be absent)."""
    def check(corpus, student):
        answer = answer_of(corpus, student, STD)
        assert "PermissionError" in answer and "READ " not in answer, answer
        assert "SQLite format" not in answer and '"cells"' not in answer, answer
        assert "listing: PermissionError" in answer, answer
        everything = corpus.gradebook_bytes()
        for text in secret_texts(corpus, student):
            assert text.encode() not in everything, text[:80]
    return check


def key_texts(corpus, student):
    """The index's signature, and the start of this student's problems as the key holds them."""
    problems = corpus.key["students"][student]["problems"]
    return [json.loads(corpus.key_path.read_text(encoding="utf-8"))["signature"],
            json.dumps(problems, sort_keys=True, separators=(",", ":"))[:200]]


def gradebook_texts(corpus, student):
    return []          # the gradebook's own bytes are in it, of course: the answer is checked


def other_submission_texts(corpus, student):
    other = corpus.controls[0]
    text = corpus.submission_of(other).read_text(encoding="utf-8")
    return [text[:60], '"nbformat_minor"', f"Prepared for **Student {other.upper()}"]


# writing files ------------------------------------------------------------------------------

def make_writes(ctx: Ctx):
    planted = ctx.own_path.parent / "planted.ipynb"
    attempts = f'''\
import os
_attempts = [
    ("plant a notebook", lambda: open({str(planted)!r}, "wb").write(b"{{}}")),
    ("append to own notebook", lambda: open({str(ctx.own_path)!r}, "ab").write(b" ")),
    ("overwrite other notebook", lambda: open({str(ctx.other_path)!r}, "r+b").write(b"{{}}")),
    ("delete other notebook", lambda: os.remove({str(ctx.other_path)!r})),
    ("tmp canary", lambda: open({str(ctx.canary)!r}, "wb").write(b"canary")),
    ("tmp dir", lambda: os.mkdir({str(ctx.canary) + ".d"!r})),
    ("append to gradebook", lambda: open({str(ctx.gradebook)!r}, "ab").write(b"garbage")),
    ("truncate gradebook wal", lambda: open({str(ctx.gradebook) + "-wal"!r}, "wb").close()),
    ("append to key", lambda: open({str(ctx.key_path)!r}, "ab").write(b" ")),
    ("rename key", lambda: os.rename({str(ctx.key_path)!r}, {str(ctx.key_path) + ".gone"!r})),
]'''
    set_source(ctx.notebook, answer_id(STD), report_cell(ctx.variable(STD), attempts))
    return ctx.notebook


WRITE_LABELS = ("plant a notebook", "append to own notebook", "overwrite other notebook",
                "delete other notebook", "tmp canary", "tmp dir", "append to gradebook",
                "truncate gradebook wal", "append to key", "rename key")


def nothing_written(corpus, student):
    every_attempt_refused(corpus, student, STD, WRITE_LABELS)
    assert "PermissionError" in answer_of(corpus, student, STD)
    assert not (corpus.submission_of(student).parent / "planted.ipynb").exists()
    assert not corpus.canary.exists() and not Path(str(corpus.canary) + ".d").exists()
    assert corpus.key_path.read_bytes() == corpus.before[corpus.key_path]
    for path, data in corpus.before.items():          # every handed-in notebook, untouched
        assert path.read_bytes() == data, path


# network, signals, the kit's own code ----------------------------------------------------------

def make_sockets(ctx: Ctx):
    attempts = f'''\
import ctypes
_libc = ctypes.CDLL(None, use_errno=True)


def _socket_module(host, port):
    import socket
    s = socket.create_connection((host, port), timeout=0.5)
    return s.getpeername()


def _raw_connect(host, port):
    # socket(2) and connect(2) straight from libc: no Python module needed
    import struct
    fd = _libc.socket(2, 1, 0)                            # AF_INET, SOCK_STREAM
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket() failed: errno %d" % ctypes.get_errno())
    address = struct.pack("!HH4s8x", 2, port, bytes(int(x) for x in host.split(".")))
    if _libc.connect(fd, address, len(address)) != 0:
        raise OSError(ctypes.get_errno(), "connect() failed: errno %d" % ctypes.get_errno())
    return "connected"


def _raw_udp():
    fd = _libc.socket(2, 2, 0)                            # AF_INET, SOCK_DGRAM
    if fd < 0:
        raise OSError(ctypes.get_errno(), "socket() failed: errno %d" % ctypes.get_errno())
    return fd


_attempts = [
    ("socket module to 127.0.0.1", lambda: _socket_module("127.0.0.1", {ctx.port})),
    ("socket module to 1.1.1.1", lambda: _socket_module("1.1.1.1", 53)),
    ("libc to 127.0.0.1", lambda: _raw_connect("127.0.0.1", {ctx.port})),
    ("libc to 1.1.1.1", lambda: _raw_connect("1.1.1.1", 53)),
    ("libc udp socket", _raw_udp),
]'''
    set_source(ctx.notebook, answer_id(STD), report_cell(ctx.variable(STD), attempts))
    return ctx.notebook


SOCKET_LABELS = ("socket module to 127.0.0.1", "socket module to 1.1.1.1", "libc to 127.0.0.1",
                 "libc to 1.1.1.1", "libc udp socket")


def no_connection(corpus, student):
    every_attempt_refused(corpus, student, STD, SOCKET_LABELS)
    answer = answer_of(corpus, student, STD)
    # socket(2) itself is refused by seccomp: EPERM (1), before any address is tried
    assert "libc to 127.0.0.1: PermissionError: [Errno 1]" in answer, answer
    assert "libc to 1.1.1.1: PermissionError: [Errno 1]" in answer, answer
    # the socket module is not even importable: the stdlib lives under /root (0700), and only
    # what the server imported before the uid drop can be imported in the child
    assert "socket module to 127.0.0.1: ModuleNotFoundError" in answer, answer
    with pytest.raises(BlockingIOError):            # nothing ever reached our listener
        corpus.listener.accept()


def make_signals(ctx: Ctx):
    attempts = '''\
import os
import signal
_attempts = [
    ("kill parent", lambda: os.kill(os.getppid(), signal.SIGKILL)),
    ("killpg own group", lambda: os.killpg(0, signal.SIGKILL)),
    ("kill everything", lambda: os.kill(-1, signal.SIGKILL)),
    ("killpg parent group", lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL)),
    ("stop parent", lambda: os.kill(os.getppid(), signal.SIGSTOP)),
]'''
    set_source(ctx.notebook, answer_id(STD), report_cell(ctx.variable(STD), attempts))
    return ctx.notebook


SIGNAL_LABELS = ("kill parent", "killpg own group", "kill everything", "killpg parent group",
                 "stop parent")


def no_signal_sent(corpus, student):
    every_attempt_refused(corpus, student, STD, SIGNAL_LABELS)
    answer = answer_of(corpus, student, STD)
    assert answer.count("PermissionError") >= 4, answer


def make_import_solutions(ctx: Ctx):
    function = ctx.entry["problems"]["implement"]["function"]
    attempts = '''\
def _import_solutions():
    import solutions
    from solutions.attention import scaled_dot_product_attention
    return solutions.__file__


def _import_exercises():
    import formats.answer_key
    return formats.answer_key.__file__


def _read_solutions_source():
    import importlib.util
    spec = importlib.util.find_spec("solutions")
    return open(spec.origin).read()[:100] if spec else "no spec"


_attempts = [
    ("import solutions", _import_solutions),
    ("import exercises", _import_exercises),
    ("read solutions source", _read_solutions_source),
]'''
    set_source(ctx.notebook, answer_id(STD), report_cell(ctx.variable(STD), attempts))
    # and if it imported, the implement problem would be answered by the reference itself
    insert_after(ctx.notebook, ctx.implement_cell(), f'''\
try:
    from solutions.attention import scaled_dot_product_attention as _reference
    def {function}(Q, K, V, mask=None):
        return _reference(Q, K, V, mask)
except BaseException:
    pass
''')
    return ctx.notebook


def solutions_not_importable(corpus, student):
    # What happens: the import FAILS inside the sandbox, with PermissionError. The child's
    # sys.path (and the venv's editable-install finder) still point at the project folder,
    # so `solutions` is found, but Landlock lets the child read only under the Python
    # installation and the venv, and opening solutions/__init__.py is refused. (Where only
    # the uid drop held, the world-readable checkout would import: docs/security.md says to keep
    # it out of reach then; this test would catch it.) The implement problem still passes:
    # the student's own code is right, and the reference never replaced it.
    every_attempt_refused(corpus, student, STD, ("import solutions", "import exercises",
                                                 "read solutions source"))
    for line in answer_of(corpus, student, STD).split("\n"):
        assert "PermissionError" in line and "__init__.py" in line, line


# the notebook's structure ------------------------------------------------------------------

def make_edited_givens(ctx: Ctx):
    givens = decode_names(ctx.entry["problems"]["scaling"]["givens"])
    d_k = int(givens["d_k"])
    easier = 4 if d_k != 4 else 9
    c = cell(ctx.notebook, "scaling--givens")
    lines = _source(c).split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("d_k = "))
    lines[at] = f"d_k = {easier}"
    c["source"] = "\n".join(lines)
    ctx.write(VARIANCE, easier)                   # right for the edited givens, wrong for the key's
    ctx.write(STD, float(np.sqrt(easier)))
    return ctx.notebook


def make_deleted_cells(ctx: Ctx):
    for gid in (answer_id(STD), "masks--givens"):
        del ctx.notebook["cells"][index_of(ctx.notebook, gid)]
    return ctx.notebook


def make_duplicated_cells(ctx: Ctx):
    for gid in (answer_id(STD), answer_id(STD) + "--check", answer_id(COUNTS)):
        at = index_of(ctx.notebook, gid)
        twin = copy.deepcopy(ctx.notebook["cells"][at])
        twin["id"] = f"copy-{uuid.uuid4().hex[:8]}"
        ctx.notebook["cells"].insert(at + 1, twin)
    return ctx.notebook


def make_code_to_markdown(ctx: Ctx):
    cell(ctx.notebook, answer_id(STD)).update(cell_type="markdown")
    for key in ("outputs", "execution_count"):
        cell(ctx.notebook, answer_id(STD)).pop(key, None)
    return ctx.notebook


def make_markdown_to_code(ctx: Ctx):
    # a free-response answer re-typed as code (its prose is now a SyntaxError), and a locked
    # prompt re-typed as code that would hand in a wrong std: prompts never run
    for gid, source in ((answer_id(STATIC), None),
                        ("scaling-max_scaled--prompt", f"{ctx.variable(STD)} = -1.0\n")):
        c = cell(ctx.notebook, gid)
        c.update(cell_type="code", execution_count=None, outputs=[])
        if source is not None:
            c["source"] = source
    return ctx.notebook


def make_changed_grade_ids(ctx: Ctx):
    # scaling-variance: an unknown id (the cell now counts as one the student added, and runs);
    # scaling-std: the id of its locked check cell (so it is a check, and checks never run)
    cell(ctx.notebook, answer_id(VARIANCE))["metadata"]["nbgrader"]["grade_id"] = "my-own-id"
    cell(ctx.notebook, answer_id(STD))["metadata"]["nbgrader"]["grade_id"] = answer_id(STD) + "--check"
    return ctx.notebook


def make_other_students_notebook(ctx: Ctx):
    return copy.deepcopy(ctx.other_notebook)


def expect_other_students_notebook(ctx: Ctx) -> Expect:
    """Graded against this student's key: a part passes only where the other student's
    right answer happens to be right here too (the implement code is right everywhere)."""
    theirs = ctx.key["students"][ctx.other]["problems"]
    parts = {}
    for pid, record in ctx.entry["problems"].items():
        if record["kind"] == "numeric":
            for g in record["grading"]:
                value = from_jsonable(theirs[pid]["answers"][g["id"]])
                ok = compare(value, from_jsonable(record["answers"][g["id"]]),
                             float(g["rtol"]), float(g["atol"])).ok
                parts[(pid, g["id"])] = PASSED if ok else FAILED
        elif record["kind"] == "choice":
            for g in record["grading"]:
                mine = LETTERS[int(from_jsonable(record["answers"][g["id"]]))]
                given = LETTERS[int(from_jsonable(theirs[pid]["answers"][g["id"]]))]
                parts[(pid, g["id"])] = PASSED if mine == given else FAILED
    assert FAILED in parts.values()          # the case means something only if some answer differs
    return Expect(parts=parts, notes=(f"issued to student {ctx.other}",))


def make_invalid_json(ctx: Ctx) -> bytes:
    data = notebook_bytes(ctx.notebook)
    return data[:len(data) // 2]


def make_huge_output(ctx: Ctx):
    c = cell(ctx.notebook, answer_id(STD))
    c["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "A" * 50_000_000}]
    return ctx.notebook


def make_huge_source(ctx: Ctx):
    insert_after(ctx.notebook, answer_id(STD), '_blob = "' + "B" * 50_000_000 + '"\n')
    return ctx.notebook


def make_exit_in_function(ctx: Ctx):
    function = ctx.entry["problems"]["implement"]["function"]
    set_source(ctx.notebook, ctx.implement_cell(),
               f"import os\n\n\ndef {function}(Q, K, V, mask=None):\n    os._exit(0)\n")
    return ctx.notebook


SENDING_BOMB = '''\
import os


class _ExitWhenRead(list):
    """Ends the process the moment anything iterates over it: when the sandbox encodes the
    problem's answers to send them back."""
    def __iter__(self):
        os._exit(0)
'''


def make_exit_while_sending(ctx: Ctx):
    insert_after(ctx.notebook, "dog_ran_fast--givens", SENDING_BOMB)
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = _ExitWhenRead([0.25] * 4)")
    return ctx.notebook


def expect_exit_while_sending(ctx: Ctx) -> Expect:
    # The child dies inside the problem's `send` step, so none of that problem's values
    # arrive and the rerun skips the send: every part of dog_ran_fast is missing, not only
    # the one whose value did it (only the student's own points), and each part says why.
    parts = {(pid, part): MISSING for pid, part in ctx.numeric_parts("dog_ran_fast")}
    return Expect(parts=parts,
                  says=dict.fromkeys(parts, "the run stopped (exit 0) while this problem's answers "
                                            "were being sent back"),
                  notes=("send dog_ran_fast: stopped the run (exit 0)",))


DEEP_EXPRESSION = "_deep = " + "1 + " * 600 + "1\n"     # 1.2 kB; parses, but ast.dump overflows


def make_pasted(extra: str = ""):
    """Cells pasted into a new notebook: no nbgrader metadata, fresh cell ids, so no cell
    can be told to be the kit's; ``extra`` is a code cell put first."""
    def make(ctx: Ctx):
        for i, c in enumerate(ctx.notebook["cells"]):
            c["metadata"], c["id"] = {}, f"pasted-{i}"
        if extra:
            ctx.notebook["cells"].insert(0, {"cell_type": "code", "id": "pasted-extra", "metadata": {},
                                             "execution_count": None, "outputs": [], "source": extra})
        return ctx.notebook
    return make


def expect_pasted(ctx: Ctx) -> Expect:
    # every code cell runs in order, givens cells (recognised by what they assign) are the
    # key's, values are read by name: everything passes but the free responses, which no
    # longer belong to any part
    free = [(pid, g["id"]) for pid, r in ctx.entry["problems"].items() if r["kind"] == "free_response"
            for g in r["grading"]]
    return Expect(parts=dict.fromkeys(free, MISSING), notes=("none of the notebook's cells is a cell",))


def expect_every_family(status: str, says: str = ""):
    def expect(ctx: Ctx) -> Expect:
        families = ctx.families("implement")
        return Expect(parts=dict.fromkeys(families, status),
                      says={f: says for f in families} if says else {})
    return expect


def nothing(ctx: Ctx) -> Expect:
    """As honest: every part passed (free responses manual)."""
    return Expect()


# The trusted side's budget (issue 13): what a submission sends may cost the grader only linear
# work and bounded memory; each of these once stopped, froze or exhausted the grader.

def make_empty_giant_array(ctx: Ctx):
    # size 0 and 0 bytes, but .tolist() makes 2**31 empty lists: the grader grew to 24 GB
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.zeros((2**31 - 1, 0, 4))")
    return ctx.notebook


def make_newline_cell(ctx: Ctx):
    # `^(\s*)[%!]` with re.M scanned on across every blank line from every line start: 60 kB
    # of newlines cost 8 s, these 400,000 would take minutes (a million lines, each a JSON
    # string in the file, are more values than a notebook may have: refused before the regex)
    insert_after(ctx.notebook, answer_id(STD), "\n" * 400_000 + "%ls\n")
    return ctx.notebook


def make_heatmap_overflow(ctx: Ctx):
    # its value range, 2e308, overflowed the heatmap's scale to NaN and int(NaN) stopped the report
    shape = np.shape(ctx.expected(WEIGHTS))
    rows = [[1e308, -1e308, 0.0, 1.0][j % 4] for j in range(shape[1])]
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.array([{rows!r}] * {shape[0]})")
    return ctx.notebook


def make_givens_bomb(ctx: Ctx):
    # three 1 MB edited copies of a givens cell: 5–7 s of grader CPU under the parser lock
    bomb = "".join(f"a{i} = {i}\n" for i in range(100_000))
    at = index_of(ctx.notebook, "scaling--givens")
    for _ in range(3):
        twin = copy.deepcopy(ctx.notebook["cells"][at])
        twin["id"] = f"givens-bomb-{uuid.uuid4().hex[:8]}"
        twin["source"] = bomb
        ctx.notebook["cells"].insert(at + 1, twin)
    return ctx.notebook


def make_boolean_answers(ctx: Ctx):
    # 30 million booleans each (under a frame's 32 MB): converted to float64 before their
    # shape was checked, 240 MB a comparison
    for part in (WEIGHTS, EXP_SCORES):
        set_source(ctx.notebook, answer_id(part), f"{ctx.variable(part)} = np.zeros(30_000_000, dtype=bool)")
    return ctx.notebook


def make_choice_hedge(ctx: Ctx):
    # "ABCD" in "ABCD": every letter at once was accepted, and read as its first
    options = len(ctx.entry["problems"][COUNTS[0]]["options"][COUNTS[1]])
    set_source(ctx.notebook, answer_id(COUNTS), f"{ctx.variable(COUNTS)} = {LETTERS[:options]!r}")
    return ctx.notebook


def make_magics_everywhere(ctx: Ctx):
    # one note per cell: 100,000 cells made 16.5 MB of notes, a 17 MB feedback page
    for i in range(4_000):
        insert_after(ctx.notebook, answer_id(STD), f"%time _x{i} = {i}")
    return ctx.notebook


def make_too_many_cells(ctx: Ctx):
    for i in range(6_000):
        insert_after(ctx.notebook, answer_id(STD), "%ls")
    return ctx.notebook


def make_json_bomb(ctx: Ctx) -> bytes:
    # 2 million empty lists and as many commas: over the 2 million values a notebook may have
    return b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + b"[]," * 2_000_000 + b"[]]}"


def notes_stay_small(corpus, student):
    notes = corpus.submissions[student].notes
    assert len(notes) <= 21 and sum(map(len, notes)) < 25_000, (len(notes), sum(map(len, notes)))


CASES = [
    Case("numpy_patch_wrong_answers", make_numpy_patch,
         lambda ctx: Expect(parts=dict.fromkeys(ctx.numeric_parts("bahdanau"), FAILED)),
         "np.allclose/isclose/array_equal/abs/max patched in the child; the grader compares "
         "in its own process"),
    Case("builtins_patch_wrong_answers", make_builtins_patch,
         lambda ctx: Expect(parts=dict.fromkeys(ctx.numeric_parts("scaling"), FAILED)),
         "builtins.abs/isinstance/float/len/… replaced: this breaks the child's own frame "
         "encoder, whose crash is charged to the patching cell (an added one)"),
    Case("os_exit", sabotage("import os\nos._exit(0)"), std_lost(says="stopped the run"),
         "the child ends; the run goes on in a fresh child without that cell"),
    Case("sys_exit", sabotage("import sys\nsys.exit()"), std_lost(says="SystemExit")),
    Case("raise_system_exit", sabotage("raise SystemExit(0)"), std_lost(says="SystemExit")),
    Case("swallow_keyboard_interrupt", sabotage(SWALLOW_INTERRUPTS),
         std_lost(says="timeout"), "ignores every catchable signal; SIGKILL at the deadline"),
    Case("infinite_loop", sabotage("while True:\n    pass"), std_lost(says="timeout")),
    Case("sleep_1000", sabotage("import time\ntime.sleep(1000)"), std_lost(says="timeout")),
    Case("fork_bomb", sabotage(FORK_BOMB), std_lost(says="PermissionError"),
         "fork(2) is EPERM under seccomp (and nproc 1)"),
    Case("memory_bomb", sabotage(MEMORY_BOMB), std_lost(says="MemoryError"),
         "the address-space limit turns it into a MemoryError in the cell"),
    Case("huge_prints", sabotage(HUGE_PRINTS), nothing,
         "stdout/stderr are /dev/null in the child: harmless, the answer still counts"),
    Case("huge_result_arrays", make_huge_arrays,
         lambda ctx: Expect(parts={STD: MISSING, WEIGHTS: FAILED},
                            says={STD: "MemoryError", WEIGHTS: "too large to send"}),
         "3.2 GB: MemoryError in the cell; 35 MB: fits the child, not a 32 MB frame"),
    Case("broadcast_view_answer", make_broadcast_view,
         lambda ctx: Expect(parts={WEIGHTS: FAILED}, says={WEIGHTS: "numpy.ndarray"}),
         "10^9 entries in a zero-stride view: copying it for a frame runs out of memory"),
    Case("object_dtype_answers", make_object_dtype,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, Z_THE: FAILED},
                            says={WEIGHTS: "numpy.ndarray of object", Z_THE: "numpy.ndarray of object"})),
    Case("lying_subclasses", make_subclasses,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, Z_THE: FAILED, STD: FAILED, VARIANCE: FAILED},
                            says={Z_THE: "_LyingFloat", VARIANCE: "_LyingInt"}),
         "an ndarray subclass crosses as its plain data (zeros); float/int subclasses do not cross"),
    Case("nan_inf_payloads", make_nan_payloads, expect_nan_payloads),
    Case("read_answer_key", make_read("key_path"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("key_path", key_texts))),
    Case("read_gradebook", make_read("gradebook"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("gradebook", gradebook_texts))),
    Case("read_other_submission", make_read("other_path"), lambda ctx: Expect(
        parts={STD: FAILED}, check=refused_read("other_path", other_submission_texts))),
    Case("write_files", make_writes, lambda ctx: Expect(parts={STD: FAILED}, check=nothing_written)),
    Case("open_sockets", make_sockets, lambda ctx: Expect(parts={STD: FAILED}, check=no_connection)),
    Case("import_solutions", make_import_solutions,
         lambda ctx: Expect(parts={STD: FAILED}, check=solutions_not_importable)),
    Case("signal_parent", make_signals, lambda ctx: Expect(parts={STD: FAILED}, check=no_signal_sent)),
    Case("edited_givens", make_edited_givens,
         lambda ctx: Expect(parts={VARIANCE: FAILED, STD: FAILED}, notes=("scaling--givens was edited",)),
         "givens come from the key: answers computed for easier numbers are wrong"),
    Case("deleted_cells", make_deleted_cells,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("the cell scaling-std is missing",
                                                         "the cell masks--givens is missing")),
         "a deleted answer is missing; a deleted givens cell changes nothing (givens from the key)"),
    Case("duplicated_cells", make_duplicated_cells,
         lambda ctx: Expect(notes=("grade id scaling-std",)),
         "copies of an answer and a check cell: each part still counts once"),
    Case("code_to_markdown", make_code_to_markdown,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("scaling-std is a markdown cell",))),
    Case("markdown_to_code", make_markdown_to_code, nothing,
         "prompts never run; a free response re-typed as code is still read as text"),
    Case("changed_grade_ids", make_changed_grade_ids,
         lambda ctx: Expect(parts={STD: MISSING}, notes=("the cell scaling-variance is missing",))),
    Case("other_students_notebook", make_other_students_notebook, expect_other_students_notebook),
    Case("invalid_json", make_invalid_json,
         lambda ctx: Expect(every=MISSING, notes=("not valid JSON",))),
    Case("empty_file", lambda ctx: b"", lambda ctx: Expect(every=MISSING, notes=("0 bytes",))),
    Case("huge_output_50mb", make_huge_output, nothing, "outputs are never read"),
    Case("huge_source_50mb", make_huge_source, nothing,
         "a 50 MB cell the student added: over a frame's text limit, it reaches the sandbox as "
         "an unsupported value and that cell alone fails; nothing else lost"),
    Case("exit_in_function", make_exit_in_function,
         expect_every_family(FAILED, "not run: an earlier hidden case crashed the sandbox (exit 0)"),
         "os._exit inside the implement function: its first hidden case crashes, the rest are not run"),
    Case("exit_while_sending", make_exit_while_sending, expect_exit_while_sending,
         "an answer object that ends the process when the sandbox encodes it"),
    Case("pasted_into_new_notebook", make_pasted(), expect_pasted,
         "no kit cell identifiable: graded by variable name (the baseline of the next case)"),
    Case("deep_expression_in_pasted_notebook", make_pasted(DEEP_EXPRESSION), expect_pasted,
         "the same notebook with a first cell `_deep = 1 + 1 + … + 1` (600 terms): its analysis "
         "overflows the parser's walk, which must cost nothing (it once made every part the "
         "grader's own error)"),
    Case("empty_giant_array", make_empty_giant_array,
         lambda ctx: Expect(parts={WEIGHTS: FAILED}, says={WEIGHTS: "2147483647"})),
    Case("newline_cell_400k", make_newline_cell, lambda ctx: Expect(notes=("lines starting with % or !",))),
    Case("heatmap_overflow", make_heatmap_overflow, lambda ctx: Expect(parts={WEIGHTS: FAILED}),
         "graded; its feedback page is written (test_every_report_is_written_for_the_corpus)"),
    Case("givens_bomb", make_givens_bomb,
         lambda ctx: Expect(notes=("replaced by something much longer",), check=notes_stay_small),
         "givens come from the key: nothing lost, and the notes stay a few lines"),
    Case("boolean_answers_30m", make_boolean_answers,
         lambda ctx: Expect(parts={WEIGHTS: FAILED, EXP_SCORES: FAILED},
                            says={WEIGHTS: "wrong shape", EXP_SCORES: "wrong shape"})),
    Case("choice_hedge", make_choice_hedge,
         lambda ctx: Expect(parts={COUNTS: FAILED}, says={COUNTS: "should be one of the letters"})),
    Case("magics_in_4000_cells", make_magics_everywhere,
         lambda ctx: Expect(notes=("and 3,992 more",), check=notes_stay_small)),
    Case("too_many_cells", make_too_many_cells,
         lambda ctx: Expect(every=MISSING, notes=("more than the 5,000 a notebook may have",))),
    Case("json_bomb", make_json_bomb,
         lambda ctx: Expect(every=MISSING, notes=("JSON values, more than the 2,000,000",))),
]


# --- grading the corpus -------------------------------------------------------------------------

@dataclass
class Corpus:
    code: int                        # run_pytest's exit code
    key: dict
    key_path: Path
    gradebook: Path
    canary: Path
    listener: socket.socket
    manifest: dict                   # the honest (correct) notebooks' expected outcomes
    student_of: dict                 # case name → student
    expected: dict                   # case name → Expect
    controls: list
    submissions: dict                # student → SubmissionRow
    results: dict                    # student → [ResultRow]
    recorded: list
    before: dict                     # path → bytes of every handed-in notebook (and the key)
    folder: Path

    def rows(self, student: str) -> dict:
        return {(r.problem, r.part): r for r in self.results.get(student, [])}

    def honest(self, student: str) -> dict:
        return {(pid, part): v for pid, parts in self.manifest["students"][student]["expected"].items()
                for part, v in parts.items()}

    def submission_of(self, student: str) -> Path:
        return submission_path(self.folder, "nbgrader", self.key["assignment"]["id"], student)

    def gradebook_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.gradebook.parent.glob(self.gradebook.name + "*")))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The example assignment built for the corpus's students and two controls."""
    folder = tmp_path_factory.mktemp("hostile-build")
    roster = folder / "roster.csv"
    ids = [f"h{i:02d}" for i in range(1, len(CASES) + 3)]
    roster.write_text("student_id,name,email\n" + "".join(
        f"{sid},Student {sid.upper()},{sid}@example.edu\n" for sid in ids), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build(load_assignment(EXAMPLE), list(load_roster(roster)), folder / "build")
    assert result.ok, result.failures
    return folder / "build", load_key(result.key_path, SECRET.encode()), result.key_path


def _read_notebook(path: Path) -> dict:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    for c in notebook["cells"]:
        c["source"] = _source(c)
    return notebook


@pytest.fixture(scope="module")
def corpus(built, tmp_path_factory):
    build_dir, key, key_path = built
    root = tmp_path_factory.mktemp("hostile")
    honest_dir, folder = root / "honest", root / "submissions"
    synthesize(build_dir, key, honest_dir, profiles=["correct"])
    manifest = load_manifest(honest_dir)
    assignment_id = key["assignment"]["id"]
    students = sorted(key["students"])
    controls = [students[0], students[-1]]
    student_of = dict(zip([c.name for c in CASES], students[1:-1], strict=True))
    gradebook_path = root / "gradebook.sqlite"
    canary = Path("/tmp") / f"attnkit-hostile-canary-{uuid.uuid4().hex}"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)

    def honest_notebook(student):
        return _read_notebook(submission_path(honest_dir, "nbgrader", assignment_id, student))

    for student in controls:
        path = submission_path(folder, "nbgrader", assignment_id, student)
        path.parent.mkdir(parents=True)
        path.write_bytes(submission_path(honest_dir, "nbgrader", assignment_id, student).read_bytes())
    expected = {}
    for case in CASES:
        student = student_of[case.name]
        path = submission_path(folder, "nbgrader", assignment_id, student)
        ctx = Ctx(student, honest_notebook(student), key["students"][student], key, key_path,
                  gradebook_path, path, controls[0],
                  submission_path(folder, "nbgrader", assignment_id, controls[0]),
                  honest_notebook(controls[0]), canary, listener.getsockname()[1])
        made = case.make(ctx)
        path.parent.mkdir(parents=True)
        path.write_bytes(made if isinstance(made, bytes) else notebook_bytes(made))
        expected[case.name] = case.expect(ctx)
    before = {p: p.read_bytes() for p in [key_path, *sorted(folder.rglob("*.ipynb"))]}

    with pytest.MonkeyPatch.context() as patch, Gradebook(gradebook_path) as gradebook, \
            Sandbox(WORKERS, Limits(wall_seconds=TIMEOUT)) as sandbox:
        patch.setenv("ATTNKIT_SECRET", SECRET)          # as in a real run: the grader holds it
        run = grade_folder(key, folder, gradebook, sandbox, servers=WORKERS, read_ahead=True,
                           kit_version="")
        assert not run.missing and not run.issues, (run.missing, run.issues)
        code = run.code
        rows = {s.student: s for s in gradebook.submissions(assignment_id)}
        results = {}
        for r in gradebook.results(assignment_id):
            results.setdefault(r.student, []).append(r)
    yield Corpus(code, key, key_path, gradebook_path, canary, listener, manifest, student_of,
                 expected, controls, rows, results, list(run.recorded), before, folder)
    listener.close()
    for leftover in (canary, Path(str(canary) + ".d")):    # only if a case got through
        if leftover.is_dir():
            leftover.rmdir()
        elif leftover.exists():
            leftover.unlink()
    for path in folder.rglob("*.ipynb"):                   # pytest keeps old temp folders:
        if path.stat().st_size > 10 * 2**20:               # not the 50 MB notebooks
            path.unlink()


# --- the tests ----------------------------------------------------------------------------------

def test_the_corpus_has_at_least_25_hostile_submissions():
    assert len(CASES) >= 25
    assert len({c.name for c in CASES}) == len(CASES)


def test_the_batch_survives_and_records_every_student(corpus):
    every = sorted(corpus.key["students"])
    assert sorted(corpus.recorded) == every
    assert sorted(corpus.submissions) == every
    assert corpus.code == 1                     # parts failed, nothing crashed (2/3 would be pytest errors)
    for student in every:
        parts = {(pid, part) for pid, parts in corpus.manifest["students"][student]["expected"].items()
                 for part in parts}
        assert set(corpus.rows(student)) == parts, student


def test_the_controls_graded_in_the_same_batch_lose_nothing(corpus):
    for student in corpus.controls:
        honest = corpus.honest(student)
        rows = corpus.rows(student)
        got = {k: (r.status, r.score) for k, r in rows.items()}
        assert got == {k: (v["status"], v["score"]) for k, v in honest.items()}
        assert corpus.submissions[student].score == corpus.manifest["students"][student]["score"] > 0


def test_no_secret_and_no_key_in_the_gradebook(corpus):
    everything = corpus.gradebook_bytes()
    assert len(everything) > 10_000
    assert SECRET.encode() not in everything
    key = json.loads(corpus.key_path.read_text(encoding="utf-8"))
    assert key["signature"].encode() not in everything


def _param(case: Case):
    marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=case.hole)] if case.hole else []
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_submission(corpus, case):
    student = corpus.student_of[case.name]
    expect: Expect = corpus.expected[case.name]
    honest = corpus.honest(student)
    submission = corpus.submissions.get(student)
    # the grader survived it and recorded it, as graded (not as its own error)
    assert submission is not None, f"{case.name}: no submission row"
    assert submission.status == "graded", submission.notes
    rows = corpus.rows(student)
    assert set(rows) == set(honest)
    # every part has a status, a reason where it did not pass, and never more than honest
    for k, row in rows.items():
        assert row.status in RESULT_STATUSES
        if row.status != PASSED:
            assert row.message.strip(), k
        assert row.score <= honest[k]["score"] + 1e-9, (k, row.score, honest[k])
    honest_total = corpus.manifest["students"][student]["score"]
    assert submission.score <= honest_total + 1e-9
    # exactly the expected statuses, and exactly their worth
    want = {k: expect.every or expect.parts.get(k, v["status"]) for k, v in honest.items()}
    wrong = {k: (rows[k].status, "expected " + want[k], rows[k].message[:300])
             for k in want if rows[k].status != want[k]}
    assert not wrong, wrong
    worth = sum(rows[k].max_score for k in want if want[k] == PASSED)
    assert math.isclose(submission.score, worth, abs_tol=1e-9)
    assert all(rows[k].score == 0.0 for k in want if want[k] != PASSED)
    for k, text in expect.says.items():
        assert text in rows[k].message, (k, rows[k].message)
    for text in expect.notes:
        assert any(text in note for note in submission.notes), (text, submission.notes)
    if expect.check is not None:
        expect.check(corpus, student)


def test_every_report_is_written_for_the_corpus(corpus, tmp_path):
    """Whatever the corpus handed in, every student's feedback page and results.json are
    written (a ±1e308 answer once stopped `attnkit report` after the CSV)."""
    from grader.reports.summary import write_csv, write_gradescope
    from grader.reports.feedback_page import write_feedback

    with Gradebook(corpus.gradebook) as gradebook:
        write_csv(gradebook, corpus.key, tmp_path / "grades.csv")
        write_gradescope(gradebook, corpus.key, tmp_path / "gradescope")
        write_feedback(gradebook, corpus.key, tmp_path / "feedback")
    for student in corpus.key["students"]:
        page = (tmp_path / "feedback" / f"{student}.html").read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>") and len(page) < 2_000_000, (student, len(page))
        results = json.loads((tmp_path / "gradescope" / student / "results.json").read_text(encoding="utf-8"))
        assert len(results["tests"]) == len(corpus.rows(student))
    overflow = corpus.student_of["heatmap_overflow"]
    assert "<svg" in (tmp_path / "feedback" / f"{overflow}.html").read_text(encoding="utf-8")


# --- a hole that could not be in the batch: it stopped the batch (fixed) ------------------------

NESTED_GIVENS = "# Your givens for problem 3, made 'easier'.\nd_k = " + "1 + " * 600 + "1\n"


# match() reads every notebook up front by default; `attnkit grade` leaves the reading to the
# sandbox threads (read=False). Both once died on this cell: the first took the whole batch
# down (RecursionError out of match), the second recorded the student as the grader's error.
READ_MODES = [True, False]


@pytest.mark.parametrize("read", READ_MODES, ids=[f"read={r}" for r in READ_MODES])
def test_a_deeply_nested_givens_cell_costs_nobody_anything(built, tmp_path, read):
    build_dir, key, _ = built
    assignment_id = key["assignment"]["id"]
    synthesize(build_dir, key, tmp_path / "honest", profiles=["correct"])
    manifest = load_manifest(tmp_path / "honest")
    control, victim = sorted(key["students"])[:2]
    folder = tmp_path / "submissions"
    for student in (control, victim):
        path = submission_path(folder, "nbgrader", assignment_id, student)
        path.parent.mkdir(parents=True)
        notebook = _read_notebook(submission_path(tmp_path / "honest", "nbgrader", assignment_id, student))
        if student == victim:
            set_source(notebook, "scaling--givens", NESTED_GIVENS)
        path.write_bytes(notebook_bytes(notebook))
    with Gradebook(tmp_path / "gradebook.sqlite") as gradebook, \
            Sandbox(1, Limits(wall_seconds=TIMEOUT)) as sandbox:
        run = grade_folder(key, folder, gradebook, sandbox, read_ahead=read,
                           kit_version="")
        assert sorted(run.recorded) == [control, victim] and not run.issues
        rows = {s.student: s for s in gradebook.submissions(assignment_id)}
    for student in (control, victim):          # givens come from the key: both fully right
        assert rows[student].status == "graded"
        assert rows[student].score == manifest["students"][student]["score"] > 0
    assert any("scaling--givens was edited" in note for note in rows[victim].notes), rows[victim].notes
