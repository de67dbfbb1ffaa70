"""The hostile-submissions benchmark runs end to end on a tiny batch (every worst case, their
sizes scaled down) and reports what it measured; its timings are not asserted."""

import os

from bench import hostile

STUDENTS = len(hostile.CASES) + 2          # every worst case, and two clean students beside them


def test_both_batches_are_graded_and_reported_and_every_submission_is_recorded():
    before = os.environ.get("ATTNKIT_SECRET")
    result = hostile.run(students=STUDENTS, jobs=2, scale=0.05, max_seconds=300, timeout=5)
    assert os.environ.get("ATTNKIT_SECRET") == before        # the bench's secret is its own
    assert set(result["cases"]) == set(hostile.CASES)
    text = hostile.report(result)
    print(text)
    lines = text.splitlines()
    assert lines[1].startswith("  clean: ") and lines[2].startswith("  worst: ")
    assert lines[3].startswith("  ratio, worst / clean: grader CPU ")
    for case in hostile.CASES:
        assert any(line.startswith(f"    {case} (") for line in lines), case
    assert any(line.startswith("  report clean: ") for line in lines)
    assert any(line.startswith("  report worst: ") for line in lines)
    for name in ("clean", "worst"):
        graded, reported = result[name]["grade"], result[name]["report"]
        assert not graded["killed"] and graded["code"] == 0, (name, graded["error"], graded["stderr_tail"])
        assert graded["grader_cpu"] > 0 and graded["peak_rss_mb"] > 20 and graded["sandbox_cpu"] > 0
        assert graded["judges_cpu"] > 0 and graded["trusted_cpu"] == graded["grader_cpu"] + graded["judges_cpu"]
        assert graded["recorded"] == STUDENTS, (name, graded["recorded"], graded["stderr_tail"])
        assert reported["code"] == 0, (name, reported.get("error"), reported.get("stderr_tail"))
        assert reported["every_page"], (name, reported)
    assert "NOT recorded" not in text and "NOT every page" not in text


def test_the_report_prints_figures_ratios_cases_and_pages():
    grade = {"wall_seconds": 10.0, "killed": False, "code": 0, "error": "", "grader_cpu": 4.0,
             "grader_user": 3.5, "grader_sys": 0.5, "peak_rss_mb": 100.0, "sandbox_cpu": 20.0,
             "recorded": 40, "n_graded": 39, "n_error": 1, "notes_bytes": 2_000_000, "slowest_ms": 5000.0,
             "by_student": {"s00000": {"status": "error", "duration_ms": 5000.0, "notes_bytes": 300,
                                       "note": "over budget"}}}
    pages = {"code": 0, "error": "", "wall_seconds": 2.0, "killed": False, "grader_cpu": 1.5,
             "peak_rss_mb": 90.0, "students": 40, "feedback": 40, "gradescope": 40, "csv_rows": 40,
             "every_page": True}
    result = {"assignment": "hw", "problems": 7, "students": 40, "cpus": 2, "jobs": 2, "scale": 1.0,
              "max_seconds": 900.0, "cases": {"bool_30m": {"student": "s00000", "bytes": 50_000, "file": "hw.ipynb"},
                                             "cells_100k": {"student": "s00001", "bytes": 9e6, "file": "hw.ipynb"}},
              "clean": {"grade": {**grade, "grader_cpu": 2.0, "peak_rss_mb": 50.0, "by_student": {}},
                        "report": pages},
              "worst": {"grade": {**grade, "killed": True, "grader_cpu": None},
                        "report": {**pages, "feedback": 39, "every_page": False, "code": 1, "error": "ValueError"}}}
    text = hostile.report(result)
    assert "clean: 40/40 submissions recorded (39 graded, 1 error); exit 0;" in text
    assert "worst: 40/40 submissions recorded" in text and "killed after the time limit" in text
    assert "grader CPU ?" in text and "peak RSS 2.00×" in text and "wall 1.00×" in text
    assert "bool_30m (s00000, 'hw.ipynb', 0.1 MB): error in 5.00 s, notes 0.3 kB: 'over budget'" in text
    assert "cells_100k (s00001, 'hw.ipynb', 9.0 MB): NOT recorded" in text
    assert "report clean: every page written (40/40 feedback" in text
    assert "report worst: NOT every page written (39/40 feedback" in text and "exit 1 (ValueError)" in text


def test_the_judges_cpu_is_the_trusted_side_s_and_not_the_sandbox_s():
    summary = '{"graded": 3, "judges_cpu_seconds": {"judge": 0.75, "sandbox": 1.0}}'
    graded = {"stdout": summary, "grader_cpu": 0.5, "sandbox_cpu": 2.0}
    assert hostile._with_judges(graded) == {"judges_cpu": 0.75, "trusted_cpu": 1.25, "sandbox_cpu": 1.25}
    assert hostile._with_judges({"stdout": "not json", "grader_cpu": 0.5}) == {}
    assert hostile._with_judges({"stdout": '{"judges_cpu_seconds": {}}'}) == {}
