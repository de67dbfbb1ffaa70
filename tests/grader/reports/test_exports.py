"""LMS exports, each read back the way its LMS reads it.

The example assignment is built for a real class of four (``example_build``) and a gradebook
filled with what grading records: one student graded in full (the hand-graded parts marked
by hand), one whose hand-graded parts are still pending, one whose grading failed on a part,
one who never handed in. Each file is then read by a small model of its LMS's importer,
written from that importer's source and documentation:

- Canvas: ``app/models/gradebook_importer.rb`` (instructure/canvas-lms) — the header is
  recognised by ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and a last student
  column holding ``Section``; a row whose first cell holds "Points Possible" sets the points;
  a column matching a computed column (Final Score, Current Points, …) is dropped; a row is
  matched by ID, then SIS User ID, then SIS Login ID; "Title (123)" names assignment 123.
- Moodle: ``grade/import/csv/classes/load_data.php`` and ``lib/csvlib.class.php`` (the BOM
  is trimmed; "" or "-" is "no grade"; a blank identifier keeps the previous row's student)
  and docs.moodle.org "Grade import" (map the identifier to useremail / useridnumber).
"""

import csv
import io
import json
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from formats.key_shape import (assignment_id, entry_for, graded_parts, head_problems, key_students,
                               problem_record, total_points)
from formats.deadline import Deadline, LatePolicy
from grader.reports.exports import (ExportError, canvas_column, canvas_export, export_rows, grades_export,
                                    gradescope_results, moodle_export, safe_cell, write_canvas_csv,
                                    write_gradescope, write_grades_csv, write_moodle_csv)
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow, SubmissionRow
from grader.store.grades import class_grades, late_line

SECRET = "exports test secret: long enough, never a real one"
BOM = b"\xef\xbb\xbf"
EVIL_NAME = '=HYPERLINK("http://evil.example/","click")'


@pytest.fixture(scope="module")
def key(example_build):
    return example_build(4, SECRET)[1]


def parts_of(key, student):
    entry = entry_for(key, student)
    return [(p["id"], p.get("kind"), part, points) for p in head_problems(key)
            for part, points in graded_parts(problem_record(entry, p["id"], {}))]


def record(gradebook, key, student, status_of, submission="graded"):
    """Every part of ``student`` recorded: ``status_of(kind, part)`` → (status, fraction)."""
    a = assignment_id(key)
    rows = []
    for problem, kind, part, points in parts_of(key, student):
        status, fraction = status_of(kind, part)
        rows.append(ResultRow(a, student, problem, part, points * fraction, points, status,
                              "Graded by hand." if status == "manual" else ""))
    note = "this notebook was issued to student s2026002"
    gradebook.record(SubmissionRow(a, student, f"{student}.ipynb", f"hash-{student}", submission,
                                   (note,) if submission == "graded" else (),
                                   sum(r.score for r in rows), total_points(key),
                                   issues=(("wrong-student", note),) if submission == "graded" else ()), rows)
    return rows


@pytest.fixture(scope="module")
def grades(key, tmp_path_factory):
    """(class grades, {student: (earned, pending)}) for the four students."""
    ada, bo, cy, dee = key_students(key)
    with Gradebook(tmp_path_factory.mktemp("gb") / "gb.sqlite") as gb:
        # ada: all parts graded (free response by hand), everything else right but one part.
        record(gb, key, ada, lambda kind, part: ("failed", 0.0) if part == "weights" else ("passed", 1.0))
        # bo: the free-response parts still to grade by hand, the rest half right.
        record(gb, key, bo, lambda kind, part: ("manual", 0.0) if kind == "free_response" else ("partial", 0.5))
        # cy: the grader failed on the implement problem.
        record(gb, key, cy, lambda kind, part: ("error", 0.0) if kind == "implement" else ("passed", 1.0),
               submission="error")
        # dee never handed in.
        grades = class_grades(gb, key)
    free = sum(pts for _, kind, _, pts in parts_of(key, bo) if kind == "free_response")
    return grades, free


def ids(key):
    return key_students(key)


ROSTER_CSV = """student_id,name,email,lms_id,lms_login
{0},"{evil}",+Ada.Lovelace@Example.edu,1001,-ada
{1},Bo Ørsted,bo@example.edu,1002,bo.orsted
{2},Cy Nguyễn,,1003,cy
{3},Dee Points Possible,dee@example.edu,,dee
"""


@pytest.fixture(scope="module")
def roster(key, tmp_path_factory):
    from exercises.course.roster import load_roster
    path = tmp_path_factory.mktemp("roster") / "roster.csv"
    path.write_text(ROSTER_CSV.format(*ids(key), evil=EVIL_NAME.replace('"', '""')), encoding="utf-8")
    return load_roster(path)


def lines(data: bytes) -> list[list[str]]:
    assert data.startswith(BOM) and not data[3:].startswith(BOM)
    text = data[3:].decode("utf-8")
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")       # RFC 4180 line ends
    return list(csv.reader(io.StringIO(text, newline="")))


# ------------------------------------------------------------------------- Canvas's importer


CANVAS_NON_ASSIGNMENT = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|"
                                   "Final Grade|Override Score|Override Grade|Override Status")


def canvas_reads(data: bytes):
    """(assignments: column → (title, canvas id), points possible, rows: (ID, SIS User ID,
    SIS Login ID, name) → grades), as GradebookImporter reads the file."""
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))   # CSV.foreach keeps the BOM:
    header = rows[0]                                                          # "\ufeffStudent" holds "Student"
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    student_columns = 5
    assert "Section" in header[student_columns - 1]
    columns = [c for c in header[student_columns:] if not CANVAS_NON_ASSIGNMENT.search(c)]
    assignments = {}
    for c in columns:
        m = re.fullmatch(r"(.*)\s\((\d+)\)", c)
        assignments[c] = (m.group(1), m.group(2)) if m else (c, None)
    points, students = {}, {}
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            points = {c: row[header.index(c)] for c in columns}
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", cell, re.I) for cell in row):
            continue
        students[tuple(row[:4])] = {c: row[header.index(c)].strip() for c in columns}
    return assignments, points, students


def test_canvas_csv_is_read_by_canvas_as_one_assignment_with_its_points(grades, key, roster, tmp_path):
    grades, free = grades
    ada, bo, cy, dee = ids(key)
    export = write_canvas_csv(grades, key, tmp_path / "canvas.csv", roster)
    data = (tmp_path / "canvas.csv").read_bytes()
    table = lines(data)
    column = "Homework 1: Attention, by hand and in code (attention-hw1)"
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column]
    assert table[1] == ["    Points Possible", "", "", "", "", "56"]         # as Canvas exports it
    assert len(table) == 2 + len(grades)
    assignments, points, students = canvas_reads(data)
    assert assignments == {column: (column, None)} and points == {column: "56"}
    by_sis = {sis: (canvas_id, login, name, g[column]) for (name, canvas_id, sis, login), g in students.items()}
    earned = next(s.total for s in grades if s.id == ada)
    assert by_sis == {
        ada: ("1001", "'-ada", "'" + EVIL_NAME, f"{earned:g}"),    # graded in full: the total
        bo: ("1002", "bo.orsted", "Bo Ørsted", ""),                 # hand-graded parts pending: no grade
        cy: ("1003", "cy", "Cy Nguyễn", ""),                        # a grader error: no grade
        dee: ("", "dee", "", ""),                                   # missing: blank, not 0
    }
    assert any(f"no grade for 2 students ({bo}, {cy})" in n and "--partial" in n for n in export.notes)
    assert any(f"no grade for 1 student ({dee}) (no submission)" in n for n in export.notes)
    assert any("Points Possible" in n and dee in n for n in export.notes)    # Dee's name would hide her row


def test_canvas_partial_and_missing_as_zero_are_the_instructors_choice(grades, key):
    grades, free = grades
    ada, bo, cy, dee = ids(key)
    export = canvas_export(grades, key, partial=True, missing_as_zero=True)
    _, _, students = canvas_reads(export.data())
    got = {sis: list(g.values())[0] for (_, _, sis, _), g in students.items()}
    totals = {s.id: s.total for s in grades}
    assert got == {ada: f"{totals[ada]:g}", bo: f"{totals[bo]:g}", cy: f"{totals[cy]:g}", dee: "0"}
    assert totals[bo] == pytest.approx((56 - free) / 2)                    # pending points are not in it
    assert not any("no grade" in n for n in export.notes)
    assert any("no LMS ids" in n for n in export.notes)                    # no roster: SIS User ID only


@pytest.mark.parametrize("title", ["Final project", "Midterm (finals week)", "Current Points check"])
def test_a_canvas_column_canvas_would_ignore_is_refused_with_a_way_out(grades, key, title):
    grades, _ = grades
    named = {**key, "assignment": {**key["assignment"], "title": title}}
    with pytest.raises(ExportError, match="--canvas-title") as err:
        canvas_export(grades, named)
    assert "canvas-lms#2134" in str(err.value) and title in str(err.value)
    export = canvas_export(grades, named, title="Attention homework")
    assert lines(export.data())[0][-1] == "Attention homework (attention-hw1)"
    assert lines(moodle_export(grades, named).data())[0][1] == f"{title} (attention-hw1)"   # Moodle minds not


def test_a_canvas_assignment_id_names_the_assignment_canvas_matches(grades, key):
    grades, _ = grades
    export = canvas_export(grades, key, canvas_assignment_id="4711")
    assignments, _, _ = canvas_reads(export.data())
    assert assignments == {"Homework 1: Attention, by hand and in code (4711)":
                           ("Homework 1: Attention, by hand and in code", "4711")}
    with pytest.raises(ExportError, match="numbers"):
        canvas_column(key, canvas_assignment_id="hw1")
    numbered = {**key, "assignment": {**key["assignment"], "id": "2024"}}
    with pytest.raises(ExportError, match="its own assignment 2024"):
        canvas_column(numbered)


# ------------------------------------------------------------------------- Moodle's importer


def moodle_reads(data: bytes, mapfrom: str, mapto: str, gradeitem: str, feedback: str, users: dict):
    """{user: (grade or None, feedback)} as gradeimport_csv_load_data imports the file with
    ``mapfrom`` → ``mapto``, the grade column mapped to an existing item, the feedback
    column to its comments; ``users`` is Moodle's user table ({field: {value: user}})."""
    text = data.decode("utf-8")
    text = text[1:] if text.startswith("\ufeff") else text          # core_text::trim_utf8_bom
    rows = [r for r in csv.reader(io.StringIO(text.replace("\r\n", "\n").strip(), newline=""))]
    header = [h.strip() for h in rows[0]]
    imported, student = {}, None
    field = {"useremail": "email", "useridnumber": "idnumber", "username": "username", "userid": "id"}[mapto]
    for row in rows[1:]:
        if len(row) <= 1:
            continue
        values = dict(zip(header, (v.strip() for v in row)))
        if values[mapfrom]:                                  # a blank keeps the previous student
            if values[mapfrom] not in users[field]:
                raise AssertionError(f"Moodle aborts the import: no user {values[mapfrom]!r}")
            student = users[field][values[mapfrom]]
        grade = values[gradeitem]
        imported[student] = (None if grade in ("", "-") else float(grade), values[feedback])
    return imported


def test_moodle_csv_is_imported_by_email_as_the_roster_spells_it(grades, key, roster, tmp_path):
    grades, free = grades
    ada, bo, cy, dee = ids(key)
    export = write_moodle_csv(grades, key, tmp_path / "moodle.csv", roster)
    data = (tmp_path / "moodle.csv").read_bytes()
    table = lines(data)
    column = "Homework 1: Attention, by hand and in code (attention-hw1)"
    assert table[0] == ["Email address", column, "Feedback"]
    # The roster's emails as written (Moodle compares them case-sensitively); Cy's roster row
    # has none, so the one the notebook was built with is used.
    assert [r[0] for r in table[1:]] == ["'+Ada.Lovelace@Example.edu", "bo@example.edu",
                                         "mai.nguyen@example.edu", "dee@example.edu"]
    assert not export.notes or not any("left out" in n for n in export.notes)
    users = {"email": {"'+Ada.Lovelace@Example.edu": ada, "bo@example.edu": bo, "mai.nguyen@example.edu": cy,
                       "dee@example.edu": dee}}
    got = moodle_reads(data, "Email address", "useremail", column, "Feedback", users)
    total = {s.id: s.total for s in grades}
    assert {u: g for u, (g, _) in got.items()} == {ada: total[ada], bo: None, cy: None, dee: None}
    assert [r[1] for r in table[2:]] == ["-", "-", "-"]       # Moodle's "no grade", as its export writes it
    feedback = {u: f for u, (_, f) in got.items()}
    assert feedback[ada].startswith(f"Homework 1: Attention, by hand and in code: {total[ada]:g} of 56 points.")
    assert f"{free:g} more are graded by hand later" in feedback[bo]
    assert feedback[dee] == "Homework 1: Attention, by hand and in code: no submission was received."
    assert not any("s2026002" in f or "issued" in f for f in feedback.values())   # no instructor note


def test_a_student_moodle_cannot_identify_is_left_out_not_given_to_the_row_above(grades, key, roster):
    grades, _ = grades
    ada, bo, cy, dee = ids(key)
    export = moodle_export(grades, key, roster, identify_by="userid", missing_as_zero=True)
    table = lines(export.data())
    assert table[0][0] == "User ID" and [r[0] for r in table[1:]] == ["1001", "1002", "1003"]
    assert any(f"left out 1 student ({dee}): no user id" in n for n in export.notes)
    users = {"id": {"1001": ada, "1002": bo, "1003": cy}}
    assert set(moodle_reads(export.data(), "User ID", "userid", table[0][1], "Feedback", users)) == {ada, bo, cy}


def test_moodle_by_id_number_lists_everyone_and_partial_gives_points_so_far(grades, key):
    grades, _ = grades
    ada, bo, cy, dee = ids(key)
    export = moodle_export(grades, key, identify_by="idnumber", partial=True)
    table = lines(export.data())
    assert table[0][0] == "ID number" and [r[0] for r in table[1:]] == [ada, bo, cy, dee]
    users = {"idnumber": {sid: sid for sid in ids(key)}}
    got = moodle_reads(export.data(), "ID number", "useridnumber", table[0][1], "Feedback", users)
    total = {s.id: s.total for s in grades}
    assert {u: g for u, (g, _) in got.items()} == {ada: total[ada], bo: total[bo], cy: total[cy], dee: None}
    assert "could not be graded yet" in got[cy][1]
    with pytest.raises(ExportError, match="email, idnumber"):
        moodle_export(grades, key, identify_by="name")


def test_moodle_warns_of_grades_above_its_limit(grades, key):
    grades, _ = grades
    big = {**key, "assignment": {**key["assignment"], "points": 560.0}}
    scaled = [replace(s, total=s.total * 10, max_score=560.0) for s in grades]
    export = moodle_export(scaled, big, identify_by="idnumber")
    assert any("more than 100 points" in n and "unlimitedgrades" in n for n in export.notes)


# ----------------------------------------------------------------------------- grades.csv


def test_grades_csv_keeps_its_columns_and_says_what_is_pending(grades, key, roster, tmp_path):
    grades, free = grades
    ada, bo, cy, dee = ids(key)
    write_grades_csv(grades, key, tmp_path / "grades.csv", roster)
    data = (tmp_path / "grades.csv").read_bytes()
    assert not data.startswith(BOM)
    table = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    pids = [p["id"] for p in head_problems(key)]
    assert list(table[0]) == ["student_id", "name", "email", "total", "max", *pids, "status", "pending_points",
                              "late_penalty", "late"]
    assert [r["student_id"] for r in table] == [ada, bo, cy, dee]
    by = {r["student_id"]: r for r in table}
    assert [by[s]["status"] for s in (ada, bo, cy, dee)] == ["graded", "incomplete", "error", "missing"]
    assert by[bo]["pending_points"] == f"{free:g}" and by[ada]["pending_points"] == "0"
    assert by[dee]["total"] == by[dee]["pending_points"] == "" and all(by[dee][p] == "" for p in pids)
    assert by[dee]["max"] == "56"
    assert by[ada]["name"] == "'" + EVIL_NAME and by[ada]["email"] == "'+Ada.Lovelace@Example.edu"
    zero = list(csv.DictReader(io.StringIO(grades_export(grades, key, missing_as_zero=True).text)))
    assert zero[3]["total"] == "0" and all(zero[3][p] == "0" for p in pids)


def test_every_text_cell_that_could_start_a_formula_is_escaped(grades, key):
    grades, _ = grades
    nasty = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"]
    roster = [SimpleNamespace(id=s.id, name=n, email=n + "@example.edu", lms_id="", lms_login=n)
              for s, n in zip(grades, nasty)]
    for export in (grades_export(grades, key, roster), canvas_export(grades, key, roster),
                   moodle_export(grades, key, roster, identify_by="username")):
        cells = [c for row in csv.reader(io.StringIO(export.text, newline="")) for c in row]
        for n in nasty[:len(grades)]:
            assert n not in cells and n + "@example.edu" not in cells
        assert not [c for c in cells if c.startswith(("=", "+", "@", "\t", "\r"))]
    assert safe_cell("Zoë") == "Zoë" and safe_cell("\ud800x") == "\ufffdx"


def test_the_exports_are_the_same_bytes_every_time(grades, key, roster):
    grades, _ = grades
    for make in (grades_export, canvas_export, moodle_export):
        assert make(grades, key, roster).data() == make(list(grades), key, roster).data()
    assert [r.id for r in export_rows(grades, key, roster)] == list(ids(key))


# ----------------------------------------------------------------------------- Gradescope


def test_a_class_pass_writing_gradescope_results_does_not_keep_a_cycle_a_student(grades, key, tmp_path):
    """json's indented encoder makes a cycle at each call; with the collector off for the
    class pass, a 10,000-student export kept some 25 MB of them to the end."""
    import gc
    from grader.run import garbage
    grades, _ = grades
    def left_after(students: int) -> int:
        with garbage.class_pass():
            gc.collect()
            before = len(gc.get_objects())
            write_gradescope(list(grades) * (students // len(grades)), key, tmp_path / "gs")
            return len(gc.get_objects()) - before
    few, many = left_after(40), left_after(400)
    assert many < few + 500, (few, many)                # one turn's worth, not one a student


def test_gradescope_results_have_visibility_everywhere_and_pending_parts(grades, key, tmp_path):
    grades, free = grades
    ada, bo, cy, dee = ids(key)
    paths = write_gradescope(grades, key, tmp_path / "gs", visibility="after_published")
    assert [p.parent.name for p in paths] == [ada, bo, cy, dee]
    results = {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in paths}
    for sid, r in results.items():
        assert r["visibility"] == "after_published" and r["stdout_visibility"] == "hidden"
        assert {t["visibility"] for t in r["tests"]} == {"after_published"}
        assert set(r) <= {"score", "execution_time", "output", "output_format", "visibility",
                          "stdout_visibility", "extra_data", "tests", "leaderboard"}
        for t in r["tests"]:
            assert set(t) <= {"score", "max_score", "status", "name", "name_format", "number",
                              "output", "output_format", "tags", "visibility", "extra_data"}
            assert t.get("status", "passed") in ("passed", "failed")
        assert r["score"] == pytest.approx(sum(t["score"] for t in r["tests"]))
    pending = [t for t in results[bo]["tests"] if "(pending)" in t["name"]]
    assert pending and all("status" not in t for t in pending)
    assert sum(t["max_score"] for t in pending) == free
    assert results[bo]["extra_data"] == {"status": "incomplete", "pending_points": free}
    assert f"{free:g} points are pending" in results[bo]["output"]
    assert results[dee]["extra_data"]["status"] == "missing" and "No submission" in results[dee]["output"]
    assert "issued to student" not in json.dumps(results)                  # instructor notes stay out
    with pytest.raises(ExportError, match="visibility"):
        gradescope_results(grades[0], key, visibility="students")


# ------------------------------------------------------------------------- the late policy


DUE = datetime(2026, 12, 5, 23, 59, tzinfo=timezone.utc)
LATE = Deadline(DUE, LatePolicy("penalty", 10, "day", 50, DUE + timedelta(days=2)))


@pytest.fixture(scope="module")
def late_grades(key, tmp_path_factory):
    """The class under a penalty of 10 % a started day with a cutoff two days after the due
    date: ada right everywhere but one part, a day and an hour late (−20 %); bo three days
    late (after the cutoff: not accepted); cy on time; dee never handed in."""
    ada, bo, cy, _ = key_students(key)
    right = lambda kind, part: ("failed", 0.0) if part == "weights" else ("passed", 1.0)  # noqa: E731
    with Gradebook(tmp_path_factory.mktemp("late") / "gb.sqlite") as gb:
        for sid, received in ((ada, DUE + timedelta(days=1, hours=1)), (bo, DUE + timedelta(days=3)),
                              (cy, DUE - timedelta(hours=2))):
            rows = record(gb, key, sid, right)
            (handin,) = gb.handins(assignment_id(key), sid)
            gb.record(replace(handin, received_at=received.isoformat(), received_from="test"), rows)
        return {s.id: s for s in class_grades(gb, key, LATE)}


def test_moodle_feedback_states_the_late_penalty_and_a_refused_handin(late_grades, key):
    ada, bo, cy, _ = key_students(key)
    late, refused = late_grades[ada], late_grades[bo]
    assert late.penalty > 0 and refused.status == "not accepted"          # (what the policy made of them)
    export = moodle_export(list(late_grades.values()), key, identify_by="idnumber")
    feedback = {r[0]: r[2] for r in lines(export.data())[1:]}
    # the parts listed add up to the total once the penalty, with its percent and how late, is off
    assert sum(late.problem_scores.values()) - late.penalty == pytest.approx(late.total)
    assert all(f" {score:g}/" in feedback[ada] for score in late.problem_scores.values())
    assert f"Late penalty: −{late.penalty:g} points (received 1 day 1 hour late: −20 %" in feedback[ada]
    assert f"{late.total:g} of 56 points after the late penalty" in feedback[ada]
    # a refused handin is said to be refused, not graded 0 part by part
    assert feedback[bo] == ("Homework 1: Attention, by hand and in code: 0 of 56 points. Not accepted: your "
                            "notebook was received 3 days late, after the cutoff, so it earns no points.")
    assert "late" not in feedback[cy].lower() and "accepted" not in feedback[cy]


def test_the_late_policy_is_told_in_the_same_words_by_moodle_gradescope_and_the_feedback_page(late_grades, key):
    from exercises.render.html import escape
    from grader.reports.feedback_page import feedback_page
    ada, bo, *_ = key_students(key)
    grades = list(late_grades.values())
    feedback = {r[0]: r[2] for r in lines(moodle_export(grades, key, identify_by="idnumber").data())[1:]}
    for sid in (ada, bo):
        said = late_line(late_grades[sid])
        assert said and said in feedback[sid]
        assert said in gradescope_results(late_grades[sid], key)["output"]
        assert escape(said) in feedback_page(late_grades[sid], key)
    # Gradescope's penalty row says it too, and a refused handin's parts say why they have no score
    penalty_row = next(t for t in gradescope_results(late_grades[ada], key)["tests"] if t["name"] == "Late penalty")
    assert penalty_row["output"] == late_line(late_grades[ada])
    assert penalty_row["score"] == -late_grades[ada].penalty
    assert {t["output"] for t in gradescope_results(late_grades[bo], key)["tests"]} == {"Not graded: not accepted."}
    # Canvas's import takes a grade and no comment: the grade is the one after the policy
    canvas = {r[2]: r[5] for r in lines(canvas_export(grades, key).data())[2:]}
    assert float(canvas[ada]) == pytest.approx(late_grades[ada].total) and canvas[bo] == "0"
