"""The forked child's work: read its own job, put up the walls, run the job's steps in one
notebook namespace as a notebook would (an exception is reported and the next cell runs), and
send the events back (``grader.sandbox.emitter``).

A hidden case's arguments are asked for (``need``) and read from the job pipe only when the
child reaches that case. Imported by the sandbox server: the standard library, ``frames``,
``protocol``, ``walls`` and ``emitter`` only.
"""

from __future__ import annotations

import builtins
import os
import sys
import types

from . import frames, protocol
from .emitter import Emitter
from .walls import JOB_FD, RESULT_FD, Walls

MIB = 2**20
EXIT_MEMORY = 86          # the child ran out of memory outside any student step
EXIT_BROKEN = 87          # the child's own machinery failed (e.g. its result pipe was closed)
EXIT_NO_JOB = 88          # the job pipe was at its end: the grader is done with this server
EXIT_BAD_JOB = 89         # what came on the job pipe was not a job frame
MAX_MESSAGE = 2000


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
    emit = Emitter(RESULT_FD, int(limits.get("frame_mb", 32)) * MIB)
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


def run_own_job(walls: Walls, job_fd: int, data_fd: int, private: tuple[int, ...]) -> int:
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

