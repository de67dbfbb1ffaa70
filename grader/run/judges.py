"""Judge processes: a run's trusted work on every core, not on one interpreter's.

A submission's trusted work (read the notebook, parse its key entry, build the program, follow
the sandbox's frames, judge every part) is Python holding the GIL: on sandbox threads in one
process it caps a run at one core's worth of judging, however many servers it has. So a run
with more than one server forks one *judge* per server when it starts:

    grading process (pytest's items, the gradebook)      judge i (forked: the run's copy)
    ────────────────────────────────────────────────      ───────────────────────────────
    sandbox thread i ── student id ───────────────────▶  read, entry, program
                                                          its own sandbox server ◀▶ child
                     ◀── the GradedSubmission (verdicts, answers) ──  judge every part

A judge is the grading process itself, forked before any thread of the run started: it holds
the verified key and the submissions found, runs no student code (its sandbox server's
children do) and sends back only what the grading thread would have computed. The gradebook
stays the grading process's alone (a judge never touches the SQLite connection it inherited,
and leaves with ``os._exit``, so nothing of the parent's is closed or flushed twice).

A judge that dies (never a student's doing: a student's code runs in the sandbox) costs the
submission it held, recorded as the grader's error and graded again on the next run; the
rest of its work runs in the grading process, on its own sandbox, as without judges. A judge
dies with the grading process (``PR_SET_PDEATHSIG``) and leaves at end of file.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import queue
import resource
import signal
import socket
import struct
import sys
import threading
import time

from grader.run import garbage
from grader.sandbox.processes import share_slots

_LENGTH = struct.Struct("!Q")
_FAREWELL_SECONDS = 30.0           # for a judge to close its sandbox and say what it spent
_PR_SET_PDEATHSIG = 1


class JudgeLost(RuntimeError):
    """The judge process died or stopped answering in step."""


def _send(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(_LENGTH.pack(len(payload)) + payload)


def _receive(sock: socket.socket) -> bytes | None:
    """One message; None at end of file."""
    head = _exactly(sock, _LENGTH.size)
    if head is None:
        return None
    body = _exactly(sock, _LENGTH.unpack(head)[0])
    if body is None:
        raise JudgeLost("the judge's message ended early")
    return body


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            if left == size:
                return None
            raise JudgeLost("a message ended early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def can_fork() -> bool:
    """Forking is safe only where no other thread could hold a lock the child needs."""
    return hasattr(os, "fork") and threading.active_count() == 1 and sys.platform == "linux"


class Judge:
    """One forked judge of ``run``; ``execute(student)`` from one thread at a time."""

    def __init__(self, run, make_sandbox, others: list[Judge], cpu: int | None = None):
        ours, theirs = socket.socketpair()
        grading = os.getpid()
        pid = os.fork()
        if pid == 0:                                # the judge: never returns
            code = 70
            try:
                for sock in [ours] + [judge.sock for judge in others]:
                    sock.close()                    # (an earlier judge's end of file is its own)
                _die_with(grading)
                _pin(cpu)
                code = _serve(run, theirs, make_sandbox)
            finally:
                os._exit(code)
        theirs.close()
        self.pid, self.sock = pid, ours

    def execute(self, student: str):
        try:
            _send(self.sock, student.encode("utf-8"))
            reply = _receive(self.sock)
        except OSError as err:
            raise JudgeLost(f"the judge process is gone ({err})") from None
        if reply is None:
            raise JudgeLost("the judge process is gone")
        return pickle.loads(reply)

    def close(self) -> dict:
        """End of file to the judge (it finishes, closes its sandbox and leaves); wait for it.
        What it spent: {"judge": its own CPU seconds, "sandbox": its sandbox's, "peak_rss_mb"},
        or {} if it could not say."""
        spent: dict = {}
        try:
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(_FAREWELL_SECONDS)
            reply = _receive(self.sock)
            if reply is not None:
                spent = json.loads(reply)
        except (OSError, ValueError, JudgeLost):
            pass
        finally:
            self.sock.close()
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        return spent if isinstance(spent, dict) else {}

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.sock.close()
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _serve(run, sock: socket.socket, make_sandbox) -> int:
    """The judge's loop: a student id in, their GradedSubmission out, until end of file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the grading process's to handle
    sandbox = make_sandbox()
    garbage.by_submission()                           # (no pytest sessions here to collect at)
    try:
        run.sandbox, run.progress = sandbox, None
        while True:
            message = _receive(sock)
            if message is None:
                sandbox.close()                         # (its servers reaped: their CPU is counted)
                mine = resource.getrusage(resource.RUSAGE_SELF)      # (not os.times: 10 ms ticks)
                theirs = resource.getrusage(resource.RUSAGE_CHILDREN)
                _send(sock, json.dumps({"judge": mine.ru_utime + mine.ru_stime,
                                        "sandbox": theirs.ru_utime + theirs.ru_stime,
                                        "peak_rss_mb": mine.ru_maxrss / 1024}).encode())   # (Linux: kB)
                return 0
            student, started = message.decode("utf-8"), time.perf_counter()
            graded = run.execute(student)
            run.discard(student)                        # (nothing of it kept here)
            try:
                reply = pickle.dumps(graded, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as err:  # noqa: BLE001 — never expected: it costs this submission only
                reply = pickle.dumps(run.as_error(student, f"internal grader error: its verdicts could not "
                                                  f"be sent back ({type(err).__name__})", started))
            _send(sock, reply)
            del graded, reply
            garbage.submission_done()
    except (OSError, JudgeLost):                        # the grading process is gone
        return 0
    finally:
        sandbox.close()


def _pin(cpu: int | None) -> None:
    """Keep this judge, and the sandbox server it starts (and so every child of it), on one
    CPU, as batch work. A judge and its child take turns: dozens of wake-ups per submission
    (a ``start`` frame per cell, a ``need`` per hidden case, the case written back). Across two
    CPUs each costs an inter-processor interrupt, which a virtual machine pays dearly for (a
    pipe round trip across two CPUs costs many times one on a single CPU). And on one CPU a
    normal task woken by a frame preempts the writer at once, so the judge would run once per
    frame: ``SCHED_BATCH`` (inherited by the server and its children) never preempts on
    wake-up, so the child runs on until it waits and the judge then reads what piled up: both
    wake less often. A child that never waits is still stopped on time: the server wakes at
    its deadline within a scheduler tick. Where the affinity or the policy cannot be set, the
    judge runs as it was."""
    if cpu is not None:
        keep_to_cpu(cpu)


def keep_to_cpu(cpu: int, thread: int = 0) -> None:
    """``thread`` (0: the calling one; threads and processes it starts inherit it) on ``cpu``
    alone, as ``SCHED_BATCH``; each part left as it was where the system refuses it."""
    try:
        os.sched_setaffinity(thread, {cpu})
    except (AttributeError, OSError):
        pass
    try:
        os.sched_setscheduler(thread, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (what a cgroup or ``taskset`` allows), or [] where
    the system cannot say."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def _own_sandbox(part: int, parts: int, make_sandbox):
    share_slots(part, parts)
    return make_sandbox()


def _die_with(grading: int) -> None:
    """SIGKILL when the grading process dies, even if it is killed (no clean-up runs there)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != grading:         # it died before the signal was asked for
        os._exit(0)


class Judges:
    """``count`` judges of ``run``, lent to one sandbox thread at a time."""

    def __init__(self, run, count: int, make_sandbox):
        self._free: queue.SimpleQueue[Judge] = queue.SimpleQueue()
        self._all: list[Judge] = []
        self._lock = threading.Lock()
        share_slots(0, count + 1)                        # (judge i: part i + 1)
        cpus = usable_cpus()
        try:
            for number in range(count):
                judge = Judge(run, lambda part=number + 1: _own_sandbox(part, count + 1, make_sandbox),
                              self._all, cpus[number % len(cpus)] if cpus else None)
                self._all.append(judge)
                self._free.put(judge)
        except OSError:                                  # (fork refused: no judges at all)
            self.close()
            raise

    def execute(self, student: str):
        """``student``'s GradedSubmission from a free judge; JudgeLost if the one it had died (it is
        then dropped); LookupError if none is left."""
        while True:
            with self._lock:
                if not self._all:
                    raise LookupError("no judge left")
            try:
                judge = self._free.get(timeout=0.5)     # (one that dies meanwhile never comes back)
                break
            except queue.Empty:
                continue
        try:
            graded = judge.execute(student)
        except BaseException:
            with self._lock:
                self._all.remove(judge)
            judge.kill()
            raise
        self._free.put(judge)
        return graded

    def close(self) -> dict:
        """Every judge told to leave and waited for; the CPU seconds they spent, summed
        ({"judge": …, "sandbox": …}), and the largest peak resident memory of one
        ("peak_rss_mb", shared pages included); a judge that died says nothing."""
        with self._lock:
            judges, self._all = self._all, []
        spent = {"judge": 0.0, "sandbox": 0.0, "peak_rss_mb": 0.0}
        for judge in judges:
            said = judge.close()
            for name in spent:
                value = said.get(name)
                if isinstance(value, (int, float)) and value >= 0:
                    spent[name] = max(spent[name], value) if name == "peak_rss_mb" else spent[name] + value
        return spent
