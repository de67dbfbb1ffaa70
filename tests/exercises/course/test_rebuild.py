"""Rebuilds that cannot silently change issued work (issue 15): a change that only affects
grading rebuilds the key and the issued notebooks read back without a false note; one that
would give students new numbers is refused, naming who and which problems, the earlier key
kept; with ``new_variants`` the new key still recognises the notebooks issued before."""

import shutil
from pathlib import Path

import pytest

from exercises.course.assignment import load_assignment
from exercises.course.build import build
from exercises.course.roster import load_roster
from formats.answer_key import load_key
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"
ROSTER = ROOT / "problem_bank" / "assignments" / "sample_roster.csv"
SECRET, OTHER = "rebuild test secret: long enough", "another secret, also long enough"
HW = "attention-hw1"


@pytest.fixture
def course(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    spec = tmp_path / "hw.yaml"
    spec.write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    roster = list(load_roster(ROSTER))[:3]
    result = build(load_assignment(spec), roster, tmp_path / "build")
    assert result.ok and not result.changed
    issued = tmp_path / "issued"                       # what the students were given
    shutil.copytree(tmp_path / "build" / "release", issued)
    return spec, roster, tmp_path


def notes(course, secret=SECRET) -> dict:
    spec, _, folder = course
    key = load_key(folder / "build" / "instructor" / "answer_key.json", secret.encode())
    submissions, missing, _ = match(find_submissions(folder / "issued", HW), key)
    assert not missing
    return {s.student: [i.code for i in s.issues] for s in submissions}


def test_a_grading_only_change_rebuilds_and_the_issued_notebooks_read_back_clean(course):
    spec, roster, folder = course
    assert all(codes == [] for codes in notes(course).values())
    text = spec.read_text(encoding="utf-8").replace("    id: scaling\n", "    id: scaling\n    points: 7\n")
    spec.write_text(text, encoding="utf-8")                # new points: every record's digest changes
    result = build(load_assignment(spec), roster, folder / "build")
    assert result.ok and not result.refused and not result.changed
    assert all(codes == [] for codes in notes(course).values())      # no "wrong-variant", no "givens-edited"


def test_new_numbers_are_refused_naming_whom_and_the_earlier_key_stays(course, monkeypatch):
    spec, roster, folder = course
    key_file = folder / "build" / "instructor" / "answer_key.json"
    before = key_file.read_bytes()
    monkeypatch.setenv("ATTNKIT_SECRET", OTHER)
    result = build(load_assignment(spec), roster, folder / "build")
    assert result.refused and "does not verify" in result.failures[0]
    assert key_file.read_bytes() == before
    # a range changed in a template: the students' numbers would change
    monkeypatch.setenv("ATTNKIT_SECRET", SECRET)
    bank = folder / "bank"
    shutil.copytree(ROOT / "problem_bank", bank, ignore=shutil.ignore_patterns("assignments"))
    template = bank / "why_sqrt_dk.yaml"
    changed = template.read_text(encoding="utf-8")
    assert "values: [" in changed
    template.write_text(changed.replace("values: [", "values: [1024, ", 1), encoding="utf-8")
    spec.write_text(spec.read_text(encoding="utf-8").replace("problems:\n", "bank: bank\nproblems:\n", 1),
                    encoding="utf-8")
    result = build(load_assignment(spec), roster, folder / "build")
    assert result.refused and result.changed and all(pids == ["scaling"] for pids in result.changed.values())
    assert key_file.read_bytes() == before and not (key_file.parent / "answer_key.json.previous").exists()
    assert all(codes == [] for codes in notes(course).values())
    # issued anyway: the new key knows the earlier variants
    result = build(load_assignment(spec), roster, folder / "build", new_variants=True)
    assert result.ok and result.changed
    read = notes(course)
    for student in result.changed:
        assert read[student] == ["earlier-variant"], read[student]      # not "wrong-variant", not "givens-edited"
