"""The sandbox server forks every child but never holds a job or a result, so
no child can find an earlier job — another student's code, their values — in the memory it
was forked with. Checked from outside (this process reads the child's and the server's memory
through /proc while the next job runs, with every wall up) and from inside (the next job's
code hunts for the earlier job in its heap, as a student did with ctypes)."""

import os
import signal
import threading
import time
import uuid

import pytest

from grader.sandbox.client import Limits, Sandbox

CHUNK = 1 << 20


def mark(kind: str) -> bytes:
    """A string found nowhere but where the test puts it (new each run)."""
    return f"{kind}_{uuid.uuid4().hex}".encode()


def memory_holds(pid: int, needles: list[bytes]) -> set[bytes]:
    """Which of ``needles`` occur anywhere in the readable memory of process ``pid``."""
    regions = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            name = fields[5] if len(fields) > 5 else ""
            if "r" in fields[1] and name not in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                regions.append((start, end))
    overlap = max(len(n) for n in needles) - 1
    found = set()
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        for start, end in regions:
            tail = b""
            for at in range(start, end, CHUNK):
                try:
                    memory.seek(at)
                    chunk = memory.read(min(CHUNK, end - at))
                except OSError:                  # a page that cannot be read (a guard page…)
                    tail = b""
                    continue
                data = tail + chunk
                found.update(n for n in needles if n in data)
                tail = data[-overlap:]
    return found


def children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def alice_job(code_marker: bytes, value_marker: bytes) -> list[dict]:
    """A first student's solution: a marker in its code (cells of several sizes, so that some
    remnant would survive whatever reuses freed memory), and one made only at run time (the
    halves are joined by the child) in a value sent back."""
    half = len(value_marker) // 2
    first, second = value_marker[:half].decode(), value_marker[half:].decode()
    cells = [{"op": "exec", "label": f"alice {lines}",
              "source": f"def masked_attention(Q, K, V):\n    # {code_marker.decode()}\n" + "    x = 1\n" * lines}
             for lines in (10, 100, 400, 800, 1600, 4000)]
    return cells + [{"op": "exec", "label": "value", "source": f"secret = ''.join([{first!r}, {second!r}])"},
                    {"op": "send", "problem": "p", "names": ["secret"]}]


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="reads memory through /proc")
def test_the_next_child_and_the_server_hold_nothing_of_an_earlier_job():
    code_marker, value_marker, own_marker = mark("ALICE_CODE"), mark("ALICE_VALUE"), mark("BOB_CODE")
    with Sandbox(1, Limits(wall_seconds=60.0, cpu_seconds=60)) as box:
        first = box.run(alice_job(code_marker, value_marker))
        assert first.values["p"]["secret"] == value_marker.decode() and first.crashes == []

        server = box._servers[0].process.pid
        second = {}
        waiting = [{"op": "exec", "label": "bob",
                    "source": f"# {own_marker.decode()}\nimport time\ntime.sleep(60)"}]
        runner = threading.Thread(target=lambda: second.update(result=box.run(waiting)))
        runner.start()
        try:
            seen_in_child, child = set(), None
            while runner.is_alive() and own_marker not in seen_in_child:
                time.sleep(0.05)
                found = children(server)
                if found:
                    child = found[0]
                    try:
                        seen_in_child = memory_holds(child, [code_marker, value_marker, own_marker])
                    except (FileNotFoundError, ProcessLookupError):
                        seen_in_child = set()
            # the scan sees the child's own job: so it would have seen the earlier one
            assert own_marker in seen_in_child
            assert code_marker not in seen_in_child and value_marker not in seen_in_child
            # the server holds neither the earlier job nor the running one
            assert memory_holds(server, [code_marker, value_marker, own_marker]) == set()
        finally:
            if child is not None:
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            runner.join()
    assert [c.reason for c in second["result"].crashes] == ["signal 9"]


HEAP_SCAN = r'''
import ctypes
class MallInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.sbrk.restype = ctypes.c_void_p
libc.mallinfo2.restype = MallInfo
end, size = libc.sbrk(0), libc.mallinfo2().arena
heap = ctypes.string_at(end - size, size)
first, second = FIRST, SECOND          # the marker, never whole in this process but where it was left
hits, at = 0, heap.find(first)
while at >= 0:
    hits += heap[at + len(first):at + len(first) + len(second)] == second
    at = heap.find(first, at + 1)
scanned = size
'''


def test_a_student_cannot_read_the_previous_job_from_the_heap():
    """The reviewer's attack, walls and all: the previous solution was in the freed heap the
    child inherited from a server that had read it."""
    code_marker, value_marker = mark("ALICE_CODE"), mark("ALICE_VALUE")
    with Sandbox(1, Limits(wall_seconds=10.0)) as box:
        assert box.run(alice_job(code_marker, value_marker)).crashes == []
        hits = {}
        for name, marker in (("code", code_marker), ("value", value_marker)):
            half = len(marker) // 2
            scan = HEAP_SCAN.replace("FIRST", repr(marker[:half])).replace("SECOND", repr(marker[half:]))
            result = box.run([{"op": "exec", "label": "bob", "source": scan},
                              {"op": "send", "problem": "p", "names": ["hits", "scanned"]}])
            assert result.errors == [] and result.crashes == [], (result.errors, result.crashes)
            assert result.values["p"]["scanned"] > 0
            hits[name] = result.values["p"]["hits"]
    assert hits == {"code": 0, "value": 0}


def test_the_warm_up_leaves_nothing_open_and_the_server_s_own_module_in_place():
    """warm_up runs the child's code on the kit's made-up job before any fork: it writes
    nothing anyone reads, closes what it opened and gives ``__main__`` back."""
    import subprocess
    import sys
    from pathlib import Path

    probe = ("import os, sys\n"
             "from grader.sandbox import warming\n"
             "before = sorted(os.listdir('/proc/self/fd')), sys.modules['__main__']\n"
             "warming.warm_up(3)\n"
             "after = sorted(os.listdir('/proc/self/fd')), sys.modules['__main__']\n"
             "assert before[0] == after[0], (before[0], after[0])\n"
             "assert before[1] is after[1]\n"
             "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0 and done.stdout == "ok\n" and done.stderr == "", done.stderr


def test_the_warm_up_job_is_one_a_child_runs_to_the_end():
    """What the server warms is what children run: the made-up job, run in a real child, gives
    its values, its one expected error and every case."""
    from grader.sandbox import frames, protocol, warming

    steps, cases = warming._warm_up_job()
    with_cases = []
    for step in steps:
        if step.get("op") == protocol.CALL:
            step = {**step, "cases": [frames.decode(body)["args"] for body in frames.FrameSplitter(1 << 20).feed(cases)]}
            step.pop("count")
        with_cases.append(step)
    with Sandbox(1, Limits(wall_seconds=10.0)) as box:
        result = box.run(with_cases)
    assert result.crashes == [] and not result.stopped
    assert [e.label for e in result.errors] == ["d"]
    assert set(result.values["warm"]) == {"scaled", "ratio", "choice", "out", "mask", "words"}
    assert sorted(result.outputs["warm"]) == [0, 1, 2] and all(o.ok for o in result.outputs["warm"].values())
