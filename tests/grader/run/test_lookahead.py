"""The bounded look-ahead the grading run uses: in order, at most a window ahead, nothing kept."""

import threading

from grader.run.lookahead import LookAhead


class Work:
    """Records what started; each item waits until the test lets it finish."""

    def __init__(self):
        self.started, self.lock = [], threading.Lock()
        self.go = threading.Event()

    def __call__(self, item):
        with self.lock:
            self.started.append(item)
        self.go.wait(10)
        return item * 10


def test_at_most_a_window_runs_ahead_and_a_release_starts_the_next():
    work = Work()
    ahead = LookAhead(work, workers=2, window=2)
    ahead.start([1, 2, 3, 4])
    assert sorted(ahead.futures) == [1, 2]          # 3 and 4 wait for a release
    work.go.set()
    assert ahead.result(1) == 10
    ahead.release(1)
    assert sorted(ahead.futures) == [2, 3] and 1 not in ahead.results
    for item in (2, 3, 4):
        assert ahead.result(item) == item * 10
        ahead.release(item)
    ahead.stop()
    assert work.started == [1, 2, 3, 4] and not ahead.futures and not ahead.results


def test_an_item_never_queued_runs_where_it_is_asked_for_and_never_again():
    work = Work()
    work.go.set()
    ahead = LookAhead(work, workers=1, window=4)
    assert ahead.result(7) == 70 and ahead.released(7)
    ahead.start([7])
    ahead.stop()
    assert work.started == [7]


def test_a_cancelled_item_is_never_started():
    work = Work()
    ahead = LookAhead(work, workers=1, window=1)
    ahead.start([1, 2])
    ahead.cancel(2)                                 # queued, not yet started
    work.go.set()
    assert ahead.result(1) == 10
    ahead.release(1)
    ahead.stop()
    assert work.started == [1] and ahead.released(2)
