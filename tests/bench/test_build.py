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


def test_the_split_says_where_a_students_time_goes():
    from exercises.variant import evaluation, twin_values
    from exercises.template import expressions, references
    from exercises.course.assignment import load_assignment

    from bench import build_split

    def hooks():
        return (expressions._function, twin_values._called, dict(references.FUNCTIONS), dict(evaluation.GUARDED))

    before = hooks()
    assignment = load_assignment(build.EXAMPLE)
    s = build_split.split(assignment, build.roster(3), b"a course secret", warm=1)
    assert hooks() == before      # every hook and table entry put back as it was
    assert s["students"] == 2
    assert set(s["phases_ms"]) == {f"variant {p.id}" for p in assignment.problems} | {
        "notebooks", "notebook bytes", "key entry"}
    assert all(ms > 0 for ms in s["phases_ms"].values()) and s["bare_ms"] > 0
    assert sum(s["phases_ms"].values()) <= s["ms"]
    assert s["calls"] > 100          # every problem's references and twins: ~500 a student
    text = "\n".join(build_split.report(s, 1.9))
    assert "replayed bare" in text and "≤ 19.0 ms a student" in text


def test_the_calls_recorded_are_the_outermost_calls_to_the_solutions():
    from exercises.course.assignment import load_assignment
    from exercises.variant.draw import make_variant

    from bench import build_split

    template = {p.id: p.template for p in load_assignment(build.EXAMPLE).problems}["implement"]
    with build_split.recorded_calls() as calls:
        made = make_variant(template, 12345)
    modules = {f.__module__ for f, _, _ in calls}
    assert modules and all(m.startswith("solutions") for m in modules)
    names = {f.__name__ for f, _, _ in calls}
    assert "scaled_dot_product_attention" in names          # the reference, on the hidden cases
    # each listed twin runs on each hidden case, and nothing it calls is counted again
    on_cases = [c for c in calls if not c[1]]
    assert len(on_cases) >= len(made.tests) * (1 + len(template.misconceptions))
    assert build_split._replay(calls) > 0
