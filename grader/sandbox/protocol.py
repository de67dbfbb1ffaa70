"""The protocol between the grader (``client.py``, ``channel.py``) and the sandbox (``server.py``
and the children it forks, ``child.py``): the pipes, the job and its steps, the events a child
sends, the exit reasons.

Both sides build and name its messages only here; what each side checks of what it receives
stays with that side. Every message is a frame of ``grader.sandbox.frames`` (size-capped,
validated; no pickle); values that cannot cross arrive as ``Unsupported``. This module imports
only the standard library: the server imports it.

The pipes
---------

The grader starts a server as ``python -m grader.sandbox.server --slot N --control FD --stop FD
--wall-seconds S --cpu-seconds C [--bare]`` with a clean environment (``--bare``: without the
imports and the warm-up student code wants, for a server only asked which walls hold). Its pipes:

- stdin (job pipe, grader → child): one job frame per job, then one case frame for each hidden
  case the child asks for; the server only polls it, between children. Its end of file (the
  grader closed it) ends the server. Nothing may be left unread in it when a child dies (it
  would be the next child's "job"): the grader replaces a server whose child died after it asked
  for a case and before it started it, and a child takes only a frame with ``steps`` for a job.
- stdout (data pipe, child → grader): the child's event frames, and nothing of the server's.
- ``--control FD`` (server → grader): after each job, ``{"event": "exit", "reason": R}`` once the
  child is dead and its process group killed, so everything the child wrote is already in the
  data pipe. Only this pipe ends a job: an ``exit`` event on the data pipe is a forgery.
- ``--stop FD`` (grader → server): a byte asks the server to kill the running child now (the
  grader found a bad frame or too much output); the reason is then ``stopped``.

Exit reasons: ``exit N`` (``exit 0`` when the steps ran to their end — the grader tells that
from a crash by the ``done`` event), ``timeout`` (the wall-clock deadline, or the CPU limit),
``memory`` (out of memory outside any student step), ``signal N``, ``stopped``.

The job
-------

``{"steps": [...], "limits": {...}}`` (``job``; limits: ``Limits.for_job()`` in processes.py).
Steps, run in order:

- ``{"op": "exec", "label": str, "source": str}`` (``exec_step``) — exec in the one namespace;
  an exception is caught and reported and execution goes on, as a notebook run with
  allow_errors would.
- ``{"op": "set", "values": {name: value}}`` (``set_step``) — assign names (the givens from the key).
- ``{"op": "send", "problem": pid, "names": [...]}`` (``send_step``) → one ``values`` event.
- ``{"op": "call", "problem": pid, "function": name, "first": k, "count": n}`` → one ``output``
  event per case, from case ``first`` on. The job holds only the number of hidden cases, never
  their arguments: a student's first cell could read anything its process holds (a stack frame,
  ``gc.get_objects()``, ctypes) and echo every hidden input back. The grader holds a call with
  its ``cases`` (``call_step``) and the job carries it with their ``count`` (``job_step``). So
  before each case the child sends ``need``; the grader then writes ``{"problem": pid, "case": k,
  "args": {arg: value}}`` (``case_frame``) on the job pipe, and the child reads it, sends the
  case's ``start`` and calls the function. The cases already run stay in the child (the
  function was given them); later ones are not there.

The events
----------

Child → grader on the data pipe, in order:

- ``{"event": "ready", "layers": [{"name", "active": bool, "detail"}]}`` — the walls that hold;
  sent once the whole job has been read (so the job pipe is empty again).
- ``{"event": "start", "step": i}`` before every step but a call, and ``{"event": "start",
  "step": i, "case": k}`` before each case of a call, so a crash can always be placed. The
  grader knows the one order of starts a job allows, and takes nothing else: a start out of
  turn fails the stream and the crash is charged to the last valid start.
  Sent as a small frame (``frames.small_event``: ten bytes, no JSON), as is ``need``; the
  grader decodes either form to the same dict.
- ``{"event": "need", "step": i, "case": k}`` — asks for the arguments of case k of call step i
  (see ``call``), once that case's start is the next one due and the previous case's output came.
- ``{"event": "error", "step": i, "label", "type": "NameError", "message": str (≤ 2000 chars),
  "line": int | None}`` — an exception in an exec step (line: in that cell).
- ``{"event": "values", "problem": pid, "values": {name: value}, "missing": [names never defined]}``
- ``{"event": "output", "problem": pid, "case": k, "ok": true, "value": v}`` or ``"ok": false,
  "error": "TypeError: …"`` — one hidden case of a call.
- ``{"event": "done"}`` — every step ran.

And the server's one event, on the control pipe: ``{"event": "exit", "reason": R}``.
"""

from __future__ import annotations

# --- the steps of a job --------------------------------------------------------------------

EXEC = "exec"
SET = "set"
SEND = "send"
CALL = "call"
OPS = (EXEC, SET, SEND, CALL)

# --- the events ----------------------------------------------------------------------------

READY = "ready"
START = "start"
NEED = "need"
ERROR = "error"
VALUES = "values"
OUTPUT = "output"
DONE = "done"
EXIT = "exit"              # the server's, on the control pipe only
EVENTS = (READY, START, NEED, ERROR, VALUES, OUTPUT, DONE, EXIT)

# --- the exit reasons (besides exited(n) and signalled(n)) -----------------------------------

TIMEOUT = "timeout"
MEMORY = "memory"
STOPPED = "stopped"


def exited(code: int) -> str:
    """The reason for a child that exited with status ``code`` (``exited(0)``: it ran to its end)."""
    return f"exit {code}"


def signalled(number: int) -> str:
    """The reason for a child killed by signal ``number``."""
    return f"signal {number}"


# --- building steps, jobs and case frames ----------------------------------------------------

def exec_step(label: str, source: str) -> dict:
    return {"op": EXEC, "label": label, "source": source}


def set_step(values: dict) -> dict:
    return {"op": SET, "values": values}


def send_step(problem, names: list) -> dict:
    return {"op": SEND, "problem": problem, "names": names}


def call_step(problem, function: str, cases: list, first: int = 0) -> dict:
    """A call as the grader holds it: with its cases' arguments, which never go in a job
    (``job_step``; each case goes to the child only when it asks for it: ``case_frame``)."""
    return {"op": CALL, "problem": problem, "function": function, "cases": cases, "first": first}


def job_step(step: dict) -> dict:
    """A step as the job carries it: a call with the number of its cases instead of the cases;
    any other step as it is."""
    if step.get("op") != CALL:
        return step
    carried = {key: value for key, value in step.items() if key != "cases"}
    carried["count"] = len(step.get("cases", []))
    return carried


def job(steps: list, limits: dict) -> dict:
    """The job frame: ``steps`` as the job carries them (``job_step``), and the child's limits."""
    return {"steps": [job_step(step) for step in steps], "limits": limits}


def is_job(frame) -> bool:
    """Does the child take ``frame`` for a job? (A case frame left unread by a dead child is not one.)"""
    return isinstance(frame, dict) and isinstance(frame.get("steps"), list)


def case_frame(problem, case: int, args: dict) -> dict:
    """The arguments of one hidden case, written on the job pipe when the child asks (``need``)."""
    return {"problem": problem, "case": case, "args": args}


def is_case(frame, problem, case: int) -> bool:
    """Is ``frame`` the case frame of ``case`` of ``problem`` (the one the child asked for)?"""
    return (isinstance(frame, dict) and frame.get("problem") == problem and frame.get("case") == case
            and isinstance(frame.get("args"), dict))


# --- building events -------------------------------------------------------------------------

def ready_event(walls: list[dict]) -> dict:
    """``walls``: each wall's report, ``{"name", "active", "detail"}`` (``walls.Walls.apply``)."""
    # (the wire keeps its first word for the walls, "layers": a rename would buy nothing)
    return {"event": READY, "layers": walls}


def start_event(step: int, case: int | None = None) -> dict:
    return {"event": START, "step": step} if case is None else {"event": START, "step": step, "case": case}


def need_event(step: int, case: int) -> dict:
    return {"event": NEED, "step": step, "case": case}


def error_event(step: int, label: str, type_name: str, message: str, line: int | None) -> dict:
    return {"event": ERROR, "step": step, "label": label, "type": type_name, "message": message, "line": line}


def values_event(problem, values: dict, missing: list) -> dict:
    return {"event": VALUES, "problem": problem, "values": values, "missing": missing}


def output_event(problem, case: int, value) -> dict:
    """A case the function returned ``value`` for."""
    return {"event": OUTPUT, "problem": problem, "case": case, "ok": True, "value": value}


def failed_output_event(problem, case: int, error: str) -> dict:
    """A case the function raised on (``error``: "TypeError: …"), or could not be called for."""
    return {"event": OUTPUT, "problem": problem, "case": case, "ok": False, "error": error}


def done_event() -> dict:
    return {"event": DONE}


def exit_event(reason: str) -> dict:
    return {"event": EXIT, "reason": reason}
