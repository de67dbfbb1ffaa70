"""The forensics benchmark runs on a small class and reports what it measured (no timings
asserted): planted copies found with their partner (similar code too), no honest student
flagged."""

from bench import forensics


def test_planted_colluders_are_found_and_honest_students_are_not_flagged():
    result = forensics.measure(students=40, cases=8, seed=1)
    assert result["planted"] >= 6
    assert result["false_flags"] == 0
    assert result["recall"] >= 0.75, result["missed"]
    assert result["code_planted"] >= 2 and result["code_found"] == result["code_planted"]


def test_main_prints_recall_and_false_flags(capsys):
    assert forensics.main(["--students", "30"]) == 0
    out = capsys.readouterr().out
    assert "recall" in out and "false flags among honest students" in out
