"""The grader's side of the sandbox: sends a submission's steps to a sandbox server and gets
back only the student's values, validated.

The grader (the trusted process, which holds the answer key) never forks student code: forked
children share their parent's memory image. It starts ``servers`` sandbox servers with
``sys.executable -m grader.sandbox.server`` (a fresh interpreter, clean environment) and talks to them
over pipes only; each server forks a walled-in child per job and never holds a job or a result
itself (``grader/sandbox/server.py``; ``grader/sandbox/protocol.py`` describes the pipes, the
steps and the events; ``grader/sandbox/walls.py`` the walls). ``Sandbox.run`` is thread-safe:
each call borrows a free server.

A job goes out on the server's stdin (the child reads it); the child's frames come straight
back on the data pipe (the server's stdout); the server says how the child ended on the
control pipe, and only then is the job over: the data pipe is drained (the child is dead, so
all it wrote is there), a frame cut short is dropped (reason ``bad frame``), and the next job
starts with an empty stream. Every frame is checked here — size and structure
(``grader/sandbox/frames.py``, whose ``decode`` raises nothing but FrameError) and then against the job
that was sent. The grader knows the one order of ``start`` events a job allows (every step but a
call, then each case of a call from ``first`` on: ``expected_starts``) and takes a start only if
it is the next one due, after the previous case's output or send step's values. Anything else —
a start naming another step (a loop in one cell would be blamed on an unrelated one, and the run
restarted until its limit), a case asked for out of turn, a second ``ready``, ``done`` before the
last step — is a forgery (``Forged``): the stream fails ("bad frame") and the crash is charged to
the step that was legitimately running, the last valid start. Error, values and output events
count only for the step running, once, and values only for the names that step asked for — so
a forged event can at most submit values, what the student was asked to do anyway — and an
``exit`` event on the data pipe is ignored. A bad frame or too much output (a frame over
``frame_mb``, over ``OUTPUT_FACTOR`` of them in all, or more frames than the job accounts for,
``frame_cap``: a flood of tiny frames would cost a decode each) makes the grader ask the server
to kill the child at once.

Hidden cases never sit in a child before it reaches them: the job carries the number of a
call's cases, and the child asks for each one (``need``) when its turn comes; the grader then
writes that case's frame on the job pipe (``grader/sandbox/protocol.py``). The frames are made once per run,
from the steps the caller gave (which keep their ``cases``). A child may start a case only once
the pipe holds nothing unread (FIONREAD), and a server whose child died between asking and
starting is replaced: nothing left in its job pipe can become the next child's job.

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

import array
import fcntl
import itertools
import os
import queue
import select
import termios
import threading
import time
from dataclasses import dataclass, field

from grader.budget import UNLIMITED, Budget, OverBudget

from . import frames, protocol, walls
from .processes import Limits, SandboxError, ServerProcess

MIB = 2**20
SERVER_GRACE_SECONDS = 30.0       # beyond the job's own deadline, before a silent server is replaced
OUTPUT_FACTOR = 4                 # a child may send at most this many frame limits in all
FRAME_SLACK = 8                   # frames beyond what its job accounts for (see frame_cap)
MAX_WALLS = 16                    # walls kept from a ready event (there are 8)
READING = "reading the sandbox's results"          # the budget's stages
SENDING = "sending the submission to the sandbox"
_CONTROL_LIMIT = 4096             # the server's exit frame is a few dozen bytes


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
    """A step that ended its child: ``reason`` is why ("timeout", "memory", "signal 11",
    "exit 0", "output too large", "bad frame", "server died"). The label "sandbox" (case None)
    is a run that failed before any step: "job too large", or the child's machinery failed."""
    label: str
    case: int | None
    reason: str


@dataclass
class RunResult:
    """The student's values for one submission. A problem whose ``send`` never completed (a
    crash, see ``crashes``) is absent from ``values`` and ``missing``. A call case skipped after
    an earlier case of the same call crashed is a failed Output ("not run: an earlier hidden
    case timed out"); a call case never run because the run stopped is absent from ``outputs``.

    ``stopped`` is empty when every step ran or was skipped for its own crash; otherwise it says
    why the run ended early ("too many crashes (9)", "too many timeouts (2)", "job too large", …),
    and ``not_run`` holds the labels of the steps that never ran, so later problems can be given
    that cause."""
    values: dict = field(default_factory=dict)       # pid → {name: value}
    missing: dict = field(default_factory=dict)      # pid → [names the student never defined]
    outputs: dict = field(default_factory=dict)      # pid → {case index: Output}
    errors: list = field(default_factory=list)       # [CellError]
    crashes: list = field(default_factory=list)      # [Crash]
    walls: list = field(default_factory=list)        # [{"name", "active", "detail"}]: the walls that held
    seconds: float = 0.0
    stopped: str = ""
    not_run: list = field(default_factory=list)      # [step label]


def crash_message(reason: str) -> str:
    """A crashed case's error, phrased like a raised exception ("raised …")."""
    if reason == protocol.TIMEOUT:
        return "Timeout: no result within the time limit"
    if reason == protocol.MEMORY:
        return "MemoryError: out of memory"
    return f"Crash: the sandbox process ended ({reason})"


def not_run_message(reason: str) -> str:
    """A case skipped because an earlier case of the same call crashed. Not numbered: the
    feedback numbers a function's cases within each test family, the call across them."""
    if reason == protocol.TIMEOUT:
        return "not run: an earlier hidden case timed out"
    if reason == protocol.MEMORY:
        return "not run: an earlier hidden case ran out of memory"
    return f"not run: an earlier hidden case crashed the sandbox ({reason})"


class _Server:
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

    def run_job(self, job: bytes, attempt: _Attempt, frame_limit: int, seconds: float,
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
        stream = _Stream(frame_limit, attempt, self._ask_stop, budget)
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

    def _follow(self, stream: _Stream, attempt: _Attempt, deadline: float) -> bool:
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

    def _read_data(self, stream: _Stream | None = None) -> bool:
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


class _Stream:
    """One job's data stream: cut into frames, decoded, checked, passed on; the first thing
    wrong with it (a frame that does not decode, one too large, too much in all) stops it, and
    the child is killed at once (``stop``)."""

    def __init__(self, frame_limit: int, attempt: _Attempt, stop, budget: Budget = UNLIMITED):
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
        if not (isinstance(event, dict) and _is(event.get("event"), protocol.EXIT)):
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


def send_label(problem) -> str:
    """How crashes name the step that sends a problem's values back."""
    return f"send {problem}"


def _label(index: int, step: dict) -> str:
    if "label" in step:
        return str(step["label"])
    op = step.get("op")
    if op == protocol.CALL:
        return f"{step.get('problem')}:{step.get('function')}"
    if op == protocol.SEND:
        return send_label(step.get("problem"))
    return f"step {index} ({op})"


def _text(value, limit: int = 2000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _is(value, expected) -> bool:
    """``value == expected`` for a value from the child, which may be anything (a numpy array
    compared with ``==`` gives an array, and its truth raises)."""
    return type(value) is type(expected) and value == expected


class Forged(Exception):
    """An event that a child following its job could not have sent (a start out of turn, a
    case asked for early, a second ``ready``, ``done`` before the last step): the stream fails
    ("bad frame"), the child is stopped, and the crash is charged to the last valid start."""


def _first(step: dict) -> int:
    return max(0, int(step.get("first", 0)))


def expected_starts(pending: list) -> list:
    """The ``start`` events a child must send for a job, in order, as (job index, case or
    None): one per step but a call, one per case of a call from ``first`` on."""
    starts = []
    for index, (_, step) in enumerate(pending):
        if step.get("op") == protocol.CALL:
            starts += [(index, case) for case in range(_first(step), len(step.get("cases", [])))]
        else:
            starts.append((index, None))
    return starts


def frame_cap(pending: list) -> int:
    """The most frames a child following this job sends: ready and done; a start per step,
    plus an error per exec step and a values per send; need, start and output per case."""
    count = 2 + FRAME_SLACK
    for _, step in pending:
        op = step.get("op")
        if op == protocol.CALL:
            count += 3 * max(0, len(step.get("cases", [])) - _first(step))
        else:
            count += 2 if op in (protocol.EXEC, protocol.SEND) else 1
    return count


class _Attempt:
    """Collects one child's events into a RunResult, checking each against the job sent.
    ``pending`` is the job's steps as (index in the caller's list, step); ``cases`` the case
    frames to write when the child asks, by (index in the caller's list, case). Every event is
    whatever the child chose to write: nothing in it is trusted but its type-checked parts,
    and the order of starts is the grader's, not the child's (``expected_starts``)."""

    def __init__(self, pending: list, result: RunResult, reported_errors: set, cases: dict):
        self.pending, self.result, self.reported_errors, self.cases = pending, result, reported_errors, cases
        self.expected = expected_starts(pending)
        self.frame_cap = frame_cap(pending)
        self.started = 0                # how many of ``expected`` have come
        self.last_start = None          # (job step index, case or None): the last valid start
        self.asked = None               # (job step index, case) sent on the job pipe, not yet started
        self.outbox = bytearray()       # case frames not yet written to the job pipe
        self.unread = lambda: 0         # bytes in the job pipe no child has read (set by the server)
        self.arrived_cases = set()      # (job step index, case)
        self.sent_steps = set()         # job step indices whose values arrived
        self.ready = False              # the child read its whole job and is inside the walls
        self.done = False               # the child says every step ran

    def _step(self, index):
        if type(index) is int and 0 <= index < len(self.pending):
            return self.pending[index][1]
        return None

    def _next(self):
        return self.expected[self.started] if self.started < len(self.expected) else None

    def __call__(self, event) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if type(kind) is not str:
            return
        if not self.ready and kind != protocol.READY:
            raise Forged(f"{kind[:50]!r} before ready")
        handler = self._HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def _on_ready(self, event) -> None:
        if self.ready:
            raise Forged("a second ready")
        self.ready = True
        held = event.get("layers")
        if isinstance(held, list):
            self.result.walls = [{"name": _text(x.get("name"), 100), "active": x.get("active") is True,
                                  "detail": _text(x.get("detail"))} for x in held[:MAX_WALLS] if isinstance(x, dict)]

    def _on_done(self, event) -> None:
        self._check_finished()
        if self._next() is not None or self.asked is not None:
            raise Forged("done before every step started")
        self.done = True

    def _check_finished(self) -> None:
        """A child following its job sends a case's output, and a send step's values, before
        it asks for or starts anything else: a claim that skips them is forged."""
        last = self.last_start
        if last is None:
            return
        if last[1] is not None and last not in self.arrived_cases:
            raise Forged("the next step claimed before a case's output")
        if last[1] is None and self.pending[last[0]][1].get("op") == protocol.SEND and last[0] not in self.sent_steps:
            raise Forged("the next step claimed before a send step's values")

    def _claims(self, event, expected) -> bool:
        """Does ``event`` name exactly the start ``expected`` (a step, and a case or none)?"""
        step, case = event.get("step"), event.get("case")
        return (expected is not None and _is(step, expected[0])
                and (case is None if expected[1] is None else _is(case, expected[1])))

    def _on_need(self, event) -> None:
        expected = self._next()
        if not self._claims(event, expected) or expected[1] is None or self.asked is not None:
            raise Forged("a case asked for out of turn")
        self._check_finished()
        index, case = expected
        self.asked = expected
        self.outbox += self.cases[(self.pending[index][0], case)]

    def _on_start(self, event) -> None:
        expected = self._next()
        if not self._claims(event, expected):
            # (named by what was due: a repr of the child's values could be as large as a frame)
            raise Forged(f"a start out of turn (the next one due: {expected})")
        self._check_finished()
        if expected[1] is not None:
            # a child can start a case only once it has read the whole frame of it: anything left
            # in the job pipe would be the next child's "job"
            if self.asked != expected or self.outbox or self.unread():
                raise Forged("a case started before its arguments were read")
            self.asked = None
        self.started += 1
        self.last_start = expected

    def _on_error(self, event) -> None:
        step = self._step(event.get("step"))
        if step is None or step.get("op") != protocol.EXEC or self.last_start != (event["step"], None):
            return
        original = self.pending[event["step"]][0]
        if original in self.reported_errors:        # a rerun repeats earlier cells' errors
            return
        self.reported_errors.add(original)
        line = event.get("line")
        self.result.errors.append(CellError(_label(original, step), _text(event.get("type"), 200),
                                            _text(event.get("message")),
                                            line if type(line) is int else None))

    def _on_values(self, event) -> None:
        if self.last_start is None or self.last_start[1] is not None or self.last_start[0] in self.sent_steps:
            return
        step = self._step(self.last_start[0])
        if step.get("op") != protocol.SEND or not _is(event.get("problem"), step.get("problem")):
            return
        self.sent_steps.add(self.last_start[0])
        asked = [n for n in step.get("names", []) if isinstance(n, str)]
        values = event.get("values") if isinstance(event.get("values"), dict) else {}
        missing = event.get("missing") if isinstance(event.get("missing"), list) else []
        missing = {n for n in missing if type(n) is str}
        problem = step.get("problem")
        self.result.values.setdefault(problem, {}).update({n: values[n] for n in asked if n in values})
        self.result.missing[problem] = [n for n in asked if n in missing and n not in values]

    def _on_output(self, event) -> None:
        if self.last_start is None or self.last_start[1] is None or self.last_start in self.arrived_cases:
            return
        step = self._step(self.last_start[0])
        if not _is(event.get("case"), self.last_start[1]) or not _is(event.get("problem"), step.get("problem")):
            return
        output = (Output(True, event.get("value")) if event.get("ok") is True
                  else Output(False, None, _text(event.get("error")) or "an error"))
        self.result.outputs.setdefault(step.get("problem"), {})[self.last_start[1]] = output
        self.arrived_cases.add(self.last_start)

    _HANDLERS = {protocol.READY: _on_ready, protocol.DONE: _on_done, protocol.NEED: _on_need,
                 protocol.START: _on_start, protocol.ERROR: _on_error, protocol.VALUES: _on_values,
                 protocol.OUTPUT: _on_output}

    def sent(self, job_index: int) -> bool:
        """Did this send step's values arrive?"""
        step = self.pending[job_index][1]
        return step.get("problem") in self.result.values or step.get("problem") in self.result.missing


class Sandbox:
    """``servers`` sandbox servers; ``run(steps)`` from any number of threads."""

    def __init__(self, servers: int = 1, limits: Limits = Limits(), started=(), lazy: bool = False):
        """``started``: servers already running (``processes.start_servers``, e.g. started
        before NumPy was imported), used first; the rest are started here, or, ``lazy``,
        each when a run first finds no idle server (a grading run whose judges start
        servers of their own may never need these: grader.run.judges)."""
        started = list(started)
        if servers < 1:
            for process in started:
                process.kill()
            raise ValueError("a sandbox needs at least one server")
        self.limits = limits
        self._idle: queue.Queue[_Server] = queue.Queue()
        self._servers: list[_Server] = []
        self._lock = threading.Lock()
        self._closed = False
        for process in started[servers:]:          # more than asked for: not needed
            process.kill()
        started = started[:servers]
        self._unstarted = 0 if not lazy else servers - len(started)
        try:
            while started:
                self._add(_Server(limits, started.pop(0)))
            for _ in range(servers - len(self._servers) - self._unstarted):
                self._add(_Server(limits))
        except BaseException:
            for process in started:                 # (those not yet wrapped)
                process.kill()
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
        with self._lock:
            start = self._unstarted > 0 and self._idle.empty()
            self._unstarted -= start
        if start:
            try:
                server = _Server(self.limits)
            except BaseException:
                with self._lock:
                    self._unstarted += 1
                raise
            with self._lock:
                closed = self._closed
                if not closed:
                    self._servers.append(server)
            if closed:                              # closed while it started: not kept
                server.close()
                raise SandboxError("the sandbox is closed")
            return server
        server = self._idle.get()
        if server.alive:
            return server
        try:                                      # died between jobs: replace it
            replacement = _Server(self.limits)
        except BaseException:
            self._idle.put(server)                # the next borrower tries again
            raise
        server.close()
        with self._lock:
            self._servers = [replacement if s is server else s for s in self._servers]
        return replacement

    def _give_back(self, server: _Server) -> None:
        self._idle.put(server)

    def _job(self, body: bytes, attempt: _Attempt, budget: Budget) -> str:
        server = self._borrow()
        try:
            return server.run_job(body, attempt, int(self.limits.frame_mb) * MIB,
                                  float(self.limits.wall_seconds) + SERVER_GRACE_SECONDS, budget)
        except BaseException:
            server.kill()         # interrupted mid-job: its pipes are out of step; replaced when next borrowed
            raise
        finally:
            self._give_back(server)

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
            for case in range(_first(step), len(step.get("cases", []))):
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
            attempt = _Attempt(pending, result, reported_errors, cases)
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
        result.not_run = [_label(original, step) for original, step in never_ran]

    @staticmethod
    def _after_crash(pending: list, attempt: _Attempt, result: RunResult, reason: str) -> tuple[list, list]:
        """Record the crash; the steps for the rerun, and those of them that never ran (none:
        no rerun, since repeating the cells before the crash would give nothing new)."""
        crashed_at, case = attempt.last_start
        original, step = pending[crashed_at]
        result.crashes.append(Crash(_label(original, step), case, reason))
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


def explain(limits: Limits | None = None) -> list[dict]:
    """Which walls hold on this machine, and why the others do not: asked of a live sandbox
    child (so it is what grading gets), or the static check if no child answers."""
    try:
        with Sandbox(1, limits or Limits()) as sandbox:
            held = sandbox.run([]).walls
        if held:
            return held
    except SandboxError:
        pass
    return [{**x, "detail": x["detail"] + " (static check: no sandbox child answered)"}
            for x in walls.explain()]
