"""Grading on a Dask cluster, for a batch one machine cannot grade in time.

    the client (trusted, holds the secret)          each Dask worker (trusted, no secret)
    ───────────────────────────────────────         ─────────────────────────────────────
    verify the key, find the notebooks, skip the    grade the shard's notebooks, read from
    unchanged ones, cut the rest in shards of       the bytes that came (``intake.Sent``),
    ~SHARD_SIZE: each carries the key's head, its   with the kit's own GradingRun: student
    students' entries and their notebooks' bytes    code in the worker's sandbox servers, every
         ── shard ──────────────────────────────▶   verdict decided in its trusted process
    record each shard's rows in one transaction     ◀── rows, as the gradebook stores them ─
    (the only gradebook writer; recording what is       (column values: ``encoded``)
    stored already changes nothing)

The key is verified at the client and the course secret never leaves it: a shard holds its
students' entries only (their givens, expected values, hidden cases), which a worker needs to
judge them, and the rows come back as data. A shard travels as data scattered to a worker,
which the task that grades it names; a shard whose task fails (its worker was lost, and the
shard's data with it, or anything else) is sent again whole, once; one that fails again is
split into one shard per submission, each sent again once too, and a submission that still
fails on its own is recorded as the grader's error for that submission alone (graded again
by the next run, as every grader error is). Student failures are results,
never retries: they are decided inside GradingRun like on one machine, so the gradebook is
row for row the one local grading writes (the timing columns aside).

The cluster's workers are found or started, and checked, by ``grader.run.workers``.
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import itertools
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from formats.answer_key import parse_entry

from grader.run import garbage
from grader.budget import CPU_SECONDS
from grader.run.grading import GradingRun, grader_version
from grader.run.graded import GradedSubmission
from grader.store.rows import ResultRow, SubmissionRow, encoded
from grader.intake.records import Found, Sent
from grader.run.shards import IN_FLIGHT, SERVERS_PER_WORKER, SHARD_SIZE, Shard, only, shards_of
from grader.verdicts.parts import ERROR, Verdict


# --- on a worker --------------------------------------------------------------------------

_SANDBOXES: dict = {}
_STARTING = threading.Lock()        # (asked from a task's thread and from the worker's loop)
_ONE_SHARD_AT_A_TIME = threading.Lock()


def get_workers_ready(client, wall_seconds: float) -> list:
    """Have every worker import the kit and start its sandbox servers now, each as a task of
    its own, while the client still finds and reads the notebooks (the two overlap, and the
    first rows come sooner). Never waited for: a worker that is not ready when its first
    shard comes starts its servers then, as it would anyway; asking twice starts nothing
    twice. Returns the tasks' futures: hold them until grading starts
    (a future let go of is a task Dask may cancel before it ran)."""
    return [client.submit(get_ready, SERVERS_PER_WORKER, wall_seconds, workers=[address], pure=False)
            for address in client.scheduler_info().get("workers", {})]


def get_ready(servers: int, wall_seconds: float) -> None:
    """On a worker: its sandbox servers for shards of ``wall_seconds`` per run, started."""
    _sandbox(servers, wall_seconds)


def walls_here(wall_seconds: float) -> list[dict]:
    """On a worker: the walls a child of its own sandbox servers reports (an empty job), which
    are the walls its shards get (``grader.sandbox.client.explain``)."""
    from grader.sandbox.client import explain
    return explain(sandbox=_sandbox(SERVERS_PER_WORKER, wall_seconds))


def _sandbox(servers: int, wall_seconds: float):
    """This worker process's sandbox servers, started for its first shard and kept."""
    from grader.sandbox.client import Limits, Sandbox
    key = (servers, wall_seconds)
    with _STARTING:
        if key not in _SANDBOXES:
            sandbox = Sandbox(servers, Limits(wall_seconds=wall_seconds)).__enter__()
            atexit.register(sandbox.close)
            _SANDBOXES[key] = sandbox
        return _SANDBOXES[key]


class _ShardEntries(Mapping):
    """A shard's entries on the worker: each parsed when its submission is graded (GradingRun
    keeps it while the submission is in flight), its digest that of the text it came as (the
    key's own canonical text, so the rows' content hashes are the client's)."""

    def __init__(self, texts: dict[str, bytes]):
        self._texts = texts

    def __getitem__(self, sid: str) -> dict:
        return parse_entry(self._texts[sid])

    def digest(self, sid: str) -> str:
        return hashlib.sha256(self._texts[sid]).hexdigest()

    def __iter__(self):
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, sid) -> bool:
        # (Mapping's own would parse the entry to answer: the gradebook's hash asks per row)
        return sid in self._texts


class _Collected:
    """Where a worker's GradingRun records: the rows, checked and encoded as the gradebook
    stores them (``encoded``: refused here as the gradebook would refuse them), kept to go
    back to the client. Column values, not row objects: the client unpickles plain tuples and
    writes them as they are (``Gradebook.record_encoded``), where the rows themselves had to
    be rebuilt object by object, then encoded again."""

    def __init__(self):
        self.graded: list[tuple[tuple, tuple, list]] = []

    def record(self, submission: SubmissionRow, results: list[ResultRow]) -> None:
        self.graded.append(encoded(submission, results))


STARTED = "attnkit-started"      # the scheduler's metadata: run → task → RUNNING or DONE
RUNNING, DONE = "running", "done"


def grade_shard(shard: Shard, before_each=None, run_id: str = "") -> list[tuple[tuple, tuple, list]]:
    """Grade one shard (a Dask task): its notebooks run in this worker's sandbox and are
    judged here. ``before_each(student)``: called before each submission is recorded (tests
    use it to lose a worker mid-shard). ``run_id``: the scheduler is told (and has answered)
    that this task is running before anything is graded, and done after (``_say``).
    Returns each handin's rows ``encoded``."""
    with _ONE_SHARD_AT_A_TIME, garbage.paced():
        if run_id:
            _say(run_id, RUNNING)
        # (the run is gone when the block ends, so what it held in cycles is collected then)
        graded, failed = _graded(shard, before_each)
    if failed:
        raise RuntimeError("; ".join(failed))
    if run_id:
        _say(run_id, DONE)
    return graded


def _graded(shard: Shard, before_each) -> tuple[list, list[str]]:
    """(the shard's rows, the students that could not be recorded)."""
    entries = shard.entries if hasattr(shard.entries, "only") else _ShardEntries(shard.entries)
    key = {"assignment": shard.head, "students": entries}
    collected = _Collected()
    # read from the bytes that came (no file written and read back): Sent
    found = [Sent(**{f.name: getattr(original, f.name) for f in fields(Found)}, data=data)
             for original, data in (shard.notebooks[s] for s in shard.students)]
    run = GradingRun(key, found, collected, _sandbox(shard.servers, shard.wall_seconds),
                     servers=shard.servers, regrade=True, kit_version=shard.kit_version,
                     cpu_seconds=shard.cpu_seconds)
    try:
        if shard.servers > 1:
            run.start(shard.students)      # on the run's threads, one per server
        # else each is graded here, in the task's own thread, as it is recorded: a second
        # thread would only take the GIL in turns with this one (the worker's CPU is one)
        for student in shard.students:
            if before_each is not None:
                before_each(student)
            run.finished(student)
    finally:
        run.stop()
    return collected.graded, run.failed


def _say(run_id: str, state: str) -> None:
    """Tell the scheduler this task is RUNNING or DONE (a round trip: it knows before this
    worker grades anything, or hands its rows back). When the worker is lost, the client can
    then tell the shard it was grading from those that only waited there or had finished,
    which lost nothing but their data and are sent again freely."""
    from distributed import get_client, get_worker
    get_client().set_metadata([STARTED, run_id, get_worker().get_current_task()], state)


# --- on the client ------------------------------------------------------------------------

class NoWorkers(RuntimeError):
    """The cluster has no worker left to send a shard to."""


@dataclass
class ClusterStats:
    shards: int = 0                 # sent (not counting the single-submission ones of a split)
    resent: int = 0                 # shards sent again whole after a failure (a worker lost)
    split: int = 0                  # shards split into single submissions after a second failure
    lost: list = field(default_factory=list)   # students recorded as the grader's error alone
    seconds: float = 0.0


def _task_name(shard: Shard, run_id: str) -> str:
    """Its students and this run: a key Dask already holds a result for (an earlier run's,
    on the same cluster) would be given that result, not graded again."""
    names = hashlib.sha256("\n".join(shard.students).encode("utf-8")).hexdigest()[:16]
    return f"attnkit-shard-{len(shard.students)}-{names}-{run_id[:12]}"


def error_rows(key: dict, found: Found, why: str, kit_version: str):
    """The rows of a submission the cluster could not grade, ``encoded``: every part the
    grader's error."""
    run = GradingRun(key, [found], None, None, kit_version=kit_version)
    graded = GradedSubmission({}, {}, [why])
    for problem, parts in run.parts_of(found.student):
        for part, points in parts:
            graded.verdicts[(problem, part)] = Verdict(0.0, points, ERROR, why)
    return encoded(*run.rows(found.student, graded))


def grade_on_cluster(key: dict, submissions: list[Found], gradebook, client, *,
                     kit_version: str | None = None, cpu_seconds: float = CPU_SECONDS,
                     wall_seconds: float = 10.0, shard_size: int = SHARD_SIZE, progress=None,
                     before_each=None) -> tuple[list[str], ClusterStats]:
    """Grade ``submissions`` (``intake.match``'s, unread) on the cluster ``client`` into
    ``gradebook``; (the students recorded, what the cluster did). At most IN_FLIGHT shards
    per worker are out at once, so the client's memory does not grow with the batch."""
    started = time.perf_counter()
    kit_version = grader_version() if kit_version is None else kit_version
    workers = sorted(client.scheduler_info().get("workers", {}))
    readying = get_workers_ready(client, wall_seconds) if submissions else []  # noqa: F841 (held)
    unread: list[Found] = []
    shards = shards_of(key, submissions, kit_version=kit_version, cpu_seconds=cpu_seconds,
                       wall_seconds=wall_seconds, size=shard_size, workers=len(workers), unread=unread)
    stats = ClusterStats()
    recorded: list[str] = []
    out = _Sender(client, before_each)
    for shard in itertools.islice(shards, IN_FLIGHT * max(1, len(workers))):
        out.send(shard)
        stats.shards += 1
    try:
        for future in out.pending:
            shard, _, tries, waited, worker = out.futures.pop(future)
            try:
                graded = future.result()
            except Exception as err:  # noqa: BLE001 — a lost shard is sent again, never the batch lost
                if not _was_running(client, out.run_id, future.key) and waited < MAX_WAITED:
                    # it was waiting on a worker that was lost, or had finished there: nothing
                    # in it stopped the worker, only its data was lost with it
                    stats.resent += 1
                    out.send(shard, tries, alone=len(shard.students) == 1, waited=waited + 1)
                    continue
                graded = _after_failure(shard, tries, err, out.send, stats, key, kit_version)
                if graded is None:
                    continue
            gradebook.record_encoded(graded)
            recorded += [who[1] for who, _, _ in graded]
            if progress is not None:
                progress.advance(len(graded))
            for more in itertools.islice(shards, 1):     # one out, one in: where it came from
                out.send(more, prefer=worker)
                stats.shards += 1
    finally:
        _forget_started(client, out.run_id)
    recorded += _grade_unread(key, unread, gradebook, kit_version)
    stats.seconds = time.perf_counter() - started
    return recorded, stats


class _Sender:
    """The shards out on the cluster in this run: each sent as data with a task that grades
    it, named after its students and the run (and, sent again, after how often); ``pending``
    yields each task's future as it finishes, ``futures`` says what it held.

    Each shard goes to the worker with the fewest shards out, among equals the one that has
    just finished one (``prefer``): a worker is sent a shard when it takes one up, so the
    workers run out of work together. (Dask's own scatter deals data round robin, whoever is
    free: near the end one worker then grades its queued shards while the other waits.) A
    worker that joins the cluster mid-run has none out, and is sent the next ones."""

    def __init__(self, client, before_each=None):
        from distributed import as_completed
        self.client, self.before_each = client, before_each
        self.run_id = uuid.uuid4().hex
        self.futures: dict = {}     # future → (shard, its data, tries, times it waited, worker)
        self.pending = as_completed()
        self._known: list[str] = []
        self._asked = -float("inf")

    def send(self, shard: Shard, tries: int = 0, alone: bool = False, waited: int = 0,
             prefer: str | None = None) -> None:
        name = (_task_name(shard, self.run_id) + ("-alone" if alone else "")
                + (f"-again-{tries}-{waited}" if tries or waited else ""))
        worker = self._least_busy(prefer)
        data = _scattered(self.client, shard, worker)
        future = self.client.submit(grade_shard, data, self.before_each, self.run_id, key=name, pure=False)
        self.futures[future] = (shard, data, tries, waited, worker)
        self.pending.add(future)

    def _least_busy(self, prefer: str | None) -> str | None:
        """The worker to send a shard to (None: the scheduler's choice, where it cannot say)."""
        out = collections.Counter(sent[-1] for sent in self.futures.values())
        return min(self._workers(), key=lambda w: (out[w], w != prefer, w), default=None)

    def _workers(self) -> list[str]:
        """The cluster's workers, asked of the scheduler at most every WORKERS_AGE seconds (its
        answer describes every worker: a large cluster's is large)."""
        if time.monotonic() - self._asked > WORKERS_AGE:
            try:
                self._known = list(self.client.scheduler_info()["workers"])
            except Exception:  # noqa: BLE001 — a placement, never a reason not to grade
                self._known = []
            self._asked = time.monotonic()
        return self._known


WORKERS_AGE = 1.0            # seconds: a worker that joins mid-run is sent shards this soon
SCATTER_TRIES = 20           # a worker the scheduler chose may be dying: another is chosen
SCATTER_PAUSE = 0.25


def _scattered(client, shard: Shard, worker: str | None = None):
    """The shard sent to a worker as data (a future of it): to ``worker`` where one is named
    and takes it. A task carrying the shard itself costs the client more CPU (the scheduler
    unpacks and packs its graph again). A worker lost while it is chosen is no reason to
    stop: the scheduler is asked again, for SCATTER_TRIES × SCATTER_PAUSE seconds."""
    if worker is not None:
        try:
            return client.scatter(shard, hash=False, workers=[worker])
        except Exception:  # noqa: BLE001 — gone since it was chosen: the scheduler chooses
            pass
    for attempt in range(SCATTER_TRIES):
        try:
            return client.scatter(shard, hash=False)
        except (TimeoutError, OSError) as err:      # (Dask's CommClosedError is an OSError)
            if attempt == SCATTER_TRIES - 1:
                raise NoWorkers(f"the cluster has no worker to take a shard ({err}); what was "
                                f"graded is recorded, and the next run grades the rest") from None
            time.sleep(SCATTER_PAUSE)


MAX_WAITED = 3        # times a shard is sent again for losing its data while it waited


def _after_failure(shard: Shard, tries: int, err: Exception, send, stats: ClusterStats, key: dict,
                   kit_version: str):
    """A shard whose task failed while it ran (its worker lost, or anything else): sent again
    whole once; then split into one shard per submission, each sent again once; a submission
    that still fails is the grader's error, alone. Its rows, or None when sent again."""
    if tries == 0:
        stats.resent += 1
        send(shard, tries=1, alone=len(shard.students) == 1)
        return None
    if len(shard.students) > 1:
        stats.split += 1
        for student in shard.students:
            send(replace(shard, entries=only(shard.entries, student),
                         notebooks={student: shard.notebooks[student]}), alone=True)
        return None
    student = shard.students[0]
    why = (f"internal grader error: the cluster could not grade this submission "
           f"({type(err).__name__}: {str(err)[:200]}); it is graded again on the next run")
    stats.lost.append(student)
    return [error_rows(key, shard.notebooks[student][0], why, kit_version)]


def _was_running(client, run_id: str, task: str) -> bool:
    """Was the task grading on its worker when it failed (``_say``)? No answer counts as yes."""
    try:
        return client.get_metadata([STARTED, run_id, task], None) == RUNNING
    except Exception:  # noqa: BLE001 — no answer: count the failure against the shard
        return True


def _forget_started(client, run_id: str) -> None:
    try:
        client.set_metadata([STARTED, run_id], {})
    except Exception:  # noqa: BLE001 — a few bytes left on a scheduler that is gone anyway
        pass


def _grade_unread(key: dict, unread: list[Found], gradebook, kit_version: str) -> list[str]:
    """The notebooks the client could not read, judged here: nothing of theirs runs."""
    if not unread:
        return []
    local = GradingRun(key, unread, gradebook, None, regrade=True, kit_version=kit_version)
    try:
        local.start([f.student for f in unread])
        for found in unread:
            local.finished(found.student)
    finally:
        local.stop()
    return list(local.recorded)
