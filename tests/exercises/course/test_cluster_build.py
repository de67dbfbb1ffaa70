"""Building on a real Dask cluster on loopback (exercises/course/cluster_build.py): every file
and the key byte for byte those of a local build — on a LocalCluster, on a scheduler and
workers started as separate processes with Dask's own commands, and when a worker is killed
mid-build."""

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed")

from exercises.course.assignment import load_assignment                      # noqa: E402
from exercises.course.build import build                                     # noqa: E402
from exercises.course.cluster_build import built_on_cluster                   # noqa: E402
from exercises.course.roster import load_roster                               # noqa: E402
from grader.run.workers import connect                                        # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "cluster build tests' secret, 32 b"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    os.environ["ATTNKIT_SECRET"] = SECRET
    assignment = load_assignment(EXAMPLE)
    roster = list(load_roster(ROOT / "problem_bank" / "assignments" / "sample_roster.csv"))[:16]
    local = tmp_path_factory.mktemp("local")
    assert build(assignment, roster, local, jobs=1).built == 16
    return assignment, roster, local


def files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def cluster():
    import cloudpickle
    cloudpickle.register_pickle_by_value(sys.modules[__name__])   # (workers cannot import tests)
    client, local = connect("local:2")
    try:
        yield client
    finally:
        client.close()
        local.close()


def _context_seen(dask_worker=None):
    from exercises.course import build as on_worker
    return {k: (v if k == "secret" else (type(v).__name__, len(v) if isinstance(v, dict) else None))
            for k, v in on_worker._CONTEXT.items()}


def test_a_local_cluster_build_is_byte_for_byte_a_local_one(course, cluster, tmp_path):
    assignment, roster, local = course
    result = build(assignment, roster, tmp_path, runner=functools.partial(built_on_cluster, cluster), chunk=3)
    assert result.built == 16 and result.failures == []
    assert files(tmp_path) == files(local)
    for seen in cluster.run(_context_seen).values():     # the course secret stayed here
        assert seen["secret"] is None and seen["seeds"][0] == "dict"
        # and a worker holds only its last chunk's students: nothing by student grows with the class
        assert all(seen[k][1] <= 3 for k in ("seeds", "drawn", "issued")), seen


def _count_tasks(folder: Path, seen) -> None:
    """Write how many build tasks the scheduler knows of, as a worker starts a student."""
    from distributed import get_client

    def tasks(dask_scheduler=None):
        return sum(1 for key in dask_scheduler.tasks if "build_chunk" in str(key))
    (folder / seen.id).write_text(str(get_client().run_on_scheduler(tasks)))


def test_a_cluster_build_keeps_a_few_chunks_out_at_a_time(course, cluster, tmp_path):
    """What the client and the scheduler hold does not grow with the roster: at most
    IN_FLIGHT chunks per worker are out at once (here 16 chunks of one student)."""
    from exercises.course import cluster_build
    assignment, roster, local = course
    counts = tmp_path / "counts"
    counts.mkdir()
    result = build(assignment, roster, tmp_path / "out", chunk=1,
                   runner=functools.partial(built_on_cluster, cluster,
                                            before_each=functools.partial(_count_tasks, counts)))
    assert result.built == 16 and files(tmp_path / "out") == files(local)
    seen = [int(p.read_text()) for p in counts.iterdir()]
    assert len(seen) == 16 and max(seen) <= cluster_build.IN_FLIGHT * 2 + 1 < 16, seen


def _kill_worker(marker: Path, student: str, seen) -> None:
    """Kill this worker process (SIGKILL, as a crash or the OOM killer would) before it builds
    ``student``, once."""
    if seen.id == student and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_mid_build_loses_nothing(course, cluster, tmp_path):
    assignment, roster, local = course
    kill = functools.partial(_kill_worker, tmp_path / "killed", roster[7].id)
    result = build(assignment, roster, tmp_path / "out", chunk=3,
                   runner=functools.partial(built_on_cluster, cluster, before_each=kill))
    assert (tmp_path / "killed").exists()                    # a worker did die mid-chunk
    assert result.built == 16 and result.failures == []
    assert files(tmp_path / "out") == files(local)


def _started(command: list[str], env) -> subprocess.Popen:
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_dask_scheduler_and_workers_started_by_hand_build_the_same_bytes(course, tmp_path):
    """``dask scheduler`` and two ``dask worker`` processes on loopback, then ``attnkit build
    --cluster`` with the scheduler file: what a course runs on several machines."""
    assignment, roster, local = course
    dask = shutil.which("dask", path=os.path.dirname(sys.executable))
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    scheduler_file = tmp_path / "scheduler.json"
    processes = [_started([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                           "--scheduler-file", str(scheduler_file)], env)]
    try:
        for _ in range(100):
            if scheduler_file.exists():
                break
            time.sleep(0.1)
        processes += [_started([dask, "worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1",
                                "--no-dashboard", "--host", "127.0.0.1"], env) for _ in range(2)]
        roster_file = tmp_path / "roster.csv"
        rows = (ROOT / "problem_bank" / "assignments" / "sample_roster.csv").read_text(encoding="utf-8")
        roster_file.write_text("".join(rows.splitlines(keepends=True)[:len(roster) + 1]), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "attnkit", "build", str(EXAMPLE), "--roster", str(roster_file),
                               "--out", str(tmp_path / "out"), "--cluster", str(scheduler_file)],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert f"on the cluster {scheduler_file}" in done.stdout
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            p.wait(timeout=30)
    assert files(tmp_path / "out") == files(local)
