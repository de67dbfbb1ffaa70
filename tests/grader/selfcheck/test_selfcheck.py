"""``attnkit check``: a student's self-check in the grading sandbox — per-part status from the
notebook's own visible checks, never an expected value; honest words ("form OK", never "looks
right"), and a note wherever this run and grading part ways. (The command line, its exit
codes and --json: tests/attnkit/test_check_cli.py.)"""

import json
import re

import numpy as np
import pytest

from attnkit.cli import main
from formats.serialize import decode_names
from grader.sandbox.client import Limits, Sandbox
from grader.selfcheck.check import CheckError, self_check
from grader.selfcheck.givens import givens_change
from grader.selfcheck.report import (AT_GRADING, BY_HAND, ERROR, FAILS, NOT_ANSWERED, NOT_CHECKED, NOTE_CODES,
                                     OK, STATUS_CODES, Note)
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
    paths["instructor"] = out / "instructor" / "notebooks" / student / "attention-hw1.ipynb"
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
    assert main(["check", str(paths["typed_wrong"])]) == 1      # wrong forms: not ready
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
    assert report["ok"] is True and report["exit_code"] == 0 and len(report["parts"]) == 43
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    assert main(["check", str(broken)]) == 2
    assert re.search(r"broken\.ipynb: not valid JSON", capsys.readouterr().err)
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                 "cells": [{"cell_type": "code", "source": "x = 1", "metadata": {},
                                            "outputs": [], "execution_count": None}]}))
    with pytest.raises(CheckError, match="not an Attention Kit notebook"):
        self_check(plain)
    assert main(["check", str(tmp_path / "nowhere.ipynb")]) == 2


HOSTILE = "\x1b]0;pwned\x07\x1b[2J\u202e\x9b31m"


def acted_on(text: str) -> list[str]:
    """Characters a terminal would act on or hide (newlines structure the output)."""
    import unicodedata
    return [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")]


def test_the_table_shows_the_notebook_s_text_and_never_passes_it_to_the_terminal():
    """Part names come from the notebook's metadata and details from the student's own
    exception messages: escape sequences in either are shown, and the columns stay aligned."""
    from grader.selfcheck.report import CheckReport, PartCheck
    report = CheckReport(f"sub/{HOSTILE}.ipynb", f"st\u202e01", notes=[Note("bad-cell", f"cell 3: {HOSTILE}\nnext")])
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
    assert main(["check", str(path), "--json"]) == 1      # the answer cell raised: not ready
    out = capsys.readouterr().out
    assert acted_on(out) == []
    std = next(p for p in json.loads(out)["parts"] if p["part"] == "std")
    assert std["detail"] == f"your cell raised ValueError: {HOSTILE}"
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert acted_on(out) == [] and "ValueError: \\x1b]0;pwned\\x07\\x1b[2J\\u202e\\x9b31m" in out


# --- honest words -------------------------------------------------------------------------

def test_no_status_or_summary_says_looks_right(notebooks, sandbox):
    """A right form is "form OK — the value is graded later": the check has no key, so it
    never claims an answer is right; the summary says what the exit code will be and why."""
    import attnkit.check_command
    import grader.selfcheck.check
    from pathlib import Path
    for module in (grader.selfcheck.check, attnkit.check_command):
        assert "looks right" not in Path(module.__file__).read_text()
    assert OK == "form OK — the value is graded later"
    paths, _ = notebooks
    for name in ("blank", "correct", "typed_wrong", "partial", "instructor"):
        report = self_check(paths[name], sandbox=sandbox)
        text = report.table()
        assert "looks right" not in text and "looks right" not in json.dumps(report.as_json())
        assert ("Ready (exit code 0)" in text) == report.ok == (name in ("correct", "instructor")), text
        assert '"form OK" does not mean the value is right' in text
    assert set(STATUS_CODES) == {OK, NOT_ANSWERED, FAILS, ERROR, NOT_CHECKED, BY_HAND, AT_GRADING}


def test_the_summary_counts_what_is_left(notebooks, sandbox):
    paths, _ = notebooks
    blank = self_check(paths["blank"], sandbox=sandbox)
    assert blank.reason() == "not ready: 0 of 43 parts done; not answered: 43"
    assert blank.exit_code == 1 and blank.counts()["not-answered"] == 43
    wrong = self_check(paths["typed_wrong"], sandbox=sandbox)
    assert "form check fails: " in wrong.reason() and wrong.exit_code == 1
    instructor = self_check(paths["instructor"], sandbox=sandbox)
    assert instructor.exit_code == 0 and instructor.notes == []
    assert instructor.reason().startswith("ready: all 43 parts are answered and pass their form checks")


def test_an_issued_notebook_gets_no_note(notebooks, sandbox):
    """No false alarm: the notebook as built (blank or with every answer) has nothing to say
    about givens, locks or kit cells."""
    paths, _ = notebooks
    for name in ("blank", "instructor", "correct", "typed_wrong"):
        assert self_check(paths[name], sandbox=sandbox).notes == [], name


def test_every_givens_cell_the_bank_writes_is_recognised_as_unchanged():
    """The check tells an edited givens cell by what it holds besides ``name = <literal>``:
    every given of every template in the bank, as the build writes it, passes."""
    from exercises.course.bank import load_bank
    from exercises.variant.draw import make_variant
    from formats.literals import assignment
    templates, _ = load_bank()
    for template in templates.values():
        for seed in range(3):
            givens = make_variant(template, seed).givens
            source = "# Your givens for problem 1: run this cell.\n" + "\n".join(
                assignment(name, value) for name, value in givens.items())
            assert givens_change(source) == "" or not givens, (template.id, seed, source)
    assert givens_change("x = np.array([1.0, 2.0])\nprint(x)") == "other code added"
    assert givens_change("x = 1\nx = 2") == "other code added"
    assert givens_change("x = [1, 2") == "it no longer parses as Python"
    assert givens_change("x = np.array([1.0]) * 2") == "other code added"
    assert givens_change("x = some_helper()") == "other code added"


# --- where the check and grading differ --------------------------------------------------------

def _edited(path, tmp_path, name, change):
    """A copy of the notebook at ``path`` with ``change(cells)`` applied (cells: its cell list,
    returned changed)."""
    notebook = json.loads(path.read_text())
    notebook["cells"] = change(notebook["cells"])
    out = tmp_path / f"{name}.ipynb"
    out.write_text(json.dumps(notebook))
    return out


def _gid(cell):
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


def _set_source(cells, gid, source):
    for c in cells:
        if _gid(c) == gid:
            c["source"] = source
    return cells


def _notes(report, code):
    assert code in NOTE_CODES
    return [n for n in report.notes if n.code == code]


def test_an_edited_givens_cell_is_explained(notebooks, sandbox, tmp_path):
    """Code added to a givens cell runs here but never at grading (the issued givens are set
    in its place); a givens cell unlocked in Jupyter may hold other numbers, which the check
    cannot see without the key: it says both, and the parts keep their rows."""
    paths, _ = notebooks

    def change(cells):
        for c in cells:
            if _gid(c) == "scaling--givens":
                c["source"] = "".join(c["source"]) + "\nimport math\n"
            if _gid(c) == "masks--givens":
                c["metadata"]["editable"] = True
        return cells
    report = self_check(_edited(paths["instructor"], tmp_path, "edited_givens", change), sandbox=sandbox)
    (edited,) = _notes(report, "givens-edited")
    assert edited.cell == "scaling--givens"
    assert edited.message.startswith("the givens cell scaling--givens was changed (other code added)")
    assert "grading sets the givens issued to you in its place and runs nothing else of it" in edited.message
    (unlocked,) = _notes(report, "cell-unlocked")
    assert unlocked.cell == "masks--givens" and "may have been edited" in unlocked.message
    assert report.ok            # notes that explain, not failures: every part still passes its checks
    assert all(f"note: {n.message}" in report.table() for n in report.notes)


def test_a_deleted_givens_cell_is_explained(notebooks, sandbox, tmp_path):
    """With its givens cell gone, a problem's cells fail here on a given's name; at grading
    the issued givens are set before its first cell. The note names the given, not the answer."""
    paths, _ = notebooks

    def change(cells):
        cells = [c for c in cells if _gid(c) != "scaling--givens"]
        return _set_source(cells, "scaling-variance", "variance = float(d_k)\n")
    report = self_check(_edited(paths["instructor"], tmp_path, "no_givens", change), sandbox=sandbox)
    (note,) = _notes(report, "givens-missing")
    assert note.message.startswith("problem scaling has no givens cell, and its cells raised NameError "
                                   "(name 'd_k' not defined)")
    assert "Grading sets the givens issued to you before the problem's first cell" in note.message
    assert statuses(report)[("scaling", "variance")] == ERROR and report.exit_code == 1


def test_deleted_kit_cells_are_explained(notebooks, sandbox, tmp_path):
    """An answer cell, a check cell, the setup and an example deleted: each has a note saying
    what grading does instead; a part whose check is gone is "not checked" (not ready), never
    "form OK"."""
    paths, _ = notebooks
    gone = {"setup", "scaling-variance", "scaling-std--check", "implement-masked_attention--example",
            "motivation-static"}
    report = self_check(_edited(paths["instructor"], tmp_path, "deleted",
                                lambda cells: [c for c in cells if _gid(c) not in gone]), sandbox=sandbox)
    found = {(p.problem, p.part): p for p in report.parts}
    assert found[("scaling", "std")].status == NOT_CHECKED
    assert found[("scaling", "std")].detail == "its check cell is missing"
    assert found[("scaling", "variance")].status == NOT_ANSWERED
    assert found[("motivation", "static")].status == NOT_ANSWERED
    assert found[("motivation", "static")].detail == "its answer cell is missing"
    assert len(report.parts) == 43 and report.exit_code == 1
    missing = {n.cell: n.message for n in _notes(report, "kit-cell-missing")}
    assert "grading reads `variance` wherever your notebook defines it" in missing["scaling-variance"]
    assert missing["setup"].startswith("the setup cell is missing: this check and grading run the kit's own setup")
    assert "the hidden tests at grading do not use it" in missing["implement-masked_attention--example"]
    assert "graded by hand from that cell, so it has no answer" in missing["motivation-static"]
    assert any(n.message.startswith('the check cell scaling-std--check is missing, so that part is "not checked"')
               for n in _notes(report, "kit-cell-missing"))


def test_magics_markdown_answers_and_copied_cells_are_explained(notebooks, sandbox, tmp_path):
    paths, _ = notebooks

    def change(cells):
        cells = _set_source(cells, "scaling-std", "%matplotlib inline\n" + "".join(
            next(c for c in cells if _gid(c) == "scaling-std")["source"]))
        for c in cells:
            if _gid(c) == "masks-causal":
                c["cell_type"] = "markdown"
                c.pop("outputs", None), c.pop("execution_count", None)
        copy = json.loads(json.dumps(next(c for c in cells if _gid(c) == "bahdanau-pre")))
        copy["id"] = "a-copy"
        return cells + [copy]
    report = self_check(_edited(paths["instructor"], tmp_path, "magics", change), sandbox=sandbox)
    (magic,) = _notes(report, "magics-stripped")
    assert magic.message.startswith("scaling-std: lines starting with % or !") and "here too" in magic.message
    assert statuses(report)[("scaling", "std")] == OK          # the rest of the cell ran
    (markdown,) = _notes(report, "answer-not-code")
    assert markdown.cell == "masks-causal" and "it does not run, here or at grading" in markdown.message
    assert statuses(report)[("masks", "causal")] == NOT_ANSWERED
    (copied,) = _notes(report, "duplicate-grade-id")
    assert copied.cell == "bahdanau-pre" and "all of them run, in notebook order" in copied.message


def test_a_notebook_issued_to_someone_else_says_so_without_naming_them(notebooks, sandbox, tmp_path):
    paths, _ = notebooks
    issued_to = json.loads(paths["correct"].read_text())["metadata"]["attnkit"]["student"]
    notebook = tmp_path / "hw1.ipynb"           # (the synthetic file is named after its student)
    notebook.write_bytes(paths["correct"].read_bytes())
    assert self_check(notebook, sandbox=sandbox, student=issued_to).ok
    report = self_check(notebook, sandbox=sandbox, student="s9999999")
    (note,) = _notes(report, "wrong-student")
    assert note.blocking and not report.ok and report.exit_code == 1
    assert note.message.startswith("this notebook's numbers are not the ones issued to you (s9999999)")
    assert issued_to not in report.table() and issued_to not in json.dumps(report.as_json())
    assert report.reason().endswith("the notebook was not issued to you")
    class_wide = json.loads(notebook.read_text())      # nbgrader's class-wide notebook names no student
    class_wide["metadata"]["attnkit"]["student"] = ""
    notebook.write_text(json.dumps(class_wide))
    assert self_check(notebook, sandbox=sandbox, student="s9999999").notes == []
