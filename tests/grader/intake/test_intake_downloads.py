"""Intake of real downloads: student folders with notebooks of any name, browser copies,
Canvas and Moodle bulk-download names (mapped by the roster's LMS columns, or by the
variant record inside), nbgrader's timestamp.txt, and every file that is not graded listed.

The notebooks are the builder's own (the example assignment for three students)."""

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from exercises.course.roster import load_roster
from grader.intake.issues import ISSUE_CODES, Issue
from grader.intake.layouts import find_submissions
from grader.intake.pairing import match
from grader.intake.reading import read_submission
from grader.intake.records import Found
from grader.intake.timestamps import parse_timestamp, read_timestamp

SECRET = "grader intake test secret, 32 by"
HW = "attention-hw1"
A, B, C = "s2026001", "s2026002", "s2026003"
T0 = int(datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc).timestamp()) * 10**9


@pytest.fixture(scope="module")
def course(example_build):
    return example_build(3, SECRET)


@pytest.fixture
def key(course):
    return course[1]


def released(course, student: str, record: bool = True) -> dict:
    notebook = json.loads((course[0] / "release" / student / f"{HW}.ipynb").read_text())
    if not record:
        del notebook["metadata"]["attnkit"]
    return notebook


def write(path: Path, notebook: dict, age: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook))
    if age is not None:                     # seconds before T0
        os.utime(path, ns=(T0 - age * 10**9, T0 - age * 10**9))
    return path


def codes(submission) -> list[str]:
    return [i.code for i in submission.issues]


def roster(tmp_path, text: str):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    return load_roster(path)


CANVAS_ROSTER = (f"student_id,name,ID,SIS Login ID\n{A},Ada,1234,ada.l\n{B},Bo,2345,bo.b\n"
                 f"{C},Cy,3456,cy.c\n")


# --- a student's folder ---------------------------------------------------------------------

@pytest.mark.parametrize("read", [True, False])
def test_a_renamed_notebook_in_a_student_folder_is_graded_with_a_note(course, key, tmp_path, read):
    """`u005/hw.ipynb` was recorded missing with no warning."""
    write(tmp_path / A / "hw.ipynb", released(course, A))
    [found] = find_submissions(tmp_path, HW)
    assert (found.student, found.layout) == (A, "folder")
    submissions, missing, issues = match([found], key, read=read)
    assert missing == [B, C] and issues == []
    s = submissions[0] if read else read_submission(submissions[0], key)
    assert s.student == A and s.cells
    assert s.issues == (Issue("renamed", f"{A}/hw.ipynb: not named {HW}.ipynb, but the only notebook of {A}: "
                                         f"graded for {A}"),)


def test_several_notebooks_of_unrelated_names_in_a_folder_are_each_listed(course, key, tmp_path):
    write(tmp_path / A / "hw.ipynb", released(course, A), age=5)
    write(tmp_path / A / "notes.ipynb", released(course, A), age=1)
    [s], missing, issues = match(find_submissions(tmp_path, HW), key)
    assert s.path.name == "notes.ipynb"
    assert s.issues[-1] == Issue("several-notebooks", f"{A}/notes.ipynb: graded, as it was modified last "
                                                      f"(2026-11-30 23:58:59 UTC); {A} handed in 2 notebooks "
                                                      f"(also {A}/hw.ipynb)")
    assert issues == [Issue("several-notebooks", f"{A}/hw.ipynb: not graded: {A} handed in 2 notebooks and "
                                                 f"{A}/notes.ipynb was graded")]


# --- browser copies ---------------------------------------------------------------------------

@pytest.mark.parametrize("newer", [f"{A} (1).ipynb", f"{A}.ipynb"])
def test_of_a_browsers_copies_the_newest_counts_and_the_report_says_so(course, key, tmp_path, newer):
    for name in (f"{A}.ipynb", f"{A} (1).ipynb"):
        write(tmp_path / name, released(course, A), age=0 if name == newer else 60)
    found = find_submissions(tmp_path, HW)
    assert [(f.student, f.layout) for f in found] == [(A, "flat"), (A, "flat")]
    [s], missing, issues = match(found, key, read=False)
    older = ({f"{A}.ipynb", f"{A} (1).ipynb"} - {newer}).pop()
    assert s.path.name == newer and missing == [B, C]
    assert s.issues[-1] == Issue("duplicate", f"{newer}: graded, as it was modified last (2026-11-30 23:59:00 "
                                              f"UTC); {A} handed in 2 notebooks (also {older})")
    assert issues == [Issue("duplicate", f"{older}: not graded: {A} handed in 2 notebooks and {newer} was "
                                         "graded")]


def test_a_copy_whose_name_is_no_student_is_unknown_as_before(tmp_path):
    write(tmp_path / "zz (2).ipynb", {})
    [found] = find_submissions(tmp_path, HW)
    assert found.student == "zz"
    matched = match([found], {"assignment": {"id": HW}, "students": {A: {}}})
    assert [i.code for i in matched.issues] == ["unknown-student"]
    assert matched.issues[0].message.startswith("zz (2).ipynb: 'zz' is not a student of the answer key")


# --- Canvas -------------------------------------------------------------------------------------

def test_a_canvas_download_is_mapped_by_the_rosters_user_id_and_its_late_mark_kept(course, key, tmp_path):
    write(tmp_path / f"lovelaceada_LATE_1234_987654_{HW}.ipynb", released(course, A))
    write(tmp_path / "bobo_2345_987655_homework.ipynb", released(course, B))
    found = find_submissions(tmp_path, HW)
    assert [(f.layout, f.lms_login, f.lms_id, f.lms_late) for f in found] == [
        ("canvas", "bobo", "2345", False), ("canvas", "lovelaceada", "1234", True)]
    submissions, missing, issues = match(found, key, roster=roster(tmp_path, CANVAS_ROSTER))
    assert [(s.student, s.lms_late) for s in submissions] == [(A, True), (B, False)]
    assert missing == [C] and issues == []
    assert submissions[0].issues == (Issue("late-by-name", f"lovelaceada_LATE_1234_987654_{HW}.ipynb: Canvas "
                                                           "marked this submission late (_LATE in its file "
                                                           "name)"),)
    assert submissions[1].issues == ()          # no "renamed": the uploaded name is Canvas's to keep


def test_a_canvas_download_without_a_roster_is_paired_by_its_record_or_an_id_of_the_key(course, key, tmp_path):
    write(tmp_path / "lovelaceada_1234_987654_hw.ipynb", released(course, A))
    write(tmp_path / f"{B}_2345_987655_hw.ipynb", released(course, B, record=False))   # the login is B's id
    submissions, missing, issues = match(find_submissions(tmp_path, HW), key)
    assert [s.student for s in submissions] == [A, B] and missing == [C] and issues == []
    assert submissions[0].issues == (Issue(
        "paired-by-record", "lovelaceada_1234_987654_hw.ipynb: a Canvas download of user id 1234 (login "
                            f"'lovelaceada') names no student of the answer key; the notebook's variant record "
                            f"names {A}: graded for {A}"),)
    assert codes(submissions[1]) == ["no-record"]


def test_a_canvas_download_nothing_pairs_is_unmatched(course, key, tmp_path):
    write(tmp_path / "nobody_999_1_hw.ipynb", released(course, A, record=False))
    for given in (None, roster(tmp_path, CANVAS_ROSTER)):
        submissions, missing, issues = match(find_submissions(tmp_path, HW), key, roster=given)
        assert submissions == [] and missing == [A, B, C]
        assert issues == [Issue("unmatched", "nobody_999_1_hw.ipynb: a Canvas download of user id 999 (login "
                                             "'nobody') is no student of the roster or the answer key, and no "
                                             "variant record in the notebook names one: not graded (the "
                                             "roster's lms_id or lms_login column pairs LMS downloads)")]


def test_a_canvas_login_maps_when_the_user_id_does_not_and_an_id_two_students_share_maps_neither(
        course, key, tmp_path):
    write(tmp_path / "ADA.L_555_1_hw.ipynb", released(course, A, record=False))
    shared = roster(tmp_path, f"student_id,name,lms_id,lms_login\n{A},Ada,,ada.l\n{B},Bo,,\n")
    [s], _, issues = match(find_submissions(tmp_path, HW), key, roster=shared)
    assert s.student == A and issues == []
    both = [{"student_id": A, "lms_id": "555"}, {"student_id": B, "lms_id": "555"}]
    matched = match(find_submissions(tmp_path, HW), key, roster=both)
    assert [i.code for i in matched.issues] == ["unmatched"]


def test_lms_ids_the_build_stored_in_the_key_map_too(course, key, tmp_path):
    write(tmp_path / "someone_4242_1_hw.ipynb", released(course, C, record=False))
    stored = {**key, "students": {**key["students"], C: {**key["students"][C], "lms_id": "4242"}}}
    [s], _, issues = match(find_submissions(tmp_path, HW), stored, read=False)
    assert s.student == C and issues == []


# --- Moodle ---------------------------------------------------------------------------------------

def test_a_moodle_download_is_mapped_by_the_rosters_id_or_by_its_record(course, key, tmp_path):
    write(tmp_path / "Ada Lovelace_77_assignsubmission_file_" / "Homework 1.ipynb", released(course, A))
    write(tmp_path / "Bo Bo_78_assignsubmission_file_" / "mine.ipynb", released(course, B))
    write(tmp_path / "Bo Bo_78_assignsubmission_onlinetext_" / "onlinetext.html", {})
    found = find_submissions(tmp_path, HW)
    assert [(f.layout, f.lms_id, f.lms_name) for f in found] == [("moodle", "77", "Ada Lovelace"),
                                                                  ("moodle", "78", "Bo Bo")]
    moodle = roster(tmp_path, f"student_id,name,Email address,lms_id\n{A},Ada,ada@example.edu,77\n"
                              f"{B},Bo,bo@example.edu,78\n")
    submissions, missing, issues = match(found, key, roster=moodle)
    assert [(s.student, s.issues) for s in submissions] == [(A, ()), (B, ())]
    assert missing == [C] and issues == []
    submissions, _, issues = match(found, key)           # no roster: the records pair them
    assert [(s.student, codes(s)) for s in submissions] == [(A, ["paired-by-record"]), (B, ["paired-by-record"])]
    assert submissions[0].issues[0].message == (
        "Ada Lovelace_77_assignsubmission_file_/Homework 1.ipynb: a Moodle download of user id 77 ('Ada "
        f"Lovelace') names no student of the answer key; the notebook's variant record names {A}: graded for {A}")


def test_a_moodle_name_whose_id_is_a_student_id_of_the_key_matches_without_a_roster(tmp_path):
    write(tmp_path / "Ada Lovelace_2026001_assignsubmission_file_" / "hw.ipynb", {})
    write(tmp_path / "Bo Bo_2026002_assignsubmission_file_hw.ipynb", {})   # downloaded without folders
    key = {"assignment": {"id": HW}, "students": {"2026001": {}, "2026002": {}}}
    submissions, missing, issues = match(find_submissions(tmp_path, HW), key, read=False)
    assert [(s.student, s.layout) for s in submissions] == [("2026001", "moodle"), ("2026002", "moodle")]
    assert missing == [] and issues == []


# --- one student, several places ------------------------------------------------------------------

def test_notebooks_in_different_places_claiming_one_student_are_ambiguous(course, key, tmp_path):
    write(tmp_path / f"{A}.ipynb", released(course, A), age=60)
    write(tmp_path / A / "hw.ipynb", released(course, A), age=0)
    [s], _, issues = match(find_submissions(tmp_path, HW), key)
    assert s.shown == f"{A}/hw.ipynb"
    assert s.issues[-1] == Issue("ambiguous", f"{A}/hw.ipynb: graded, as it was modified last (2026-11-30 "
                                              f"23:59:00 UTC); {A} handed in 2 notebooks (also {A}.ipynb)")
    assert issues == [Issue("ambiguous", f"{A}.ipynb: not graded: {A} handed in 2 notebooks in different "
                                         f"places and {A}/hw.ipynb was graded")]


def test_a_place_that_names_the_student_wins_over_a_record_that_does(course, key, tmp_path):
    write(tmp_path / f"{A}.ipynb", released(course, A), age=60)
    write(tmp_path / "final.ipynb", released(course, A), age=0)     # newer, but named for nobody
    [s], _, issues = match(find_submissions(tmp_path, HW), key)
    assert s.shown == f"{A}.ipynb"
    assert s.issues[-1].code == "ambiguous" and "as its file or folder name is" in s.issues[-1].message
    assert issues == [Issue("ambiguous", f"final.ipynb: not graded: its variant record names {A}, and "
                                         f"{A}.ipynb (whose file or folder name is {A}'s) was graded")]


def test_a_place_and_a_record_that_disagree_grade_the_place_and_say_so(course, key, tmp_path):
    write(tmp_path / "bobo_2345_1_hw.ipynb", released(course, A))        # Bo handed in Ada's notebook
    [s], _, _ = match(find_submissions(tmp_path, HW), key, roster=roster(tmp_path, CANVAS_ROSTER))
    assert s.student == B and codes(s)[0] == "wrong-student"


def test_a_notebook_nothing_pairs_is_listed_never_dropped(course, key, tmp_path):
    write(tmp_path / "hw1.ipynb", released(course, A, record=False))
    write(tmp_path / "junk.ipynb", {"not": "a notebook"})
    write(tmp_path / "Someone_12_assignsubmission_file_" / "x.ipynb", {})
    submissions, missing, issues = match(find_submissions(tmp_path, HW), key)
    assert submissions == [] and missing == [A, B, C]
    assert [(i.code, i.message.split(":")[0]) for i in issues] == [
        ("unmatched", "Someone_12_assignsubmission_file_/x.ipynb"), ("unknown-student", "hw1.ipynb"),
        ("unknown-student", "junk.ipynb")]


def test_a_name_with_control_characters_is_shown_escaped(course, key, tmp_path):
    write(tmp_path / "evil\x1b]0;x\x07_1234_1_hw.ipynb", released(course, A))
    [s], _, issues = match(find_submissions(tmp_path, HW), key, roster=roster(tmp_path, CANVAS_ROSTER))
    assert s.student == A and issues == [] and "\x1b" not in s.shown and "\\x1b" in s.shown


# --- when it was handed in ------------------------------------------------------------------------

def test_nbgrader_timestamp_is_read_and_carried_to_the_submission(course, key, tmp_path):
    folder = tmp_path / "submitted" / A / HW
    write(folder / f"{HW}.ipynb", released(course, A))
    (folder / "timestamp.txt").write_text("2026-11-30 23:59:01.123456 UTC\n")
    write(tmp_path / "submitted" / f"{B}.ipynb", released(course, B), age=0)
    submissions, _, _ = match(find_submissions(tmp_path, HW), key)
    assert [(s.received_at, s.received_from) for s in submissions] == [
        (datetime(2026, 11, 30, 23, 59, 1, 123456, tzinfo=timezone.utc), "nbgrader timestamp.txt"),
        (datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc), "file modification time")]
    assert submissions[0].issues == ()


@pytest.mark.parametrize("text, expected", [
    ("2026-11-30 23:59:01.123456 UTC", datetime(2026, 11, 30, 23, 59, 1, 123456, tzinfo=timezone.utc)),
    ("2026-11-30 23:59:01", datetime(2026, 11, 30, 23, 59, 1, tzinfo=timezone.utc)),
    ("2026-11-30T23:59:01Z", datetime(2026, 11, 30, 23, 59, 1, tzinfo=timezone.utc)),
    ("2026-11-30 23:59", datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc)),
    ("2026-11-30T23:59:01.5+01:00", datetime(2026, 11, 30, 22, 59, 1, 500000, tzinfo=timezone.utc)),
    ("2026-11-30 18:59:01.000001 EST", datetime(2026, 11, 30, 23, 59, 1, 1, tzinfo=timezone.utc)),
    ("2026-07-01 14:00:00 PDT", datetime(2026, 7, 1, 21, tzinfo=timezone.utc)),
    ("2026-07-01 14:00:00 Europe/Berlin", datetime(2026, 7, 1, 12, tzinfo=timezone.utc)),
    ("2026-07-01 14:00:00 UTC-0530", datetime(2026, 7, 1, 19, 30, tzinfo=timezone.utc)),
])
def test_timestamps_in_nbgrader_form_and_its_neighbours_parse(text, expected):
    parsed = parse_timestamp(text)
    assert parsed is not None and parsed.tzinfo is not None and parsed == expected


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01 00:00:00", "2026-11-30 25:00:00 UTC",
                                  "2026-11-30 23:59:01 Mars/Olympus", "2026-11-30 23:59:01 ../../etc/passwd",
                                  "2026-11-30 23:59:01 +99:00"])
def test_what_is_not_a_time_is_none(text):
    assert parse_timestamp(text) is None


@pytest.mark.parametrize("content, why", [
    (b"last tuesday\x1b[2J", "'last tuesday\\\\x1b[2J'"),
    (b"", "empty"),
    (b"\xff\xfe", "not UTF-8 text"),
    (b"2026-11-30 23:59:01 UTC" + b" " * 300, "longer than 256 bytes"),
])
def test_a_bad_timestamp_is_an_issue_and_the_modification_time_is_used(course, key, tmp_path, content, why):
    folder = tmp_path / "submitted" / A / HW
    write(folder / f"{HW}.ipynb", released(course, A), age=0)
    (folder / "timestamp.txt").write_bytes(content)
    [s], _, _ = match(find_submissions(tmp_path, HW), key)
    assert (s.received_at, s.received_from) == (datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc),
                                                "file modification time")
    assert s.issues == (Issue("bad-timestamp", f"submitted/{A}/{HW}/{HW}.ipynb: the timestamp.txt beside it is "
                                               f"not a time ({why}): the file's modification time is used"),)
    assert "\x1b" not in s.issues[0].message


def test_a_timestamp_that_is_a_link_or_a_folder_is_never_followed(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("2026-11-30 23:59:01 UTC")
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "timestamp.txt").symlink_to(target)
    (tmp_path / "dir" / "timestamp.txt").mkdir(parents=True)
    assert read_timestamp(tmp_path / "link" / "timestamp.txt") == (None, "a symbolic link: not followed")
    assert read_timestamp(tmp_path / "dir" / "timestamp.txt") == (None, "not a regular file")
    assert read_timestamp(tmp_path / "none" / "timestamp.txt") == (None, "")


def test_a_flat_file_has_its_modification_time_and_no_timestamp_of_the_folder(tmp_path):
    write(tmp_path / f"{A}.ipynb", {}, age=3600)
    (tmp_path / "timestamp.txt").write_text("2020-01-01 00:00:00 UTC")     # the searched folder's: not read
    [f] = find_submissions(tmp_path, HW)
    assert f.received_at == datetime(2026, 11, 30, 22, 59, tzinfo=timezone.utc)
    assert f.received_from == "file modification time"
    assert f.received_at - datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc) == -timedelta(hours=1)


# --- what stays as it was -------------------------------------------------------------------------

def test_every_new_code_is_documented_and_a_found_made_by_hand_still_reads(course, key, tmp_path):
    for code in ("bad-timestamp", "late-by-name", "several-notebooks", "ambiguous", "renamed",
                 "paired-by-record", "unmatched"):
        assert ISSUE_CODES[code]
    path = write(tmp_path / "x.ipynb", released(course, A))
    s = read_submission(Found(A, path, "x.ipynb", "flat"), key)
    assert s.issues == () and (s.received_at, s.received_from, s.lms_late) == (None, "", False)
