"""The server's watch over one child: until it exits, its deadline passes or the grader asks
to stop it; then its process group killed, the child reaped, and the exit reason named in the
protocol's words. Imported by the sandbox server (the standard library, ``protocol`` and the
child's exit statuses only).
"""

from __future__ import annotations

import os
import select
import signal
import time

from . import protocol
from .child import EXIT_MEMORY


def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):    # kill: in case setsid has not run yet
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _exit_reason(status: int, rusage, cpu_seconds: float) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        cpu = rusage.ru_utime + rusage.ru_stime
        if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= cpu_seconds):
            return protocol.TIMEOUT
        return protocol.signalled(number)
    code = os.WEXITSTATUS(status)
    if code == EXIT_MEMORY:
        return protocol.MEMORY
    return protocol.exited(code)


def _open_pidfd(pid: int):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def watch(pid: int, stop_fd: int, wall_seconds: float, cpu_seconds: float) -> tuple[str, int]:
    """Wait for the child until it exits, the deadline passes or the grader asks to stop it;
    then kill its process group (whatever it started dies with it) and reap it. Returns the
    exit reason and the raw wait status."""
    deadline = time.monotonic() + wall_seconds
    pidfd = _open_pidfd(pid)          # readable once the child exits
    poller = select.poll()            # not select(): no limit on descriptor numbers
    poller.register(stop_fd, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    ended, waited = None, None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                ended = protocol.TIMEOUT
                break
            # without a pidfd (not Linux, or Linux < 5.3), look every 5 ms
            ready = {fd for fd, _ in poller.poll(left * 1000 if pidfd is not None else min(left * 1000, 5))}
            if stop_fd in ready:
                ended = protocol.STOPPED
                break
            if pidfd is not None:
                if pidfd in ready:
                    break
            else:
                found = os.wait4(pid, os.WNOHANG)
                if found[0] == pid:
                    waited = found    # (a process group outlives its leader's pid: killpg below still works)
                    break
    finally:
        _kill_group(pid)
        if pidfd is not None:
            os.close(pidfd)
    _, status, rusage = waited or os.wait4(pid, 0)
    return ended or _exit_reason(status, rusage, cpu_seconds), status

