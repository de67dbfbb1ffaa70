"""The grading benchmark runs end to end on a tiny batch and reports what it measured (its
timings are not asserted)."""

import os

from bench import grade


def test_run_grades_every_submission_of_both_batches_and_the_nbgrader_baseline():
    before = os.environ.get("ATTNKIT_SECRET")
    result = grade.run(submissions=6, large=18, with_nbgrader=1, jobs=2)
    assert os.environ.get("ATTNKIT_SECRET") == before        # the bench's secret is its own
    batch, large, nb = result["batch"], result["large"], result["nbgrader"]
    assert batch["submissions"] == 6 and large["submissions"] == 18   # copies verify and are graded
    for r in (batch, large, nb["attnkit"]):
        assert r["per_second"] > 0 and 0 < r["p50_ms"] <= r["p99_ms"] and r["peak_rss_mb"] > 20
        assert r["cpu_ms"]["grader"] > 0 and r["cpu_ms"]["children"] > 0     # the sandbox's forks
        # the judges (one per server, no more than submissions) and their sandboxes: their CPU
        assert r["judges"] == min(2, r["submissions"]) and r["cpu_ms"]["judges"] > 0 and r["cpu_ms"]["sandbox"] > 0
    assert nb["submissions"] == 1 and nb["attnkit"]["submissions"] == 1 and nb["nbgrader_seconds"] > 0
    # the batch graded twice for its CPU: each run's, and the lower of them
    again = result["batch_again"]
    assert again["submissions"] == 6 and len(result["cpu_ms"]["runs"]) == 2
    assert result["cpu_ms"]["runs"][1] == again["cpu_ms"]["grader"] + again["cpu_ms"]["children"]
    assert result["cpu_ms"]["least"] == min(result["cpu_ms"]["runs"])
    text = grade.report(result)
    assert "the lower of the batch's two runs" in text and "the batch again: 6 submissions" in text
    assert "batch: 6 submissions" in text and "large: 18 submissions" in text
    assert "ms grader + " in text and "ms children" in text and "ms judges, " in text
    assert "nbgrader autograde, 1 correct" in text


def test_the_cpu_a_submission_costs_is_the_least_of_the_runs_each_shown():
    runs = [{"cpu_ms": {"grader": 2.0, "children": 19.5}}, {"cpu_ms": {"grader": 1.9, "children": 18.1}}]
    assert grade.least_cpu(runs) == {"runs": [21.5, 20.0], "least": 20.0}


def test_the_report_gives_rates_latencies_memory_and_the_ratio():
    line = {"submissions": 1000, "seconds": 10.0, "per_second": 100.0, "in_run_per_second": 110.0,
            "p50_ms": 15.0, "p99_ms": 40.0, "peak_rss_mb": 120.0}
    result = {"assignment": "hw", "problems": 7, "cpus": 2, "jobs": 2, "batch": line,
              "large": {**line, "submissions": 10000, "peak_rss_mb": 126.0},
              "nbgrader": {"submissions": 20, "nbgrader_seconds": 20.0, "nbgrader_per_second": 1.0,
                           "attnkit": {**line, "submissions": 20, "per_second": 30.0}, "ratio": 30.0},
              "ratio": 100.0}
    text = grade.report(result)
    assert "1000 submissions in 10.0 s = 100.0/s" in text and "p99 40 ms" in text
    assert "peak RSS, large / batch: 1.05×" in text
    assert "against nbgrader's: 100×" in text and "the same files 30.0/s (30×)" in text


def test_the_cluster_runs_beside_local_grading_and_report_a_shards_overhead():
    import pytest
    pytest.importorskip("distributed", reason="Dask's distributed is not installed")
    result = grade.run(submissions=6, large=0, with_nbgrader=0, jobs=2, cluster="local:2")
    c = result["cluster"]
    assert c["runs"]["100"]["submissions"] == 6 and c["runs"]["50"]["submissions"] == 6
    assert c["shards"] == {"100": 1, "50": 1} and c["ratio_to_local"] > 0
    assert "cluster local:2, shards of 100: 6 submissions" in grade.report(result)
    # against --jobs timed in the same minutes (interleaved), not the batch's run before
    assert c["local"]["submissions"] == 6 and "cpu_ms" in c["local"] and "grader" in c["local"]["cpu_ms"]
    assert c["ratio_to_local"] == pytest.approx(c["runs"]["100"]["per_second"] / c["local"]["per_second"])
    assert "--jobs 2, interleaved with the cluster's runs: 6 submissions" in grade.report(result)
    # the client's CPU alone: the workers are not the command's children
    assert set(c["runs"]["100"]["cpu_ms"]) == {"client"} and "the workers' is not counted" in grade.report(result)
