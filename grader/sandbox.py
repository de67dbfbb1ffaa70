"""The grader's side of the sandbox: sends a submission's steps to a sandbox server and gets
back only the student's values, validated.

The grader (the trusted process, which holds the answer key) never forks student code: forked
children share their parent's memory image. It starts ``workers`` sandbox servers with
``sys.executable -m grader.worker`` (a fresh interpreter, clean environment) and talks to them
over pipes only; each server forks a walled-in child per job (``grader/worker.py``,
``grader/isolation.py``). ``Sandbox.run`` is thread-safe: each call borrows a free server.

A crash — ``os._exit`` in a cell, a timeout, a memory bomb, a segfault — costs only the step
that was running: the run starts again in a fresh child without that exec step (or with that
call resumed at its next case, the crashing case recorded as failed), and without the
``send``/``call`` steps whose results already arrived; earlier exec steps run again to rebuild
the namespace (their errors are reported once). At most ``limits.restarts`` reruns.

Whatever a student does inside the child, what reaches this module is a stream of frames that
is size-capped and structurally checked (``grader/frames.py``); events are then checked
against the job that was sent (a step index must name a step of the right kind, values are
kept only for the names that step asked for), so a forged event can at most submit values —
what the student was asked to do anyway.
"""

from __future__ import annotations

import itertools
import os
import queue
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import frames
from grader import isolation

MIB = 2**20
SERVER_GRACE_SECONDS = 30.0       # beyond the job's own deadline, before a silent server is replaced
_PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)    # where `grader` is importable from
_slots = itertools.count()        # one uid per server started by this process (see isolation.Walls)
_slots_lock = threading.Lock()


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 10.0     # per child (one try of a submission), enforced by the server
    cpu_seconds: int = 10
    memory_mb: int = 1024          # address space on top of the child's size at fork
    file_size_mb: int = 1
    open_files: int = 64
    frame_mb: int = 32             # one frame from the child; a child sends at most 4× this in all
    restarts: int = 8              # reruns after crashes, per submission

    def for_job(self) -> dict:
        return {"wall_seconds": float(self.wall_seconds), "cpu_seconds": int(self.cpu_seconds),
                "memory_mb": int(self.memory_mb), "file_size_mb": int(self.file_size_mb),
                "open_files": int(self.open_files), "frame_mb": int(self.frame_mb)}


@dataclass(frozen=True)
class Output:
    """What the student's function did on one case: its value, or the error it raised."""
    ok: bool
    value: object = None
    error: str = ""


@dataclass(frozen=True)
class CellError:
    """An exception in a cell, as Jupyter would have shown it (line: in that cell)."""
    label: str
    type: str
    message: str
    line: int | None


@dataclass(frozen=True)
class Crash:
    """A step that ended its child: ``reason`` is the server's exit reason ("timeout",
    "memory", "signal 11", "exit 0", "output too large", "bad frame", "server died")."""
    label: str
    case: int | None
    reason: str


@dataclass
class RunResult:
    """The student's values for one submission. A problem whose ``send`` never completed (a
    crash, see ``crashes``) is absent from ``values`` and ``missing``; a call case never run is
    absent from ``outputs``."""
    values: dict = field(default_factory=dict)       # pid → {name: value}
    missing: dict = field(default_factory=dict)      # pid → [names the student never defined]
    outputs: dict = field(default_factory=dict)      # pid → {case index: Output}
    errors: list = field(default_factory=list)       # [CellError]
    crashes: list = field(default_factory=list)      # [Crash]
    layers: list = field(default_factory=list)       # [{"name", "active", "detail"}]
    seconds: float = 0.0


class SandboxError(RuntimeError):
    """The sandbox itself failed (a server that cannot start), not the student's code."""


def server_environment() -> dict:
    """Nothing from the grader's environment: only what the server needs to run."""
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": _PROJECT_ROOT, "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "LC_ALL": "C.UTF-8"}


def crash_message(reason: str) -> str:
    """A crashed case's error, phrased like a raised exception ("raised …")."""
    if reason == "timeout":
        return "Timeout: no result within the time limit"
    if reason == "memory":
        return "MemoryError: out of memory"
    return f"Crash: the sandbox process ended ({reason})"


class _Server:
    """One ``grader.worker`` process and the pipes to it."""

    def __init__(self):
        with _slots_lock:
            self.slot = next(_slots) % 1000
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grader.worker", "--slot", str(self.slot)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server_environment(),
                cwd=_PROJECT_ROOT, close_fds=True, start_new_session=True, bufsize=0)
        except OSError as error:
            raise SandboxError(f"cannot start a sandbox server: {error}") from error

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def run_job(self, job: dict, on_event, frame_limit: int, seconds: float) -> str:
        """Send one job; call ``on_event`` for each event; return the exit reason ("server died"
        if the server stopped answering)."""
        body = frames.encode(job)
        if len(body) > frames.MAX_FRAME:          # the server would refuse it: do not kill it with it
            return "job too large"
        try:
            frames.write_all(self.process.stdin.fileno(), frames.framed(body))
        except OSError:
            self.kill()
            return "server died"
        out = self.process.stdout.fileno()
        poller = select.poll()            # not select(): the grader may hold fds past 1024
        poller.register(out, select.POLLIN)
        splitter = frames.FrameSplitter(frame_limit)
        deadline = time.monotonic() + seconds
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not poller.poll(left * 1000):
                    self.kill()
                    return "timeout"
                chunk = os.read(out, 1 << 16)
                if not chunk:
                    self.kill()
                    return "server died"
                for body in splitter.feed(chunk):
                    event = frames.decode(body, limit=frame_limit)
                    if isinstance(event, dict) and event.get("event") == "exit":
                        reason = event.get("reason")
                        return reason if isinstance(reason, str) else "bad frame"
                    on_event(event)
        except frames.FrameError:
            self.kill()                 # the stream cannot be resynchronised
            return "bad frame"

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            pipe.close()

    def close(self, timeout: float = 5.0) -> None:
        """Close stdin (the server's signal to finish) and wait; kill if it lingers."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def _label(index: int, step: dict) -> str:
    if "label" in step:
        return str(step["label"])
    op = step.get("op")
    if op == "call":
        return f"{step.get('problem')}:{step.get('function')}"
    if op == "send":
        return f"send {step.get('problem')}"
    return f"step {index} ({op})"


def _text(value, limit: int = 2000) -> str:
    return value[:limit] if isinstance(value, str) else ""


class _Attempt:
    """Collects one child's events into a RunResult, checking each against the job sent.
    ``pending`` is the job's steps as (index in the caller's list, step)."""

    def __init__(self, pending: list, result: RunResult, reported_errors: set):
        self.pending, self.result, self.reported_errors = pending, result, reported_errors
        self.last_start = None          # (job step index, case or None)
        self.arrived_cases = set()      # (job step index, case)

    def _step(self, index):
        if type(index) is int and 0 <= index < len(self.pending):
            return self.pending[index][1]
        return None

    def __call__(self, event) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == "ready":
            layers = event.get("layers")
            if not self.result.layers and isinstance(layers, list):
                self.result.layers = [{"name": _text(x.get("name"), 100), "active": x.get("active") is True,
                                       "detail": _text(x.get("detail"))} for x in layers if isinstance(x, dict)]
        elif kind == "start":
            step, case = self._step(event.get("step")), event.get("case")
            if step is None:
                return
            if step.get("op") == "call":
                if type(case) is int and 0 <= case < len(step.get("cases", [])):
                    self.last_start = (event["step"], case)
            elif case is None:
                self.last_start = (event["step"], None)
        elif kind == "error":
            step = self._step(event.get("step"))
            if step is None or step.get("op") != "exec" or self.last_start != (event["step"], None):
                return
            original = self.pending[event["step"]][0]
            if original in self.reported_errors:        # a rerun repeats earlier cells' errors
                return
            self.reported_errors.add(original)
            line = event.get("line")
            self.result.errors.append(CellError(_label(original, step), _text(event.get("type"), 200),
                                                _text(event.get("message")),
                                                line if type(line) is int else None))
        elif kind == "values":
            if self.last_start is None or self.last_start[1] is not None:
                return
            step = self._step(self.last_start[0])
            if step.get("op") != "send" or event.get("problem") != step.get("problem"):
                return
            asked = [n for n in step.get("names", []) if isinstance(n, str)]
            values = event.get("values") if isinstance(event.get("values"), dict) else {}
            missing = event.get("missing") if isinstance(event.get("missing"), list) else []
            problem = step.get("problem")
            self.result.values.setdefault(problem, {}).update({n: values[n] for n in asked if n in values})
            self.result.missing[problem] = [n for n in asked if n in missing and n not in values]
        elif kind == "output":
            if self.last_start is None or self.last_start[1] is None:
                return
            step = self._step(self.last_start[0])
            if event.get("case") != self.last_start[1] or event.get("problem") != step.get("problem"):
                return
            output = (Output(True, event.get("value")) if event.get("ok") is True
                      else Output(False, None, _text(event.get("error")) or "an error"))
            self.result.outputs.setdefault(step.get("problem"), {})[self.last_start[1]] = output
            self.arrived_cases.add(self.last_start)

    def sent(self, job_index: int) -> bool:
        """Did this send step's values arrive?"""
        step = self.pending[job_index][1]
        return step.get("problem") in self.result.values or step.get("problem") in self.result.missing


class Sandbox:
    """``workers`` sandbox servers; ``run(steps)`` from any number of threads."""

    def __init__(self, workers: int = 1, limits: Limits = Limits()):
        if workers < 1:
            raise ValueError("a sandbox needs at least one worker")
        self.limits = limits
        self._idle: queue.Queue[_Server] = queue.Queue()
        self._servers: list[_Server] = []
        self._lock = threading.Lock()
        self._closed = False
        try:
            for _ in range(workers):
                self._add(_Server())
        except BaseException:
            self.close()
            raise

    def _add(self, server: _Server) -> None:
        with self._lock:
            self._servers.append(server)
        self._idle.put(server)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed, servers, self._servers = True, self._servers, []
        for server in servers:
            server.close()

    def _borrow(self) -> _Server:
        if self._closed:
            raise SandboxError("the sandbox is closed")
        server = self._idle.get()
        if server.alive:
            return server
        try:                                      # died between jobs: replace it
            replacement = _Server()
        except BaseException:
            self._idle.put(server)                # the next borrower tries again
            raise
        server.close()
        with self._lock:
            self._servers = [replacement if s is server else s for s in self._servers]
        return replacement

    def _give_back(self, server: _Server) -> None:
        self._idle.put(server)

    def _job(self, pending: list, attempt: _Attempt) -> str:
        job = {"steps": [step for _, step in pending], "limits": self.limits.for_job()}
        server = self._borrow()
        try:
            return server.run_job(job, attempt, int(self.limits.frame_mb) * MIB,
                                  float(self.limits.wall_seconds) + SERVER_GRACE_SECONDS)
        finally:
            self._give_back(server)

    def run(self, steps: list[dict]) -> RunResult:
        """Run a submission's steps (see /tmp/grader_contract.md) and return its values."""
        started = time.monotonic()
        result = RunResult()
        reported_errors: set = set()
        pending = [(i, dict(step)) for i, step in enumerate(steps)]
        for rerun in itertools.count():
            attempt = _Attempt(pending, result, reported_errors)
            reason = self._job(pending, attempt)
            if reason == "done":
                break
            if reason == "server died" and rerun < self.limits.restarts:
                continue                          # not the student's doing (the server runs no
                                                  # student code): the same job on a new server
            if attempt.last_start is None:        # died before any step: nothing to skip
                result.crashes.append(Crash("sandbox", None, reason))
                break
            pending = self._after_crash(pending, attempt, result, reason)
            if rerun >= self.limits.restarts or not pending:
                break
        result.seconds = time.monotonic() - started
        return result

    @staticmethod
    def _after_crash(pending: list, attempt: _Attempt, result: RunResult, reason: str) -> list:
        """Record the crash; the steps for the rerun."""
        crashed_at, case = attempt.last_start
        original, step = pending[crashed_at]
        result.crashes.append(Crash(_label(original, step), case, reason))
        if case is not None and (crashed_at, case) not in attempt.arrived_cases:
            result.outputs.setdefault(step.get("problem"), {})[case] = Output(False, None, crash_message(reason))
        rerun = []
        for index, (original, step) in enumerate(pending):
            op = step.get("op")
            if index < crashed_at:
                if op in ("exec", "set") or (op == "send" and not attempt.sent(index)):
                    rerun.append((original, step))      # calls before the crash all finished
            elif index == crashed_at:
                if op == "call" and case + 1 < len(step.get("cases", [])):
                    rerun.append((original, {**step, "first": case + 1}))
            else:
                rerun.append((original, step))
        return rerun


def explain(limits: Limits | None = None) -> list[dict]:
    """Which isolation layers hold on this machine, and why the others do not: asked of a live
    sandbox child (so it is what grading gets), or the static check if no child answers."""
    try:
        with Sandbox(1, limits or Limits()) as sandbox:
            layers = sandbox.run([]).layers
        if layers:
            return layers
    except SandboxError:
        pass
    return [{**x, "detail": x["detail"] + " (static check: no sandbox child answered)"}
            for x in isolation.explain()]
