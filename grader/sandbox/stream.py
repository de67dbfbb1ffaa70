"""One job's data stream on the grader's side (``Stream``): the child's bytes cut into frames,
each counted, decoded (``grader.sandbox.frames``: size and structure) and handed to the job's
``Attempt``. An ``exit`` event on the data pipe is ignored: only the server's control pipe ends
a job. A bad frame or too much output (a frame over ``frame_mb``, over ``OUTPUT_FACTOR`` of them
in all, or more frames than the job accounts for, ``frame_cap``: a flood of tiny frames would
cost a decode each) makes the grader ask the server to kill the child at once.
"""

from __future__ import annotations

from grader.budget import UNLIMITED, Budget, OverBudget

from . import frames, protocol
from .attempt import Attempt, same

OUTPUT_FACTOR = 4                 # a child may send at most this many frame limits in all
READING = "reading the sandbox's results"          # the budget's stage


class Stream:
    """One job's data stream: cut into frames, decoded, checked, passed on; the first thing
    wrong with it (a frame that does not decode, one too large, too much in all) stops it, and
    the child is killed at once (``stop``)."""

    def __init__(self, frame_limit: int, attempt: Attempt, stop, budget: Budget = UNLIMITED):
        self.frame_limit, self.attempt, self.stop, self.budget = frame_limit, attempt, stop, budget
        self.splitter = frames.FrameSplitter(frame_limit)
        self.total = 0
        self.frames = 0
        self.failure: str | None = None

    def feed(self, chunk: bytes) -> None:
        if self.failure is not None:
            return                              # the child is being killed: the rest is dropped
        self.total += len(chunk)
        try:
            if self.total > OUTPUT_FACTOR * self.frame_limit:
                raise frames.FrameTooLarge(f"more than {OUTPUT_FACTOR} frame limits in all")
            for body in self.splitter.feed(chunk):
                self._take(body)
        except OverBudget:
            raise                               # the caller's to handle: the server is killed on the way
        except frames.FrameTooLarge:
            self.failure = "output too large"
        except Exception:                       # FrameError, Forged; or a bad event the checks missed
            self.failure = "bad frame"
        if self.failure is not None:
            self.stop()

    def _take(self, body: bytes) -> None:
        """One frame: counted before it is decoded (a flood of tiny frames would cost a decode
        each), decoded, passed on, and paid for."""
        self.frames += 1
        if self.frames > self.attempt.frame_cap:
            raise frames.FrameTooLarge(f"more than the {self.attempt.frame_cap} frames its job accounts for")
        event = frames.decode(body, limit=self.frame_limit)
        # only the control pipe ends a job: an exit event here is ignored
        if not (isinstance(event, dict) and same(event.get("event"), protocol.EXIT)):
            self.attempt(event)
        self.budget.check(READING)

    def reason(self, server_reason: str) -> str:
        """Why the job ended, from the server's report and what the stream showed."""
        if self.failure is not None:
            return self.failure
        if self.splitter.pending:               # a frame cut short: dropped
            return server_reason if server_reason == protocol.TIMEOUT else "bad frame"
        if server_reason == protocol.exited(0) and self.attempt.done:
            return "done"
        if server_reason == protocol.STOPPED:          # (only ever asked for with a failure above)
            return "bad frame"
        return server_reason

