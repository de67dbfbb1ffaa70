"""The grader's side of the sandbox: sends a submission's steps to a sandbox server and gets
back only the student's values, validated (``Sandbox.run``; ``explain``: which walls hold here).

The grader (the trusted process, which holds the answer key) never forks student code: forked
children share their parent's memory image. It starts ``servers`` sandbox servers with
``sys.executable -m grader.sandbox.server`` (a fresh interpreter, clean environment) and talks to them
over pipes only; each server forks a walled-in child per job and never holds a job or a result
itself (``grader/sandbox/server.py``; ``grader/sandbox/protocol.py`` describes the pipes, the
steps and the events; ``grader/sandbox/walls.py`` the walls). ``Sandbox.run`` is thread-safe:
each call borrows a free server (``grader/sandbox/pool.py``). One job's traffic with its server
is ``grader/sandbox/channel.py``; every frame is checked — size and structure
(``grader/sandbox/frames.py``, whose ``decode`` raises nothing but FrameError, in
``grader/sandbox/stream.py``) and then against the job that was sent
(``grader/sandbox/attempt.py``); what comes back is a ``RunResult``
(``grader/sandbox/results.py``). The case frames of a run's calls are made once per run, from
the steps the caller gave (which keep their ``cases``).

A crash — ``os._exit`` in a cell, a timeout, a memory bomb, a segfault — costs only the step
that was running: the run starts again in a fresh child without that step, and without the
``send``/``call`` steps whose results already arrived; earlier exec steps run again to rebuild
the namespace (their errors are reported once). A crash inside a ``call`` costs that case and
the cases after it, which are recorded as not run ("not run: an earlier hidden case timed
out"): a function that hangs on one hidden case would most likely hang on the next ones too, and each would
cost a whole deadline and a rerun. At most ``limits.restarts`` reruns per submission: each
crash removes at least one step, and each rerun repeats the cells before it, so this is what
bounds a submission's time; when it is used up, ``RunResult.stopped`` says so and
``RunResult.not_run`` names the steps that never ran. A child can still claim the next step
early and loop on in the current one (the timeout is then that step's, and the rerun repeats the
loop): so at most ``limits.timeouts`` timeouts per submission, after which the run stops the
same way. A submission costs at most ``timeouts × wall_seconds`` of a server in deadlines,
however it lies.

``run(steps, budget)`` checks ``budget`` (``grader/budget.py``: the grader's CPU time for this
submission) after every frame it decodes and before every try; its OverBudget leaves ``run``
(the server, mid-job, is killed and replaced when next borrowed). ``run`` raises for nothing
else a student controls: a job that cannot even be sent (more code than a frame holds) comes
back as a RunResult with the crash "job too large".
"""

from __future__ import annotations

import itertools
import time

from grader.budget import UNLIMITED, Budget

from . import frames, protocol, walls
from .attempt import Attempt, first_case
from .pool import ServerPool
from .processes import Limits, SandboxError, ServerProcess
from .results import Crash, Output, RunResult, crash_message, not_run_message, step_label

MIB = 2**20
SERVER_GRACE_SECONDS = 30.0       # beyond the job's own deadline, before a silent server is replaced
SENDING = "sending the submission to the sandbox"          # the budget's stage


class Sandbox(ServerPool):
    """``servers`` sandbox servers; ``run(steps)`` from any number of threads."""

    def _job(self, body: bytes, attempt: Attempt, budget: Budget) -> str:
        server = self.borrow()
        try:
            return server.run_job(body, attempt, int(self.limits.frame_mb) * MIB,
                                  float(self.limits.wall_seconds) + SERVER_GRACE_SECONDS, budget)
        except BaseException:
            server.kill()         # interrupted mid-job: its pipes are out of step; replaced when next borrowed
            raise
        finally:
            self.give_back(server)

    def _encode(self, pending: list) -> bytes | None:
        """The job frame's body (each call with the number of its cases, never the cases);
        None if it cannot be sent (over a frame's limits)."""
        try:
            body = frames.encode(protocol.job([step for _, step in pending], self.limits.for_job()))
        except frames.FrameError:
            return None
        return body if len(body) <= frames.MAX_FRAME else None

    @staticmethod
    def _case_frames(pending: list) -> dict | None:
        """Each hidden case as the frame a child gets when it asks for it, by (index in the
        caller's list, case): made once per run, a rerun sends the same. None if one cannot be
        sent (over a frame's limits)."""
        found = {}
        for original, step in pending:
            if step.get("op") != protocol.CALL:
                continue
            for case in range(first_case(step), len(step.get("cases", []))):
                try:
                    body = frames.encode(protocol.case_frame(step.get("problem"), case, step["cases"][case]))
                except frames.FrameError:
                    return None
                if len(body) > frames.MAX_FRAME:
                    return None
                found[(original, case)] = frames.framed(body)
        return found

    def run(self, steps: list[dict], budget: Budget = UNLIMITED) -> RunResult:
        """Run a submission's steps (``grader/sandbox/protocol.py`` describes them) and return its values.
        ``budget`` is checked for every frame read and every try; its OverBudget is raised
        from here (the server that was running the job is replaced)."""
        started = time.monotonic()
        result = RunResult()
        reported_errors: set = set()
        pending = [(i, dict(step)) for i, step in enumerate(steps)]
        cases = self._case_frames(pending)
        timeouts = 0
        for rerun in itertools.count():
            budget.check(SENDING)
            body = None if cases is None else self._encode(pending)
            if body is None:
                result.crashes.append(Crash("sandbox", None, "job too large"))
                self._stop(result, pending, "job too large")
                break
            attempt = Attempt(pending, result, reported_errors, cases)
            reason = self._job(body, attempt, budget)
            if reason == "done":
                break
            if reason == "server died" and rerun < self.limits.restarts:
                continue                          # not the student's doing (the server runs no
                                                  # student code): the same job on a new server
            if attempt.last_start is None:        # died before any step: nothing to skip
                result.crashes.append(Crash("sandbox", None, reason))
                self._stop(result, pending, f"the sandbox failed before any step ran ({reason})")
                break
            pending, never_ran = self._after_crash(pending, attempt, result, reason)
            if not pending:
                break
            timeouts += reason == protocol.TIMEOUT
            if timeouts >= self.limits.timeouts:
                # a child can claim the next step early and loop on: each timeout would cost a
                # deadline and a rerun; this bounds a submission's server time however it lies
                self._stop(result, never_ran, f"too many timeouts ({timeouts})")
                break
            if rerun >= self.limits.restarts:
                self._stop(result, never_ran, f"too many crashes ({len(result.crashes)})")
                break
        result.seconds = time.monotonic() - started
        return result

    @staticmethod
    def _stop(result: RunResult, never_ran: list, why: str) -> None:
        result.stopped = why
        result.not_run = [step_label(original, step) for original, step in never_ran]

    @staticmethod
    def _after_crash(pending: list, attempt: Attempt, result: RunResult, reason: str) -> tuple[list, list]:
        """Record the crash; the steps for the rerun, and those of them that never ran (none:
        no rerun, since repeating the cells before the crash would give nothing new)."""
        crashed_at, case = attempt.last_start
        original, step = pending[crashed_at]
        result.crashes.append(Crash(step_label(original, step), case, reason))
        if case is not None:
            outputs = result.outputs.setdefault(step.get("problem"), {})
            if (crashed_at, case) not in attempt.arrived_cases:
                outputs[case] = Output(False, None, crash_message(reason))
            for later in range(case + 1, len(step.get("cases", []))):
                outputs.setdefault(later, Output(False, None, not_run_message(reason)))
        rerun, never_ran = [], []
        for index, (original, step) in enumerate(pending):
            op = step.get("op")
            if index < crashed_at:
                if op in (protocol.EXEC, protocol.SET):
                    rerun.append((original, step))      # to rebuild the namespace
                elif op == protocol.SEND and not attempt.sent(index):
                    rerun.append((original, step))      # (calls before the crash all finished)
                    never_ran.append((original, step))
            elif index > crashed_at:
                rerun.append((original, step))
                never_ran.append((original, step))
        return (rerun, never_ran) if never_ran else ([], [])


def explain(limits: Limits | None = None, bare: bool = False, sandbox: Sandbox | None = None) -> list[dict]:
    """Which walls hold on this machine, and why the others do not: asked of a live sandbox
    child (so it is what grading gets), or the static check if no child answers. ``bare``:
    of a server without the imports and warm-up student code wants (the same walls, started
    for a fifth of the CPU; its address-space detail names its own, smaller size at fork).
    ``sandbox``: of a child of these servers, already started for grading."""
    limits = limits or Limits()
    try:
        if sandbox is not None:
            held = sandbox.run([]).walls
        else:
            with Sandbox(1, limits, started=[ServerProcess(limits, bare=True)] if bare else ()) as own:
                held = own.run([]).walls
        if held:
            return held
    except SandboxError:
        pass
    return [{**x, "detail": x["detail"] + " (static check: no sandbox child answered)"}
            for x in walls.explain()]
