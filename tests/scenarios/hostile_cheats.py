"""Hostile cases that cheat on the comparison or sabotage the run: NumPy and the builtins
patched, interrupts swallowed, bombs, lying arrays and numbers, NaN payloads."""

from __future__ import annotations

import numpy as np

from synthetic import far_off

from tests.scenarios.hostile_kit import (COUNTS, Ctx, EXP_SCORES, Expect, FAILED, MISSING, STD,
                                         VARIANCE, WEIGHTS, Z_THE, answer_id, insert_after, prepend,
                                         set_source)


# 1. NumPy's comparisons patched, wrong answers handed in -----------------------------------

NUMPY_PATCH = '''\
# Every comparison NumPy offers now says "equal"; the answers below are wrong.
np.allclose = lambda *args, **kwargs: True
np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.array_equal = lambda *args, **kwargs: True
np.array_equiv = lambda *args, **kwargs: True
np.abs = np.absolute = lambda x, *args, **kwargs: np.zeros(np.shape(x))
np.max = np.amax = lambda *args, **kwargs: 0.0
try:
    np.testing.assert_allclose = lambda *args, **kwargs: None
    np.testing.assert_array_equal = lambda *args, **kwargs: None
except Exception:            # numpy.testing cannot even be imported in the sandbox
    pass
'''


def make_numpy_patch(ctx: Ctx):
    insert_after(ctx.notebook, "bahdanau--givens", NUMPY_PATCH)
    for part in ctx.numeric_parts("bahdanau"):
        ctx.write(part, far_off(ctx.expected(part)))
    return ctx.notebook


# 2. builtins redefined, wrong answers -------------------------------------------------------

BUILTINS_PATCH = '''\
# Make |a - b| zero, every isinstance true, every float equal to everything.
import builtins


class _Equal(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = float.__hash__


builtins.abs = lambda x: 0.0
builtins.isinstance = lambda obj, kind: True
builtins.float = _Equal
builtins.round = lambda x, *args: x
builtins.max = lambda *args, **kwargs: 0.0
builtins.len = lambda obj: 0
builtins.all = lambda iterable: True
'''


def make_builtins_patch(ctx: Ctx):
    insert_after(ctx.notebook, "scaling--givens", BUILTINS_PATCH)
    for part in ctx.numeric_parts("scaling"):
        ctx.write(part, far_off(ctx.expected(part)))
    return ctx.notebook


def sabotage(code: str):
    """A maker that puts ``code`` at the top of the STD answer cell."""
    def make(ctx: Ctx):
        prepend(ctx.notebook, answer_id(STD), code)
        return ctx.notebook
    return make


def std_lost(status: str = MISSING, says: str = "", notes: tuple = ()):
    return lambda ctx: Expect(parts={STD: status}, says={STD: says} if says else {}, notes=notes)


SWALLOW_INTERRUPTS = '''\
import signal
import time
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU):
    try:
        signal.signal(_sig, signal.SIG_IGN)
    except BaseException:
        pass
while True:
    try:
        time.sleep(0.01)
    except BaseException:   # KeyboardInterrupt, SystemExit, anything: keep going
        pass
'''

FORK_BOMB = '''\
import os
while True:
    os.fork()
'''

MEMORY_BOMB = '''\
def _hoard():
    hoard = []
    while True:                       # 256 MiB a step until something stops it
        hoard.append(np.empty(2**25))
        hoard.append(bytearray(2**28))
_hoard()
'''

HUGE_PRINTS = '''\
import os
import sys
_line = "x" * 1_000_000
for _ in range(100):                      # 100 MB to stdout
    print(_line)
for _ in range(20):                       # and 20 MB more each way
    sys.stderr.write(_line)
    os.write(1, _line.encode())
'''


def make_huge_arrays(ctx: Ctx):
    set_source(ctx.notebook, answer_id(STD), f"{ctx.variable(STD)} = np.zeros((20000, 20000))   # 3.2 GB")
    set_source(ctx.notebook, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.zeros((2100, 2100))   # 35 MB: over a 32 MB frame")
    return ctx.notebook


def make_broadcast_view(ctx: Ctx):
    # 10^9 entries (8 GB if ever copied) in a view of one number
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.broadcast_to(np.float64(0.25), (31623, 31623))")
    return ctx.notebook


OBJECT_ARRAYS = '''\
class _Liar:
    def __eq__(self, other):
        return True
    def __float__(self):
        return 0.25
    def __sub__(self, other):
        return 0.0
    __rsub__ = __sub__
    __hash__ = object.__hash__
'''


def make_object_dtype(ctx: Ctx):
    insert_after(ctx.notebook, "dog_ran_fast--givens", OBJECT_ARRAYS)
    shape = np.shape(ctx.expected(WEIGHTS))
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.full({shape!r}, _Liar(), dtype=object)")
    # the right number, but as an object array
    set_source(ctx.notebook, answer_id(Z_THE),
               f"{ctx.variable(Z_THE)} = np.array({float(ctx.expected(Z_THE))!r}, dtype=object)")
    return ctx.notebook


SUBCLASSES = '''\
class _LyingArray(np.ndarray):
    """Equal to everything, converts to anything, every ufunc gives zero."""
    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)
    def __ne__(self, other):
        return np.zeros(np.shape(self), dtype=bool)
    def __array__(self, dtype=None, copy=None):
        return np.full(np.shape(self), 0.25)
    def __float__(self):
        return 0.0
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(np.broadcast(*[np.asarray(i) for i in inputs if hasattr(i, "shape")]).shape)
    def __array_function__(self, func, types, args, kwargs):
        return True
    __hash__ = None


class _LyingFloat(float):
    def __eq__(self, other):
        return True
    def __sub__(self, other):
        return _LyingFloat(0.0)
    __rsub__ = __sub__
    def __abs__(self):
        return 0.0
    __hash__ = float.__hash__


class _LyingInt(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__
'''


def make_subclasses(ctx: Ctx):
    insert_after(ctx.notebook, "dog_ran_fast--givens", SUBCLASSES)
    shape = np.shape(ctx.expected(WEIGHTS))
    set_source(ctx.notebook, answer_id(WEIGHTS),
               f"{ctx.variable(WEIGHTS)} = np.zeros({shape!r}).view(_LyingArray)")
    set_source(ctx.notebook, answer_id(Z_THE), f"{ctx.variable(Z_THE)} = _LyingFloat(-1.0)")
    set_source(ctx.notebook, answer_id(STD), f"{ctx.variable(STD)} = np.zeros(()).view(_LyingArray)")
    set_source(ctx.notebook, answer_id(VARIANCE), f"{ctx.variable(VARIANCE)} = _LyingInt(-1)")
    return ctx.notebook


def make_nan_payloads(ctx: Ctx):
    nb = ctx.notebook
    set_source(nb, answer_id(STD), f"{ctx.variable(STD)} = float('nan')")
    set_source(nb, answer_id(VARIANCE), f"{ctx.variable(VARIANCE)} = float('inf')")
    set_source(nb, answer_id(WEIGHTS), f"{ctx.variable(WEIGHTS)} = np.full({np.shape(ctx.expected(WEIGHTS))!r}, np.nan)")
    set_source(nb, answer_id(EXP_SCORES), f"{ctx.variable(EXP_SCORES)} = np.full({np.shape(ctx.expected(EXP_SCORES))!r}, np.inf)")
    set_source(nb, answer_id(COUNTS), f"{ctx.variable(COUNTS)} = float('nan')")
    function = ctx.entry["problems"]["implement"]["function"]
    set_source(nb, ctx.implement_cell(),
               f"def {function}(Q, K, V, mask=None):\n    return np.full(np.shape(Q)[:-1] + np.shape(V)[-1:], np.nan)\n")
    return nb


def expect_nan_payloads(ctx: Ctx) -> Expect:
    lost = dict.fromkeys([STD, VARIANCE, WEIGHTS, EXP_SCORES, COUNTS], FAILED)
    lost.update(dict.fromkeys(ctx.families("implement"), FAILED))
    return Expect(parts=lost, says={STD: "NaN", VARIANCE: "inf", WEIGHTS: "NaN"})
