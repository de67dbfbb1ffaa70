"""No submission may stop, freeze or exhaust the trusted side: what a child can forge, flood,
read early or send that would make the grader work without bound, each reproduced with real
servers and real forked children (the state machine that judges the events is also driven
directly, without processes, at the end). Nothing here asserts a time: counts, statuses,
what was blamed, and what a process's memory holds."""

import json
import os
import signal
import threading
import time
import uuid

import numpy as np
import pytest

from grader.sandbox import frames
from grader.budget import Budget, OverBudget
from grader.sandbox.frames import Unsupported
from grader.sandbox.attempt import Attempt, Forged, expected_starts, frame_cap
from grader.sandbox.client import Limits, Sandbox
from grader.sandbox.results import Crash, Output, RunResult
from tests.grader.sandbox.test_server import children, memory_holds

LIMITS = Limits(wall_seconds=1.0, memory_mb=256, frame_mb=1)
ROOMY = Limits(wall_seconds=20.0, cpu_seconds=20, memory_mb=512)     # for cells that search memory


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(2, LIMITS) as box:
        yield box


def cell(label, source):
    return {"op": "exec", "label": label, "source": source}


def send(problem, *names):
    return {"op": "send", "problem": problem, "names": list(names)}


def call(problem, function, cases):
    return {"op": "call", "problem": problem, "function": function, "cases": cases, "first": 0}


FORGE = "import os\nfrom grader.sandbox import frames\ndef forge(**event):\n    os.write(3, frames.frame(event))\n"


class Counting(Budget):
    """A budget that counts its checks by stage, and is over after ``allow`` of them."""

    def __init__(self, allow: int | None = None):
        super().__init__()
        self.allow, self.stages = allow, []

    def check(self, stage: str) -> None:
        self.stages.append(stage)
        if self.allow is not None and len(self.stages) > self.allow:
            raise OverBudget(f"over during {stage}")


# --- 1. forged starts ------------------------------------------------------------------------

LIAR_STEPS = lambda forgery: [                                                 # noqa: E731
    cell("a", "a = 1\ndef f():\n    return 5"),
    cell("liar", FORGE + f"import numpy as np\nforge(event='start', {forgery})\nwhile True:\n    pass"),
    cell("b", "b = 2"),
    call("q", "f", [{}]),
    send("p", "a", "b"),
]


@pytest.mark.parametrize("forgery", [
    "step=4",                  # a later step: its loop would be blamed on `send p`
    "step=0",                  # an earlier one
    "step=1",                  # its own step, again
    "step=3, case=0",          # a call's case, never asked for
    "step=2, case=0",          # the next step, but as a case
    "step='2'", "step=2.0", "step=np.array([2])", "step=True",
])
def test_a_forged_start_is_a_bad_frame_charged_to_the_step_that_was_running(sandbox, forgery):
    """It used to be believed: the loop was blamed on the step it named, and each rerun
    repeated the loop until the restart limit (18 s at a 2 s timeout, ~90 s at the default)."""
    result = sandbox.run(LIAR_STEPS(forgery))
    assert result.crashes == [Crash("liar", None, "bad frame")]      # stopped at once: no timeout
    assert result.values == {"p": {"a": 1, "b": 2}} and result.outputs == {"q": {0: Output(True, 5)}}
    assert result.stopped == "" and result.errors == []


CLAIM_NEXT = FORGE + ("import sys\nframe = sys._getframe()\nwhile frame.f_code.co_name != 'run_steps':\n"
                      "    frame = frame.f_back\nforge(event='start', step=frame.f_locals['index'] + 1)\n"
                      "while True:\n    pass")


def test_claiming_the_next_step_while_looping_costs_at_most_the_timeouts_limit(sandbox):
    """The next step's start is a valid one, so its timeout is blamed on it; but each rerun
    repeats the loop: after ``Limits.timeouts`` timeouts the run stops."""
    assert Limits().timeouts == 2 and LIMITS.timeouts == 2
    steps = [cell("claim", CLAIM_NEXT)] + [cell(f"c{i}", f"x{i} = {i}") for i in range(1, 6)] + [send("p", "x1")]
    result = sandbox.run(steps)
    assert result.crashes == [Crash("c1", None, "timeout"), Crash("c2", None, "timeout")]
    assert result.stopped == "too many timeouts (2)"
    assert result.not_run == ["c3", "c4", "c5", "send p"]
    assert result.values == {}


def test_a_forged_done_is_a_bad_frame_not_the_end_of_the_run(sandbox):
    """A ``done`` and an exit 0 ended the run as if every step had run: the later steps vanished
    without a crash to explain them."""
    result = sandbox.run([cell("a", "a = 1"), cell("quit", FORGE + "forge(event='done')\nos._exit(0)"),
                          cell("b", "b = 2"), send("p", "a", "b")])
    assert result.crashes == [Crash("quit", None, "bad frame")]
    assert result.values == {"p": {"a": 1, "b": 2}} and result.stopped == ""


@pytest.mark.parametrize("forgery", [
    "event='ready', layers=[]",                 # a second ready
    "event='need', step=3, case=0",             # a case of a call that is not next
    "event='need', step=2, case=1",             # the next call, a case after its first
    "event='need', step=1",                     # a step that is no call
])
def test_other_forged_protocol_events_are_bad_frames(sandbox, forgery):
    result = sandbox.run([
        cell("a", "a = 1\ndef f(n):\n    return n"),
        cell("liar", FORGE + f"forge({forgery})\nimport time\ntime.sleep(30)"),
        call("q", "f", [{"n": 0}, {"n": 1}]),
        call("r", "f", [{"n": 2}]),
        send("p", "a"),
    ])
    assert result.crashes == [Crash("liar", None, "bad frame")]
    assert result.outputs == {"q": {0: Output(True, 0), 1: Output(True, 1)}, "r": {0: Output(True, 2)}}
    assert result.values == {"p": {"a": 1}}


def test_claiming_the_next_step_before_a_case_output_is_forged(sandbox):
    """A case must end with its output before anything else starts: else its result is lost
    without a crash to say why."""
    function = FORGE + ("import sys\ndef f(n):\n    frame = sys._getframe()\n"
                        "    while frame.f_code.co_name != 'run_steps':\n        frame = frame.f_back\n"
                        "    forge(event='start', step=frame.f_locals['index'] + 1)\n    return n")
    result = sandbox.run([cell("impl", function), call("q", "f", [{"n": 0}, {"n": 1}]), cell("later", "x = 1"),
                          send("p", "x")])
    assert result.crashes == [Crash("q:f", 0, "bad frame")]
    assert result.outputs["q"] == {0: Output(False, None, "Crash: the sandbox process ended (bad frame)"),
                                   1: Output(False, None, "not run: an earlier hidden case crashed the sandbox (bad frame)")}
    assert result.values == {"p": {"x": 1}}


# --- 2. frame floods and the budget ----------------------------------------------------------

FLOOD = "import os\nfrom grader.sandbox import frames\nos.write(3, frames.frame({'event': 'noise'}) * 20_000)"


def test_a_flood_of_tiny_frames_is_cut_off_after_what_the_job_accounts_for(sandbox):
    """20,000 valid little frames used to be decoded one by one (and ignored)."""
    budget = Counting()
    result = sandbox.run([cell("a", "a = 1"), cell("flood", FLOOD), cell("b", "b = 2"), send("p", "a", "b")], budget)
    assert result.crashes == [Crash("flood", None, "output too large")]
    assert result.values == {"p": {"a": 1, "b": 2}}
    decoded = budget.stages.count("reading the sandbox's results")
    # the first job may send 18 frames (frame_cap), the rerun's job 16: never the flood
    assert decoded <= 18 + 16 and budget.stages.count("sending the submission to the sandbox") == 2


def test_the_budget_is_checked_for_every_frame_and_every_try(sandbox):
    budget = Counting()
    result = sandbox.run([cell("a", "a = 1"), send("p", "a")], budget)
    assert result.values == {"p": {"a": 1}}
    # ready, start, start, values, done
    assert budget.stages == ["sending the submission to the sandbox"] + ["reading the sandbox's results"] * 5


def test_over_budget_leaves_run_and_the_server_mid_job_is_replaced():
    with Sandbox(1, LIMITS) as box:
        server = box._servers[0]
        with pytest.raises(OverBudget, match="reading the sandbox's results"):
            box.run([cell("a", "a = 1"), cell("b", "import time\ntime.sleep(0.5)"), send("p", "a")], Counting(allow=3))
        assert not server.alive                        # killed: it was in the middle of a job
        result = box.run([cell("x", "x = 5"), send("p", "x")])
        assert result.values == {"p": {"x": 5}} and result.crashes == []
        assert box._servers[0] is not server


# --- 3. hidden inputs out of reach -----------------------------------------------------------

HUNT = r'''
import ctypes, gc, sys

def hunt(prefix):
    """The numbers after ``prefix`` anywhere this process can look: every stack frame's locals,
    every object the collector knows (two levels deep), and the whole malloc heap."""
    found, seen = set(), set()

    def note(text):
        at = text.find(prefix)
        while at >= 0:
            tail = text[at + len(prefix):at + len(prefix) + 3]
            if tail.isdigit():
                found.add(int(tail))
            at = text.find(prefix, at + 1)

    def walk(obj, depth):
        if isinstance(obj, str):
            note(obj)
        elif isinstance(obj, (bytes, bytearray)):
            note(bytes(obj).decode("latin-1"))
        elif depth < 12 and id(obj) not in seen and isinstance(obj, (dict, list, tuple, set, frozenset)):
            seen.add(id(obj))
            for item in (list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else list(obj)):
                walk(item, depth + 1)

    frame = sys._getframe()
    while frame is not None:
        walk(dict(frame.f_locals), 0)
        frame = frame.f_back
    for obj in gc.get_objects():
        walk(obj, 10)

    class MallInfo(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
    libc = ctypes.CDLL(None)
    libc.sbrk.restype = ctypes.c_void_p
    libc.mallinfo2.restype = MallInfo
    end, size = libc.sbrk(0), libc.mallinfo2().arena
    note(ctypes.string_at(end - size, size).decode("latin-1"))
    return sorted(found)
'''


def hidden_cases(prefix: str, count: int) -> list[dict]:
    """Cases whose one argument holds a marker numbered by the case: ``prefix`` + "003"."""
    return [{"tag": f"{prefix}{k:03d}"} for k in range(count)]


def test_a_cell_before_the_call_finds_none_of_the_hidden_inputs():
    """Every hidden case used to be in the child from its first line: in the job, in a stack
    frame the first cell could reach with sys._getframe."""
    prefix = f"HIDDEN_{uuid.uuid4().hex}_case"
    with Sandbox(1, ROOMY) as box:
        result = box.run([
            cell("hunt", HUNT + f"found = hunt({prefix!r})\ndef f(tag):\n    return tag[-3:]"),
            send("p", "found"),
            call("q", "f", hidden_cases(prefix, 5)),
        ])
    assert result.errors == [] and result.crashes == []
    assert result.values == {"p": {"found": []}}
    assert result.outputs == {"q": {k: Output(True, f"{k:03d}") for k in range(5)}}


def test_the_function_at_case_k_finds_no_later_case():
    """Previous cases may remain (the function was given them); the case itself is found (so
    the hunt works); none after it is anywhere in the process."""
    prefix = f"HIDDEN_{uuid.uuid4().hex}_case"
    with Sandbox(1, ROOMY) as box:
        result = box.run([cell("impl", HUNT + f"def f(tag):\n    return hunt({prefix!r})"),
                          call("q", "f", hidden_cases(prefix, 4))])
    assert result.errors == [] and result.crashes == []
    for k in range(4):
        found = result.outputs["q"][k].value
        assert k in found and max(found) == k, (k, found)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="reads memory through /proc")
def test_no_hidden_input_is_in_the_child_or_the_server_before_the_child_asks():
    """Checked from outside, every byte of both processes, while a cell before the call runs."""
    prefix, own = f"HIDDEN_{uuid.uuid4().hex}_case", f"OWN_{uuid.uuid4().hex}".encode()
    markers = [f"{prefix}{k:03d}".encode() for k in range(3)]
    steps = [cell("impl", "def f(tag):\n    return tag[-3:]"),
             cell("wait", f"# {own.decode()}\nimport time\ntime.sleep(60)"),
             call("q", "f", hidden_cases(prefix, 3))]
    with Sandbox(1, Limits(wall_seconds=60.0, cpu_seconds=60)) as box:
        server = box._servers[0].process.pid
        run = {}
        runner = threading.Thread(target=lambda: run.update(result=box.run(steps)))
        runner.start()
        child, seen = None, set()
        try:
            while runner.is_alive() and own not in seen:
                time.sleep(0.05)
                found = children(server)
                if found:
                    child = found[0]
                    try:
                        seen = memory_holds(child, [own, *markers])
                    except (FileNotFoundError, ProcessLookupError):
                        seen = set()
            assert own in seen and seen.isdisjoint(markers)       # the scan sees the job, not the cases
            assert memory_holds(server, markers) == set()
        finally:
            if child is not None:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            runner.join()
    result = run["result"]
    assert result.crashes == [Crash("wait", None, "signal 9")]
    assert result.outputs == {"q": {k: Output(True, f"{k:03d}") for k in range(3)}}


ASK_AND_DIE = FORGE + ("import select, sys\nframe = sys._getframe()\n"
                       "while frame.f_code.co_name != 'run_steps':\n    frame = frame.f_back\n"
                       "forge(event='need', step=frame.f_locals['index'] + 1, case=0)\n"
                       "poller = select.poll()\npoller.register(4, select.POLLIN)\npoller.poll(5000)\n")


@pytest.mark.parametrize("then", ["os._exit(0)", "forge(event='start', step=frame.f_locals['index'] + 1, case=0)\nos._exit(0)"])
def test_a_child_that_asks_for_a_case_and_never_reads_it_does_not_poison_the_next_job(then):
    """It dies (after claiming the case's start, or not) with the case's frame unread in its
    job pipe: the next child of that server would have taken it for its job. The start is
    refused (the pipe is not empty), and the server is replaced."""
    with Sandbox(1, LIMITS) as box:
        server = box._servers[0]
        result = box.run([cell("impl", "def f(n):\n    return n * 10"), cell("asker", ASK_AND_DIE + then),
                          call("q", "f", [{"n": 1}, {"n": 2}]), cell("b", "b = 2"), send("p", "b")])
        reason = "exit 0" if then.startswith("os.") else "bad frame"
        assert result.crashes == [Crash("asker", None, reason)]
        assert result.outputs == {"q": {0: Output(True, 10), 1: Output(True, 20)}}
        assert result.values == {"p": {"b": 2}}
        assert box._servers[0] is not server
        for n in range(3):                                  # and the stream stays in step
            again = box.run([cell("x", f"x = {n}"), send("p", "x"), call("q", "f", [])])
            assert again.values == {"p": {"x": n}} and again.crashes == []


def test_crashes_and_timeouts_per_case_still_cost_that_case_and_the_rest(sandbox):
    function = ("import os\ndef f(n):\n    if n == 1:\n        raise ValueError('one')\n"
                "    if n == 2:\n        while True:\n            pass\n    return n")
    result = sandbox.run([cell("impl", function), call("q", "f", [{"n": n} for n in range(4)]),
                          call("r", "f", [{"n": 0}])])
    assert result.crashes == [Crash("q:f", 2, "timeout")]
    assert result.outputs == {"q": {0: Output(True, 0), 1: Output(False, None, "ValueError: one"),
                                    2: Output(False, None, "Timeout: no result within the time limit"),
                                    3: Output(False, None, "not run: an earlier hidden case timed out")},
                              "r": {0: Output(True, 0)}}


# --- 4. empty giant arrays -------------------------------------------------------------------

def test_an_empty_array_of_a_huge_shape_arrives_as_unsupported_and_the_rest_arrives(sandbox):
    """Size 0, yet ``.tolist()`` on the trusted side made 2**31 lists (24 GB, OOM-killed)."""
    result = sandbox.run([cell("a", "import numpy as np\nempty = np.zeros((2**31 - 1, 0, 4))\n"
                                    "column = np.zeros((200_000, 1))\nfine = np.ones(2)"),
                          send("p", "empty", "column", "fine")])
    values = result.values["p"]
    assert values["empty"] == Unsupported("numpy.ndarray of shape (2147483647, 0, 4)")
    assert values["column"] == Unsupported("numpy.ndarray of shape (200000, 1)")
    assert np.array_equal(values["fine"], np.ones(2)) and result.crashes == []


def test_a_forged_frame_with_such_an_array_is_a_bad_frame(sandbox):
    header = json.dumps({"d": [["event", "values"], ["problem", "p"],
                               ["values", {"d": [["x", {"a": ["<f8", [2**31 - 1, 0, 4]]}]]}], ["missing", {"l": []}]]})
    forge = (f"import os, struct\nh = {header.encode()!r}\nbody = struct.pack('>I', len(h)) + h\n"
             "os.write(3, struct.pack('>I', len(body)) + body)")
    result = sandbox.run([cell("a", "x = 1"), cell("forge", forge), send("p", "x")])
    assert result.crashes == [Crash("forge", None, "bad frame")] and result.values == {"p": {"x": 1}}


# --- the judge of events, without processes --------------------------------------------------

JOB = [(0, cell("a", "")), (1, send("p", "a")), (2, call("q", "f", [{}, {}, {}]) | {"first": 1}), (3, cell("b", ""))]


def attempt(unread: int = 0) -> Attempt:
    cases = {(2, 1): b"one", (2, 2): b"two"}
    judge = Attempt(JOB, RunResult(), set(), cases)
    judge.unread = lambda: unread
    return judge


def test_the_expected_starts_and_the_frame_cap_come_from_the_job():
    assert expected_starts(JOB) == [(0, None), (1, None), (2, 1), (2, 2), (3, None)]
    # ready + done + slack 8; exec 2, send 2, two cases 3 each, exec 2
    assert frame_cap(JOB) == 2 + 8 + 2 + 2 + 6 + 2


def test_a_legitimate_child_is_followed_to_the_end():
    judge = attempt()
    events = [{"event": "ready", "layers": [{"name": "fds", "active": True, "detail": ""}] * 100},
              {"event": "start", "step": 0}, {"event": "start", "step": 1},
              {"event": "values", "problem": "p", "values": {"a": 1}, "missing": []},
              {"event": "need", "step": 2, "case": 1}]
    for event in events:
        judge(event)
    assert judge.asked == (2, 1) and bytes(judge.outbox) == b"one"
    judge.outbox.clear()                                    # (written by the server)
    for event in [{"event": "start", "step": 2, "case": 1}, {"event": "output", "problem": "q", "case": 1, "ok": True, "value": 7},
                  {"event": "need", "step": 2, "case": 2}]:
        judge(event)
    judge.outbox.clear()
    for event in [{"event": "start", "step": 2, "case": 2}, {"event": "output", "problem": "q", "case": 2, "ok": True, "value": 8},
                  {"event": "start", "step": 3}, {"event": "done"}]:
        judge(event)
    assert judge.done and judge.asked is None and judge.last_start == (3, None)
    assert judge.result.outputs == {"q": {1: Output(True, 7), 2: Output(True, 8)}}
    assert len(judge.result.walls) == 16                   # a ready's list is capped


@pytest.mark.parametrize("unread, outbox", [(3, b""), (0, b"o")])
def test_a_case_started_before_its_frame_was_read_is_forged(unread, outbox):
    judge = attempt(unread)
    for event in [{"event": "ready", "layers": []}, {"event": "start", "step": 0}, {"event": "start", "step": 1},
                  {"event": "values", "problem": "p", "values": {}, "missing": []}, {"event": "need", "step": 2, "case": 1}]:
        judge(event)
    judge.outbox[:] = outbox
    with pytest.raises(Forged, match="before its arguments were read"):
        judge({"event": "start", "step": 2, "case": 1})
    assert judge.last_start == (1, None) and judge.asked == (2, 1)     # charged to the send; server replaced


def test_events_before_ready_and_a_send_skipped_are_forged():
    with pytest.raises(Forged, match="before ready"):
        attempt()({"event": "start", "step": 0})
    judge = attempt()
    for event in [{"event": "ready", "layers": []}, {"event": "start", "step": 0}, {"event": "start", "step": 1}]:
        judge(event)
    with pytest.raises(Forged, match="send step's values"):
        judge({"event": "need", "step": 2, "case": 1})
    # the same values twice count once
    judge({"event": "values", "problem": "p", "values": {"a": 1}, "missing": []})
    judge({"event": "values", "problem": "p", "values": {"a": 2}, "missing": []})
    assert judge.result.values == {"p": {"a": 1}}
