"""Grading on a real Dask LocalCluster on loopback (grader/run/cluster.py): the gradebook is row
for row the one local grading writes, also when a worker is killed mid-run, and a submission
that kills its worker costs only itself."""

import functools
import os
import signal
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed")

from grader.run.workers import connect                                    # noqa: E402
from grader.run.shards import IN_FLIGHT, shard_sizes                       # noqa: E402
from grader.store.gradebook import Gradebook                                # noqa: E402
from grader.run.pipeline import grade_folder                              # noqa: E402



@pytest.fixture(scope="module")
def cluster():
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # (workers cannot import tests)
    client, local = connect("local:2", wall_seconds=5.0)     # (the wall time _graded grades with)
    try:
        yield client
    finally:
        client.close()
        local.close()


def _graded(graded_class, client, tmp_path, **options) -> tuple[Path, Path, dict, object]:
    build, key, local, _ = graded_class(12)
    path = tmp_path / "cluster.sqlite"
    with Gradebook(path) as gradebook:
        summary = grade_folder(key, build / "submissions" / "submitted", gradebook, None, cluster=client,
                               review=False, wall_seconds=5.0, **options)
    return local, path, key, summary


def _listening(port: int) -> list[str]:
    """The addresses (as /proc/net/tcp* writes them) listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.append(address)
    return found


def test_the_local_cluster_listens_on_loopback_only_and_serves_no_dashboard(cluster):
    info = cluster.scheduler_info()
    assert info["address"].startswith("tcp://127.0.0.1:") and len(info["workers"]) == 2
    assert all(address.startswith("tcp://127.0.0.1:") for address in info["workers"])
    # Dask keeps an HTTP server for /health and /metrics: on loopback, and with no dashboard
    import urllib.error
    import urllib.request
    port = info.get("services", {}).get("dashboard")
    if port is not None:
        assert _listening(port) == ["0100007F"]          # 127.0.0.1, and no other address
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5)
        assert missing.value.code == 404


def _where_each_thread_runs():
    """Where every thread of this worker, and every process it started (its sandbox servers), runs."""
    import os

    import psutil
    threads = [int(t) for t in os.listdir("/proc/self/task")]
    threads += [child.pid for child in psutil.Process().children()]
    return sorted({(tuple(sorted(os.sched_getaffinity(t))), os.sched_getscheduler(t)) for t in threads})


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity here")
def test_each_local_worker_keeps_to_a_cpu_of_its_own_as_batch_work(cluster):
    """Every thread of each worker (those it makes later inherit it: the sandbox server it
    starts, that server's children) on one CPU, a different one per worker while there are
    CPUs enough, as SCHED_BATCH: a judge's arrangement on one machine. Each worker keeps to
    its CPU as it starts, before its sandbox servers start (``dask_setup``): they are on it
    too. (The test that kills a worker asks it of the replacement.)"""
    cpus = sorted(os.sched_getaffinity(0))
    seen = cluster.run(_where_each_thread_runs)
    assert len(seen) == 2
    placed = [threads[0][0] for threads in seen.values()]
    assert all(len(threads) == 1 for threads in seen.values()), seen      # every thread alike
    assert all(len(cpu) == 1 and cpu[0] in cpus for cpu in placed)
    assert len(set(placed)) == min(2, len(cpus))
    assert all(threads[0][1] == os.SCHED_BATCH for threads in seen.values())


def test_each_local_worker_starts_its_sandbox_servers_as_it_starts(cluster):
    from grader.run.shards import SERVERS_PER_WORKER
    # no task has run: the workers started them before they joined (connect's wall_seconds)
    assert list(cluster.run(_sandboxes_started).values()) == [[(SERVERS_PER_WORKER, 5.0)]] * 2


def test_the_walls_are_asked_of_the_workers_own_sandbox_servers(cluster):
    from grader.run.workers import workers_unprotected
    from grader.sandbox.walls import protected
    here = protected()
    assert workers_unprotected(cluster, 5.0) == ([] if here else sorted(cluster.scheduler_info()["workers"]))
    # asked of the servers grading uses: still one a worker, none started to be asked
    assert list(cluster.run(_servers_for, 5.0).values()) == [1, 1]


def test_a_two_worker_cluster_writes_what_local_grading_writes(graded_class, cluster, tmp_path, gradebook_rows):
    local, path, key, summary = _graded(graded_class, cluster, tmp_path, shard_size=5)
    assert len(summary.recorded) == 12 and summary.run.cluster.shards == len(list(shard_sizes(12, 5, 2)))
    assert gradebook_rows(path) == gradebook_rows(local)
    # graded again: nothing changed, so nothing is sent
    with Gradebook(path) as gradebook:
        again = grade_folder(key, Path(local).parent.parent / "submissions" / "submitted", gradebook, None,
                             cluster=cluster, review=False, wall_seconds=5.0)
    assert again.recorded == [] and len(again.skipped) == 12
    assert gradebook_rows(path) == gradebook_rows(local)


def _rows_alive() -> int:
    """The graded rows this worker process still holds (nothing collected first)."""
    import gc
    from grader.store.rows import ResultRow, SubmissionRow
    return sum(type(o) in (SubmissionRow, ResultRow) for o in gc.get_objects())


def test_a_worker_keeps_nothing_of_the_shards_it_graded(graded_class, cluster, tmp_path):
    # a worker grades shard after shard with the collector paced (grader.run.garbage): what a
    # shard left in cycles (its grading run, holding the notebooks and rows) must go with it,
    # or a worker of a large course grows by every submission it grades
    _graded(graded_class, cluster, tmp_path, shard_size=3)
    # (the client's release of the last results reaches the workers a moment later)
    deadline = time.monotonic() + 10
    while any(cluster.run(_rows_alive).values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.run(_rows_alive) == {address: 0 for address in cluster.scheduler_info()["workers"]}


def test_shards_start_small_on_each_worker_and_shrink_at_the_end():
    sizes = list(shard_sizes(1000, 100, 2))
    assert sum(sizes) == 1000 and max(sizes) == 100
    assert sizes[:2] == [25, 25]                       # each worker's first: a quarter
    full = sizes.index(100)
    tail = sizes[sizes.index(100, full):]
    tail = tail[next(i for i, n in enumerate(tail) if n < 100):]
    assert tail == sorted(tail, reverse=True) and min(tail[:-1]) >= 10    # down to a tenth
    left = 1000 - sum(sizes[:len(sizes) - len(tail)])
    assert tail[0] == -(-left // (IN_FLIGHT * 2))      # a share of what is left per shard out
    # what the cluster does with a batch smaller than a shard, or one worker
    assert list(shard_sizes(3, 100, 2)) == [3] and list(shard_sizes(0, 100, 2)) == []
    assert sum(shard_sizes(12, 5, 1)) == 12 and list(shard_sizes(5, 1, 4)) == [1] * 5


def _sandboxes_started() -> list:
    from grader.run import cluster
    return sorted(cluster._SANDBOXES)


def test_each_worker_starts_its_sandbox_servers_when_asked_before_any_shard(cluster):
    import time
    from grader.run.cluster import get_workers_ready
    from grader.run.shards import SERVERS_PER_WORKER
    assert all((SERVERS_PER_WORKER, 7.0) not in started for started in cluster.run(_sandboxes_started).values())
    readying = get_workers_ready(cluster, 7.0)   # returns at once: nothing waits for the servers
    assert len(readying) == 2
    deadline = time.monotonic() + 60
    while not all((SERVERS_PER_WORKER, 7.0) in started for started in cluster.run(_sandboxes_started).values()):
        assert time.monotonic() < deadline, cluster.run(_sandboxes_started)
        time.sleep(0.1)
    again = get_workers_ready(cluster, 7.0)      # asked again: nothing more is started
    cluster.gather(again)
    time.sleep(0.5)
    assert list(cluster.run(_servers_for, 7.0).values()) == [SERVERS_PER_WORKER] * 2


def _servers_for(wall_seconds: float) -> int:
    """How many sandbox servers for runs of ``wall_seconds`` this worker has started."""
    import psutil
    found = 0
    for child in psutil.Process().children():
        line = child.cmdline()
        if "grader.sandbox.server" in line and "--wall-seconds" in line:
            found += float(line[line.index("--wall-seconds") + 1]) == wall_seconds
    return found


class _Scheduler:
    """What ``_scattered`` asks of a client: a scatter that fails ``failures`` times (a
    worker lost while the scheduler chose it), then gives a future."""

    def __init__(self, failures: int):
        self.failures, self.asked = failures, 0

    def scatter(self, data, hash=True):
        self.asked += 1
        if self.asked <= self.failures:
            raise OSError("Stream is closed")
        return ("future of", data)


def test_a_shard_is_scattered_again_when_its_worker_goes_and_no_worker_at_all_stops_the_run(monkeypatch):
    from grader.run import cluster as grading_cluster
    monkeypatch.setattr(grading_cluster, "SCATTER_PAUSE", 0.0)
    flaky = _Scheduler(failures=3)
    assert grading_cluster._scattered(flaky, "shard") == ("future of", "shard") and flaky.asked == 4
    gone = _Scheduler(failures=10 ** 6)
    with pytest.raises(grading_cluster.NoWorkers, match="no worker to take a shard"):
        grading_cluster._scattered(gone, "shard")
    assert gone.asked == grading_cluster.SCATTER_TRIES


def _kill_worker(marker: Path, student: str, seen: str, always: bool = False) -> None:
    """Kill this worker process (SIGKILL, as a crash or the OOM killer would) before ``student``
    is recorded: once (``marker`` remembers it), or every time."""
    if seen == student and (always or not marker.exists()):
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_run_loses_no_row(graded_class, cluster, tmp_path, gradebook_rows):
    build, key, local, _ = graded_class(12)
    target = sorted(key["students"])[4]
    kill = functools.partial(_kill_worker, tmp_path / "killed", target)
    path = tmp_path / "cluster.sqlite"
    with Gradebook(path) as gradebook:
        summary = grade_folder(key, build / "submissions" / "submitted", gradebook, None, cluster=cluster,
                               review=False, wall_seconds=5.0, shard_size=3, before_each=kill)
    assert (tmp_path / "killed").exists()                # a worker did die mid-shard
    assert len(summary.recorded) == 12 and summary.run.cluster.lost == []
    assert gradebook_rows(path) == gradebook_rows(local)
    if hasattr(os, "sched_getaffinity"):         # Dask's replacement keeps to its CPU as it starts
        deadline = time.monotonic() + 60
        while len(cluster.scheduler_info()["workers"]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        placed = [threads[0][0] for threads in cluster.run(_where_each_thread_runs).values()]
        assert len(placed) == 2 and all(len(cpu) == 1 for cpu in placed)
        assert len(set(placed)) == min(2, len(os.sched_getaffinity(0)))


def test_a_submission_that_kills_its_worker_costs_only_itself(graded_class, cluster, tmp_path, gradebook_rows):
    build, key, local, _ = graded_class(12)
    target = sorted(key["students"])[7]
    kill = functools.partial(_kill_worker, tmp_path / "killed", target, always=True)
    path = tmp_path / "cluster.sqlite"
    with Gradebook(path) as gradebook:
        summary = grade_folder(key, build / "submissions" / "submitted", gradebook, None, cluster=cluster,
                               review=False, wall_seconds=5.0, shard_size=4, before_each=kill)
    # (another shard in flight on a worker that died may be split too: its students are still graded)
    assert summary.run.cluster.lost == [target] and summary.run.cluster.split >= 1, (summary.run.cluster, summary.recorded, summary.failed)
    rows, expected = gradebook_rows(path), gradebook_rows(local)
    assert [r for r in rows["results"] if target not in r] == [r for r in expected["results"] if target not in r]
    assert [r for r in rows["submissions"] if target not in r] == [r for r in expected["submissions"] if target not in r]
    with Gradebook(path) as gradebook:
        mine = gradebook.submission(key["assignment"]["id"], target)
    assert mine.status == "error" and "the cluster could not grade this submission" in mine.notes[0]


def test_the_command_grades_on_a_local_cluster_and_refuses_pytest_options(graded_class, tmp_path, gradebook_rows):
    import json
    import subprocess
    build, key, local, secret = graded_class(12)
    root = Path(__file__).resolve().parents[3]
    example = root / "problem_bank" / "assignments" / "example.yaml"
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    command = [sys.executable, "-m", "attnkit", "grade", str(example), str(build / "submissions" / "submitted"),
               "--key", str(build / "instructor" / "answer_key.json"), "--gradebook", str(tmp_path / "g.sqlite"),
               "--timeout", "5", "--cluster", "local:2", "--shard-size", "5"]
    out = subprocess.run(command + ["--json"], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout)
    assert said["graded"] == 12
    assert said["cluster"] == {"shards": len(list(shard_sizes(12, 5, 2))), "resent": 0, "split": 0, "lost": []}
    assert gradebook_rows(tmp_path / "g.sqlite") == gradebook_rows(local)
    refused = subprocess.run(command + ["-k", "weights"], env=env, cwd=root, capture_output=True, text=True)
    assert refused.returncode == 1 and "-k and --junitxml" in refused.stderr


def _pretend_kit(version: str) -> str:
    """On a worker: say it runs kit ``version``; returns what it said before."""
    from formats import version as kit
    before, kit.KIT_VERSION = kit.KIT_VERSION, version
    return before


def test_workers_running_another_kit_are_named(cluster):
    from grader.run.workers import workers_of_another_kit
    assert workers_of_another_kit(cluster) == []
    first = sorted(cluster.scheduler_info()["workers"])[0]
    before = cluster.run(_pretend_kit, "0.0.1", workers=[first])[first]
    try:
        assert workers_of_another_kit(cluster) == [f"{first} (0.0.1)"]
    finally:
        cluster.run(_pretend_kit, before, workers=[first])
    assert workers_of_another_kit(cluster) == []


def test_the_command_refuses_a_cluster_whose_worker_runs_another_kit(graded_class, cluster, tmp_path):
    import subprocess
    build, _, _, secret = graded_class(12)
    root = Path(__file__).resolve().parents[3]
    first = sorted(cluster.scheduler_info()["workers"])[0]
    before = cluster.run(_pretend_kit, "0.0.1", workers=[first])[first]
    try:
        out = subprocess.run(
            [sys.executable, "-m", "attnkit", "grade", str(root / "problem_bank" / "assignments" / "example.yaml"),
             str(build / "submissions" / "submitted"), "--key", str(build / "instructor" / "answer_key.json"),
             "--gradebook", str(tmp_path / "g.sqlite"), "--cluster", cluster.scheduler.address],
            env={**os.environ, "ATTNKIT_SECRET": secret}, cwd=root, capture_output=True, text=True, timeout=300)
    finally:
        cluster.run(_pretend_kit, before, workers=[first])
    assert out.returncode == 1, out.stderr
    assert f"refusing to grade on {first} (0.0.1)" in out.stderr, out.stderr
    import sqlite3
    with sqlite3.connect(tmp_path / "g.sqlite") as db:
        assert db.execute("SELECT count(*) FROM results").fetchone() == (0,)


def _walls_off(off: bool) -> None:
    """On a worker: its sandbox children answer that no wall holds (``off``), or as they do."""
    from grader.sandbox import client, walls
    if off:
        client._real_explain = getattr(client, "_real_explain", client.explain)
        client.explain = lambda *a, **k: [walls.wall(w["name"], False, "played: off") for w in walls.explain()]
    elif hasattr(client, "_real_explain"):
        client.explain = client._real_explain


def test_with_a_cluster_the_walls_asked_are_the_workers_not_the_clients(graded_class, cluster, tmp_path,
                                                                          monkeypatch, capsys):
    """No student code runs at the client: a client where no wall holds grades on workers
    where they hold, and a worker where none holds is refused."""
    import grader.sandbox.client as sandbox_client
    from attnkit.cli import main
    from grader.sandbox import walls
    build, _, _, secret = graded_class(12)
    asked = []
    monkeypatch.setattr(sandbox_client, "explain", lambda *a, **k: asked.append(1) or
                        [walls.wall(w["name"], False, "played: off") for w in walls.explain()])
    monkeypatch.setenv("ATTNKIT_SECRET", secret)
    root = Path(__file__).resolve().parents[3]
    command = ["grade", str(root / "problem_bank" / "assignments" / "example.yaml"),
               str(build / "submissions" / "submitted"), "--key", str(build / "instructor" / "answer_key.json"),
               "--timeout", "5", "--cluster", cluster.scheduler.address, "--json"]
    if walls.protected(None):          # (the workers' own walls hold here)
        assert main(command + ["--gradebook", str(tmp_path / "a.sqlite")]) == 0
        assert asked == [] and '"graded": 12' in capsys.readouterr().out
    first = sorted(cluster.scheduler_info()["workers"])[0]
    cluster.run(_walls_off, True, workers=[first])
    try:
        assert main(command + ["--gradebook", str(tmp_path / "b.sqlite")]) == 1
    finally:
        cluster.run(_walls_off, False, workers=[first])
    assert f"refusing to run student code on {first}" in capsys.readouterr().err and asked == []


def test_a_shards_entries_answer_membership_without_parsing():
    # the gradebook's hash asks "is this student's entry here?" for every row: never a parse
    from grader.run.cluster import _ShardEntries
    entries = _ShardEntries({"s1": b"{not parsed"})
    assert "s1" in entries and "s2" not in entries
    with pytest.raises(ValueError):
        entries["s1"]


def test_a_shard_carries_only_its_students_stored_entries(graded_class):
    """Of a sharded key, a shard sent to a worker holds its own students' stored entries (and
    the references that decode them), not the key's other students and not canonical text."""
    import pickle
    from formats.answer_key import canonical
    from formats.key_shards import Portion
    from grader.intake.records import Found
    from grader.run.shards import only, shards_of

    out, key, _, _ = graded_class(24)
    folder = out / "submissions" / "submitted"
    found = [Found(p.parent.parent.name, p, p.name, "folder") for p in sorted(folder.glob("*/*/*.ipynb"))]
    shards = list(shards_of(key, found, kit_version="x", cpu_seconds=1, wall_seconds=1, size=8, workers=2))
    assert sum(len(s.students) for s in shards) == len(found) >= 20
    for shard in shards:
        assert isinstance(shard.entries, Portion) and sorted(shard.entries) == shard.students
        travelled = pickle.loads(pickle.dumps(shard.entries))
        for student in shard.students:
            assert canonical(travelled[student]) == canonical(key["students"][student])
            assert travelled.digest(student) == key["students"].digest(student)
        stored = sum(len(key["students"].stored(s)) for s in shard.students)
        assert len(pickle.dumps(shard.entries)) < stored + 200_000       # the entries, and the references
        assert list(only(shard.entries, shard.students[0])) == [shard.students[0]]


class _Placing:
    """What ``_Sender._least_busy`` asks of a client: the cluster's workers."""

    def __init__(self, *workers):
        self.workers = list(workers)

    def scheduler_info(self):
        return {"workers": {address: {} for address in self.workers}}


def test_a_shard_goes_to_the_worker_with_fewest_out_the_one_just_finished_among_equals(monkeypatch):
    from grader.run import cluster as grading_cluster
    monkeypatch.setattr(grading_cluster, "WORKERS_AGE", 0.0)      # (asked at every shard)
    sender = grading_cluster._Sender.__new__(grading_cluster._Sender)
    sender.client, sender.futures, sender._known, sender._asked = _Placing("a", "b"), {}, [], -1.0
    assert sender._least_busy(None) == "a" and sender._least_busy("b") == "b"
    sender.futures = {1: ("shard", "data", 0, 0, "a"), 2: ("shard", "data", 0, 0, "b"), 3: ("shard", "data", 0, 0, "b")}
    assert sender._least_busy("b") == "a"                 # b has two out: a takes the next
    sender.futures.pop(1)
    sender.futures[4] = ("shard", "data", 0, 0, "a")
    sender.client.workers.append("c")                      # joined mid-run, with none out
    assert sender._least_busy("a") == "c"
    sender.client = None                                   # the scheduler cannot say: it chooses
    assert sender._least_busy("a") is None
    monkeypatch.setattr(grading_cluster, "WORKERS_AGE", 60.0)     # asked again only after a while
    sender.client = _Placing("d")
    assert sender._least_busy("a") is None


def _slow_on_first_worker(record: Path, student: str) -> None:
    """Before each submission is recorded: note which worker graded it; the first worker
    (by name) takes a second over each."""
    from distributed import get_worker
    name = get_worker().name
    with open(record, "a") as out:
        out.write(f"{name} {student}\n")
    if name == 0:
        time.sleep(1.0)


def test_a_worker_that_grades_faster_is_sent_more_shards(graded_class, cluster, tmp_path, gradebook_rows):
    """Shards go where one has just been taken up, not round robin: a worker slowed by a
    second a submission grades its first shards while the other grades the rest."""
    build, key, local, _ = graded_class(12)
    record = tmp_path / "graded-by"
    path = tmp_path / "cluster.sqlite"
    with Gradebook(path) as gradebook:
        grade_folder(key, build / "submissions" / "submitted", gradebook, None, cluster=cluster, review=False,
                     wall_seconds=5.0, shard_size=1, before_each=functools.partial(_slow_on_first_worker, record))
    assert gradebook_rows(path) == gradebook_rows(local)
    by = [line.split()[0] for line in record.read_text().splitlines()]
    assert len(by) == 12 and by.count("0") <= IN_FLIGHT + 1 < by.count("1"), by
