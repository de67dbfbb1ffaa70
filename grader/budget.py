"""What one submission may cost the trusted side, enforced.

The grader's own process (it holds the answer key and decides every score) does work for every
submission: it reads the file, parses it, builds the program, decodes the sandbox's frames,
compares values and writes notes. All of that is work a student chose the input of. The sizes
of what it accepts are capped where they are read (``grader.intake.reading``, ``grader.sandbox.frames``), so the
work is linear in bounded inputs; the budget is the second wall: CPU time spent *by the grader
thread that handles this submission*, checked at every stage, so no bug in a parser or a
comparison can turn one submission into the whole class's afternoon. Past its budget the
submission is recorded as ``error`` with the reason, and the batch goes on.

Why thread CPU time, not wall time: the machine is shared and noisy, and a wall clock would
charge a student for their neighbours; ``time.thread_time`` counts only what this thread did
(each submission is handled start to end on one sandbox thread, see ``grader.run.grading``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

CPU_SECONDS = 5.0        # far above what a normal submission costs the grader; a hostile one, this at most


class OverBudget(Exception):
    """A submission cost the grader more than its budget; the message says where."""


@dataclass
class Budget:
    """One submission's allowance of grader CPU time, started when its handling starts.

    ``check(stage)`` raises OverBudget once the thread has spent more than ``cpu_seconds``
    since ``start()``; call it between units of work whose own cost is bounded (a cell, a
    frame, a part), so the overshoot is at most one such unit."""
    cpu_seconds: float = CPU_SECONDS
    _started: float = field(default=0.0, repr=False)
    _started_wall: float = field(default=0.0, repr=False)

    def start(self) -> Budget:
        self._started, self._started_wall = time.thread_time(), time.monotonic()
        return self

    @property
    def spent(self) -> float:
        return time.thread_time() - self._started

    def check(self, stage: str) -> None:
        # A thread cannot have used more CPU than the time that has passed: until the budget
        # has passed on the clock, it cannot be spent. (The monotonic clock is read without a
        # system call; a thread's CPU clock is one, and this runs for every frame and part.)
        if time.monotonic() - self._started_wall <= self.cpu_seconds:
            return
        spent = self.spent
        if spent > self.cpu_seconds:
            raise OverBudget(f"this submission cost the grader more than its budget of "
                             f"{self.cpu_seconds:g} s of CPU ({spent:.1f} s, during {stage}): it is "
                             "not graded; hand in a notebook of ordinary size")


class Unlimited(Budget):
    """No limit (the default where no budget is given): ``check`` never raises."""

    def check(self, stage: str) -> None:
        return None


UNLIMITED = Unlimited()
