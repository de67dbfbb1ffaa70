"""Hostile cases that reach out of the sandbox or bend the notebook: files read and written,
the network, signals, the kit's own code, the notebook's structure, a sending bomb."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from formats.cells import LETTERS
from formats.compare import compare
from exercises.render.notebook import notebook_bytes
from formats.serialize import decode_names, from_jsonable

from tests.scenarios.hostile_kit import (COUNTS, Ctx, Expect, FAILED, MISSING, PASSED, STATIC, STD,
                                         VARIANCE, WEIGHTS, source_of, answer_id, answer_of, cell,
                                         every_attempt_refused, index_of, insert_after, report_cell,
                                         set_source)


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
    lines = source_of(c).split("\n")
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
