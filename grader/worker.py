"""The sandbox server: the only process that forks student code, and it holds nothing worth stealing.

Started by the grader (``grader/sandbox.py``) as ``python -m grader.worker --slot N`` with a
clean environment, it imports numpy and what students commonly import once, prepares the
isolation (``grader/isolation.py``), then serves jobs from its stdin for as long as it lives:

    read a job frame → fork a child → relay the child's frames to stdout → ``exit`` frame

Why a long-lived server that forks: a fresh interpreter per submission costs ~80 ms before the
first line of student code; a fork of a process that has numpy already costs ~3 ms. Why the
grader does not fork itself: a forked child has a copy of its parent's memory, and the grader
holds the answer key. This process was started by exec, so its memory is a fresh interpreter's
plus the jobs it was sent: student code and the givens and arguments the student may see. It
imports only the standard library, numpy, ``grader.frames`` and ``grader.isolation`` — never
``exercises`` or ``solutions``.

The child applies the isolation, sends ``ready`` (with the layers that hold), runs the job's
steps in one namespace as a notebook would (an exception is reported and the next cell runs),
and writes its frames to its own result pipe only: its stdout and stderr are /dev/null. The
server reads that pipe with a wall-clock deadline, checks every frame (size, structure) before
relaying it, and at the end kills the child's process group whatever happened, so nothing the
student started outlives its job. Events and the ``exit`` frame: see /tmp/grader_contract.md
(``start`` is sent before every step, not only exec steps, so a crash can always be placed).
"""

from __future__ import annotations

import builtins
import gc
import importlib.abc
import importlib.machinery
import os
import select
import signal
import sys
import time
import types

from grader import frames, isolation

MIB = 2**20
EXIT_MEMORY = 86          # the child ran out of memory outside any student step
EXIT_BROKEN = 87          # the child's own machinery failed (e.g. its result pipe was closed)
MAX_MESSAGE = 2000
OUTPUT_FACTOR = 4         # a job may send at most this many frame limits in all


# --- the child: runs the steps -------------------------------------------------------------

class _Emitter:
    """Writes events to the result pipe. A value that cannot be encoded (a student object that
    raises from ``__iter__``) or that would make the frame too big becomes an Unsupported, the
    biggest first, so the rest of the event still arrives."""

    def __init__(self, fd: int, limit: int):
        self.fd, self.limit = fd, limit

    def __call__(self, event: dict) -> None:
        frames.write_all(self.fd, self._encode(event))

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
        key = "values" if event.get("event") == "values" else "value"
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
        emit({"event": "error", "step": index, "label": label, "type": type(error).__name__,
              "message": _message(error), "line": _line_in(error, filename)})


def _send_step(step: dict, namespace: dict, emit) -> None:
    values, missing = {}, []
    for name in step.get("names", []):
        if name in namespace:
            values[name] = namespace[name]
        else:
            missing.append(name)
    emit({"event": "values", "problem": step.get("problem"), "values": values, "missing": missing})


def _call_step(index: int, step: dict, namespace: dict, emit) -> None:
    name = step.get("function", "")
    cases = step.get("cases", [])
    for case in range(int(step.get("first", 0)), len(cases)):
        emit({"event": "start", "step": index, "case": case})
        event = {"event": "output", "problem": step.get("problem"), "case": case}
        function = namespace.get(name)
        if name not in namespace:
            event.update(ok=False, error=f"NameError: name '{name}' is not defined")
        elif not callable(function):
            event.update(ok=False, error=f"TypeError: '{name}' is a {frames.type_name(function)}, not a function")
        else:
            try:
                event.update(ok=True, value=function(**cases[case]))
            except BaseException as error:
                event.update(ok=False, error=_describe_error(error))
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


def run_child(job: dict, walls: isolation.Walls, result_fd: int) -> int:
    """Everything the forked child does; returns its exit status."""
    limits = job.get("limits", {})
    layers = walls.apply(result_fd, limits)
    if not any(layer["name"] == "fds" and layer["active"] for layer in layers):
        return EXIT_BROKEN                # the result pipe is not where it should be: run nothing
    emit = _Emitter(isolation.RESULT_FD, int(limits.get("frame_mb", 32)) * MIB)
    emit({"event": "ready", "layers": layers})
    namespace = _notebook_namespace()
    for index, step in enumerate(job.get("steps", [])):
        op = step.get("op")
        if op != "call":
            emit({"event": "start", "step": index})
        if op == "exec":
            _exec_step(index, step, namespace, emit)
        elif op == "set":
            namespace.update(step.get("values", {}))
        elif op == "send":
            _send_step(step, namespace, emit)
        elif op == "call":
            _call_step(index, step, namespace, emit)
    emit({"event": "done"})
    return 0


# --- the server: forks, watches, relays -----------------------------------------------------

def _kill_group(pid: int) -> None:
    for kill, target in ((os.killpg, pid), (os.kill, pid)):    # kill: in case setsid has not run yet
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _exit_reason(status: int, rusage, done: bool, cpu_seconds: float) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        cpu = rusage.ru_utime + rusage.ru_stime
        if number == signal.SIGXCPU or (number == signal.SIGKILL and cpu >= cpu_seconds):
            return "timeout"
        return f"signal {number}"
    code = os.WEXITSTATUS(status)
    if code == 0 and done:
        return "done"
    if code == EXIT_MEMORY:
        return "memory"
    return f"exit {code}"


def _open_pidfd(pid: int):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def relay(pid: int, result_fd: int, out_fd: int, limits: dict) -> str:
    """Pass the child's frames on until it is done or the deadline passes; then kill its
    process group, reap it and say why it ended."""
    frame_limit = int(limits.get("frame_mb", 32)) * MIB
    deadline = time.monotonic() + float(limits.get("wall_seconds", 10.0))
    splitter = frames.FrameSplitter(frame_limit)
    os.set_blocking(result_fd, False)
    pidfd = _open_pidfd(pid)          # readable once the child exits, even if its pipe is held open
    poller = select.poll()            # not select(): no limit on descriptor numbers
    for fd in (result_fd, pidfd):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    total, done, reason, end_of_file = 0, False, None, False
    try:
        while not end_of_file and reason is None:
            left = deadline - time.monotonic()
            readable = {fd for fd, _ in poller.poll(left * 1000)} if left > 0 else set()
            if not readable:
                reason = "timeout"
                break
            while True:
                try:
                    chunk = os.read(result_fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    end_of_file = True
                    break
                total += len(chunk)
                if total > OUTPUT_FACTOR * frame_limit:
                    reason = "output too large"
                    break
                for body in splitter.feed(chunk):
                    event = frames.decode(body, limit=frame_limit)
                    kind = event.get("event") if isinstance(event, dict) else None
                    if kind == "exit":
                        continue      # only the server ends a job: a forged one would desynchronise the stream
                    done = done or kind == "done"
                    frames.write_all(out_fd, frames.framed(body))
            if pidfd is not None and pidfd in readable and not end_of_file and reason is None:
                break                 # the child is gone; whatever still holds its pipe is killed below
    except frames.FrameTooLarge:
        reason = "output too large"
    except frames.FrameError:
        reason = "bad frame"
    finally:
        _kill_group(pid)
        if pidfd is not None:
            os.close(pidfd)
    _, status, rusage = os.wait4(pid, 0)
    return reason or _exit_reason(status, rusage, done, float(limits.get("cpu_seconds", 10)))


def serve_job(job: dict, walls: isolation.Walls, out_fd: int) -> str:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                  # the child never returns from here
        status = EXIT_BROKEN
        try:
            os.close(read_end)
            status = run_child(job, walls, write_end)
        except MemoryError:
            status = EXIT_MEMORY
        except BaseException:
            status = EXIT_BROKEN
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        reason = relay(pid, read_end, out_fd, job.get("limits", {}))
    finally:
        os.close(read_end)
    frames.write_frame(out_fd, {"event": "exit", "reason": reason})
    return reason


def _private_stdio() -> tuple[int, int]:
    """The job and frame channels on private descriptors; fds 0 and 1 become /dev/null, so a
    stray print (a library's warning) can never corrupt the frame stream."""
    job_fd, out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return job_fd, out_fd


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    slot = int(argv[argv.index("--slot") + 1]) if "--slot" in argv else 0
    job_fd, out_fd = _private_stdio()
    isolation.preimport()
    sys.meta_path.insert(0, _PlotStubs())
    walls = isolation.Walls(slot)
    # Every object so far is shared with each child copy-on-write; a garbage collection in the
    # child would touch (and so copy) all of them. Frozen, the collector leaves them alone.
    gc.freeze()
    while True:
        job = frames.read_frame(job_fd)
        if job is None:                           # the grader closed our stdin: we are done
            return 0
        serve_job(job, walls, out_fd)


if __name__ == "__main__":
    sys.exit(main())
