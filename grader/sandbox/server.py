"""The sandbox server: forks one walled-in child per job and never holds a job.

Started by the grader (``grader/sandbox/client.py``) as ``python -m grader.sandbox.server`` with a
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
made-up job once at start left (``warm_up``: code the children would otherwise warm each time
from cold, copying it page by page). It is a zygote in the Android sense: a warm process that
only forks:

    wait until stdin is readable (poll; nothing read) → fork → wait for the child (deadline)
    → kill its process group → one ``exit`` frame on the control pipe

The child does the rest itself: it reads its own job frame from stdin, applies the walls
(``session``, ``network``, ``landlock``, ``fds``, ``rlimits``, ``uid``, ``seccomp``; its data pipe
becomes fd 3, its job pipe fd 4, stdio /dev/null, every other descriptor closed — the control
pipe first of all), sends ``ready``, runs the steps in one namespace as a notebook would (an
exception is reported and the next cell runs), and writes its frames straight to the grader over
the data pipe (the server's stdout). The grader checks every one of them (``grader/sandbox/frames.py``
for size and structure, ``grader/sandbox/client.py`` against the job it sent, including the order of
the ``start`` and ``need`` events).

Values are what ``grader.sandbox.frames`` carries (no pickle); one that cannot cross arrives as
``Unsupported``, so the grader can still say what it was. This module imports only the standard
library, numpy, ``grader.sandbox.frames``, ``grader.sandbox.walls`` and ``grader.sandbox.protocol``
— never ``exercises`` or ``solutions``.
"""

from __future__ import annotations

import builtins
import fcntl
import gc
import importlib.abc
import importlib.machinery
import os
import select
import signal
import sys
import time
import types

from . import frames, protocol
from .walls import JOB_FD, RESULT_FD, Walls, preimport

MIB = 2**20
EXIT_MEMORY = 86          # the child ran out of memory outside any student step
EXIT_BROKEN = 87          # the child's own machinery failed (e.g. its result pipe was closed)
EXIT_NO_JOB = 88          # the job pipe was at its end: the grader is done with this server
EXIT_BAD_JOB = 89         # what came on the job pipe was not a job frame
MAX_MESSAGE = 2000


# --- the child: runs the steps -------------------------------------------------------------

_PIPE_SIZE = 65536          # Linux's default pipe buffer


class _Emitter:
    """Writes events to the result pipe. A value that cannot be encoded (a student object that
    raises from ``__iter__``) or that would make the frame too big becomes an Unsupported, the
    biggest first, so the rest of the event still arrives.

    An event is written with the small frame that follows it (the next ``start`` or ``need``)
    or by ``flush``: one write where there were two, and the grader woken once. The stream's
    bytes are the same, and what the grader relies on holds: a ``start`` is in the pipe before
    the student code it announces runs, and a ``need`` before the child waits for its case
    (both are written at once, with whatever waited). Between an event and the small frame
    that carries it no student code runs (encoding a student's value, which can, happens
    before the event is held)."""

    def __init__(self, fd: int, limit: int):
        self.fd, self.limit = fd, limit
        self._held: list[bytes] = []

    def __call__(self, event: dict) -> None:
        self._held.append(self._encode(event))

    def small(self, event: str, step: int, case: int | None = None) -> None:
        """A start or need event, as a small frame (``frames.small_event``), written now with
        the events held before it."""
        self._held.append(frames.framed(frames.small_event(event, step, case)))
        self.flush()

    def flush(self) -> None:
        held, self._held = self._held, []
        if not held:
            return
        if not os.get_blocking(self.fd):             # the student's own doing: wait, not fail
            os.set_blocking(self.fd, True)
        if sum(map(len, held)) <= _PIPE_SIZE:
            frames.write_all(self.fd, b"".join(held))
        else:                                         # (a large frame is not copied to join it)
            for data in held:
                frames.write_all(self.fd, data)

    def _try(self, event: dict) -> bytes | None:
        try:
            body = frames.encode(event)
        except Exception:                 # FrameTooLarge, or anything a student object raised
            return None
        return frames.framed(body) if len(body) <= self.limit else None

    @staticmethod
    def _size(value) -> float:
        try:
            return len(frames.encode(value))
        except Exception:
            return float("inf")

    def _encode(self, event: dict) -> bytes:
        data = self._try(event)
        if data is not None:
            return data
        key = "values" if event.get("event") == protocol.VALUES else "value"
        parts = dict(event["values"]) if key == "values" else {"value": event.get("value")}
        sizes = {name: self._size(value) for name, value in parts.items()}
        for name in sorted(sizes, key=sizes.get, reverse=True):
            reason = "could not be sent" if sizes[name] == float("inf") else "too large to send"
            parts[name] = frames.Unsupported(f"{frames.type_name(parts[name])} {reason}")
            trial = {**event, "values": parts} if key == "values" else {**event, "value": parts["value"]}
            data = self._try(trial)
            if data is not None:
                return data
        raise frames.FrameTooLarge("an event too large even without its values")


def _message(error: BaseException) -> str:
    try:
        # a SyntaxError's str() repeats the file and line, which the error event carries apart
        text = error.msg if isinstance(error, SyntaxError) and isinstance(error.msg, str) else str(error)
    except Exception:
        text = "(its message could not be shown)"
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1] + "…"


def _describe_error(error: BaseException) -> str:
    message = _message(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _line_in(error: BaseException, filename: str) -> int | None:
    """The line of the cell where ``error`` happened (the innermost frame in that cell)."""
    if isinstance(error, SyntaxError) and error.filename == filename:
        return error.lineno
    line, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _exec_step(index: int, step: dict, namespace: dict, emit) -> None:
    label = str(step.get("label", index))
    filename = f"<cell {label}>"
    try:
        # dont_inherit: this module's `from __future__ import annotations` is not the student's
        exec(compile(step.get("source", ""), filename, "exec", dont_inherit=True), namespace)
    except BaseException as error:      # SystemExit and KeyboardInterrupt too: the next cell runs
        emit(protocol.error_event(index, label, type(error).__name__, _message(error),
                                  _line_in(error, filename)))


def _send_step(step: dict, namespace: dict, emit) -> None:
    values, missing = {}, []
    for name in step.get("names", []):
        if name in namespace:
            values[name] = namespace[name]
        else:
            missing.append(name)
    emit(protocol.values_event(step.get("problem"), values, missing))


class OutOfStep(Exception):
    """What came on the job pipe is not the case this child asked for: nothing more can run."""


def _read_case(problem, case: int, job_fd: int = JOB_FD) -> dict:
    """The arguments of one hidden case, asked for and read only now: until a case is reached,
    its inputs are nowhere in this process (a student's cell could find them otherwise)."""
    if not os.get_blocking(job_fd):        # the student's own doing: wait, not fail
        os.set_blocking(job_fd, True)
    frame = frames.read_frame(job_fd)
    if not protocol.is_case(frame, problem, case):
        raise OutOfStep(f"expected case {case} of {problem!r:.100}")
    return frame["args"]


def _call_step(index: int, step: dict, namespace: dict, emit, job_fd: int = JOB_FD) -> None:
    name = step.get("function", "")
    for case in range(int(step.get("first", 0)), int(step.get("count", 0))):
        problem = step.get("problem")
        emit.small(protocol.NEED, index, case)
        args = _read_case(problem, case, job_fd)
        emit.small(protocol.START, index, case)
        function = namespace.get(name)
        if name not in namespace:
            event = protocol.failed_output_event(problem, case, f"NameError: name '{name}' is not defined")
        elif not callable(function):
            event = protocol.failed_output_event(
                problem, case, f"TypeError: '{name}' is a {frames.type_name(function)}, not a function")
        else:
            try:
                event = protocol.output_event(problem, case, function(**args))
            except BaseException as error:
                event = protocol.failed_output_event(problem, case, _describe_error(error))
        emit(event)


class _Nothing:
    """Whatever a plotting library would have returned: calls, attributes, items, context
    managers and two-way unpacking (``fig, ax = plt.subplots()``) all give another _Nothing."""

    def __call__(self, *args, **kwargs):
        return self

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key):
        return self

    def __iter__(self):
        return iter((self, self))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _PlotStubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Plots are not graded, and a real matplotlib would write caches the sandbox forbids:
    ``import matplotlib.pyplot as plt`` (or seaborn) gives a module that does nothing."""

    PACKAGES = ("matplotlib", "seaborn")

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__getattr__ = lambda name: _NOTHING
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


_NOTHING = _Nothing()


def _notebook_namespace() -> dict:
    """A fresh ``__main__`` as Jupyter gives one (with a no-op ``display``)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, display=lambda *objects, **options: None)
    sys.modules["__main__"] = main
    return main.__dict__


def run_child(job: dict, walls: Walls, result_fd: int, job_fd: int | None = None) -> int:
    """Everything the forked child does; returns its exit status. ``job_fd`` is where the
    hidden cases of call steps come from (without it, a call step cannot run)."""
    limits = job.get("limits", {})
    held = walls.apply(result_fd, limits, job_fd)
    if not any(wall["name"] == "fds" and wall["active"] for wall in held):
        return EXIT_BROKEN                # the result pipe is not where it should be: run nothing
    emit = _Emitter(RESULT_FD, int(limits.get("frame_mb", 32)) * MIB)
    emit(protocol.ready_event(held))
    try:
        run_steps(job.get("steps", []), emit)
    finally:
        emit.flush()          # what is held goes out even if the child's own machinery fails
    return 0


def run_steps(steps: list, emit, job_fd: int = JOB_FD) -> None:
    """The job's steps in one fresh notebook namespace, each announced; then ``done``."""
    namespace = _notebook_namespace()
    for index, step in enumerate(steps):
        op = step.get("op")
        if op != protocol.CALL:
            emit.small(protocol.START, index)
        if op == protocol.EXEC:
            _exec_step(index, step, namespace, emit)
        elif op == protocol.SET:
            namespace.update(step.get("values", {}))
        elif op == protocol.SEND:
            _send_step(step, namespace, emit)
        elif op == protocol.CALL:
            _call_step(index, step, namespace, emit, job_fd)
    emit(protocol.done_event())


# --- warming up: the child's code run before any fork, on made-up numbers ---------------------

WARM_UP_ROUNDS = 30         # runs of the warm-up job, once per server: enough for its code to specialise


def _warm_up_job() -> tuple[list, bytes]:
    """(steps, the case frames their call asks for): a small notebook of the kit's own, with
    what a submission's job holds — cells that assign numbers, arrays and text, one that
    fails, givens set, values sent back (arrays, floats, text, a list, a missing name), and a
    function called on hidden cases."""
    import numpy as np

    source = ('import numpy as np\n\n'
              'def attend(Q, K, V, mask=None):\n'
              '    """softmax(Q K^T / sqrt(d)) V"""\n'
              '    scores = Q @ K.T / np.sqrt(Q.shape[-1])\n'
              '    if mask is not None:\n'
              '        scores = np.where(mask, scores, -np.inf)\n'
              '    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))\n'
              '    weights = weights / weights.sum(axis=-1, keepdims=True)\n'
              '    return weights @ V, weights\n')
    steps = [protocol.exec_step("setup", source),
             protocol.set_step({"Q": np.arange(8.0).reshape(2, 4), "d_k": 4, "words": ["a", "b"]}),
             protocol.exec_step("a", "scaled = np.array([[1.5, 0.25], [-2.0, 3.0]])"),
             protocol.exec_step("b", "ratio = 0.15161077839333922\nchoice = 'B'"),
             protocol.exec_step("c", "out, w = attend(Q, Q, Q)\nmask = w > 0.5"),
             protocol.exec_step("d", "broken = undefined_name + 1"),
             protocol.send_step("warm", ["scaled", "ratio", "choice", "out", "mask", "words", "absent"]),
             protocol.exec_step("e", source.replace("attend", "masked")),
             protocol.call_step("warm", "masked", [{}, {}, {}])]
    rng = np.random.default_rng(0)
    cases = b"".join(frames.framed(frames.encode(protocol.case_frame("warm", case, {
        "Q": rng.normal(size=(3, 4)), "K": rng.normal(size=(3, 4)), "V": rng.normal(size=(3, 2)),
        "mask": np.tril(np.ones((3, 3), dtype=bool)) if case else None}))) for case in range(3))
    return [protocol.job_step(step) for step in steps], cases


def warm_up(rounds: int = WARM_UP_ROUNDS) -> None:
    """Run the child's own code (``run_steps``, the emitter, the frame encoder, NumPy's Python
    wrappers) on the kit's made-up job before the server forks anything, its output to
    /dev/null. Python 3.11 rewrites a function's bytecode for the types it meets only after it
    has run a few times, and then in place: a child that starts from cold code runs the slow,
    generic instructions and copies (copy-on-write) every code object it warms. Warmed once
    here, every child inherits the specialised code. Only the kit's numbers are ever here:
    the server still never holds a job, a student's code or a value of theirs."""
    steps, cases = _warm_up_job()
    null = os.open(os.devnull, os.O_WRONLY)
    case_read, case_write = os.pipe()
    main = sys.modules.get("__main__")
    try:
        for _ in range(rounds):
            os.write(case_write, cases)             # (three small frames: the pipe holds them)
            emit = _Emitter(null, 32 * MIB)
            run_steps(steps, emit, case_read)
            emit.flush()
    finally:
        for fd in (null, case_read, case_write):
            os.close(fd)
        if main is not None:
            sys.modules["__main__"] = main
    gc.collect()


# --- the server: forks, waits, kills, reports -------------------------------------------------

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


def _drain(fd: int) -> None:
    """Read whatever is waiting on a non-blocking descriptor (a stale stop request)."""
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


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


def _child(walls: Walls, job_fd: int, data_fd: int, private: tuple[int, ...]) -> int:
    """The forked child: read its own job, then run it inside the walls; returns its exit status."""
    for fd in private:                # the control and stop pipes are the server's alone
        os.close(fd)
    try:
        job = frames.read_frame(job_fd)
    except frames.FrameError:
        return EXIT_BAD_JOB
    if job is None:
        return EXIT_NO_JOB
    # a case frame left unread by a dead child is not a job: this child then writes nothing
    if not protocol.is_job(job):
        return EXIT_BAD_JOB
    return run_child(job, walls, data_fd, job_fd)


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
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_SIZE)
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
        pid = os.fork()
        if pid == 0:                                 # the child never returns from here
            status = EXIT_BROKEN
            try:
                status = _child(walls, job_fd, data_fd, (control_fd, stop_fd))
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
    job_fd, data_fd = _private_stdio()
    preimport()
    sys.meta_path.insert(0, _PlotStubs())
    walls = Walls(slot)
    walls.enter_namespaces()                  # once: every child runs in them (walls: network)
    warm_up()                                 # children inherit warm code (and no student's data)
    # Every object so far is shared with each child copy-on-write; a garbage collection in the
    # child would touch (and so copy) all of them. Frozen, the collector leaves them alone.
    gc.freeze()
    return serve(walls, job_fd, data_fd, control_fd, stop_fd, wall_seconds, cpu_seconds)


if __name__ == "__main__":
    sys.exit(main())
