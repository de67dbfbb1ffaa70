"""The grading sheet: hand grades exported to CSV and imported back, checked against the
grade as it was exported, so a sheet never reverts work done in the gradebook since."""

import csv
import io
import json
import shutil

import pytest

from grader.store.gradebook import Gradebook
from grader.marking import sheet as sheet_module
from grader.marking import sheet_format
from grader.marking.queue import part_queue
from grader.marking.sheet import SheetError, apply_import, export_sheet, plan_import
from grader.store.marks import HAND, OVERRIDE, Edit, Target, history, mark_of, marks, part_rubric, save

STUDENTS = 12
FREE = [("motivation", "static"), ("motivation", "bottleneck"), ("motivation", "common_cause")]


@pytest.fixture
def course(graded_class, tmp_path):
    """(key, a writable copy of the graded class's gradebook, the folder to write sheets in)."""
    _, key, gradebook, _ = graded_class(STUDENTS)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook, copy)
    gb = Gradebook(copy)
    yield key, gb, tmp_path
    gb.close()


def fresh(graded_class, tmp_path, name):
    """Another copy of the ungraded gradebook."""
    _, _, gradebook, _ = graded_class(STUDENTS)
    shutil.copy(gradebook, tmp_path / name)
    return Gradebook(tmp_path / name)


def read(path):
    """(header, rows as dicts) of a sheet."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def write(path, header, rows, newline="\r\n", bom=False, delimiter=","):
    out = io.StringIO()
    csv.writer(out, lineterminator=newline, delimiter=delimiter).writerows(
        [header, *([r.get(c, "") for c in header] for r in rows)])
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + out.getvalue().encode("utf-8"))


def row_of(rows, student, part="static"):
    return next(r for r in rows if r["submission"] == student and r["part"] == part)


def target(gb, key, student, problem="motivation", part="static"):
    answer = next(a for a in part_queue(gb, key, problem, part).answers if a.student == student)
    return Target(student, answer.version, answer.result)


def set_answer(gb, key, student, text, part="static"):
    """A student's stored answer, as a submission would have written it (test setup)."""
    with gb.transaction() as c:
        c.execute("UPDATE results SET answer = ? WHERE assignment = ? AND student = ? AND problem = ? "
                  "AND part = ?", (json.dumps(text), key["assignment"]["id"], student, "motivation", part))


def exported(course, parts=None):
    key, gb, tmp = course
    path = tmp / "sheet.csv"
    n = export_sheet(gb, key, path, parts)
    return path, n


# --- export ---------------------------------------------------------------------------------

def test_the_export_has_a_row_per_student_and_part_in_the_key_order(course):
    key, gb, _ = course
    path, n = exported(course)
    header, rows = read(path)
    assert n == len(rows) == STUDENTS * 3
    assert header[:7] == ["submission", "problem", "part", "version", "rubric_version", "answer_digest", "answer"]
    assert header[-5:] == ["adjustment", "comment", "reason", "score", "max_score"]
    assert {"static:same_vector", "static:context", "bottleneck:counts", "common_cause:root_cause"} <= set(header)
    assert [(r["part"], r["submission"]) for r in rows] == [
        (part, s) for _, part in FREE for s in sorted(r["submission"] for r in rows if r["part"] == part)]
    assert [r["part"] for r in rows[::STUDENTS]] == ["static", "bottleneck", "common_cause"]
    first = rows[0]
    assert first["version"] == "0" and first["score"] == "" and first["max_score"] == "2"
    assert first["rubric_version"] == part_rubric(key, first["submission"], "motivation", "static")[0].version
    assert first["bottleneck:counts"] == ""
    assert path.read_bytes()[:3] != b"\xef\xbb\xbf" and b"\r\n" in path.read_bytes()


def test_the_export_shows_a_grade_as_it_stands(course):
    key, gb, _ = course
    save(gb, key, "motivation", "static", [target(gb, key, "s2026002")],
         Edit(("same_vector", "claims_different"), 0.5, "Close.", ""), "ta1")
    _, rows = read(exported(course)[0])
    row = row_of(rows, "s2026002")
    assert row["static:same_vector"] == row["static:claims_different"] == "1"
    assert row["static:context"] == ""
    assert (row["version"], row["adjustment"], row["comment"], row["score"]) == ("1", "0.5", "Close.", "0.5")


def test_the_export_of_chosen_parts_follows_the_key_order(course):
    key, gb, tmp = course
    n = export_sheet(gb, key, tmp / "two.csv", [("motivation", "common_cause"), ("motivation", "static")])
    header, rows = read(tmp / "two.csv")
    assert n == 2 * STUDENTS and [r["part"] for r in rows[::STUDENTS]] == ["static", "common_cause"]
    assert not any(h.startswith("bottleneck:") for h in header)
    with pytest.raises(SheetError, match="no part motivation/nope"):
        export_sheet(gb, key, tmp / "bad.csv", [("motivation", "nope")])
    assert not (tmp / "bad.csv").exists()


# --- import ---------------------------------------------------------------------------------

def test_an_unedited_sheet_changes_nothing(course):
    key, gb, _ = course
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")],
         Edit(("context",), -0.25, "a comment, with \"quotes\"\nand a second line", ""), "ta1")
    path, n = exported(course)
    plan = plan_import(gb, key, path)
    assert (plan.changes, plan.refused, plan.errors, plan.unchanged) == ([], [], [], n)
    assert apply_import(gb, key, plan, "ta2") == []


def test_edited_cells_are_applied_and_visible_as_marks(course):
    key, gb, _ = course
    path, _ = exported(course)
    header, rows = read(path)
    row_of(rows, "s2026003").update({"static:same_vector": "1", "static:context": "x"})
    row_of(rows, "s2026004", "bottleneck").update({"bottleneck:counts": "1", "adjustment": "-0.5",
                                                   "comment": "Give the value of T·d."})
    row_of(rows, "s2026005", "common_cause").update({"adjustment": "0"})      # graded: 0 points
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == [] and plan.unchanged == len(rows) - 3
    described = sorted(c.describe() for c in plan.changes)
    assert described[0] == "s2026003 motivation/static: items none → same_vector, context; score (not graded) → 2"
    assert described[1] == ("s2026004 motivation/bottleneck: items none → counts; adjustment 0 → -0.5; "
                            "comment (none) → 'Give the value of T·d.'; score (not graded) → 0.5")
    assert described[2] == "s2026005 motivation/common_cause: score (not graded) → 0"
    saved = apply_import(gb, key, plan, "ta1")
    assert len(saved) == 3 and saved.conflicts == []
    aid = key["assignment"]["id"]
    m = mark_of(gb, aid, "s2026003", "motivation", "static")
    assert (m.items, m.score, m.kind, m.grader, m.version) == (
        {"same_vector": 1.0, "context": 1.0}, 2.0, HAND, "ta1", 1)
    m = mark_of(gb, aid, "s2026004", "motivation", "bottleneck")
    assert (m.items, m.adjustment, m.comment, m.score) == ({"counts": 1.0}, -0.5, "Give the value of T·d.", 0.5)
    assert mark_of(gb, aid, "s2026005", "motivation", "common_cause").score == 0.0
    assert [e.event for e in history(gb, aid, "s2026003", "motivation", "static")] == ["import"]
    again = plan_import(gb, key, path)              # the same sheet again: now versions moved, rows equal
    assert again.changes == [] and again.refused == [] and again.unchanged == len(rows)


@pytest.mark.parametrize("cell", ["1", "x", "X", "✓", "yes", "TRUE", "true", " 1 "])
def test_an_applied_item_is_written_as_people_write_it(course, cell):
    key, gb, _ = course
    path, _ = exported(course)
    header, rows = read(path)
    row_of(rows, "s2026001")["static:context"] = cell
    row_of(rows, "s2026002")["static:context"] = "0"
    row_of(rows, "s2026002")["static:same_vector"] = "no"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and [(c.student, c.after.items) for c in plan.changes] == [
        ("s2026001", frozenset({"context"}))]


def test_the_round_trip_gives_the_same_marks_in_another_gradebook(course, graded_class, tmp_path):
    key, gb, _ = course
    edits = {("s2026001", "static"): Edit(("same_vector", "context"), 0.0, "Both, well argued.", ""),
             ("s2026002", "static"): Edit(("claims_different",), 0.5, "=not a formula, a comment", ""),
             ("s2026007", "bottleneck"): Edit(("counts", "grows_with_length"), -0.25, "line one\nline two", ""),
             ("s2026012", "common_cause"): Edit(("root_cause", "attention", "self_attention"), 0.5, "", "")}
    for (student, part), edit in edits.items():
        save(gb, key, "motivation", part, [target(gb, key, student, part=part)], edit, "ta1")
    path, _ = exported(course)
    other = fresh(graded_class, tmp_path, "other.sqlite")
    try:
        plan = plan_import(other, key, path)
        assert plan.errors == [] and plan.refused == [] and len(plan.changes) == len(edits)
        apply_import(other, key, plan, "ta1")
        aid = key["assignment"]["id"]
        shape = lambda m: (m.items, m.adjustment, m.comment, m.score, m.kind, m.answer_digest)  # noqa: E731
        assert {k: shape(m) for k, m in marks(other, aid).items()} == {k: shape(m) for k, m in marks(gb, aid).items()}
        export_sheet(other, key, tmp_path / "again.csv")
        assert (tmp_path / "again.csv").read_bytes() == path.read_bytes()
    finally:
        other.close()


# --- both sides ---------------------------------------------------------------------------------

def test_a_row_changed_on_both_sides_is_refused_and_one_changed_only_in_the_gradebook_is_kept(course):
    key, gb, _ = course
    path, _ = exported(course)
    for student in ("s2026001", "s2026002"):
        save(gb, key, "motivation", "static", [target(gb, key, student)], Edit(("same_vector",)), "ta2")
    header, rows = read(path)
    row_of(rows, "s2026001")["static:context"] = "1"           # both sides changed
    row_of(rows, "s2026003")["static:context"] = "1"           # only the sheet
    write(path, header, rows)                                  # s2026002: only the gradebook
    plan = plan_import(gb, key, path)
    assert plan.errors == []
    assert [c.student for c in plan.changes] == ["s2026003"]
    assert len(plan.refused) == 1 and plan.refused[0].startswith(f"{path}:2: s2026001 motivation/static: changed on "
                                                                 "the sheet and in the gradebook")
    assert "version 0 → 1 by ta2" in plan.refused[0]
    apply_import(gb, key, plan, "ta1")
    aid = key["assignment"]["id"]
    assert mark_of(gb, aid, "s2026001", "motivation", "static").items == {"same_vector": 1.0}
    assert mark_of(gb, aid, "s2026002", "motivation", "static").items == {"same_vector": 1.0}   # not reverted
    assert mark_of(gb, aid, "s2026003", "motivation", "static").items == {"context": 1.0}


def test_a_sheet_exported_from_a_graded_part_is_compared_with_that_version(course):
    key, gb, _ = course
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")], Edit(("context",), 0, "v1", ""), "ta1")
    path, _ = exported(course)                                  # exported at version 1
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")], Edit(("context", "same_vector")), "ta2")
    plan = plan_import(gb, key, path)                           # the sheet still says version 1's grade
    assert plan.changes == [] and plan.refused == []
    header, rows = read(path)
    row_of(rows, "s2026001")["comment"] = "v1, edited"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.changes == [] and "version 1 → 2 by ta2" in plan.refused[0]


def test_the_same_edit_on_both_sides_is_not_a_conflict(course):
    key, gb, _ = course
    path, _ = exported(course)
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")], Edit(("context",)), "ta2")
    header, rows = read(path)
    row_of(rows, "s2026001").update({"static:context": "1", "adjustment": "0"})
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert (plan.changes, plan.refused, plan.unchanged) == ([], [], len(rows))


def test_a_grade_saved_between_the_plan_and_the_import_is_a_conflict_and_the_rest_is_saved(course):
    key, gb, _ = course
    path, _ = exported(course)
    header, rows = read(path)
    for student in ("s2026001", "s2026002"):
        row_of(rows, student)["static:context"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert len(plan.changes) == 2
    save(gb, key, "motivation", "static", [target(gb, key, "s2026002")], Edit(("same_vector",)), "ta2")
    saved = apply_import(gb, key, plan, "ta1")
    assert [m.student for m in saved] == ["s2026001"]
    assert len(saved.conflicts) == 1 and saved.conflicts[0].startswith(f"{path}:3: s2026002: motivation/static: "
                                                                       "saved by ta2")
    aid = key["assignment"]["id"]
    assert mark_of(gb, aid, "s2026002", "motivation", "static").items == {"same_vector": 1.0}
    assert [e.grader for e in history(gb, aid, "s2026002", "motivation", "static")] == ["ta2"]


def test_a_row_graded_against_an_answer_that_no_longer_counts_is_refused(course):
    key, gb, _ = course
    path, _ = exported(course)
    set_answer(gb, key, "s2026004", "A later, different answer.")
    header, rows = read(path)
    row_of(rows, "s2026004")["static:context"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.changes == [] and "the answer changed since the export" in plan.refused[0]


# --- what a sheet may not say -----------------------------------------------------------------

def edit_row(**cells):
    """Set cells of s2026003's static row."""
    def edit(header, rows):
        row_of(rows, "s2026003").update(cells)
        return header, rows
    return edit


def add_column(name, value=""):
    def edit(header, rows):
        for r in rows:
            r[name] = value
        return [*header, name], rows
    return edit


def drop_column(name):
    def edit(header, rows):
        return [h for h in header if h != name], rows
    return edit


def duplicate(header, rows):
    return header, [*rows, dict(rows[0])]


# line 4 is s2026003's static row (the header is line 1, rows sorted by student id)
@pytest.mark.parametrize("edit, expected", [
    (edit_row(submission="s9999999"), ":4: submission: 's9999999' is not a student of the assignment"),
    (edit_row(problem="motivaton"), ":4: problem: the key has no part 'motivaton'/'static'"),
    (edit_row(part="statik"), ":4: part: the key has no part 'motivation'/'statik'"),
    (drop_column("comment"), ":1: comment: a missing column"),
    (drop_column("static:context"), ":1: static:context: a missing column (an item of motivation/static)"),
    (add_column("notes"), ":1: notes: an extra column"),
    (edit_row(rubric_version="0123456789ab"), ":4: rubric_version: '0123456789ab': the rubric of motivation/static "
                                               "changed since the export"),
    (edit_row(**{"static:context": "maybe"}), ":4: static:context: 'maybe' is not an item mark"),
    (edit_row(**{"static:context": "2"}), ":4: static:context: '2' is not an item mark"),
    (edit_row(**{"bottleneck:counts": "1"}), ":4: bottleneck:counts: '1': motivation/static has no item 'counts'"),
    (edit_row(adjustment="a lot"), ":4: adjustment: 'a lot' is not a number"),
    (edit_row(adjustment="nan"), ":4: adjustment: 'nan' is not a number"),
    (edit_row(adjustment="2.5"), ":4: adjustment: 2.5 is outside ±2 (the part's range, 0 to 2)"),
    (edit_row(version="one"), ":4: version: 'one' is not a version"),
    (edit_row(score="2"), ":4: score: '2' is not read: a score comes from the items and the adjustment"),
    (edit_row(comment="x" * 10_001), ":4: comment: 10001 characters (at most 10000)"),
    (edit_row(reason="x" * 10_001), ":4: reason: 10001 characters (at most 10000)"),
    (duplicate, ":38: submission: s2026001 motivation/static is a duplicated row (first on line 2)"),
])
def test_each_problem_is_named_with_the_file_line_and_column(course, edit, expected):
    key, gb, _ = course
    path, _ = exported(course)
    write(path, *edit(*read(path)))
    plan = plan_import(gb, key, path)
    assert any(p.startswith(str(path) + expected) for p in plan.errors), plan.errors
    with pytest.raises(SheetError):
        apply_import(gb, key, plan, "ta1")
    assert marks(gb, key["assignment"]["id"]) == {}


def test_an_override_needs_a_reason(course):
    key, gb, tmp = course
    path = tmp / "auto.csv"
    export_sheet(gb, key, path, [("scaling", "variance")])
    header, rows = read(path)
    assert header == ["submission", "problem", "part", "version", "rubric_version", "answer_digest", "answer",
                      "adjustment", "comment", "reason", "score", "max_score"]
    row = row_of(rows, "s2026001", "variance")
    assert row["score"] != ""                                 # the automatic score, for reading
    row["adjustment"] = "-0.5"
    write(path, header, rows)
    assert plan_import(gb, key, path).errors == [
        f"{path}:2: reason: an override of an automatic score needs a reason"]
    row["reason"] = "rounded to one decimal as the prompt asked"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and len(plan.changes) == 1
    (mark,) = apply_import(gb, key, plan, "ta1")
    assert mark.kind == OVERRIDE and mark.score == max(float(row["score"]) - 0.5, 0.0)


def test_a_sheet_cannot_withdraw_a_grade(course):
    key, gb, _ = course
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")], Edit(("context",)), "ta1")
    path, _ = exported(course)
    header, rows = read(path)
    row_of(rows, "s2026001").update({"static:context": "", "adjustment": "", "score": ""})
    write(path, header, rows)
    (problem,) = plan_import(gb, key, path).errors
    assert problem.startswith(f"{path}:2: adjustment: s2026001 motivation/static is graded in the gradebook and "
                              "blank on the sheet")


def test_a_row_with_more_cells_than_the_header_and_a_comment_of_blanks(course):
    key, gb, _ = course
    path, _ = exported(course)
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    lines[1] += ",surplus"
    path.write_bytes("\r\n".join(lines).encode("utf-8"))
    plan = plan_import(gb, key, path)
    assert plan.errors == [f"{path}:2: (beyond the header): 23 cells, the header names 22 columns"]
    header, rows = read(exported(course)[0])
    row_of(rows, "s2026001")["comment"] = "  "
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert (plan.errors, plan.changes, plan.unchanged) == ([], [], len(rows))


def test_the_problems_listed_are_capped(course, monkeypatch):
    key, gb, _ = course
    monkeypatch.setattr(sheet_module, "ERROR_LIMIT", 3)
    path, _ = exported(course)
    header, rows = read(path)
    for r in rows:
        r["adjustment"] = "?"
    write(path, header, rows)
    problems = plan_import(gb, key, path).errors
    assert len(problems) == 4 and problems[-1] == f"{path}: … and {len(rows) - 3} more problems"


# --- files that are not sheets ---------------------------------------------------------------------

@pytest.mark.parametrize("data, expected", [
    (b"", "the file is empty"),
    (b"\r\n \r\n", "the file is empty"),
    ("submission,answer\ns1,caf\xe9\n".encode("latin-1"), ":2: not valid UTF-8"),
    (b"s2026001,motivation,static,0\n", ":1: no header"),
    (b"PK\x03\x04\x14\x00rest of a zip", "a spreadsheet workbook (.xlsx/.ods), not CSV"),
    (b"submission,answer\ns1,\x00\x01\x02\n", ":2: not a CSV file (it holds NUL bytes"),
    (b'submission,answer\ns1,"never closed\n', ": not a CSV file the kit can read"),
])
def test_a_file_that_is_not_a_sheet_is_named_in_a_clear_error(course, data, expected):
    key, gb, tmp = course
    path = tmp / "bad.csv"
    path.write_bytes(data)
    with pytest.raises(SheetError) as err:
        plan_import(gb, key, path)
    assert str(err.value).startswith(str(path)) and expected in str(err.value)


def test_a_missing_file_and_a_too_large_one_are_refused(course, monkeypatch):
    key, gb, tmp = course
    with pytest.raises(SheetError, match="no such file"):
        plan_import(gb, key, tmp / "nowhere.csv")
    path, _ = exported(course)
    monkeypatch.setattr(sheet_format, "MAX_BYTES", 100)
    with pytest.raises(SheetError, match="a sheet is at most"):
        plan_import(gb, key, path)
    monkeypatch.setattr(sheet_format, "MAX_BYTES", 2**30)
    monkeypatch.setattr(sheet_format, "MAX_ROWS", 5)
    with pytest.raises(SheetError, match=r":7: more than 5 rows"):
        plan_import(gb, key, path)


# --- hostile answers and spreadsheets ----------------------------------------------------------------

@pytest.mark.parametrize("answer", ["=HYPERLINK(\"http://x\",\"click\")", "+1+1", "-2+3+cmd|' /C calc'!A0",
                                    "@SUM(A1:A2)"])
def test_an_answer_that_looks_like_a_formula_is_written_as_text(course, answer):
    key, gb, _ = course
    set_answer(gb, key, "s2026003", answer)
    path, _ = exported(course)
    header, rows = read(path)
    row = row_of(rows, "s2026003")
    assert row["answer"] == "'" + answer
    row["static:context"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == [] and [c.student for c in plan.changes] == ["s2026003"]


def test_an_answer_with_commas_quotes_and_newlines_round_trips(course):
    key, gb, _ = course
    answer = 'First, "quoted", line;\nsecond line,\r\nthird\ttabbed, and a trailing comma,'
    set_answer(gb, key, "s2026005", answer)
    path, _ = exported(course)
    header, rows = read(path)
    row = row_of(rows, "s2026005")
    assert row["answer"] == answer and len(rows) == STUDENTS * 3
    row["static:same_vector"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and [c.student for c in plan.changes] == ["s2026005"]


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_a_sheet_resaved_by_a_spreadsheet_still_imports(course, delimiter):
    key, gb, _ = course
    save(gb, key, "motivation", "static", [target(gb, key, "s2026001")],
         Edit(("context",), 0.0, "two\nlines", ""), "ta1")
    path, _ = exported(course)
    header, rows = read(path)
    row_of(rows, "s2026001")["comment"] = "two\r\nlines"             # a spreadsheet's line ending in a cell
    row_of(rows, "s2026002").update({"static:same_vector": "TRUE", "adjustment": "-0,5" if delimiter != "," else
                                     "-0.5"})
    rows.append({h: "" for h in header})                            # a spreadsheet's trailing empty row
    write(path, header, rows, newline="\r\n", bom=True, delimiter=delimiter)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == []
    assert [(c.student, c.after.items, c.after.adjustment) for c in plan.changes] == [
        ("s2026002", frozenset({"same_vector"}), -0.5)]
    assert plan.unchanged == STUDENTS * 3 - 1


def test_an_override_changed_on_the_sheet_after_a_regrade_is_shown_with_the_score_it_gets(course):
    key, gb, tmp = course
    part = ("scaling", "variance")
    t = target(gb, key, "s2026001", *part)
    save(gb, key, *part, [t], Edit((), 0.5, "", "partial credit"), "ta1")
    auto = 0.0 if t.result.score else 0.25
    with gb.transaction() as c:                          # a regrade changes the automatic score
        c.execute("UPDATE results SET score = ?, message = 'a fixed key' WHERE assignment = ? AND student = ? "
                  "AND problem = ? AND part = ?", (auto, key["assignment"]["id"], "s2026001", *part))
    path = tmp / "auto.csv"
    export_sheet(gb, key, path, [part])
    header, rows = read(path)
    row = row_of(rows, "s2026001", "variance")
    row["adjustment"] = "0.1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and len(plan.changes) == 1
    (mark,) = apply_import(gb, key, plan, "ta1")
    assert plan.changes[0].after_score == mark.score == round(auto + 0.1, 6)   # the auto score now + 0.1
