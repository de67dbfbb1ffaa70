"""The sandbox server: forks one walled-in child per job and never holds a job.

Started by the grader (``grader/sandbox/processes.py``) as ``python -m grader.sandbox.server`` with a
clean environment (the command line, the pipes, the job, its steps and the events a child sends
are the protocol's: ``grader/sandbox/protocol.py``), it imports numpy and what students commonly
import once, prepares the walls (``grader/sandbox/walls.py``), then serves jobs for as long as it
lives. Why a long-lived server that forks: a fresh interpreter per submission would start
Python and import numpy again before the first line of student code; a fork of a process
that has numpy already skips all of that.
Why the grader does not fork itself: a forked child has a copy of its parent's memory, and the
grader holds the answer key.

Why the server never reads a job: a child has a copy of its parent's heap, and freed memory is
not wiped. A server that read jobs and relayed results would hand each child the remnants of
earlier jobs — other students' code, their values — readable with ctypes. So the server only
ever holds what a fresh interpreter holds, plus the walls and what running the kit's own
made-up job once at start left (``grader/sandbox/warming.py``: code the children would otherwise
warm each time from cold, copying it page by page). It is a zygote in the Android sense: a warm
process that only forks:

    wait until stdin is readable (poll; nothing read) → fork → wait for the child (deadline)
    → kill its process group → one ``exit`` frame on the control pipe

(the waiting, the killing and the exit reason: ``grader/sandbox/child_watch.py``). The child does
the rest itself (``grader/sandbox/child.py``): it reads its own job frame from stdin, applies the
walls (``session``, ``network``, ``landlock``, ``fds``, ``rlimits``, ``uid``, ``seccomp``; its data
pipe becomes fd 3, its job pipe fd 4, stdio /dev/null, every other descriptor closed — the
control pipe first of all), sends ``ready``, runs the steps in one namespace as a notebook would
(an exception is reported and the next cell runs), and writes its frames straight to the grader
over the data pipe (the server's stdout). The grader checks every one of them
(``grader/sandbox/frames.py`` for size and structure, ``grader/sandbox/attempt.py`` against the
job it sent, including the order of the ``start`` and ``need`` events).

Values are what ``grader.sandbox.frames`` carries (no pickle); one that cannot cross arrives as
``Unsupported``, so the grader can still say what it was. The server side imports only the
standard library, numpy and its own modules (``frames``, ``protocol``, ``walls`` and the walls'
modules, ``child``, ``emitter``, ``warming``, ``child_watch``, ``plot_stubs``) — never
``exercises`` or ``solutions``.
"""

from __future__ import annotations

import fcntl
import gc
import os
import select
import sys

from . import frames, protocol
from .child import EXIT_BROKEN, EXIT_MEMORY, EXIT_NO_JOB, run_own_job
from .child_watch import watch
from .emitter import PIPE_SIZE
from .plot_stubs import PlotStubs
from .walls import Walls, preimport
from .warming import warm_up


# --- the server: forks, waits, kills, reports -------------------------------------------------

def _drain(fd: int) -> None:
    """Read whatever is waiting on a non-blocking descriptor (a stale stop request)."""
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _hung_up(fd: int) -> bool:
    """Is ``fd`` at end of file right now? (Linux says POLLHUP, macOS says readable.)"""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _reset_pipes(*fds: int) -> None:
    """The job and data pipes are shared by every child of this server: undo what a child may
    have changed on them (blocking mode, async signals, a shrunk buffer), so one student can
    never cost the next their values. Seccomp denies these changes already where it runs."""
    for fd in fds:
        try:
            fcntl.fcntl(fd, fcntl.F_SETFL, 0)                       # blocking, no O_ASYNC
            fcntl.fcntl(fd, fcntl.F_SETOWN, 0)
            if hasattr(fcntl, "F_SETPIPE_SZ"):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            pass


def serve(walls: Walls, job_fd: int, data_fd: int, control_fd: int, stop_fd: int,
          wall_seconds: float, cpu_seconds: float) -> int:
    """Fork a child for each job that arrives on ``job_fd`` until its end of file. The server
    reads nothing from ``job_fd`` or ``data_fd``: every job byte lives only in its child."""
    os.set_blocking(stop_fd, False)
    poller = select.poll()
    poller.register(job_fd, select.POLLIN)
    while True:
        mask = dict(poller.poll()).get(job_fd, 0)
        if not mask & select.POLLIN:                # hung up with nothing to read: we are done
            return 0
        _drain(stop_fd)                              # a stop for the previous child, come too late
        _reset_pipes(job_fd, data_fd)                # whatever the previous child did to them
        walls.note_size()                            # (the child's size at fork, read here)
        pid = os.fork()
        if pid == 0:                                 # the child never returns from here
            status = EXIT_BROKEN
            try:
                status = run_own_job(walls, job_fd, data_fd, (control_fd, stop_fd))
            except MemoryError:
                status = EXIT_MEMORY
            except BaseException:
                status = EXIT_BROKEN
            finally:
                os._exit(status)
        reason, status = watch(pid, stop_fd, wall_seconds, cpu_seconds)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EXIT_NO_JOB and _hung_up(job_fd):
            return 0                                 # (macOS: a pipe at its end polls readable)
        try:
            frames.write_frame(control_fd, protocol.exit_event(reason))
        except BrokenPipeError:                      # the grader is gone
            return 0


def _private_stdio() -> tuple[int, int]:
    """The job and data pipes on private descriptors; fds 0 and 1 become /dev/null, so a stray
    print (a library's warning) can never corrupt the frame stream."""
    job_fd, data_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return job_fd, data_fd


def _option(argv: list[str], name: str, default: str | None = None) -> str:
    if name in argv:
        return argv[argv.index(name) + 1]
    if default is None:
        raise SystemExit(f"grader.sandbox.server: {name} is required")
    return default


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    slot = int(_option(argv, "--slot", "0"))
    control_fd, stop_fd = int(_option(argv, "--control")), int(_option(argv, "--stop"))
    wall_seconds = float(_option(argv, "--wall-seconds", "10"))
    cpu_seconds = float(_option(argv, "--cpu-seconds", "10"))
    bare = "--bare" in argv                   # (asked only which walls hold: no student code)
    job_fd, data_fd = _private_stdio()
    if not bare:
        preimport()
    sys.meta_path.insert(0, PlotStubs())
    walls = Walls(slot)
    walls.enter_namespaces()                  # once: every child runs in them (walls: network)
    if not bare:
        warm_up()                             # children inherit warm code (and no student's data)
    # Every object so far is shared with each child copy-on-write; a garbage collection in the
    # child would touch (and so copy) all of them. Frozen, the collector leaves them alone.
    gc.freeze()
    return serve(walls, job_fd, data_fd, control_fd, stop_fd, wall_seconds, cpu_seconds)


if __name__ == "__main__":
    sys.exit(main())
