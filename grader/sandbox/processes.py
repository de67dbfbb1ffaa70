"""Sandbox server processes: started, stopped, nothing else — and no NumPy.

Kept apart from the client so a command can start its servers first and import NumPy while
they boot (``attnkit check`` spends most of its half second on the two): a fresh server
imports NumPy itself, and the two overlap. The conversation with a running server (jobs,
frames, cases) is the client's (``grader.sandbox.channel``); its words are the protocol's.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])    # where `grader` is importable from
_slots = itertools.count()        # one uid per server started by this process (see walls.Walls)
_slots_lock = threading.Lock()
_SLOTS = 1000
_first_slot, _slot_span = 0, _SLOTS


def share_slots(part: int, parts: int) -> None:
    """From now on this process's servers take their slots from the ``part``-th of ``parts``
    equal ranges: a grading process (part 0) and the judges it forks (grader.run.judges) start
    servers of their own, and no two may share a slot's uid."""
    global _first_slot, _slot_span
    with _slots_lock:
        _slot_span = _SLOTS // parts
        _first_slot = part * _slot_span


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 10.0     # per child (one try of a submission), enforced by the server
    cpu_seconds: int = 10
    memory_mb: int = 1024          # address space on top of the child's size at fork
    file_size_mb: int = 1
    open_files: int = 64
    frame_mb: int = 32             # one frame from the child; a child sends at most 4× this in all
    restarts: int = 8              # reruns after crashes, per submission (see grader.sandbox.client)
    timeouts: int = 2              # timeouts per submission before the run stops (likewise)

    def for_job(self) -> dict:
        return {"wall_seconds": float(self.wall_seconds), "cpu_seconds": int(self.cpu_seconds),
                "memory_mb": int(self.memory_mb), "file_size_mb": int(self.file_size_mb),
                "open_files": int(self.open_files), "frame_mb": int(self.frame_mb)}


class SandboxError(RuntimeError):
    """The sandbox itself failed (a server that cannot start), not the student's code."""


def server_environment() -> dict:
    """Nothing from the grader's environment: only what the server needs to run."""
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": _PROJECT_ROOT, "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "LC_ALL": "C.UTF-8"}



def server_command(slot: int, limits: Limits, control_fd: int, stop_fd: int,
                   bare: bool = False) -> list[str]:
    """The command line of one sandbox server (``grader/sandbox/server.py``; its options:
    ``grader/sandbox/protocol.py``); ``bare``: without the imports and warm-up a student's code
    wants (a server asked only which walls hold)."""
    return [sys.executable, "-m", "grader.sandbox.server", "--slot", str(slot),
            "--control", str(control_fd), "--stop", str(stop_fd),
            "--wall-seconds", repr(float(limits.wall_seconds)),
            "--cpu-seconds", repr(float(limits.cpu_seconds)), *(["--bare"] if bare else [])]


class ServerProcess:
    """One ``grader.sandbox.server`` process and the four pipes to it: jobs (its stdin), data (its
    stdout, written by its children), control (its exit reports) and stop (our kill requests)."""

    def __init__(self, limits: Limits, bare: bool = False):
        with _slots_lock:
            self.slot = _first_slot + next(_slots) % _slot_span
        control_read, control_write = os.pipe()
        stop_read, stop_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                server_command(self.slot, limits, control_write, stop_read, bare),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=server_environment(),
                cwd=_PROJECT_ROOT, close_fds=True, pass_fds=(control_write, stop_read),
                start_new_session=True, bufsize=0)
        except OSError as error:
            os.close(control_read)
            os.close(stop_write)
            raise SandboxError(f"cannot start a sandbox server: {error}") from error
        finally:
            os.close(control_write)
            os.close(stop_read)
        self.control, self.stop = control_read, stop_write
        self.jobs, self.data = self.process.stdin.fileno(), self.process.stdout.fileno()
        for fd in (self.jobs, self.data, self.stop):
            os.set_blocking(fd, False)
        self._closed = False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def ask_stop(self) -> None:
        """A byte on the stop pipe: the server kills the running child now."""
        try:
            os.write(self.stop, b"k")
        except OSError:                         # full (cannot be: one byte per job) or the server is gone
            pass

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait()
        self._close_pipes()

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
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self._closed:
            return
        self._closed = True
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        for fd in (self.control, self.stop):
            os.close(fd)


def start_servers(count: int, limits: Limits) -> list[ServerProcess]:
    """``count`` servers, started now (they boot on their own while the caller goes on)."""
    started: list[ServerProcess] = []
    try:
        for _ in range(count):
            started.append(ServerProcess(limits))
    except BaseException:
        for server in started:
            server.kill()
        raise
    return started
