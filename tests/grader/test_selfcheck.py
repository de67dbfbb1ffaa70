"""``attnkit check``: a student's self-check in the grading sandbox — per-part status from the
notebook's own visible checks, never an expected value."""

import json
import re

import numpy as np
import pytest

from attnkit.cli import main
from formats.serialize import decode_names
from grader.sandbox.client import Limits, Sandbox
from grader.selfcheck import (AT_GRADING, BY_HAND, ERROR, FAILS, NOT_ANSWERED, OK, CheckError,
                              self_check)
from synthetic import synthesize

SECRET = "self-check test secret, 32 bytes"


@pytest.fixture(scope="module")
def notebooks(example_build, tmp_path_factory):
    """profile → notebook path, plus the blank release notebook and the key."""
    out, key = example_build(3, SECRET)
    subs = tmp_path_factory.mktemp("subs")
    made = synthesize(out, key, subs, layout="flat", profiles=["correct", "typed_wrong", "partial"])
    paths = {s.profile: s.path for s in made}
    student = made[0].student
    paths["blank"] = out / "release" / student / "attention-hw1.ipynb"
    return paths, key


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(1, Limits(wall_seconds=10)) as box:
        yield box


def statuses(report) -> dict:
    return {(p.problem, p.part): p.status for p in report.parts}


def test_a_blank_notebook_has_every_part_unanswered(notebooks, sandbox):
    paths, _ = notebooks
    report = self_check(paths["blank"], sandbox=sandbox)
    assert set(statuses(report).values()) == {NOT_ANSWERED}
    assert not report.ready
    assert len(report.parts) == 43


def test_a_correct_notebook_is_ready(notebooks, sandbox):
    paths, _ = notebooks
    report = self_check(paths["correct"], sandbox=sandbox)
    found = statuses(report)
    assert report.ready, report.table()
    assert found[("motivation", "static")] == BY_HAND
    assert found[("implement", "basic")] == OK          # the visible example's check
    assert found[("implement", "masked")] == AT_GRADING
    assert found[("dog_ran_fast", "weights")] == OK


def test_answers_of_the_wrong_form_fail_their_visible_checks(notebooks, sandbox):
    paths, _ = notebooks
    report = self_check(paths["typed_wrong"], sandbox=sandbox)
    by_part = {(p.problem, p.part): p for p in report.parts}
    weights = by_part[("dog_ran_fast", "weights")]
    assert weights.status == FAILS and weights.detail == "p2_weights should have shape (4, 4), not (16,)"
    assert by_part[("bert_mlm", "counts")].status == OK       # ' c ' is a fine letter


def test_a_partly_answered_notebook_lists_what_is_left(notebooks, sandbox):
    paths, _ = notebooks
    report = self_check(paths["partial"], sandbox=sandbox)
    left = [p for p in report.parts if p.status == NOT_ANSWERED]
    assert 1 <= len(left) <= 3
    assert all(p.detail.endswith("is not defined yet") for p in left)


def test_an_error_in_an_answer_cell_is_shown_with_its_message(notebooks, sandbox, tmp_path):
    paths, _ = notebooks
    notebook = json.loads(paths["correct"].read_text())
    for c in notebook["cells"]:
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "scaling-std":
            c["source"] = "std = undefined_name * 2\n"
    path = tmp_path / "broken_cell.ipynb"
    path.write_text(json.dumps(notebook))
    part = next(p for p in self_check(path, sandbox=sandbox).parts if p.part == "std")
    assert part.status == ERROR
    assert part.detail == "your cell raised NameError: name 'undefined_name' is not defined"


def test_no_expected_value_is_ever_printed(notebooks, sandbox, capsys):
    """The check runs without the key; and what it prints for wrong answers holds only the
    student's own forms. Every expected number (to 4 decimals) is absent from the output."""
    paths, key = notebooks
    assert main(["check", str(paths["typed_wrong"])]) == 0
    printed = capsys.readouterr().out
    student = json.loads(paths["typed_wrong"].read_text())["metadata"]["attnkit"]["student"]
    for record in key["students"][student]["problems"].values():
        for value in decode_names(record["answers"]).values():
            for x in np.ravel(np.asarray(value, dtype=object)):
                if isinstance(x, float) and abs(x) > 1e-3 and x != round(x):
                    assert f"{x:.4f}" not in printed
    assert "hidden tests when your notebook is graded" in printed


def test_the_command_line(notebooks, tmp_path, capsys):
    paths, _ = notebooks
    assert main(["check", str(paths["correct"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ready"] is True and len(report["parts"]) == 43
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    assert main(["check", str(broken)]) == 1
    assert re.search(r"broken\.ipynb: not valid JSON", capsys.readouterr().err)
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                 "cells": [{"cell_type": "code", "source": "x = 1", "metadata": {},
                                            "outputs": [], "execution_count": None}]}))
    with pytest.raises(CheckError, match="not an Attention Kit notebook"):
        self_check(plain)
    assert main(["check", str(tmp_path / "nowhere.ipynb")]) == 1


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"


def acted_on(text: str) -> list[str]:
    """Characters a terminal would act on or hide (newlines structure the output)."""
    import unicodedata
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


def test_the_table_shows_the_notebook_s_text_and_never_passes_it_to_the_terminal():
    """Part names come from the notebook's metadata and details from the student's own
    exception messages: escape sequences in either are shown, and the columns stay aligned."""
    from grader.selfcheck import CheckReport, PartCheck
    report = CheckReport(f"sub/{HOSTILE}.ipynb", f"st\u202e01", notes=[f"cell 3: {HOSTILE}\nnext"])
    report.parts = [PartCheck("scaling", f"std{HOSTILE}", ERROR, f"your cell raised ValueError: {HOSTILE}"),
                    PartCheck("scaling", "mean", OK)]
    text = report.table()
    assert acted_on(text) == []
    assert "your cell raised ValueError: \\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m" in text
    assert "sub/\\x1b]0;pwned" in text and "(st\\u202e01)" in text and "next" in text
    rows = [line for line in text.splitlines() if line.startswith("  scaling.")]
    assert len(rows) == 2 and rows[0].index(ERROR) == rows[1].index(OK)


def test_check_json_is_the_same_data_with_nothing_a_terminal_acts_on(notebooks, sandbox, tmp_path, capsys):
    paths, _ = notebooks
    notebook = json.loads(paths["correct"].read_text())
    for c in notebook["cells"]:
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "scaling-std":
            c["source"] = 'raise ValueError("\\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m")\n'
    path = tmp_path / "hostile.ipynb"
    path.write_text(json.dumps(notebook))
    assert main(["check", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert acted_on(out) == []
    std = next(p for p in json.loads(out)["parts"] if p["part"] == "std")
    assert std["detail"] == f"your cell raised ValueError: {HOSTILE}"
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert acted_on(out) == [] and "ValueError: \\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m" in out
