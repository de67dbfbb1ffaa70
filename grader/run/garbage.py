"""Python's cyclic garbage collector, paced by submissions while a batch is graded.

The collector runs by allocation counts: a young collection every 700 new containers, a
full one whenever the objects that survived grow by a quarter. Grading allocates containers
fast (a parsed key entry alone is thousands of lists and dicts, and each submission has its
frames, pytest items and reports) while keeping the imports and the entries in flight alive,
so the collector would run over and over, full collections included, walking the same
long-lived objects each time: a large share of the grader's CPU spent for nothing. Almost
none of it is garbage: the parsed values hold no cycles; what does (pytest's nodes and
reports, exceptions with their tracebacks) is a small, steady amount per submission.

So while ``paced()`` is active the automatic collector is off, and ``submission_done()``
collects every ``YOUNG_EVERY`` submissions (the generations that are not long-lived) and
fully every ``FULL_EVERY``: the garbage a batch can hold at once is what ``FULL_EVERY``
submissions of the grader's own code leave, whatever the batch's size. Outside pytest that is
next to nothing, while each full collection walks every live object of the run for it: so
the full turn is rare.

Under pytest (``paced(by_submission=False)``) the cycles are pytest's own: a session's
nodes, items and reports, kept alive until the session ends, then garbage all at once. A
young collection there frees nearly nothing (the items are alive) and a full one in the
middle of a session walks the live items again; so the grading process collects fully once
per session instead (``session_done``), when they have just become garbage. A judge forked
from it has no sessions and collects by submissions again (``by_submission``). Student values never
make cycles here (frames decode to arrays, numbers, text and lists of them), so nothing a
student sends changes how much that is. Pacing nests (two shards on one Dask worker, a test
grading inside a test): the collector is turned back on when the outermost ends, and only if
it was on before.

When the outermost block ends, one collection takes what it left in cycles (of the
objects it made: those alive before it are still frozen then).

The outermost block also freezes (``gc.freeze``) everything alive when it starts: the
imports, pytest, the key's head, the submissions found. A full collection then walks only
what the batch made, and a judge process forked from the grader (grader.run.judges) never walks
(and so never copies, page by page) the memory it shares with its parent. The objects are
unfrozen when the block ends, unless something else had frozen objects before.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

YOUNG_EVERY = 20      # submissions between collections of the two young generations
FULL_EVERY = 1000     # submissions between full collections

_lock = threading.Lock()
_depth = 0            # active paced() blocks
_was_enabled = False  # the collector's state when the outermost began
_done = 0             # submissions since the outermost began
_froze = False        # the outermost froze what was alive (and unfreezes it)
_by_submission = True  # submission_done collects (else the caller collects: session_done)


@contextmanager
def paced(by_submission: bool = True):
    """The collector off for the block, ``submission_done()`` collecting instead (or, with
    ``by_submission=False``, only ``session_done()``; the outermost block decides)."""
    global _depth, _was_enabled, _done, _froze, _by_submission
    with _lock:
        if _depth == 0:
            _was_enabled, _done, _by_submission = gc.isenabled(), 0, by_submission
            gc.disable()
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                # What the block left in cycles goes now, whatever the collector's state: a
                # grading run is such a cycle (its look-ahead holds its own method), holding
                # the batch's notebooks and rows. Left to the automatic collector, a process
                # that grades block after block with it off in between (a Dask worker, one
                # shard after another) keeps every block's garbage. Collected before what was
                # frozen is unfrozen, it walks only what the block made and kept, not the
                # whole process (a Dask worker's own heap, once a shard).
                gc.collect()
                if _froze:
                    gc.unfreeze()
                if _was_enabled:
                    gc.enable()


def _one_more() -> int:
    """Count one unit of work in the paced block: how many so far (0: no block is active)."""
    global _done
    with _lock:
        if _depth == 0:
            return 0
        _done += 1
        return _done


def by_submission() -> None:
    """From now on ``submission_done`` collects (a judge, forked from a grading process whose
    pytest sessions collected instead)."""
    global _by_submission
    _by_submission = True


def session_done() -> None:
    """A pytest session ended: its items and reports are garbage now, in cycles; one full
    collection (nothing outside ``paced()``)."""
    with _lock:
        active = _depth > 0
    if active:
        gc.collect()


def submission_done() -> None:
    """One submission graded: collect when its turn comes (nothing outside ``paced()``, and
    nothing where sessions collect)."""
    done = _one_more()
    if not _by_submission:
        return
    if done and done % FULL_EVERY == 0:
        gc.collect()
    elif done and done % YOUNG_EVERY == 0:
        gc.collect(1)


def student_done() -> None:
    """One student's part of a class pass written: the young generations collected every
    ``YOUNG_EVERY`` students (nothing outside ``paced()``), for a loop whose work per student
    makes a cycle: the standard library's indented JSON encoder makes one at each call (its
    nested functions refer to each other), some 2.5 kB of garbage a student otherwise kept
    to the end of the pass."""
    done = _one_more()
    if done and done % YOUNG_EVERY == 0:
        gc.collect(1)


@contextmanager
def class_pass():
    """A pass over the whole class (its grades, its forensics, its summary, its pages): the
    collector off for the pass, as while a batch is graded. The pass keeps every student's
    grades and compared values alive while it decodes entry after entry, so the automatic
    collector would walk that growing heap again and again; what the pass decodes makes no
    cycles (entries, rows and arrays are freed by their reference counts), and a loop whose
    work per student does make one says so (``student_done``)."""
    with paced():
        yield
