"""``attnkit build``: what it prints, its exit codes, and its errors for bad inputs (in-process,
and once as the installed command)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "cli-test secret, at least 16 bytes"


@pytest.fixture
def roster(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("student_id,name,email\ns1,Ada Lovelace,ada@example.edu\n"
                    "s2,Søren Kierkegaard,soren@example.edu\n", encoding="utf-8")
    return path


def test_build_prints_where_everything_is(tmp_path, roster, monkeypatch, capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    assert main(["build", str(EXAMPLE), "--roster", str(roster), "--out", str(tmp_path / "out"),
                 "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "attention-hw1: 7 problems" in out and "built 2/2 students" in out
    assert "answer key (private)" in out
    assert (tmp_path / "out" / "release" / "s2" / "attention-hw1.ipynb").is_file()


def test_build_json_summary(tmp_path, roster, monkeypatch, capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    assert main(["build", str(EXAMPLE), "--roster", str(roster), "--out", str(tmp_path / "out"),
                 "--json", "--nbgrader", str(tmp_path / "course")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["built"] == 2 and report["failures"] == []
    assert report["nbgrader"]["source"].endswith("source/attention-hw1")


def test_a_missing_secret_fails_before_any_work_naming_the_spec_line(tmp_path, roster, monkeypatch,
                                                                     capsys):
    monkeypatch.delenv("ATTNKIT_SECRET", raising=False)
    assert main(["build", str(EXAMPLE), "--roster", str(roster), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "example.yaml:" in err and "ATTNKIT_SECRET" in err
    assert not (tmp_path / "out").exists()


def test_a_bad_roster_names_file_and_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    bad = tmp_path / "roster.csv"
    bad.write_text("student_id,name,email\ns1,A,a@example.edu\ns1,B,b@example.edu\n")
    assert main(["build", str(EXAMPLE), "--roster", str(bad), "--out", str(tmp_path / "out")]) == 1
    assert "roster.csv:3: duplicate student_id 's1' (also on line 2)" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--roster", "r.csv"], "give --out DIR"),
    (["--out", "x"], "--out needs --roster"),
])
def test_usage_errors_exit_2(argv, message, capsys):
    assert main(["build", str(EXAMPLE), *argv]) == 2
    assert message in capsys.readouterr().err


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["build", str(EXAMPLE), "--jobs", "0"])
    assert exit_.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_the_installed_command_exits_1_on_a_failed_build(tmp_path, roster):
    spec = tmp_path / "hw.yaml"
    spec.write_text("id: hw\ntitle: HW\nsecret: {env: ATTNKIT_SECRET}\n"
                    "problems:\n  - template: no_such_template\n")
    done = subprocess.run([sys.executable, "-m", "attnkit", "build", str(spec), "--roster", str(roster),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 1
    assert "hw.yaml:5" in done.stderr and "no_such_template" in done.stderr


def test_a_build_that_makes_no_student_prints_no_paths_and_exits_1(tmp_path, roster, monkeypatch,
                                                                    capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    (tmp_path / "never.yaml").write_text(
        "id: never\ntitle: No variant\nobjective: scaling\nkind: numeric\nprompt: x\n"
        "sampling: {max_attempts: 2}\nparameters:\n  d_k: {dist: integers, low: 1, high: 3}\n"
        "constraints:\n  - expr: d_k > 10\nparts:\n  - {id: v, answer: d_k, points: 1}\n")
    spec = tmp_path / "hw.yaml"
    spec.write_text("id: hw\ntitle: HW\nsecret: {env: ATTNKIT_SECRET}\n"
                    "problems:\n  - template: never.yaml\n")
    out_dir = tmp_path / "out"
    assert main(["build", str(spec), "--roster", str(roster), "--out", str(out_dir), "--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert "built 0/2 students" in out
    assert "nothing written: no student was built, and there is no answer key" in out
    assert str(out_dir) not in out and "answer key (private)" not in out
    assert err.count("no valid variant in 2 draws") == 2
    assert err.endswith("attnkit: no student was built (of 2 students in the roster), so no "
                        "answer key was written (the reasons are above)\n")
    assert not (out_dir / "instructor" / "answer_key.json").exists()
    assert main(["build", str(spec), "--roster", str(roster), "--out", str(out_dir), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["built"] == 0 and report["answer_key"] is None


def test_a_rebuild_for_a_smaller_roster_reports_stale_files_and_removes_them_on_request(
        tmp_path, roster, monkeypatch, capsys):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    out_dir = tmp_path / "out"
    build = ["build", str(EXAMPLE), "--out", str(out_dir), "--jobs", "1"]
    assert main([*build, "--roster", str(roster)]) == 0
    smaller = tmp_path / "smaller.csv"
    smaller.write_text("student_id,name,email\ns1,Ada Lovelace,ada@example.edu\n", encoding="utf-8")
    capsys.readouterr()
    assert main([*build, "--roster", str(smaller)]) == 0
    out = capsys.readouterr().out
    release = out_dir / "release" / "s2" / "attention-hw1.ipynb"
    instructor = out_dir / "instructor" / "notebooks" / "s2" / "attention-hw1.ipynb"
    assert ("stale: 2 files of an earlier build, for 1 student not in this build's answer key "
            f"(s2):\n  {instructor}\n  {release}\n"
            "  (attnkit build --remove-stale removes these files, and nothing else)\n") in out
    assert release.is_file() and instructor.is_file()
    assert main([*build, "--roster", str(smaller), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["stale"] == ["instructor/notebooks/s2/attention-hw1.ipynb",
                               "release/s2/attention-hw1.ipynb"] and report["removed"] == []
    key_files = [out_dir / "instructor" / "answer_key.json",
                 *(out_dir / "instructor" / "answer_key.shards").iterdir()]
    assert len(key_files) == 2                  # one student now: the index and one shard, the old one gone
    assert report["answer_key_bytes"] == sum(p.stat().st_size for p in key_files)
    assert main([*build, "--roster", str(smaller), "--remove-stale"]) == 0
    out = capsys.readouterr().out
    assert "removed 2 stale files of 1 student not in this build: s2\n" in out and "stale:" not in out
    assert not (out_dir / "release" / "s2").exists()
    assert not (out_dir / "instructor" / "notebooks" / "s2").exists()
    assert (out_dir / "release" / "s1" / "attention-hw1.ipynb").is_file()
    assert main([*build, "--roster", str(smaller)]) == 0
    assert "stale" not in capsys.readouterr().out
