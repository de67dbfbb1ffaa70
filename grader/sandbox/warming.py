"""Warming up: the child's code run in the server before any fork, on the kit's own made-up
job, so that every child inherits code already specialised for the types it meets. Only the
kit's numbers are ever here: the server still never holds a job, a student's code or a value
of theirs.
"""

from __future__ import annotations

import gc
import os
import sys

from . import frames, protocol
from .child import run_steps
from .emitter import Emitter

MIB = 2**20
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
            emit = Emitter(null, 32 * MIB)
            run_steps(steps, emit, case_read)
            emit.flush()
    finally:
        for fd in (null, case_read, case_write):
            os.close(fd)
        if main is not None:
            sys.modules["__main__"] = main
    gc.collect()
