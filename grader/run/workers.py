"""A Dask cluster's workers, for grading on them (``grader.run.cluster``): found or started
(``connect``: a LocalCluster on this machine for ``local:N``, its workers forked from a fork
server that imported the kit once, each keeping to a CPU of its own and starting its sandbox
servers as it starts (``dask_setup``), its loops quiet), and checked before any student code
runs there (``workers_of_another_kit``, ``workers_unprotected``). ``Connecting`` does all of it
on a thread of its own, while the command reads the course.

This module is light to import (the fork server can be started before the command's own
imports, ``prepare_local_cluster``): what it needs of the kit, it imports where it is used.
"""

from __future__ import annotations

import os
import threading

# What a LocalCluster's processes need not do while they grade (it has no dashboard to show
# it): sample every thread's stack every 10 ms for a profile (the task's thread stops for
# each sample), where gilknocker is installed, time the GIL every millisecond, and, in every
# server of the cluster (scheduler, nannies, workers, client), measure its event loop's
# delay every 20 ms, read the process's memory every 100 ms, and the system's CPU, memory,
# network and disks every 500 ms: a background cost that grows with the run's length and
# takes the workers' CPU. Slower, they still warn of a blocked loop, pause a worker near its
# memory limit and report to the scheduler.
QUIET_WORKERS = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.system-monitor.gil.enabled": False,
                 "distributed.admin.tick.interval": "500ms",
                 "distributed.worker.memory.monitor-interval": "1s",
                 "distributed.admin.system-monitor.interval": "5s",
                 "distributed.admin.system-monitor.disk": False,
                 # (nor serve metrics and health checks over HTTP: no one asks them here, and
                 # their modules, Prometheus's client first, are imported as each process starts)
                 "distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}


WALL_SECONDS = "attnkit.sandbox-wall-seconds"    # (Dask's configuration, as a worker gets it)


def connect(cluster: str, wall_seconds: float | None = None):
    """A Dask ``Client`` (and the LocalCluster it started, to close, or None): ``local:N``
    starts a ``LocalCluster`` of N single-threaded worker processes on loopback with no
    dashboard, each keeping to a CPU of its own as it starts and (with ``wall_seconds``)
    starting its sandbox servers for runs of that length (``dask_setup``);
    ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` connects to a running scheduler (TLS as Dask's
    configuration sets it: ``distributed.comm.tls.*``); a path names a scheduler file."""
    import dask
    from distributed import Client, LocalCluster
    if cluster.startswith("local:"):
        workers = int(cluster.split(":", 1)[1])
        if workers < 1:
            raise ValueError(f"--cluster {cluster}: give at least one worker")
        setup = {"distributed.worker.preload": [__name__],       # (dask_setup)
                 **({WALL_SECONDS: float(wall_seconds)} if wall_seconds is not None else {})}
        # a task whose worker died once more is given up (KilledWorker): the client splits it
        with dask.config.set({"distributed.scheduler.allowed-failures": 1, **QUIET_WORKERS,
                              **_forked_workers(), **setup}):
            local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                 host="127.0.0.1", dashboard_address=None, silence_logs=40)
        client = Client(local)
        return client, local
    if "://" in cluster:
        return Client(cluster), None
    return Client(scheduler_file=cluster), None


# What a LocalCluster's worker process needs, imported once in the fork server it is forked
# from rather than by every worker as it starts (this list replaces Dask's own, whose
# packages `distributed` imports anyway).
WORKER_PRELOAD = ["distributed", "numpy", "orjson", "grader.run.cluster", "grader.run.grading",
                  "grader.run.workers", "grader.sandbox.client", "formats.key_shards"]


def _forked_workers() -> dict:
    """Dask's configuration that has a LocalCluster's workers forked from a fork server which
    imported WORKER_PRELOAD, where the system has one ({} where not: spawned). A spawned worker
    imports Dask and the kit afresh, each worker on its own, while the first shards are
    already waiting. Nothing of the client's is inherited: the fork server is a fresh
    interpreter of its own."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return {}
    import dask
    from distributed.utils import get_mp_context
    method = {"distributed.worker.multiprocessing-method": "forkserver"}
    with dask.config.set(method):
        get_mp_context().set_forkserver_preload(WORKER_PRELOAD)   # (Dask sets its list once, first)
    return method


def prepare_local_cluster(cluster: str) -> None:
    """For ``local:N``, first thing in the command: start the fork server its workers will be
    forked from (where the system has one), which imports WORKER_PRELOAD (about half a second)
    on another core, while this process imports Dask, which it needs before it can start the
    cluster; the command's own imports and the course's reading then overlap the workers'
    start. ``connect`` finds the fork server running. Nothing for another cluster."""
    if not cluster.startswith("local:"):
        return
    import multiprocessing
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver
        multiprocessing.get_context("forkserver").set_forkserver_preload(WORKER_PRELOAD)
        try:
            forkserver.ensure_running()
        except OSError:             # then LocalCluster starts it, or fails and says why
            pass
    try:
        import distributed  # noqa: F401
    except ImportError:             # (the command says what to install)
        pass


def dask_setup(worker) -> None:
    """On each worker of a LocalCluster ``connect`` started (Dask's worker preload), as the
    worker starts and before it joins the scheduler (a replacement for a lost worker too):

    - keep to a CPU of its own (its number, the LocalCluster's name for it, picks which), as
      batch work, with every process it starts: what a judge does on one machine
      (``grader.run.judges._pin``), and for the same reason: a worker's grading thread and its
      sandbox child take turns dozens of times per submission. Every thread it has is moved
      (Linux sets a CPU mask per thread; threads made later inherit it);
    - with a wall time in its configuration (``connect``'s ``wall_seconds``), start its
      sandbox servers: a server takes about a tenth of a second to start; begun here, it is
      ready by the time the first shard has travelled, where started by the first task it
      would not be (``get_workers_ready`` asks again: that starts nothing twice)."""
    import dask

    from grader.run.judges import usable_cpus
    cpus = usable_cpus()
    if cpus and isinstance(worker.name, int) and worker.name >= 0:
        _keep_process_to(cpus[worker.name % len(cpus)])
    wall_seconds = dask.config.get(WALL_SECONDS, None)
    if wall_seconds is not None:
        from grader.run.cluster import get_ready
        from grader.run.shards import SERVERS_PER_WORKER
        get_ready(SERVERS_PER_WORKER, float(wall_seconds))


def _keep_process_to(cpu: int) -> None:
    from grader.run.judges import keep_to_cpu
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:                               # (no /proc: not Linux)
        return
    for thread in threads:
        keep_to_cpu(cpu, int(thread))


def workers_unprotected(client, wall_seconds: float) -> list[str]:
    """The workers where the sandbox's walls cannot keep student code from the worker's own
    files (``walls.protected``), as a child of the servers that will grade there (for runs of
    ``wall_seconds``) reports them: a cluster grades only where one machine would."""
    return sorted(address for address, ok in client.run(_protected, wall_seconds).items() if not ok)


def workers_of_another_kit(client) -> list[str]:
    """The workers whose kit is not this one ("address (version)"): a shard graded there could
    be graded otherwise than here, and a kit before the key's format /2 cannot read the
    packed values of this kit's keys. A cluster grades only where every worker runs this kit."""
    mine = _kit_version()
    return sorted(f"{address} ({version})" for address, version in client.run(_kit_version).items()
                  if version != mine)


def _kit_version() -> str:
    from formats import version      # (read when asked: a test pretends a worker runs another)
    return version.KIT_VERSION


def _protected(wall_seconds: float) -> bool:
    from grader.run.cluster import walls_here
    from grader.sandbox.walls import protected
    # (its own servers, which it starts as it starts or when first asked: the same walls as
    # a bare server's, without starting one more)
    return protected(walls_here(wall_seconds))


class ClusterUnavailable(RuntimeError):
    """--cluster named a cluster that cannot be had (Dask missing, no scheduler there), or
    one this kit refuses to grade on (``Connecting``'s check)."""


class Connecting:
    """A cluster asked for (``connect``, then ``check(client)``, whose answer, such as futures
    to hold, is kept): for ``local:N`` at once, on a thread of its own, so that the
    LocalCluster's processes start while the command reads the course; another cluster when
    ``get()`` first asks (a scheduler that does not answer then delays nothing the command
    would refuse first). ``get()`` raises what went wrong; ``close()`` closes what was
    started."""

    def __init__(self, cluster: str, check, wall_seconds: float | None = None):
        self.cluster, self.check, self.wall_seconds = cluster, check, wall_seconds
        self.client = self.local = self.checked = None
        self._error: BaseException | None = None
        self._thread = None
        if cluster.startswith("local:"):
            self._thread = threading.Thread(target=self._connect, name="attnkit-cluster", daemon=True)
            self._thread.start()

    def _connect(self) -> None:
        try:
            try:
                self.client, self.local = connect(self.cluster, self.wall_seconds)
            except ImportError:
                raise ClusterUnavailable("--cluster needs Dask's distributed: pip install "
                                         "'attention-kit[cluster]'") from None
            except (OSError, ValueError, TimeoutError) as err:
                raise ClusterUnavailable(f"--cluster {self.cluster}: {err}") from None
            self.checked = self.check(self.client)
        except BaseException as err:  # noqa: BLE001 — raised again by get(), in the command's thread
            self._error = err

    def get(self):
        """The Dask client, once connected and checked."""
        if self._thread is not None:
            self._thread.join()
        elif self.client is None and self._error is None:
            self._connect()
        if self._error is not None:
            raise self._error
        return self.client

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self.client is not None:
            self.client.close()
        if self.local is not None:
            self.local.close()
