"""What a run of a submission gives back (``RunResult``: the student's values, the errors of
their cells, the crashes), and how its steps and crashed cases are named in it. Plain data: the
grader's side builds it (``grader.sandbox.attempt``, ``grader.sandbox.client``), the grading run
reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import protocol


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


def send_label(problem) -> str:
    """How crashes name the step that sends a problem's values back."""
    return f"send {problem}"


def step_label(index: int, step: dict) -> str:
    """How a step is named in errors, crashes and ``not_run``: its label, else what it does."""
    if "label" in step:
        return str(step["label"])
    op = step.get("op")
    if op == protocol.CALL:
        return f"{step.get('problem')}:{step.get('function')}"
    if op == protocol.SEND:
        return send_label(step.get("problem"))
    return f"step {index} ({op})"

