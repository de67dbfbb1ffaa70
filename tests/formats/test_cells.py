"""Grade ids: built and read back in formats/cells.py only; every id a real notebook carries
reads back to itself, and nothing the kit never writes reads as one of its cells."""

import json

import pytest

from formats.cells import (CHECK, GIVENS, HEADER_CELL, PROMPT, SETUP_CELL, GradeId, cell_id, grade_id,
                           parse_grade_id)
from grader.intake.key_checks import kit_cells

SECRET = "grade-id test secret: long enough"


@pytest.fixture(scope="module")
def built(example_build):
    return example_build(2, SECRET)


def notebook_grade_ids(build_dir, student: str, version: str) -> list[str]:
    folder = build_dir / ("release" if version == "release" else "instructor/notebooks")
    notebook = json.loads(next((folder / student).glob("*.ipynb")).read_text(encoding="utf-8"))
    return [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]]


@pytest.mark.parametrize("version", ["release", "instructor"])
def test_every_grade_id_of_a_built_notebook_reads_back_to_itself(built, version):
    build_dir, key = built
    for student in key["students"]:
        ids = notebook_grade_ids(build_dir, student, version)
        assert ids[:2] == [HEADER_CELL, SETUP_CELL]
        for gid in ids:
            parsed = parse_grade_id(gid)
            assert parsed is not None and str(parsed) == gid, gid
        problems = set(key["students"][student]["problems"])
        assert {parse_grade_id(g).problem for g in ids[2:]} == problems


def test_every_cell_the_grader_expects_is_a_grade_id(built):
    _, key = built
    entry = next(iter(key["students"].values()))
    for gid, kit in kit_cells(entry).items():
        parsed = parse_grade_id(gid)
        assert parsed is not None and str(parsed) == gid
        assert parsed.problem == kit.problem
        assert parsed.is_answer == (kit.role == "answer")


def test_the_table_of_grade_ids():
    assert grade_id("p", role=PROMPT) == "p--prompt"
    assert grade_id("p", role=GIVENS) == "p--givens"
    assert grade_id("p", "a") == "p-a"
    assert grade_id("p", "a", role=CHECK) == "p-a--check"
    assert grade_id("p", "f", family="edge") == "p-f-edge"
    assert parse_grade_id("p-f-edge") == GradeId("p", "f", "edge")
    assert parse_grade_id("p-a--check") == GradeId("p", "a", role="check")
    assert parse_grade_id(SETUP_CELL) == GradeId(role="setup")


@pytest.mark.parametrize("text", ["", "p", "p-", "-a", "p--", "p-a-b-c", "p--a-b", "p---x", "a--b--c"])
def test_ids_the_kit_never_writes_are_not_read_as_its_cells(text):
    assert parse_grade_id(text) is None


def test_long_grade_ids_become_valid_cell_ids():
    long = grade_id("p" * 40, "a" * 40, role=CHECK)
    assert cell_id(long) != long and len(cell_id(long)) == 64
    assert cell_id("p-a") == "p-a"
