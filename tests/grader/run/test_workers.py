"""A cluster's workers found or started, and asked for on a thread of its own
(grader/run/workers.py), on a real Dask LocalCluster on loopback."""

import multiprocessing
import os
import sys
import threading

import pytest

pytest.importorskip("distributed", reason="Dask's distributed is not installed")

from grader.run.workers import ClusterUnavailable, Connecting, prepare_local_cluster  # noqa: E402


def test_a_local_cluster_starts_on_its_own_thread_and_is_checked_there():
    seen = []

    def check(client):
        seen.append(threading.current_thread().name)
        return sorted(client.scheduler_info()["workers"])

    connecting = Connecting("local:1", check)
    try:
        client = connecting.get()
        assert seen == ["attnkit-cluster"] and len(connecting.checked) == 1
        if "forkserver" in multiprocessing.get_all_start_methods():
            # forked from the fork server that imported the kit, not spawned by this process
            assert list(client.run(os.getppid).values()) != [os.getpid()]
            assert all(client.run(lambda: __import__("sys").modules.get("grader.run.grading") is not None).values())
    finally:
        connecting.close()
    assert connecting.client.status == "closed"


def test_what_went_wrong_on_the_thread_is_raised_by_get_and_the_cluster_still_closed():
    def refuse(client):
        raise PermissionError("a worker cannot wall student code off")

    connecting = Connecting("local:1", refuse)
    with pytest.raises(PermissionError, match="cannot wall"):
        connecting.get()
    connecting.close()
    assert connecting.client.status == "closed"
    with pytest.raises(ClusterUnavailable, match="local:0: give at least one worker"):
        Connecting("local:0", lambda client: None).get()


def test_another_cluster_is_asked_for_only_when_needed():
    connecting = Connecting("tcp://127.0.0.1:9", lambda client: None)
    assert connecting._thread is None       # a command that fails first never waits for it
    connecting.close()


def test_the_fork_server_is_started_and_dask_imported_for_a_local_cluster_only(monkeypatch):
    from multiprocessing import forkserver
    started = []
    monkeypatch.setattr(forkserver, "ensure_running", lambda: started.append(1))
    prepare_local_cluster("tcp://127.0.0.1:8786")
    assert started == []
    prepare_local_cluster("local:2")
    assert started == ([1] if "forkserver" in multiprocessing.get_all_start_methods() else [])
    assert "distributed" in sys.modules
