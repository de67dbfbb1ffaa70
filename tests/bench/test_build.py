"""The build benchmark runs and reports what it measured (its timings are not asserted)."""

import os

from bench import build


def test_run_reports_rates_for_every_mode():
    before = os.environ.get("ATTNKIT_SECRET")
    result = build.run(students=4, jobs=2, html=2, serial=2, with_nbgrader=False)
    assert os.environ.get("ATTNKIT_SECRET") == before        # the bench's secret is its own
    assert result["problems"] == 7
    assert result["parallel"]["students"] == 4 and result["parallel"]["notebooks_per_s"] > 0
    assert result["serial"]["students"] == 2 and result["html"]["students"] == 2
    assert "ratio_command" not in result
    text = build.report(result)
    assert "student notebooks/s" in text and "1 job" in text and "--format html" in text


def test_the_report_gives_the_ratio_against_nbgrader():
    result = {"assignment": "hw", "problems": 7, "points": 56, "cpus": 2,
              "parallel": {"jobs": 2, "students": 100, "seconds": 2.0, "notebooks_per_s": 50.0,
                           "megabytes": 20.0},
              "nbgrader": {"first_s": 9.0, "command_s": 5.0, "converter_s": 0.2},
              "ratio_command": 250.0, "ratio_converter": 10.0}
    text = build.report(result)
    assert "250× the nbgrader command" in text and "10.0× its converter alone" in text
