"""One sandbox server as the grader talks to it (``Channel``): a job sent, the child's frames
read into the job's ``Stream``, the hidden cases written when the child asks, the server's
report read.

A job goes out on the server's stdin (the child reads it); the child's frames come straight
back on the data pipe (the server's stdout); the server says how the child ended on the
control pipe, and only then is the job over: the data pipe is drained (the child is dead, so
all it wrote is there), a frame cut short is dropped (reason ``bad frame``), and the next job
starts with an empty stream.

Hidden cases never sit in a child before it reaches them: the job carries the number of a
call's cases, and the child asks for each one (``need``) when its turn comes; the grader then
writes that case's frame on the job pipe (``grader/sandbox/protocol.py``). A child may start a
case only once the pipe holds nothing unread (FIONREAD), and a server whose child died between
asking and starting is replaced: nothing left in its job pipe can become the next child's job.
"""

from __future__ import annotations

import array
import fcntl
import os
import select
import termios
import time

from grader.budget import UNLIMITED, Budget

from . import frames, protocol
from .attempt import Attempt
from .processes import Limits, ServerProcess
from .stream import Stream

_CONTROL_LIMIT = 4096             # the server's exit frame is a few dozen bytes


class Channel:
    """One sandbox server (``processes.ServerProcess``: the process and its four pipes) and the
    conversation with it: a job sent, the child's frames read and checked, its cases written."""

    def __init__(self, limits: Limits, started: ServerProcess | None = None):
        self.os_process = started if started is not None else ServerProcess(limits)
        p = self.os_process
        self.slot, self.process = p.slot, p.process
        self.control, self.stop, self.jobs, self.data = p.control, p.stop, p.jobs, p.data

    @property
    def alive(self) -> bool:
        return self.os_process.alive

    def run_job(self, job: bytes, attempt: Attempt, frame_limit: int, seconds: float,
                budget: Budget = UNLIMITED) -> str:
        """Send one job (a frame body); pass each event to ``attempt`` and write the cases it
        asks for; return the exit reason ("done" when every step ran; "server died" if the
        server stopped answering). OverBudget from ``budget`` goes to the caller."""
        deadline = time.monotonic() + seconds
        self._read_data()                       # stale bytes (nothing should be there): dropped
        reason = self._send(frames.framed(job), deadline)
        if reason is not None:
            return reason
        attempt.unread = self._unread
        stream = Stream(frame_limit, attempt, self._ask_stop, budget)
        if not self._follow(stream, attempt, deadline):
            self.kill()
            return protocol.TIMEOUT
        try:
            report = frames.read_frame(self.control, limit=_CONTROL_LIMIT)
        except frames.FrameError:
            report = None
        if not (isinstance(report, dict) and isinstance(report.get("reason"), str)):
            self.kill()
            return "server died"
        self._read_data(stream)                 # the child is dead: all it wrote is in the pipe
        reason = stream.reason(report["reason"])
        if not attempt.ready or attempt.asked is not None:
            # the child may have died before it read its whole job, or a case it asked for, and
            # the rest would be the next child's "job": this server's job pipe is out of step
            self.kill()
        return reason

    def _follow(self, stream: Stream, attempt: Attempt, deadline: float) -> bool:
        """Pass the child's frames to ``stream`` and write the case frames ``attempt`` holds,
        until the server reports (True) or the deadline passes (False)."""
        poller = select.poll()                  # not select(): the grader may hold fds past 1024
        poller.register(self.data, select.POLLIN)
        poller.register(self.control, select.POLLIN)
        reading, writing = True, False
        while True:
            if stream.failure is not None:
                # the child is being stopped: it gets nothing more, and what it still writes is
                # left in the pipe (a pipe's worth at most, dropped before the next job)
                attempt.outbox.clear()
                if reading:
                    reading = False
                    poller.unregister(self.data)
            if bool(attempt.outbox) != writing:
                writing = not writing
                if writing:
                    poller.register(self.jobs, select.POLLOUT)
                else:
                    poller.unregister(self.jobs)
            left = deadline - time.monotonic()
            ready = dict(poller.poll(left * 1000)) if left > 0 else {}
            if not ready:
                return False
            if self.data in ready and not self._read_data(stream):
                reading = False                 # end of file: the server is gone (control says so next)
                poller.unregister(self.data)
            if self.jobs in ready:
                self._write(attempt.outbox)
            if self.control in ready:
                return True

    def _write(self, outbox: bytearray) -> None:
        """Write what the job pipe takes now of ``outbox`` (the rest waits for POLLOUT)."""
        try:
            del outbox[:os.write(self.jobs, outbox)]
        except BlockingIOError:
            pass
        except OSError:                         # the server is gone: its report (or hang-up) comes next
            outbox.clear()

    def _unread(self) -> int:
        """Bytes in the job pipe that no child has read yet (0 where the system cannot tell:
        Linux answers FIONREAD on a pipe's write end)."""
        count = array.array("i", [0])
        try:
            fcntl.ioctl(self.jobs, termios.FIONREAD, count, True)
        except OSError:
            return 0
        return count[0]

    def _send(self, data: bytes, deadline: float) -> str | None:
        """Write a whole job frame; a reason if that failed (the server is then killed)."""
        view = memoryview(data)
        poller = select.poll()
        poller.register(self.jobs, select.POLLOUT)
        poller.register(self.control, select.POLLIN)     # a report before the job is in: out of step
        while view:
            left = deadline - time.monotonic()
            ready = dict(poller.poll(left * 1000)) if left > 0 else {}
            if not ready:
                self.kill()
                return protocol.TIMEOUT
            if self.control in ready or ready.get(self.jobs, 0) & (select.POLLERR | select.POLLHUP):
                self.kill()
                return "server died"
            try:
                view = view[os.write(self.jobs, view):]
            except BlockingIOError:
                pass
            except OSError:
                self.kill()
                return "server died"
        return None

    def _read_data(self, stream: Stream | None = None) -> bool:
        """Read what the data pipe holds now (to ``stream``, or dropped); False at end of file.
        Once ``stream`` has failed, nothing more: a child writing as fast as it can would keep
        the grader reading until it is killed."""
        while stream is None or stream.failure is None:
            try:
                chunk = os.read(self.data, 1 << 16)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            if stream is not None:
                stream.feed(chunk)
        return True

    def _ask_stop(self) -> None:
        self.os_process.ask_stop()

    def kill(self) -> None:
        self.os_process.kill()

    def close(self, timeout: float = 5.0) -> None:
        self.os_process.close(timeout)

