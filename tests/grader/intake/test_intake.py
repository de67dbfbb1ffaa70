"""Submission intake: finding notebooks in the layouts courses use, reading whatever a student
hands in without raising, and pairing files with the answer key's students.

The notebooks are the builder's own (a real build of the example assignment for three
students), changed the way students change them: filled in, edited, copied, stripped,
saved by another tool, or not notebooks at all."""

import copy
import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats.answer_key import load_key
from exercises.course.assignment import load_assignment
from exercises.course.build import CLASS_STUDENT, build_nbgrader
from exercises.render.notebook import notebook_bytes
from formats.serialize import decode_names
from formats.key_shape import entry_for
from grader.intake import reading
from grader.intake.givens import assigns_exactly, givens_edits
from grader.intake.issues import ISSUE_CODES, Issue
from grader.intake.key_checks import kit_cells
from grader.intake.layouts import find_submissions
from grader.intake.limits import MAX_CELLS
from grader.intake.pairing import match
from grader.intake.reading import file_hash, read_submission
from grader.intake.records import Found, Sent, Submission
from grader.run.program import job_for

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
SECRET = "grader intake test secret, 32 by"
HW = "attention-hw1"
A, B, C = "s2026001", "s2026002", "s2026003"
T0 = int(datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc).timestamp()) * 10**9     # a modification time


@pytest.fixture(scope="module")
def course(example_build):
    """A real build for three students: (out folder, key as the grader loads it)."""
    return example_build(3, SECRET)


@pytest.fixture
def key(course):
    return course[1]


def released(course, student: str) -> dict:
    return json.loads((course[0] / "release" / student / f"{HW}.ipynb").read_text())


def solved(course, student: str) -> dict:
    return json.loads((course[0] / "instructor" / "notebooks" / student / f"{HW}.ipynb").read_text())


def write(path: Path, notebook) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(notebook, bytes):
        path.write_bytes(notebook)
    elif isinstance(notebook, dict) and isinstance(notebook.get("cells"), list) and all(
            isinstance(c, dict) and isinstance(c.get("source"), str) for c in notebook["cells"]):
        path.write_bytes(notebook_bytes(notebook))      # as Jupyter writes it: sources as line lists
    else:
        path.write_text(json.dumps(notebook))
    return path


def flat(tmp_path, student: str, notebook) -> Found:
    path = write(tmp_path / f"{student}.ipynb", notebook)
    return Found(student, path, path.name, "flat")


def cell(notebook: dict, grade_id: str) -> dict:
    return next(c for c in notebook["cells"] if c["id"] == grade_id)


def codes(submission) -> list[str]:
    return [i.code for i in submission.issues]


# --- finding ---------------------------------------------------------------------------------

def test_the_nbgrader_layout_is_found_from_the_course_or_from_its_submitted_folder(tmp_path):
    for student in (B, A):
        write(tmp_path / "submitted" / student / HW / f"{HW}.ipynb", {})
    write(tmp_path / "submitted" / A / HW / ".ipynb_checkpoints" / f"{HW}-checkpoint.ipynb", {})
    write(tmp_path / "submitted" / A / HW / ".hidden.ipynb", {})
    write(tmp_path / "submitted" / A / "another-hw" / "another-hw.ipynb", {})
    (tmp_path / "submitted" / A / HW / "timestamp.txt").write_text("2026-01-01 00:00:00")
    found = find_submissions(tmp_path, HW)
    assert [(f.student, f.path, f.shown, f.layout) for f in found] == [
        (A, tmp_path / "submitted" / A / HW / f"{HW}.ipynb", f"submitted/{A}/{HW}/{HW}.ipynb", "nbgrader"),
        (B, tmp_path / "submitted" / B / HW / f"{HW}.ipynb", f"submitted/{B}/{HW}/{HW}.ipynb", "nbgrader"),
    ]
    assert (found[0].received_at, found[0].received_from) == (datetime(2026, 1, 1, tzinfo=timezone.utc),
                                                              "nbgrader timestamp.txt")
    assert found[1].received_from == "file modification time" and found[1].received_at.tzinfo is not None
    from_submitted = find_submissions(tmp_path / "submitted", HW)
    assert [(f.student, f.path, f.shown) for f in from_submitted] == \
        [(A, found[0].path, f"{A}/{HW}/{HW}.ipynb"), (B, found[1].path, f"{B}/{HW}/{HW}.ipynb")]


def test_a_flat_folder_and_the_release_layout_are_found_in_student_order(tmp_path):
    write(tmp_path / f"{C}.ipynb", {})
    write(tmp_path / f"{A}.ipynb", {})
    write(tmp_path / B / f"{HW}.ipynb", {})           # release/<student>/<assignment>.ipynb
    write(tmp_path / B / "scratch.ipynb", {})          # another notebook in the folder: listed
    write(tmp_path / ".~lock.ipynb", {})
    (tmp_path / "notes.txt").write_text("not a notebook")
    found = find_submissions(tmp_path, HW)
    assert [(f.student, f.shown, f.layout) for f in found] == [
        (A, f"{A}.ipynb", "flat"), (B, f"{B}/{HW}.ipynb", "release"), (B, f"{B}/scratch.ipynb", "folder"),
        (C, f"{C}.ipynb", "flat")]


def test_several_notebooks_of_one_student_sort_naturally(tmp_path):
    for name in ("hw (10).ipynb", "hw (9).ipynb", f"{HW}.ipynb"):
        write(tmp_path / A / HW / name, {})
    assert [f.path.name for f in find_submissions(tmp_path, HW)] == [f"{HW}.ipynb", "hw (9).ipynb", "hw (10).ipynb"]


@pytest.mark.parametrize("name", ["²1.ipynb", "hw ²³ (٣).ipynb", "x" + "9" * 240 + ".ipynb"])
def test_names_with_digits_that_are_not_ascii_sort_without_stopping_anyone(tmp_path, name):
    """'²'.isdigit() is True and int('²') raises: one such file name stopped `attnkit grade`
    for the whole class, on every rerun (nbgrader layout and flat LMS names alike)."""
    write(tmp_path / "submitted" / A / HW / name, {})
    write(tmp_path / "submitted" / A / HW / "hw (2).ipynb", {})
    write(tmp_path / "submitted" / f"{B}.ipynb", {})
    found = find_submissions(tmp_path, HW)
    assert sorted(f.path.name for f in found) == sorted([name, "hw (2).ipynb", f"{B}.ipynb"])
    matched = match(found, {"assignment": {"id": HW}, "students": {A: {}, B: {}}}, read=True)
    assert [s.student for s in matched.submissions] == [A, B]


def test_nothing_is_found_in_a_folder_that_does_not_exist(tmp_path):
    assert find_submissions(tmp_path / "nowhere", HW) == []


# --- reading: what is not a notebook ---------------------------------------------------------

def test_a_clean_notebook_reads_without_issues_and_every_kit_cell_is_identified(course, key, tmp_path):
    notebook = released(course, A)
    path = tmp_path / f"{A}.ipynb"
    path.write_bytes((course[0] / "release" / A / f"{HW}.ipynb").read_bytes())
    s = read_submission(Found(A, path, path.name, "flat"), key)
    assert s.issues == () and s.nbformat == 4 and s.student == A
    assert s.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [c.grade_id for c in s.cells] == [c["id"] for c in notebook["cells"]]
    assert {c.matched_by for c in s.cells} == {"nbgrader"}
    assert [c.source for c in s.cells] == ["".join(c["source"]) for c in notebook["cells"]]
    assert s.record == notebook["metadata"]["attnkit"]


def test_a_notebook_that_travelled_as_bytes_reads_as_its_file_does_and_is_never_opened(course, key, tmp_path):
    """A cluster worker's submissions (intake.Sent): read from the bytes the client read,
    with the client's path in every row; the path is not opened (there is no file there)."""
    data = (course[0] / "release" / A / f"{HW}.ipynb").read_bytes()
    path = tmp_path / f"{A}.ipynb"
    path.write_bytes(data)
    from_file = read_submission(Found(A, path, path.name, "flat"), key)
    sent = Sent(A, tmp_path / "gone" / f"{A}.ipynb", f"{A}.ipynb", "flat", data=data)
    from_bytes = read_submission(sent, key)
    assert from_bytes == Submission(**{**vars(from_file), "path": sent.path})
    assert file_hash(sent) == from_file.content_hash == hashlib.sha256(data).hexdigest()
    assert read_submission(Sent(A, path, path.name, "flat", data=b"[1]"), key).issues[0].code == \
        "not-a-notebook"                                                   # the bytes, not the file


def test_bytes_beyond_the_limit_are_hashed_but_not_read(key, monkeypatch):
    monkeypatch.setattr(reading, "MAX_BYTES", 1024)
    s = read_submission(Sent(A, Path("x.ipynb"), "x.ipynb", "flat", data=b" " * 3000), key)
    assert [i.code for i in s.issues] == ["too-large"] and s.cells == () and len(s.content_hash) == 64


@pytest.mark.parametrize("data, code, message", [
    (b"", "empty-file", "x.ipynb: the file is empty (0 bytes): nothing was saved"),
    (b'{"cells": [\n  {"cell_type": "code",,}\n]}', "invalid-json",
     "x.ipynb: not valid JSON (Expecting property name enclosed in double quotes at line 2, column 24): "
     "the file was damaged or edited outside Jupyter"),
    (b'{"cells": [], "nbformat": 4', "invalid-json",
     "x.ipynb: not valid JSON (Expecting ',' delimiter at line 1, column 28): the file was damaged or "
     "edited outside Jupyter"),
    (b'{"cells": ["cut off', "invalid-json",                      # (once "…starting at at line 1")
     "x.ipynb: not valid JSON (Unterminated string starting at line 1, column 12): the file was damaged or "
     "edited outside Jupyter"),
    (b"[1, 2, 3]", "not-a-notebook", "x.ipynb: not a notebook: the JSON is a list, not an object"),
    (b'"just text"', "not-a-notebook", "x.ipynb: not a notebook: the JSON is a string, not an object"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not-text", "x.ipynb: not a notebook: byte 0 (0x89) is not UTF-8 text"),
    (b"\xef\xbb\xbf{\"a\": \"\xe9\"}", "not-text", "x.ipynb: not a notebook: byte 10 (0xe9) is not UTF-8 text"),
    (b"[" * 100_000, "invalid-json", "x.ipynb: not valid JSON (nested too deeply)"),
])
def test_files_that_are_not_notebooks_are_issues_never_exceptions(tmp_path, key, data, code, message):
    path = tmp_path / "x.ipynb"
    path.write_bytes(data)
    s = read_submission(Found(A, path, "x.ipynb", "flat"), key)
    assert s.issues == (Issue(code, message),)
    assert s.cells == () and s.record is None
    assert s.content_hash == hashlib.sha256(data).hexdigest()


def test_a_version_3_notebook_is_an_issue_and_nothing_in_it_runs(tmp_path, key):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""},
          "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "language": "python"}]}]}
    s = read_submission(flat(tmp_path, A, v3), key)
    assert s.issues == (Issue("not-nbformat-4",
                              f"{A}.ipynb: a notebook of format 3, not a Jupyter notebook of format 4: nothing "
                              "in it was run (open it in Jupyter and save it again to convert it)"),)
    assert s.cells == () and s.nbformat == 3


def test_a_practice_notebook_handed_in_is_refused_by_name_and_never_run(course, key, tmp_path):
    notebook = released(course, A)
    notebook["metadata"]["attnkit"] = {"format": 1, "practice": {"template": "dog_ran_fast", "variants": [0, 1]}}
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue("practice-notebook",
                              f"{A}.ipynb: a practice notebook of dog_ran_fast, not the assignment: practice "
                              f"is never graded and nothing in it was run; hand in the notebook of assignment "
                              f"{key['assignment']['id']}"),)
    assert s.cells == ()


def test_a_notebook_without_a_version_is_not_run_either(tmp_path, key):
    s = read_submission(flat(tmp_path, A, {"cells": [{"cell_type": "code", "source": "x = 1"}]}), key)
    assert s.issues == (Issue("not-nbformat-4",
                              f"{A}.ipynb: a file without an nbformat version, not a Jupyter notebook of "
                              "format 4: nothing in it was run (open it in Jupyter and save it again to "
                              "convert it)"),)
    assert s.cells == () and s.nbformat is None


def test_a_notebook_without_cells(course, key, tmp_path):
    notebook = released(course, A)
    for cells in ([], None, "cells"):
        s = read_submission(flat(tmp_path, A, {**notebook, "cells": cells}), key)
        assert s.issues == (Issue("no-cells", f"{A}.ipynb: the notebook has no cells"),)
        assert s.cells == ()


def test_a_byte_order_mark_is_not_an_error(course, key, tmp_path):
    path = tmp_path / f"{A}.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + (course[0] / "release" / A / f"{HW}.ipynb").read_bytes())
    s = read_submission(Found(A, path, path.name, "flat"), key)
    assert s.issues == () and len(s.cells) == len(released(course, A)["cells"])


def test_a_symbolic_link_is_never_followed(course, key, tmp_path):
    # A link could point at the instructor's solved notebook: it is refused, not read.
    target = course[0] / "instructor" / "notebooks" / A / f"{HW}.ipynb"
    link = tmp_path / "submitted" / A / HW / f"{HW}.ipynb"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    [found] = find_submissions(tmp_path, HW)
    s = read_submission(found, key)
    assert s.issues == (Issue("symlink", f"submitted/{A}/{HW}/{HW}.ipynb: a symbolic link, not a file: not "
                                         "read (hand in the notebook itself)"),)
    assert s.cells == () and s.content_hash == ""


def test_a_file_too_large_is_hashed_but_not_read(key, tmp_path, monkeypatch):
    import grader.intake.reading as intake
    monkeypatch.setattr(intake, "MAX_BYTES", 3 * 1024 * 1024)
    data = b" " * (5 * 1024 * 1024)
    (tmp_path / "x.ipynb").write_bytes(data)
    s = read_submission(Found(A, tmp_path / "x.ipynb", "x.ipynb", "flat"), key)
    assert s.issues == (Issue("too-large", "x.ipynb: 5 MiB, more than the 3 MiB a notebook may have: not read"),)
    assert s.cells == () and len(s.content_hash) == 64
    # the hash tells a changed file from the same one (so it is not re-read on every run) …
    assert read_submission(Found(A, tmp_path / "x.ipynb", "x.ipynb", "flat"), key).content_hash == s.content_hash
    (tmp_path / "x.ipynb").write_bytes(data[:-1] + b"x")
    assert read_submission(Found(A, tmp_path / "x.ipynb", "x.ipynb", "flat"), key).content_hash != s.content_hash


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io")
def test_a_2_gib_file_is_refused_by_its_size_before_it_is_read(key, tmp_path):
    """It was read and hashed in full, twice (file_hash, then read_submission): 11 s of
    grader CPU before grading began, for a file that is refused anyway."""
    path = tmp_path / "submitted" / A / HW / f"{HW}.ipynb"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as f:               # sparse: 2 GiB that take no disk
        f.truncate(2 * 1024**3)
    [found] = find_submissions(tmp_path, HW)
    before = _bytes_read()
    digest = file_hash(found)
    s = read_submission(found, key)
    assert _bytes_read() - before < 1024 * 1024           # a glimpse of 64 KiB at each end, twice
    assert s.issues == (Issue("too-large", f"submitted/{A}/{HW}/{HW}.ipynb: 2048 MiB, more than the "
                                           "64 MiB a notebook may have: not read"),)
    assert digest == s.content_hash and s.cells == ()


def test_a_folder_named_like_a_notebook_is_unreadable(key, tmp_path):
    (tmp_path / "x.ipynb").mkdir()
    s = read_submission(Found(A, tmp_path / "x.ipynb", "x.ipynb", "flat"), key)
    assert codes(s) == ["unreadable"] and s.issues[0].message.startswith("x.ipynb: ")


# --- reading: notebooks other tools saved ----------------------------------------------------

def test_sources_as_strings_or_lists_and_garbled_metadata_are_tolerated(course, key, tmp_path):
    notebook = released(course, A)
    for c in notebook["cells"][::2]:
        c["source"] = "".join(c["source"])                         # nbformat allows both
    notebook["cells"][0]["metadata"] = "garbled"                   # header: no nbgrader metadata left
    notebook["cells"][1]["metadata"]["nbgrader"] = 5               # setup
    notebook["cells"][2]["metadata"]["nbgrader"]["grade_id"] = ["not", "text"]
    notebook["cells"].insert(3, "not a cell")
    notebook["cells"].insert(4, {"cell_type": "code", "source": [1, 2]})
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert [(c.index, c.grade_id, c.matched_by) for c in s.cells[:3]] == [
        (0, "header", "cell id"), (1, "setup", "cell id"), (2, "motivation--prompt", "cell id")]
    assert s.issues == (
        Issue("bad-cell", f"{A}.ipynb: cells 4, 5 are not readable (not a cell object, or its source is not "
                          "text): skipped"),
        Issue("metadata-stripped", f"{A}.ipynb: 3 cells have no nbgrader metadata (removed by a tool or a "
                                   "copy into a new notebook); matched by cell id instead"))


def test_stripped_nbgrader_metadata_falls_back_to_cell_ids(course, key, tmp_path):
    notebook = released(course, A)
    for c in notebook["cells"]:
        c["metadata"] = {}
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue("metadata-stripped", f"{A}.ipynb: {len(notebook['cells'])} cells have no "
                                                   "nbgrader metadata (removed by a tool or a copy into a "
                                                   "new notebook); matched by cell id instead"),)
    assert [c.grade_id for c in s.cells] == [c["id"] for c in notebook["cells"]]


def test_cells_without_ids_are_identified_by_their_nbgrader_metadata(course, key, tmp_path):
    notebook = {**released(course, A), "nbformat_minor": 4}     # before 4.5 cells had no ids
    for c in notebook["cells"]:
        del c["id"]
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == ()
    assert [c.grade_id for c in s.cells] == [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]]


def test_no_metadata_and_no_ids_leaves_no_kit_cell_identifiable(course, key, tmp_path):
    notebook = released(course, A)
    for c in notebook["cells"]:
        c["metadata"] = {}
        del c["id"]
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue("no-kit-cells", f"{A}.ipynb: none of the notebook's cells is a cell of the "
                                              "assignment (no nbgrader grade ids or cell ids it was issued "
                                              "with): every code cell is run in order and answers are read "
                                              "by variable name only"),)
    assert all(c.grade_id is None for c in s.cells) and len(s.cells) == len(notebook["cells"])


def test_a_cell_id_that_is_not_a_kit_cell_is_a_cell_the_student_added(course, key, tmp_path):
    notebook = released(course, A)
    notebook["cells"].insert(5, {"cell_type": "code", "id": "a1b2c3d4", "metadata": {}, "outputs": [],
                                 "execution_count": None, "source": "x = 1"})
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == ()
    assert (s.cells[5].grade_id, s.cells[5].label) == (None, "cell 6")


# --- reading: checks against the key -------------------------------------------------------

def test_missing_kit_cells_are_named_with_what_follows(course, key, tmp_path):
    notebook = released(course, A)
    gone = {"masks-causal", "masks--givens", "implement-masked_attention--example", "masks-causal--check"}
    notebook["cells"] = [c for c in notebook["cells"] if c["id"] not in gone]
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert sorted(s.issues, key=lambda i: (i.code == "check-cell-missing", i.cell)) == [
        Issue("kit-cell-missing", f"{A}.ipynb: the cell implement-masked_attention--example is missing "
                                  "(deleted, or its id was lost): its example is not defined unless another "
                                  "cell defines it", "implement-masked_attention--example"),
        Issue("kit-cell-missing", f"{A}.ipynb: the cell masks--givens is missing (deleted, or its id was "
                                  "lost): the givens are set from the answer key before the problem's first "
                                  "cell", "masks--givens"),
        Issue("kit-cell-missing", f"{A}.ipynb: the cell masks-causal is missing (deleted, or its id was "
                                  "lost): the answer is read from its variable wherever the notebook defines "
                                  "it", "masks-causal"),
        Issue("check-cell-missing", f"{A}.ipynb: the check cell masks-causal--check is missing (deleted, or "
                                    "the id was lost): grading does not run check cells, so the score is "
                                    "unaffected, but the part's form was not checked in the notebook",
              "masks-causal--check"),
    ]        # a check cell is not graded from, but the TA should know it went (grader.store.look)


def test_a_copied_cell_keeps_both_copies_and_says_so(course, key, tmp_path):
    notebook = released(course, A)
    i = next(i for i, c in enumerate(notebook["cells"]) if c["id"] == "scaling-std")
    notebook["cells"].insert(i + 3, copy.deepcopy(notebook["cells"][i]))
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue("duplicate-grade-id", f"{A}.ipynb: cells {i + 1} and {i + 4} all carry the grade "
                                                    "id scaling-std (a copied cell): all of them are kept, in "
                                                    "notebook order", "scaling-std"),)
    assert [c.index for c in s.cells if c.grade_id == "scaling-std"] == [i, i + 3]


def test_an_edited_givens_cell_is_reported_as_harmless(course, key, tmp_path):
    notebook = released(course, A)
    givens = cell(notebook, "masks--givens")
    source = "".join(givens["source"])
    givens["source"] = source.replace("Q = np.array([[", "Q = 2 * np.array([[") + "\nlengths = [1, 1]\nprint(Q)\n"
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue("givens-edited", f"{A}.ipynb: the locked givens cell masks--givens was edited (Q "
                                               "changed; other code added); harmless: grading always uses the "
                                               "givens as issued", "masks--givens"),)


def test_a_givens_cell_that_only_looks_different_is_not_edited(course, key):
    notebook = released(course, A)
    entry = key["students"][A]
    givens = decode_names(entry["problems"]["bahdanau"]["givens"])
    source = "".join(cell(notebook, "bahdanau--givens")["source"])
    assert givens_edits(source, givens) == ""
    words = next(line for line in source.split("\n") if line.startswith("words = "))
    reordered = "# my own comment\n" + source.replace(words + "\n", "") + "\n" + words
    assert givens_edits(reordered.replace("'every'", '"every"'), givens) == ""   # comments, order, quotes
    assert givens_edits(source.replace("words = [", "words = ("), givens).startswith("it no longer parses")
    as_tuple = "words = (" + words[len("words = ["):-1] + ")"
    assert givens_edits(source.replace(words, as_tuple), givens) == ""      # the key stores tuples as lists
    assert givens_edits(source.replace(words, "words = ['x']"), givens) == "words changed"
    assert givens_edits("del H", givens) == "H, U, W, s_prev, v and words removed; other code added"
    assert assigns_exactly(source, givens) and not assigns_exactly(source + "\nx = 1", givens)


@pytest.mark.parametrize("change, code, message", [
    (lambda r: r.update(student=B), "wrong-student",
     f"{A}.ipynb: this notebook was issued to student {B}, not {A}: it is graded with {A}'s givens and answers"),
    (lambda r: r.update(student=""), "wrong-student",
     f"{A}.ipynb: this notebook was issued to no student, not {A}: it is graded with {A}'s givens and answers"),
    (lambda r: r["assignment"].update(id="attention-hw2"), "wrong-assignment",
     f"{A}.ipynb: this notebook is for assignment 'attention-hw2', not '{HW}'"),
    (lambda r: r["problems"][3].update(variant_digest="0" * 64, issued_digest="0" * 64), "wrong-variant",
     f"{A}.ipynb: the notebook's variant of masks is not the one in the answer key (another student's "
     "notebook, or one built with another secret or version): it is graded with the key's givens"),
    (lambda r: r["problems"].append({"id": "x" * 1000}), "wrong-variant",
     f"{A}.ipynb: the notebook's variant of 1 problem the key does not have is not the one in the answer key "
     "(another student's notebook, or one built with another secret or version): it is graded with the key's "
     "givens"),
    (lambda r: r.update(student="s" * 100), "wrong-student",
     f"{A}.ipynb: this notebook was issued to student {'s' * 63}…, not {A}: it is graded with {A}'s givens and "
     "answers"),
])
def test_a_record_that_disagrees_with_the_key(course, key, tmp_path, change, code, message):
    notebook = released(course, A)
    change(notebook["metadata"]["attnkit"])
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.issues == (Issue(code, message),)


def test_another_students_notebook_is_flagged_as_such_not_as_edited_givens(course, key, tmp_path):
    s = read_submission(flat(tmp_path, A, released(course, B)), key)
    # (its givens differ because it is another variant: said once, not as four "edited" cells)
    assert codes(s) == ["wrong-student", "wrong-variant"]
    assert s.issues[1].message.startswith(f"{A}.ipynb: the notebook's variant of bahdanau, bert_mlm, "
                                          "dog_ran_fast, implement, masks, motivation, scaling is not")


def test_a_notebook_without_its_record(course, key, tmp_path):
    notebook = released(course, A)
    notebook["metadata"] = []
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert s.record is None
    assert s.issues == (Issue("no-record", f"{A}.ipynb: the notebook has no variant record (attnkit metadata), "
                                           f"so it cannot be confirmed to be the one issued to {A}; it is "
                                           f"graded against {A}'s key entry"),)


def test_without_a_key_only_the_file_is_checked(course, tmp_path):
    notebook = released(course, B)
    for c in notebook["cells"][:4]:
        c["metadata"] = {}
    s = read_submission(flat(tmp_path, A, notebook))
    assert s.issues == ()
    assert [c.grade_id for c in s.cells[:5]] == [None, None, None, None, notebook["cells"][4]["id"]]


def test_every_issue_code_is_documented():
    used = {"unreadable", "symlink", "too-large", "empty-file", "not-text", "invalid-json", "not-a-notebook",
            "not-nbformat-4", "no-cells", "bad-cell", "metadata-stripped", "no-kit-cells", "kit-cell-missing",
            "check-cell-missing",
            "duplicate-grade-id", "givens-edited", "no-record", "wrong-student", "wrong-assignment",
            "wrong-variant", "earlier-variant", "duplicate", "unknown-student", "too-complex", "too-many-cells",
            # when it was handed in, and pairing files with students
            "bad-timestamp", "late-by-name", "several-notebooks", "ambiguous", "renamed",
            "paired-by-record", "unmatched", "practice-notebook"}
    assert set(ISSUE_CODES) == used
    source = "".join(p.read_text() for p in Path(reading.__file__).parent.glob("*.py"))   # every intake module
    assert set(re.findall(r'Issue\(\s*"([a-z0-9-]+)"', source)) | {"duplicate", "several-notebooks",
                                                                  "ambiguous"} == used


def test_kit_cells_know_every_grade_id_of_the_instructor_notebook(course, key):
    kit = kit_cells(key["students"][A])
    ids = [c["id"] for c in solved(course, A)["cells"]]
    assert set(ids) <= set(kit)
    assert kit["masks-causal"].role == "answer" and kit["masks-causal"].part == "causal"
    assert (kit["implement-masked_attention"].role, kit["implement-masked_attention"].part) == \
        ("answer", "masked_attention")
    assert kit["implement-masked_attention-batched"].role == "tests"
    assert (kit["setup"].problem, kit["masks--givens"].problem) == (None, "masks")
    assert "motivation--givens" not in kit          # a problem without givens has no givens cell


# --- matching ---------------------------------------------------------------------------------

def test_match_pairs_students_and_lists_the_missing_and_the_unknown(course, key, tmp_path):
    write(tmp_path / "submitted" / A / HW / f"{HW}.ipynb", released(course, A))
    record_less = released(course, B)
    del record_less["metadata"]["attnkit"]
    write(tmp_path / "submitted" / "s9999999" / HW / f"{HW}.ipynb", record_less)
    submissions, missing, issues = match(find_submissions(tmp_path, HW), key)
    assert [s.student for s in submissions] == [A] and submissions[0].issues == ()
    assert missing == [B, C]
    assert issues == [Issue("unknown-student", f"submitted/s9999999/{HW}/{HW}.ipynb: 's9999999' is not a "
                                               "student of the answer key, and no variant record in the "
                                               "notebook names one (the folder or file name must be a "
                                               "student id of the roster): not graded")]


def test_a_folder_that_names_no_student_is_paired_by_the_record_inside(course, key, tmp_path):
    write(tmp_path / "submitted" / "s9999999" / HW / f"{HW}.ipynb", released(course, B))
    submissions, missing, issues = match(find_submissions(tmp_path, HW), key)
    assert [s.student for s in submissions] == [B] and missing == [A, C] and issues == []
    assert submissions[0].issues == (Issue(
        "paired-by-record", f"submitted/s9999999/{HW}/{HW}.ipynb: its folder name 's9999999' names no "
                            f"student of the answer key; the notebook's variant record names {B}: graded "
                            f"for {B}"),)


def test_the_notebook_named_like_the_assignment_is_graded_among_several(course, key, tmp_path):
    folder = tmp_path / "submitted" / A / HW
    write(folder / f"{HW}.ipynb", released(course, A))
    write(folder / "zz-copy.ipynb", released(course, A))
    result = match(find_submissions(tmp_path, HW), key)
    [s] = result.submissions
    assert s.path == folder / f"{HW}.ipynb"
    assert s.issues == (Issue("several-notebooks", f"submitted/{A}/{HW}/{HW}.ipynb: graded, as it is named "
                                                   f"{HW}.ipynb; {A} handed in 2 notebooks (also "
                                                   f"submitted/{A}/{HW}/zz-copy.ipynb)"),)
    assert result.issues == [Issue("several-notebooks", f"submitted/{A}/{HW}/zz-copy.ipynb: not graded: {A} "
                                                        f"handed in 2 notebooks and submitted/{A}/{HW}/{HW}.ipynb "
                                                        "was graded")]


def test_else_the_one_whose_record_names_the_student(course, key, tmp_path):
    folder = tmp_path / "submitted" / A / HW
    write(folder / "mine.ipynb", released(course, A))
    write(folder / "theirs.ipynb", released(course, B))      # sorts last, but it is B's
    [s] = match(find_submissions(tmp_path, HW), key).submissions
    assert s.path.name == "mine.ipynb"
    assert s.issues[-1].message == (f"submitted/{A}/{HW}/mine.ipynb: graded, as its record names {A}; {A} "
                                    f"handed in 2 notebooks (also submitted/{A}/{HW}/theirs.ipynb)")


def test_else_the_newest_by_name_when_their_times_tie(course, key, tmp_path):
    folder = tmp_path / "submitted" / A / HW
    for name in ("hw (2).ipynb", "hw (10).ipynb", "hw (9).ipynb"):
        os.utime(write(folder / name, released(course, A)), ns=(T0, T0))
    result = match(find_submissions(tmp_path, HW), key)
    [s] = result.submissions
    assert s.path.name == "hw (10).ipynb"
    assert s.issues[-1] == Issue("duplicate", f"submitted/{A}/{HW}/hw (10).ipynb: graded, as its name sorts last "
                                              f"(the newest); {A} handed in 3 notebooks (also submitted/{A}/{HW}/"
                                              f"hw (2).ipynb and submitted/{A}/{HW}/hw (9).ipynb)")
    assert [i.message.split(":")[0] for i in result.issues] == [f"submitted/{A}/{HW}/hw (2).ipynb",
                                                                 f"submitted/{A}/{HW}/hw (9).ipynb"]
    assert {i.code for i in result.issues} == {"duplicate"}


def test_else_the_newest_by_modification_time(course, key, tmp_path):
    folder = tmp_path / "submitted" / A / HW
    for name, age in (("hw (2).ipynb", 0), ("hw (10).ipynb", 2), ("hw (9).ipynb", 1)):
        os.utime(write(folder / name, released(course, A)), ns=(T0 - age * 10**9, T0 - age * 10**9))
    result = match(find_submissions(tmp_path, HW), key)
    [s] = result.submissions
    assert s.path.name == "hw (2).ipynb"
    assert s.issues[-1].message.startswith(f"submitted/{A}/{HW}/hw (2).ipynb: graded, as it was modified last "
                                           "(2026-11-30 23:59:00 UTC); ")


def test_a_flat_file_with_another_students_notebook_is_graded_as_the_file_says(course, key, tmp_path):
    write(tmp_path / f"{A}.ipynb", released(course, B))
    write(tmp_path / f"{B}.ipynb", released(course, B))
    submissions, missing, _ = match(find_submissions(tmp_path, HW), key)
    assert [(s.student, codes(s)[:1]) for s in submissions] == [(A, ["wrong-student"]), (B, [])]
    assert missing == [C]


def test_an_nbgrader_course_key_grades_everyone_with_the_class_variant(tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNKIT_SECRET", SECRET)
        result = build_nbgrader(load_assignment(EXAMPLE), tmp_path / "course")
    class_key = load_key(result.key_path, SECRET.encode())
    source = json.loads((tmp_path / "course" / "source" / HW / f"{HW}.ipynb").read_text())
    for student in ("alice", "bob"):
        write(tmp_path / "course" / "submitted" / student / HW / f"{HW}.ipynb", source)
    submissions, missing, issues = match(find_submissions(tmp_path / "course", HW), class_key)
    assert [(s.student, s.issues) for s in submissions] == [("alice", ()), ("bob", ())]
    assert missing == [] and issues == []
    assert entry_for(class_key, "alice") is class_key["students"][CLASS_STUDENT]
    assert entry_for(class_key, "alice") is entry_for(class_key, "anyone")


# --- never raising -----------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
SPOTS = ["document", "cells", "cell", "source", "metadata", "nbgrader", "grade_id", "id", "record", "problems"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spot=st.sampled_from(SPOTS), junk=JSON, where=st.integers(0, 200))
def test_any_json_in_any_place_is_read_and_programmed_without_raising(course, key, tmp_path, spot, junk, where):
    notebook = released(course, A)
    target = notebook["cells"][where % len(notebook["cells"])]
    if spot == "document":
        notebook = junk
    elif spot == "cells":
        notebook["cells"] = junk
    elif spot == "cell":
        notebook["cells"][where % len(notebook["cells"])] = junk
    elif spot in ("source", "metadata", "id"):
        target[spot] = junk
    elif spot in ("nbgrader", "grade_id"):
        target["metadata"]["nbgrader"] = junk if spot == "nbgrader" else {**target["metadata"]["nbgrader"],
                                                                          "grade_id": junk}
    elif spot == "record":
        notebook["metadata"]["attnkit"] = junk
    else:
        notebook["metadata"]["attnkit"]["problems"][where % 7] = junk
    path = tmp_path / f"{A}.ipynb"
    path.write_text(json.dumps(notebook))
    s = read_submission(Found(A, path, path.name, "flat"), key)
    assert all(i.code in ISSUE_CODES for i in s.issues)
    program = job_for(s, key["students"][A])
    assert program.steps[0]["label"] == "setup" and len(program.problem_of_step) == len(program.steps)


def test_a_name_that_is_not_utf8_is_reported_and_not_graded(tmp_path):
    import os
    folder = os.fsencode(tmp_path / "submitted") + b"/st\xff01/hw"
    os.makedirs(folder)
    with open(folder + b"/hw.ipynb", "w") as f:
        f.write("{}")
    found = find_submissions(tmp_path, "hw")
    class_key = {"assignment": {"id": "hw"}, "students": {"(class)": {"problems": {}}}}
    matched = match(found, class_key)
    assert matched.submissions == []
    assert [i.code for i in matched.issues] == ["unknown-student"]
    assert "not UTF-8" in matched.issues[0].message
    matched.issues[0].message.encode("utf-8")


# --- what a submission may cost intake -----------------------------------------------------------

def test_a_notebook_of_too_many_cells_is_not_run(course, key, tmp_path):
    """100,000 cells with a magic line each made 16.5 MB of notes in one gradebook row."""
    notebook = solved(course, A)
    notebook["cells"] += [{"cell_type": "code", "id": f"x{i}", "metadata": {}, "source": "%ls",
                           "outputs": [], "execution_count": None} for i in range(MAX_CELLS)]
    s = read_submission(flat(tmp_path, A, notebook), key)
    assert codes(s) == ["too-many-cells"] and s.cells == ()
    assert s.issues[0].message.startswith(f"{A}.ipynb: {len(notebook['cells']):,} cells, more than the 5,000")


def test_json_that_would_parse_into_millions_of_objects_is_not_parsed(key, tmp_path):
    """64 MiB of ``[],`` is 22 million lists (1.3 GB) to json.loads: refused by counting first.
    Brackets and commas inside strings do not count (a printed array is text)."""
    bomb = b'{"nbformat": 4, "cells": [' + b"[]," * 2_000_000 + b'[]]}'
    s = read_submission(flat(tmp_path, A, bomb), key)
    assert codes(s) == ["too-complex"] and "about 4,000,00" in s.issues[0].message
    printed = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
               "cells": [{"cell_type": "markdown", "id": "a", "metadata": {},
                          "source": "[1, 2], " * 1_000_000}]}
    assert codes(read_submission(flat(tmp_path, A, json.dumps(printed).encode()), key)) != ["too-complex"]


def test_a_givens_bomb_is_judged_by_its_length_and_noted_in_a_line(course, key, tmp_path):
    """Three 1 MB edited copies of a givens cell cost 5–7 s of grader CPU under the parser
    lock and 2.5 MB of notes."""
    notebook = solved(course, A)
    index = next(i for i, c in enumerate(notebook["cells"]) if c["id"] == "masks--givens")
    bomb = "".join(f"a{i} = {i}\n" for i in range(100_000))          # ~1 MB of assignments
    for copy_number in range(3):
        twin = copy.deepcopy(notebook["cells"][index])
        twin["id"] = f"masks-givens-copy-{copy_number}"
        twin["source"] = bomb
        notebook["cells"].insert(index + 1, twin)
    s = read_submission(flat(tmp_path, A, notebook), key)
    edited = [i for i in s.issues if i.code == "givens-edited"]
    assert len(edited) == 3
    assert all("it was replaced by something much longer" in i.message for i in edited)
    assert sum(len(i.message) for i in s.issues) < 5_000
    # a long but parseable edit names at most a few of the names it added
    givens = decode_names(key["students"][A]["problems"]["masks"]["givens"])
    from grader.intake.givens import expected_givens_source
    source = expected_givens_source(givens) + "".join(f"\nb{i} = 0" for i in range(300))
    said = givens_edits(source, givens)
    assert said.startswith("b0, b1, b2") and said.endswith("and 292 more added") and len(said) < 200


def test_a_magic_line_in_every_cell_makes_one_note(course, key, tmp_path):
    notebook = solved(course, A)
    notebook["cells"] += [{"cell_type": "code", "id": f"m{i}", "metadata": {}, "source": "%time x = 1",
                           "outputs": [], "execution_count": None} for i in range(3_000)]
    program = job_for(read_submission(flat(tmp_path, A, notebook), key), key["students"][A])
    notes = [n for n in program.notes if n.code == "magics-stripped"]
    assert len(notes) == 1 and "and 2,992 more" in notes[0].message and len(notes[0].message) < 400


def test_a_cell_of_a_million_newlines_is_stripped_in_linear_time():
    """``^(\\s*)[%!]`` with re.M let \\s* eat newlines: 60 kB of them cost 8 s, 1 MB hours. This
    finishes in a blink (the suite would hang here if it were quadratic again)."""
    from grader.run.program import strip_magics
    source = "\n" * 1_000_000 + "%ls\n" + " " * 1_000_000 + "\n!pwd"
    stripped, changed = strip_magics(source)
    assert changed and stripped == "\n" * 1_000_000 + "pass\n" + " " * 1_000_000 + "\npass"


def test_a_name_with_control_characters_is_no_student_even_for_a_class_key(tmp_path):
    """A class key (nbgrader course mode) takes every folder name as a student, and the
    student id then reaches pytest's node ids and the terminal: not one that acts on it."""
    key = {"assignment": {"id": HW}, "students": {CLASS_STUDENT: {}}}
    for name in ("\x1b]0;pwned\x07", "a\u202ecba", "ok"):
        write(tmp_path / "submitted" / name / HW / f"{HW}.ipynb", {})
    matched = match(find_submissions(tmp_path, HW), key, read=False)
    assert [f.student for f in matched.submissions] == ["ok"]
    assert [i.code for i in matched.issues] == ["unknown-student"] * 2
    assert all("\x1b" not in str(i) and "\u202e" not in str(i) for i in matched.issues)
    assert str(matched.issues[0]) == matched.issues[0].message      # what `attnkit grade` prints


def test_a_huge_cell_with_a_magic_line_is_not_parsed():
    """Parsing is what the grader paid for a long cell: a 6 MB one with a magic line cost
    2.9 GB and 11 s. Past PARSED_AT_MOST its magic lines are replaced without parsing."""
    import tracemalloc

    from grader.run.program import PARSED_AT_MOST, strip_magics
    source = "a = 1\n" * 1_000_000 + "%matplotlib inline"
    tracemalloc.start()
    try:
        stripped, changed = strip_magics(source)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert changed and stripped.endswith("a = 1\npass") and peak < 40 * len(source)    # the lines, once
    small = "x = '''\n%not a magic\n'''"
    assert len(small) < PARSED_AT_MOST and strip_magics(small) == (small, False)
