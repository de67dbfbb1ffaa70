"""The sandbox's servers as a pool (``ServerPool``): started (or taken already running),
borrowed one per job by any number of threads, given back, replaced when one died between jobs
or was killed mid-job, and closed. What a job does with a borrowed server is the client's
(``grader.sandbox.client``).
"""

from __future__ import annotations

import queue
import threading
from typing import Self

from .channel import Channel
from .processes import Limits, SandboxError


class ServerPool:
    """``servers`` sandbox servers, each lent to one job at a time (``borrow``, ``give_back``)."""

    def __init__(self, servers: int = 1, limits: Limits = Limits(), started=(), lazy: bool = False):
        """``started``: servers already running (``processes.start_servers``, e.g. started
        before NumPy was imported), used first; the rest are started here, or, ``lazy``,
        each when a run first finds no idle server (a grading run whose judges start
        servers of their own may never need these: grader.run.judges)."""
        started = list(started)
        if servers < 1:
            for process in started:
                process.kill()
            raise ValueError("a sandbox needs at least one server")
        self.limits = limits
        self._idle: queue.Queue[Channel] = queue.Queue()
        self._servers: list[Channel] = []
        self._lock = threading.Lock()
        self._closed = False
        for process in started[servers:]:          # more than asked for: not needed
            process.kill()
        started = started[:servers]
        self._unstarted = 0 if not lazy else servers - len(started)
        try:
            while started:
                self._add(Channel(limits, started.pop(0)))
            for _ in range(servers - len(self._servers) - self._unstarted):
                self._add(Channel(limits))
        except BaseException:
            for process in started:                 # (those not yet wrapped)
                process.kill()
            self.close()
            raise

    def _add(self, server: Channel) -> None:
        with self._lock:
            self._servers.append(server)
        self._idle.put(server)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed, servers, self._servers = True, self._servers, []
        for server in servers:
            server.close()

    def borrow(self) -> Channel:
        """An idle server, started now if a lazy pool has none idle yet; one that died while
        idle is replaced first."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        with self._lock:
            start = self._unstarted > 0 and self._idle.empty()
            self._unstarted -= start
        if start:
            try:
                server = Channel(self.limits)
            except BaseException:
                with self._lock:
                    self._unstarted += 1
                raise
            with self._lock:
                closed = self._closed
                if not closed:
                    self._servers.append(server)
            if closed:                              # closed while it started: not kept
                server.close()
                raise SandboxError("the sandbox is closed")
            return server
        server = self._idle.get()
        if server.alive:
            return server
        try:                                      # died between jobs: replace it
            replacement = Channel(self.limits)
        except BaseException:
            self._idle.put(server)                # the next borrower tries again
            raise
        server.close()
        with self._lock:
            self._servers = [replacement if s is server else s for s in self._servers]
        return replacement

    def give_back(self, server: Channel) -> None:
        self._idle.put(server)
