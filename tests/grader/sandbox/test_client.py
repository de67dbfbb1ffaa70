"""The sandbox end to end, with real server processes and real forked children: values come
back, a cell's exception or crash costs only that cell, and nothing a student writes anywhere
can pass for a result."""

import os
import sys
import threading
import time

import numpy as np
import pytest

from grader.sandbox import (attempt, channel, child, child_watch, emitter, frames, plot_stubs, pool, protocol,
                            results, server, stream, warming)
from grader.sandbox.frames import Unsupported
from grader.sandbox.client import Limits, Sandbox, explain
from grader.sandbox.processes import server_environment
from grader.sandbox.results import CellError, Crash, Output

LIMITS = Limits(wall_seconds=1.0, memory_mb=256, frame_mb=1)


@pytest.fixture(scope="module")
def sandbox():
    os.environ["ATTNKIT_TEST_SECRET"] = "the grader's own environment"   # must not reach a child
    try:
        with Sandbox(2, LIMITS) as box:
            yield box
    finally:
        del os.environ["ATTNKIT_TEST_SECRET"]


def cell(label, source):
    return {"op": "exec", "label": label, "source": source}


def send(problem, *names):
    return {"op": "send", "problem": problem, "names": list(names)}


def test_values_come_back(sandbox):
    result = sandbox.run([
        cell("setup", "import numpy as np"),
        {"op": "set", "values": {"scores": np.arange(6.0).reshape(2, 3)}},
        cell("p1-a", "weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)\n"
                     "count = np.int16(7)\nflag = True\nlabel = 'B'\npair = (1, [2.5, None])\n"
                     "table = {'k': np.ones(2, dtype=np.uint8)}\nnothing = None\nnan = float('nan')\n"
                     "f = lambda x: x\nbag = {1, 2}\nbig = 2**80\nz = np.ones(3, dtype=complex)"),
        send("p1", "weights", "count", "flag", "label", "pair", "table", "nothing", "nan",
             "f", "bag", "big", "z", "never_defined"),
    ])
    values = result.values["p1"]
    scores = np.arange(6.0).reshape(2, 3)
    assert np.allclose(values["weights"], np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True))
    assert values["count"].dtype == np.int16 and values["count"] == 7
    assert (values["flag"], values["label"], values["pair"], values["nothing"]) == (True, "B", [1, [2.5, None]], None)
    assert values["table"]["k"].dtype == np.uint8 and np.isnan(values["nan"])
    assert values["f"] == Unsupported("function") and values["bag"] == Unsupported("set")
    assert values["big"] == Unsupported("int beyond 64 bits")
    assert values["z"] == Unsupported("numpy.ndarray of complex128")
    assert result.missing == {"p1": ["never_defined"]}
    assert result.errors == [] and result.crashes == []
    assert {wall["name"] for wall in result.walls} >= {"session", "fds", "rlimits", "landlock", "seccomp"}


def test_objects_that_fight_encoding_and_plots_cost_nothing_else(sandbox):
    result = sandbox.run([
        cell("weird", "class Weird(list):\n    def __iter__(self):\n        raise RuntimeError('no')\n"
                      "weird = Weird([1])\nfine = 2"),
        cell("plot", "import numpy as np\nimport matplotlib.pyplot as plt\nfrom matplotlib import cm\n"
                     "fig, ax = plt.subplots(figsize=(3, 3))\nfig.colorbar(ax.imshow(np.eye(2), cmap=cm.Blues))\n"
                     "plt.show()\ndisplay(fig)\nplotted = True"),
        send("p", "weird", "fine", "plotted"),
    ])
    assert result.errors == [] and result.crashes == []
    assert result.values == {"p": {"weird": Unsupported("Weird could not be sent"), "fine": 2, "plotted": True}}


def test_reruns_stop_at_the_restart_limit(sandbox):
    result = sandbox.run([cell(f"c{i}", "import os\nos._exit(1)") for i in range(12)] + [send("p", "x")])
    assert [c.label for c in result.crashes] == [f"c{i}" for i in range(LIMITS.restarts + 1)]
    assert "p" not in result.values
    # the grader can tell the later problems why they have nothing
    assert result.stopped == f"too many crashes ({LIMITS.restarts + 1})"
    assert result.not_run == [f"c{i}" for i in range(LIMITS.restarts + 1, 12)] + ["send p"]


def test_a_run_that_finishes_has_not_stopped(sandbox):
    result = sandbox.run([cell("a", "import os\nos._exit(1)"), cell("b", "b = 1"), send("p", "b")])
    assert result.crashes == [Crash("a", None, "exit 1")] and result.values == {"p": {"b": 1}}
    assert result.stopped == "" and result.not_run == []


def test_a_function_that_hangs_costs_one_timeout_and_the_later_problems_still_run(sandbox):
    """Each hidden case used to time out in turn: the reruns ran out before the later steps."""
    cases = [{"n": n} for n in range(9)]
    result = sandbox.run([
        cell("impl", "def f(n):\n    while True:\n        pass"),
        {"op": "call", "problem": "impl", "function": "f", "cases": cases},
        cell("later", "x = 1"),
        send("later", "x"),
    ])
    assert result.crashes == [Crash("impl:f", 0, "timeout")]
    assert result.outputs["impl"] == {0: Output(False, None, "Timeout: no result within the time limit"),
                                      **{n: Output(False, None, "not run: an earlier hidden case timed out") for n in range(1, 9)}}
    assert result.values == {"later": {"x": 1}} and result.stopped == ""


def test_an_exception_in_one_cell_does_not_stop_the_next(sandbox):
    result = sandbox.run([
        cell("a", "x = 1\ny = undefined_name\nnot_reached = 1"),
        cell("b", "raise SystemExit(3)"),
        cell("c", "raise KeyboardInterrupt"),
        cell("d", "def f(v):\n    return 1 / v\n"),
        cell("e", "\n\nz = f(0)"),
        cell("syntax", "x = 2\nfor = 3"),
        cell("annotations", "def g(v: int):\n    return v\nkind = g.__annotations__['v']"),
        cell("last", "w = x + 1\nprint('stdout goes nowhere')"),
        send("p", "x", "w", "not_reached", "kind"),
    ])
    assert result.errors == [
        CellError("a", "NameError", "name 'undefined_name' is not defined", 2),
        CellError("b", "SystemExit", "3", 1),
        CellError("c", "KeyboardInterrupt", "", 1),
        CellError("e", "ZeroDivisionError", "division by zero", 3),    # the line in this cell
        CellError("syntax", "SyntaxError", "invalid syntax", 2),
    ]
    # the grader's `from __future__ import annotations` does not leak into student code
    assert result.values["p"] == {"x": 1, "w": 2, "kind": Unsupported("type")}
    assert result.missing["p"] == ["not_reached"] and result.crashes == []


def test_a_crash_in_step_3_of_6_costs_only_that_step(sandbox):
    result = sandbox.run([
        cell("one", "a = 1"),
        send("p0", "a"),
        cell("three", "import os\nb = 2\nos._exit(0)"),
        cell("four", "c = a + 10"),
        cell("five", "d = c * 2"),
        send("p1", "a", "b", "c", "d"),
    ])
    assert result.crashes == [Crash("three", None, "exit 0")]
    assert result.values == {"p0": {"a": 1}, "p1": {"a": 1, "c": 11, "d": 22}}
    assert result.missing == {"p0": [], "p1": ["b"]}
    assert result.errors == []


def test_a_segfault_costs_only_that_step(sandbox):
    result = sandbox.run([cell("segv", "import ctypes\nctypes.string_at(0)"), cell("b", "b = 2"), send("p", "b")])
    assert result.crashes == [Crash("segv", None, "signal 11")]
    assert result.values == {"p": {"b": 2}}


def test_a_crashing_case_costs_that_case_and_the_rest_of_its_call(sandbox):
    result = sandbox.run([
        cell("impl", "import os\ndef f(n):\n    if n == 2:\n        os._exit(9)\n    if n == 1:\n"
                     "        raise ValueError('one')\n    return np.full(2, n)\nimport numpy as np"),
        cell("errs", "oops"),
        {"op": "call", "problem": "p", "function": "f", "cases": [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]},
        {"op": "call", "problem": "q", "function": "missing_function", "cases": [{"n": 0}]},
        {"op": "call", "problem": "r", "function": "os", "cases": [{}]},
    ])
    outputs = result.outputs["p"]
    assert np.array_equal(outputs[0].value, [0, 0])
    assert outputs[1] == Output(False, None, "ValueError: one")
    assert outputs[2] == Output(False, None, "Crash: the sandbox process ended (exit 9)")
    assert outputs[3] == Output(False, None, "not run: an earlier hidden case crashed the sandbox (exit 9)")
    assert result.crashes == [Crash("p:f", 2, "exit 9")] and result.stopped == ""
    assert result.outputs["q"][0] == Output(False, None, "NameError: name 'missing_function' is not defined")
    assert result.outputs["r"][0] == Output(False, None, "TypeError: 'os' is a module, not a function")
    assert [e.label for e in result.errors] == ["errs"]            # reported once despite the rerun


def test_an_infinite_loop_times_out_and_the_rest_runs(sandbox):
    result = sandbox.run([
        cell("before", "a = 1"),
        cell("spin", "while True:\n    pass"),
        cell("after", "b = 2"),
        send("p", "a", "b"),
    ])
    assert result.crashes == [Crash("spin", None, "timeout")]
    assert result.values == {"p": {"a": 1, "b": 2}}


def test_a_memory_bomb_is_recorded_and_the_rest_runs(sandbox):
    result = sandbox.run([
        cell("bomb", "x = []\nwhile True:\n    x.append(' ' * 10**6)"),
        cell("after", "b = 2"),
        send("p", "b"),
    ])
    recorded = ([(e.label, e.type) for e in result.errors] + [(c.label, c.reason) for c in result.crashes])
    assert recorded in ([("bomb", "MemoryError")], [("bomb", "memory")])
    assert result.values == {"p": {"b": 2}}


FORGED = frames.frame({"event": "values", "problem": "p", "values": {"x": 999}, "missing": []})
FORGED_END = frames.frame({"event": "exit", "reason": "done"})     # (a forged "done": test_sandbox_hardening)


def test_fake_frames_on_any_descriptor_change_nothing(sandbox):
    result = sandbox.run([
        cell("x", "x = 1"),
        cell("forge", f"import os\nwritable = []\nfor fd in range(1024):\n    try:\n"
                      f"        os.write(fd, {FORGED!r} + {FORGED_END!r})\n        writable.append(fd)\n"
                      f"    except OSError:\n        pass"),
        cell("y", "y = 2"),
        send("p", "x", "y", "writable"),
    ])
    # stdio is /dev/null; the result pipe takes the forgery, which changes nothing: values
    # only count right after the grader's own send step started, and `exit` is the server's
    assert result.values == {"p": {"x": 1, "y": 2, "writable": [0, 1, 2, 3]}}
    assert result.crashes == [] and result.errors == []
    follow_up = sandbox.run([cell("x", "x = 5"), send("p", "x")])      # the stream is still in step
    assert follow_up.values == {"p": {"x": 5}}


def test_garbage_on_the_result_pipe_costs_only_that_cell(sandbox):
    result = sandbox.run([
        cell("a", "a = 1"),
        cell("garbage", "import os\nos.write(3, b'\\x00\\x00\\x00\\x05hello')"),
        cell("b", "b = 2"),
        send("p", "a", "b"),
    ])
    assert result.crashes == [Crash("garbage", None, "bad frame")]
    assert result.values == {"p": {"a": 1, "b": 2}}


def test_a_frame_over_the_limit_is_refused(sandbox):
    result = sandbox.run([
        cell("big", "import numpy as np\nbig = np.zeros(200_000)\nsmall = np.ones(3)"),
        send("p", "big", "small"),
        cell("flood", "import os\nos.write(3, (2**20 + 1).to_bytes(4, 'big') + b'x' * 100)"),
        cell("after", "c = 3"),
        send("q", "c"),
    ])
    assert result.values["p"]["big"] == Unsupported("numpy.ndarray too large to send")
    assert np.array_equal(result.values["p"]["small"], np.ones(3))
    assert result.crashes == [Crash("flood", None, "output too large")]
    assert result.values["q"] == {"c": 3}


def test_the_sandbox_holds_nothing_of_the_grader(sandbox):
    """By construction: the server is a fresh interpreter started with a clean environment,
    and the child (a copy of it) imports nothing of the project but the sandbox itself."""
    result = sandbox.run([
        cell("look", "import sys, os\nmodules = sorted(m for m in sys.modules\n"
                     "    if m.split('.')[0] in ('exercises', 'solutions', 'grader', 'formats', 'synthetic'))\n"
                     "environment = sorted(os.environ)"),
        send("p", "modules", "environment"),
    ])
    assert set(result.values["p"]["modules"]) <= {"grader", "grader.sandbox", "grader.sandbox.frames", "grader.sandbox.walls",
                                                 "grader.sandbox.protocol", "grader.sandbox.server",
                                                 "grader.sandbox.child", "grader.sandbox.emitter",
                                                 "grader.sandbox.warming", "grader.sandbox.child_watch",
                                                 "grader.sandbox.plot_stubs", "grader.sandbox.libc",
                                                 "grader.sandbox.landlock", "grader.sandbox.seccomp",
                                                 "grader.sandbox.rlimits"}
    assert result.values["p"]["environment"] == sorted(server_environment())
    for server in sandbox._servers:
        with open(f"/proc/{server.process.pid}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[:3] == [sys.executable.encode(), b"-m", b"grader.sandbox.server"]
        with open(f"/proc/{server.process.pid}/environ", "rb") as f:
            assert b"ATTNKIT_TEST_SECRET" not in f.read()


def test_runs_from_many_threads_get_their_own_values(sandbox):
    results = {}

    def run(n):
        results[n] = sandbox.run([cell("c", f"import numpy as np\nv = np.full(3, {n})"), send("p", "v")])

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {n: r.values["p"]["v"].tolist() for n, r in results.items()} == {n: [n] * 3 for n in range(6)}


def test_a_dead_server_is_replaced():
    with Sandbox(1, LIMITS) as box:
        box._servers[0].process.kill()
        box._servers[0].process.wait()
        result = box.run([cell("a", "a = 1"), send("p", "a")])
        assert result.values == {"p": {"a": 1}} and result.crashes == []

        # killed in the middle of a job: the same job runs again on a new server
        server = box._servers[0]
        killer = threading.Timer(0.2, server.process.kill)
        killer.start()
        result = box.run([cell("a", "import time\ntime.sleep(0.5)\na = 2"), send("p", "a")])
        killer.join()
        assert result.values == {"p": {"a": 2}} and result.crashes == []
        assert box._servers[0] is not server


def processes_running(args: list[str]) -> list[int]:
    """Pids whose command line is ``args`` (a forked child keeps its server's)."""
    wanted, found = "\0".join(args).encode() + b"\0", []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read() == wanted:
                    found.append(int(entry))
        except (OSError, ValueError):
            pass
    return found


def test_a_child_does_not_outlive_its_server():
    with Sandbox(1, Limits(wall_seconds=5.0, restarts=0)) as box:
        server = box._servers[0]
        killer = threading.Timer(0.3, server.process.kill)
        killer.start()
        result = box.run([cell("sleep", "import time\ntime.sleep(60)")])
        killer.join()
    assert result.crashes in ([Crash("sleep", None, "server died")], [Crash("sandbox", None, "server died")])
    for _ in range(50):                   # the kernel delivers the signal at once; reaping may lag
        if not processes_running(server.process.args):
            break
        time.sleep(0.1)
    assert processes_running(server.process.args) == []


def test_explain_names_every_wall():
    held = explain(LIMITS)
    assert [wall["name"] for wall in held] == ["session", "network", "landlock", "chroot", "fds", "rlimits", "uid", "seccomp"]
    assert all(isinstance(wall["active"], bool) and wall["detail"] for wall in held)


def test_a_frame_cut_short_when_its_writer_dies_is_a_bad_frame_and_the_next_job_is_clean(sandbox):
    result = sandbox.run([
        cell("a", "a = 1"),
        cell("cut", "import os\nos.write(3, (100).to_bytes(4, 'big') + b'\\x00\\x00\\x00\\x05{\"l\"')\nos._exit(0)"),
        cell("b", "b = 2"),
        send("p", "a", "b"),
    ])
    assert result.crashes == [Crash("cut", None, "bad frame")]
    assert result.values == {"p": {"a": 1, "b": 2}}
    for _ in range(2):                  # both servers: no leftover of that frame in any stream
        assert sandbox.run([cell("x", "x = 5"), send("p", "x")]).values == {"p": {"x": 5}}


def test_a_huge_empty_array_header_costs_only_that_cell(sandbox):
    """numpy refused the shape with a ValueError, which killed the process that decoded it."""
    result = sandbox.run([
        cell("evil", "import os, json, struct\n"
                     "h = json.dumps({'a': ['<f8', [0, 10**19]]}).encode()\n"
                     "body = struct.pack('>I', len(h)) + h\n"
                     "os.write(3, struct.pack('>I', len(body)) + body)"),
        cell("b", "x = 1"),
        send("p", "x"),
    ])
    assert result.crashes == [Crash("evil", None, "bad frame")]
    assert result.values == {"p": {"x": 1}}


def test_lone_surrogates_go_in_as_replacement_characters_and_never_come_out(sandbox):
    result = sandbox.run([
        cell("text", "text = 'a\ud800b'\nmade = chr(0xd800) + 'c'"),      # a lone surrogate in the source
        cell("forge", "import os\nfrom grader.sandbox import frames\n"                # one spelled in JSON by the child
                      "header = b'{\"d\":[[\"event\",\"values\"],[\"problem\",\"p\"],[\"values\",{\"d\":[[\"text\",\"\\\\ud800\"]]}]]}'\n"
                      "os.write(3, frames.framed(len(header).to_bytes(4, 'big') + header))"),
        send("p", "text", "made"),
    ])
    assert result.crashes == [Crash("forge", None, "bad frame")]
    assert result.values == {"p": {"text": "a\ufffdb", "made": "\ufffdc"}}


def test_forged_events_with_arrays_where_text_belongs_change_nothing(sandbox):
    """``array == "p"`` is an array, and its truth raised inside the grader. Forged here: events
    other than starts (a forged start fails the stream: test_sandbox_hardening), in a cell and
    inside the function while its hidden case runs."""
    forge = ("import os, numpy as np\nfrom grader.sandbox import frames\nweird = np.array([1, 2])\n"
             "def forge(*events):\n    for event in events:\n        os.write(3, frames.frame(event))\n")
    forged = ("forge({'event': weird}, {'event': 'error', 'step': weird, 'label': weird},\n"
              "      {'event': 'values', 'problem': weird, 'values': {'x': 666}, 'missing': []},\n"
              "      {'event': 'values', 'problem': 'p', 'values': {}, 'missing': [weird, 'x']},\n"
              "      {'event': 'output', 'problem': 'q', 'case': weird, 'ok': True, 'value': 1},\n"
              "      {'event': 'output', 'problem': weird, 'case': 0, 'ok': True, 'value': 1})")
    function = ("def f():\n    forge({'event': 'output', 'problem': 'q', 'case': weird, 'ok': True, 'value': 1},\n"
                "          {'event': 'output', 'problem': weird, 'case': 0, 'ok': True, 'value': 1},\n"
                "          {'event': 'values', 'problem': 'p', 'values': {'x': 666}, 'missing': []})\n"
                "    return 2")
    result = sandbox.run([
        cell("x", "x = 1\n" + forge + function),
        cell("forge", forged),
        send("p", "x"),
        {"op": "call", "problem": "q", "function": "f", "cases": [{}]},
    ])
    assert result.crashes == [] and result.errors == []
    assert result.values == {"p": {"x": 1}} and result.missing == {"p": []}
    assert result.outputs == {"q": {0: Output(True, 2)}}


def test_a_job_too_large_to_send_comes_back_as_a_crash(sandbox):
    """More code than a frame's header holds (a student controls that): nothing is raised."""
    huge_cell = cell("huge", "data = [" + ",".join(["0.123456"] * 100_000) + "]\n")
    for steps in ([huge_cell] * 3 + [send("p", "x")],
                  [{"op": "set", "values": {"many": list(range(frames.MAX_ITEMS + 1))}}]):
        result = sandbox.run(steps)
        assert result.crashes == [Crash("sandbox", None, "job too large")]
        assert (result.values, result.outputs, result.errors) == ({}, {}, [])
        assert result.stopped == "job too large"
    assert sandbox.run([cell("x", "x = 5"), send("p", "x")]).values == {"p": {"x": 5}}


def test_the_protocol_is_documented_where_it_is_implemented():
    for word in ('"exec"', '"set"', '"send"', '"call"', '"ready"', '"start"', '"need"', '"error"', '"values"',
                 '"output"', '"done"', '"exit"', '"count"', '"args"', "--control", "--stop"):
        assert word in protocol.__doc__, word
    import grader.sandbox.client as sandbox_module
    for module in (server, child, child_watch, emitter, warming, plot_stubs, sandbox_module, pool, channel, stream,
                   attempt, results, frames):
        with open(module.__file__) as f:
            assert "/tmp/" not in f.read()
