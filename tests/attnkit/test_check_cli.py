"""``attnkit check`` on the command line: its exit codes (0 ready, 1 not ready, 2 the check
could not run), documented in its --help, on the example assignment's real notebooks; and
--json, which carries the same verdict as data."""

import json

import pytest

from attnkit.check_command import CANNOT_CHECK as CLI_CANNOT_CHECK
from attnkit.cli import main
from grader.selfcheck.report import CANNOT_CHECK, NOT_READY, NOTE_CODES, READY, STATUS_CODES

SECRET = "self-check test secret, 32 bytes"     # the build tests/grader/test_selfcheck.py uses too


@pytest.fixture(scope="module")
def issued(example_build):
    """(release notebook: every part unanswered, instructor notebook: every answer filled in)
    of the example assignment's first student."""
    out, _ = example_build(3, SECRET)
    student = sorted(p.name for p in (out / "release").iterdir())[0]
    return (out / "release" / student / "attention-hw1.ipynb",
            out / "instructor" / "notebooks" / student / "attention-hw1.ipynb")


def _copy(path, tmp_path, name, change=None):
    notebook = json.loads(path.read_text())
    if change:
        change(notebook["cells"])
    out = tmp_path / f"{name}.ipynb"
    out.write_text(json.dumps(notebook))
    return out


def _set(cells, gid, source):
    for c in cells:
        if c["metadata"].get("nbgrader", {}).get("grade_id") == gid:
            c["source"] = source


def test_the_exit_codes_are_documented_in_the_help(capsys):
    assert (READY, NOT_READY, CANNOT_CHECK) == (0, 1, 2) and CLI_CANNOT_CHECK == CANNOT_CHECK
    with pytest.raises(SystemExit) as exited:
        main(["check", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "exit codes:" in text
    for line in ("  0  ready: every part is answered and passes its form checks",
                 "  1  not ready: some part is not answered, fails its form check, raised an error",
                 "  2  the check could not run: a usage error, a file that is not a readable"):
        assert line in text
    assert "GitHub Classroom" in text and '"ok"' in text and "looks right" not in text


def test_the_release_notebook_is_not_ready(issued, capsys):
    release, _ = issued
    assert main(["check", str(release)]) == 1
    out = capsys.readouterr().out
    assert "Not ready (exit code 1): 0 of 43 parts done; not answered: 43." in out


def test_the_instructor_notebook_is_ready(issued, capsys):
    _, instructor = issued
    assert main(["check", str(instructor)]) == 0
    out = capsys.readouterr().out
    assert "Ready (exit code 0)" in out and "form OK — the value is graded later" in out
    assert "written — graded by hand" in out and "note:" not in out


def test_an_answer_of_the_wrong_form_is_not_ready(issued, tmp_path, capsys):
    _, instructor = issued
    wrong = _copy(instructor, tmp_path, "wrong_form",
                  lambda cells: _set(cells, "dog_ran_fast-weights", "p2_weights = np.zeros(16)\n"))
    assert main(["check", str(wrong)]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("dog_ran_fast.weights"))
    assert "form check fails" in row and "p2_weights should have shape (4, 4), not (16,)" in row
    assert "Not ready (exit code 1): 42 of 43 parts done; form check fails: 1." in out


@pytest.mark.parametrize("content, said", [
    ('{"cells": [', "not valid JSON"),
    ("", "the file is empty"),
    (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], "execution_count": None}]}),
     "not an Attention Kit notebook"),
], ids=["invalid-json", "empty", "not-a-kit-notebook"])
def test_a_notebook_that_cannot_be_read_exits_2(tmp_path, capsys, content, said):
    path = tmp_path / "hw.ipynb"
    path.write_text(content)
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert said in captured.err and captured.out == ""


def test_a_missing_file_and_a_usage_error_exit_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere.ipynb")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:       # argparse's own: `attnkit check` exits 2
        main(["check"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        main(["check", "hw.ipynb", "--timeout", "soon"])
    assert exited.value.code == 2


def test_json_carries_the_verdict_as_data(issued, capsys):
    release, instructor = issued
    assert main(["check", str(release), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["exit_code"] == 1
    assert report["reason"] == "not ready: 0 of 43 parts done; not answered: 43"
    assert report["counts"] == {**dict.fromkeys(STATUS_CODES.values(), 0), "not-answered": 43}
    assert {p["code"] for p in report["parts"]} == {"not-answered"}
    assert set(report["parts"][0]) == {"problem", "part", "status", "code", "detail"}
    assert main(["check", str(instructor), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True and report["exit_code"] == 0 and report["notes"] == []
    assert sum(report["counts"].values()) == len(report["parts"]) == 43
    assert report["counts"]["form-ok"] == 35 and report["counts"]["by-hand"] == 3


def test_json_notes_are_objects_with_a_code(issued, tmp_path, capsys):
    """An edited givens cell and a deleted check cell: each note has its code, cell and a
    sentence; nothing in the output is a Python repr."""
    _, instructor = issued

    def change(cells):
        _set(cells, "scaling--givens", "d_k = 256\nscores = np.array([-9.0, -1.0])\nprint('mine')\n")
        cells[:] = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id") != "masks-causal--check"]
    path = _copy(instructor, tmp_path, "notes", change)
    assert main(["check", str(path), "--json"]) == 1          # a part without its check: not ready
    out = capsys.readouterr().out
    report = json.loads(out)
    by_code = {n["code"]: n for n in report["notes"]}
    assert set(by_code) <= set(NOTE_CODES)
    assert by_code["givens-edited"]["cell"] == "scaling--givens"
    assert by_code["givens-edited"]["message"].startswith("the givens cell scaling--givens was changed")
    assert "masks-causal--check is missing" in by_code["kit-cell-missing"]["message"]
    assert all(set(n) == {"code", "cell", "message", "blocking"} for n in report["notes"])
    assert report["counts"]["not-checked"] == 1
    assert "Note(" not in out and "PartCheck(" not in out


def test_student_names_the_one_checking(issued, tmp_path, capsys):
    _, instructor = issued
    path = _copy(instructor, tmp_path, "hw1")
    issued_to = json.loads(path.read_text())["metadata"]["attnkit"]["student"]
    assert main(["check", str(path), "--student", issued_to]) == 0
    capsys.readouterr()
    assert main(["check", str(path), "--student", "x123", "--json"]) == 1
    out = capsys.readouterr().out
    assert issued_to not in out
    assert json.loads(out)["notes"][0]["code"] == "wrong-student"
