"""A bounded look-ahead: work done on a pool of threads in the order it will be asked for.

Grading runs each submission in the sandbox on one of ``workers`` threads, and pytest asks
for the results one submission after another. The threads must never wait for pytest
(between its sessions, say), and a batch of any size must hold only a window's worth of
results: so items are started in the order they will be asked for, at most ``window`` ahead
of the last one released.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor


class LookAhead:
    """``work(item)`` for each item, run ahead on ``workers`` threads (``thread_name``), at
    most ``window`` items started and not yet released."""

    def __init__(self, work: Callable, workers: int, window: int, thread_name: str = "lookahead"):
        self.work, self.workers, self.window = work, workers, window
        self.thread_name = thread_name
        self.futures: dict[Hashable, Future] = {}   # running or run, not yet released
        self.results: dict = {}                      # item → its result, once asked for
        self._pool: ThreadPoolExecutor | None = None
        self._queue: deque = deque()                 # to start, in order
        self._queued: set = set()                    # ever queued
        self._released: set = set()                  # released or cancelled: never run again

    def start(self, items: Iterable) -> None:
        """Queue ``items`` (in the order they will be asked for); those already queued stay
        where they are."""
        items = list(items)
        if not items:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix=self.thread_name)
        new = [x for x in items if x not in self._queued]
        self._queued.update(new)
        self._queue.extend(new)
        self._top_up()

    def _top_up(self) -> None:
        while self._queue and len(self.futures) < self.window and self._pool is not None:
            item = self._queue.popleft()
            if item not in self.futures and item not in self._released:
                self.futures[item] = self._pool.submit(self.work, item)

    def result(self, item):
        """``item``'s result, waited for; an item never queued is worked on here (and never
        again)."""
        if item not in self.results:
            future = self.futures.get(item)
            if future is None:
                self._released.add(item)
            self.results[item] = future.result() if future else self.work(item)
        return self.results[item]

    def released(self, item) -> bool:
        return item in self._released

    def release(self, item) -> None:
        """Done with ``item``: keep nothing of it, and start the next."""
        self.results.pop(item, None)
        self.futures.pop(item, None)
        self._released.add(item)
        self._top_up()

    def cancel(self, item) -> None:
        """Not wanted after all: stop it if it has not started, and release it."""
        future = self.futures.get(item)
        if future is not None:
            future.cancel()
        self.release(item)

    def stop(self) -> None:
        """Start nothing more; wait for what runs."""
        self._queue.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
