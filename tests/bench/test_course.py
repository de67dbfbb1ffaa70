"""The whole-course benchmark (bench/course.py) on two small classes: every phase timed per
student, the key's bytes counted, and the extrapolation made from the larger run."""

from bench import course


def test_two_small_classes_are_built_graded_and_reported():
    result = course.run([6, 12], None, 1)
    assert [r["students"] for r in result["runs"]] == [6, 12]
    for r in result["runs"]:
        assert set(r["phases"]) == {"build", "grade", "report"}
        for phase in r["phases"].values():
            assert phase["seconds"] > 0 and phase["ms_per_student"] > 0 and phase["peak_mb"] > 0
            # the machine's CPU while the command ran holds at least the command's own
            assert phase["machine_cpu_seconds"] >= 0.9 * phase["cpu_seconds"] > 0
        assert 10_000 < r["key_bytes_per_student"] < 1_000_000 and r["notebook_bytes_per_student"] > 10_000
    e = result["extrapolated"]
    assert e["students"] == 100_000 and e["from_students"] == [6, 12]
    assert e["key_gb"] == round(result["runs"][1]["key_bytes_per_student"] * 100_000 / 1e9, 2)
    text = course.report(result)
    assert "100,000 students, from the 12-student run" in text and "peak memory, 6 → 12 students" in text
    assert "(the machine's; the command's and what it reaped" in text


def test_the_machines_busy_time_only_grows():
    first = course.machine_busy_seconds()
    sum(i * i for i in range(300_000))
    assert first is not None and course.machine_busy_seconds() >= first
