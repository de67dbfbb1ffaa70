"""The collector paced by submissions: off while a batch is graded, collecting on schedule,
restored afterwards, and the garbage of a long batch still collected."""

import gc
import threading
import weakref

import pytest

from grader.run import garbage


@pytest.fixture(autouse=True)
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


class Cycle:
    def __init__(self):
        self.me = self


def test_paced_turns_the_collector_off_and_back_on_nested():
    with garbage.paced():
        assert not gc.isenabled()
        with garbage.paced():
            assert not gc.isenabled()
        assert not gc.isenabled()          # the inner end is not the outermost
    assert gc.isenabled()


def test_what_is_alive_when_the_batch_starts_is_frozen_and_then_unfrozen():
    assert gc.get_freeze_count() == 0
    before = Cycle()                          # alive before: never walked while the batch runs
    with garbage.paced():
        frozen = gc.get_freeze_count()
        assert frozen > 0 and not any(before is o for o in gc.get_objects(2))
        with garbage.paced():
            assert gc.get_freeze_count() == frozen
        during = _cycle_ref()                 # made during the batch: collected on schedule
        gc.collect()
        assert during() is None
    assert gc.get_freeze_count() == 0 and any(before is o for o in gc.get_objects(2))


def test_objects_someone_else_froze_stay_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with garbage.paced():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with garbage.paced():
        pass
    assert not gc.isenabled()


def test_an_error_in_the_block_still_restores_the_collector():
    with pytest.raises(RuntimeError):
        with garbage.paced():
            raise RuntimeError("boom")
    assert gc.isenabled()


def _cycle_ref():
    return weakref.ref(Cycle())


def test_cyclic_garbage_waits_for_its_turn_and_is_then_collected():
    with garbage.paced():
        ref = _cycle_ref()
        for _ in range(garbage.YOUNG_EVERY - 1):
            garbage.submission_done()
        assert ref() is not None           # not yet: the collector is off
        garbage.submission_done()          # the young generations' turn
        assert ref() is None


def test_old_garbage_is_collected_by_the_full_turn():
    with garbage.paced():
        keep = Cycle()
        gc.collect()                       # survives into the oldest generation
        ref = weakref.ref(keep)
        del keep
        for _ in range(garbage.YOUNG_EVERY):
            garbage.submission_done()      # a young collection does not reach it
        assert ref() is not None
        for _ in range(garbage.FULL_EVERY - garbage.YOUNG_EVERY):
            garbage.submission_done()
        assert ref() is None


def test_what_a_block_left_in_cycles_is_collected_when_the_outermost_ends():
    # a Dask worker grades shard after shard, each a paced block, with nothing in between to
    # make the automatic collector run: each shard's run (a cycle holding its notebooks and
    # rows) must not wait for it
    gc.disable()                           # (no automatic collection to hide the block's own)
    with garbage.paced():
        with garbage.paced():
            keep = Cycle()
            gc.collect()                   # promoted past the young generations' turns
            ref = weakref.ref(keep)
            del keep
        assert ref() is not None           # the inner end is not the outermost
    assert ref() is None and not gc.isenabled()


def test_the_collection_at_the_end_walks_only_what_the_block_made():
    # collected while what was alive before the block is still frozen: a Dask worker's own
    # heap is not walked once a shard
    frozen_then = []

    def seen(phase, info):
        if phase == "start":
            frozen_then.append(gc.get_freeze_count())

    gc.disable()
    with garbage.paced():
        frozen = gc.get_freeze_count()
        ref = _cycle_ref()
        gc.callbacks.append(seen)
    gc.callbacks.remove(seen)
    assert frozen > 0 and frozen_then == [frozen]
    assert ref() is None and gc.get_freeze_count() == 0


def test_class_pass_is_a_paced_block():
    with garbage.class_pass():
        assert not gc.isenabled()
        ref = _cycle_ref()
    assert ref() is None and gc.isenabled()


def test_outside_a_paced_block_submission_done_does_nothing():
    gc.disable()                           # (no automatic collection to count)
    before = [s["collections"] for s in gc.get_stats()]
    for _ in range(garbage.FULL_EVERY):
        garbage.submission_done()
    assert [s["collections"] for s in gc.get_stats()] == before


def test_paced_blocks_on_two_threads_leave_it_on_when_both_end():
    inside, release = threading.Barrier(2), threading.Event()

    def shard():
        with garbage.paced():
            inside.wait()
            release.wait()

    other = threading.Thread(target=shard)
    other.start()
    with garbage.paced():
        inside.wait()
    assert not gc.isenabled()              # the other thread's block is still running
    release.set()
    other.join()
    assert gc.isenabled()


def test_a_grading_run_paces_the_collector_and_restores_it(example_build, tmp_path):
    """grade_folder for real: the collector is off while submissions are recorded (the
    progress bar's advance runs as each is) and on again once the run is over."""
    from formats.key_shape import assignment_id
    from grader.store.gradebook import Gradebook
    from grader.run.pipeline import grade_folder
    from grader.sandbox.client import Limits, Sandbox
    from synthetic import synthesize

    build_dir, key = example_build(3, "garbage pacing test secret, 32 bytes")
    synthesize(build_dir, key, tmp_path / "made", profiles=["correct"])
    states = []

    class Bar:
        def advance(self, n):
            states.append(gc.isenabled())

        def close(self):
            pass

    with Sandbox(1, Limits(wall_seconds=5)) as box, Gradebook(tmp_path / "g.sqlite") as gradebook:
        summary = grade_folder(key, tmp_path / "made", gradebook, box, progress=lambda total: Bar(),
                               kit_version="")
        assert len(summary.recorded) == 3 and gradebook.submission(assignment_id(key), summary.recorded[0])
    assert states == [False, False, False]
    assert gc.isenabled()


def test_student_done_collects_the_young_generations_on_their_turn_only():
    with garbage.class_pass():
        ref = _cycle_ref()
        for _ in range(garbage.YOUNG_EVERY - 1):
            garbage.student_done()
        assert ref() is not None
        garbage.student_done()
        assert ref() is None
        keep = Cycle()
        gc.collect()                       # old: a student's turn never walks the whole heap
        old = weakref.ref(keep)
        del keep
        for _ in range(garbage.FULL_EVERY):
            garbage.student_done()
        assert old() is not None
    assert old() is None                   # (the pass's end does)


def test_by_sessions_submissions_collect_nothing_and_each_session_end_collects_fully():
    with garbage.paced(by_submission=False):
        probe = weakref.ref(Cycle())
        for _ in range(garbage.FULL_EVERY):
            garbage.submission_done()
        assert probe() is not None               # no turn by submissions: pytest's items are alive
        garbage.session_done()
        assert probe() is None                   # the session's end: a full collection
        garbage.by_submission()                  # (a judge forked from here)
        probe = weakref.ref(Cycle())
        for _ in range(garbage.YOUNG_EVERY):
            garbage.submission_done()
        assert probe() is None
    probe = weakref.ref(Cycle())
    gc.disable()
    garbage.session_done()                       # outside a paced block: nothing
    assert probe() is not None
    gc.enable()
    gc.collect()
