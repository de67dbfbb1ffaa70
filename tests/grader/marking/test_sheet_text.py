"""The grading sheet's text cells: every answer, comment and reason a person can write goes
out to the CSV visibly (no control or format character raw, no formula a spreadsheet runs)
and comes back exactly, so an unedited sheet changes nothing and an edited one is never
refused for what a student or a TA wrote."""

import csv
import io
import json
import shutil
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.store.gradebook import Gradebook
from grader.marking.queue import part_queue, part_record
from grader.marking.sheet import SheetError, apply_import, export_sheet, plan_import
from grader.store.marks import Edit, Target, history, mark_of, save
from grader.reports.feedback_page import decoded_answer

STUDENTS = 12
STATIC = ("motivation", "static")
AUTO = ("scaling", "variance")
LAYOUT = "\t\n\r"            # written as they are: a cell's own tabs and line breaks

# What reviews and a trial term put in answers, comments and reasons.
NASTY = [
    "'+' joins strings here", "'=1+1", "''", "'", "''=x", "=SUM(A1:A2)", "+1 for effort", "-0.5 taken off",
    "@handle", "\tindented", "\rreturn", "\r\nwindows", "'tis fine", "a\x00b", "\x00", "\x00=1+1",
    "esc \x1b[31mred\x1b[0m", "bell\x07", "del\x7f", "c1\x85\x9b", "\u202eevil\u202c", "\u2066iso\u2069",
    "\u202a\u202b\u202d", "zero\u200bwidth", "\ufeffbom", "line\u2028sep\u2029para",
    'say "hi", then; go',
    "two\nlines", "trailing spaces   ", "   ", "⟨U+0000⟩ typed", "⟨U+27E8⟩", "⟨q, k⟩ inner product",
    "⟨U+",
    "⟨⟨U+0041⟩", "\\x00 not a nul", "\\sqrt{d_k}", "emoji 👩\u200d💻", "é e\u0301", "x" * 9_000,
]


@pytest.fixture
def course(graded_class, tmp_path):
    _, key, gradebook, _ = graded_class(STUDENTS)
    shutil.copy(gradebook, tmp_path / "gradebook.sqlite")
    with Gradebook(tmp_path / "gradebook.sqlite") as gb:
        yield key, gb, tmp_path


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


def write(path, header, rows):
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows([header, *([r.get(c, "") for c in header] for r in rows)])
    path.write_bytes(out.getvalue().encode("utf-8"))


def answers(gb, key, part=STATIC):
    return {a.student: a for a in part_queue(gb, key, *part).answers}


def set_answer(gb, key, student, value, part=STATIC):
    with gb.transaction() as c:
        c.execute("UPDATE results SET answer = ? WHERE assignment = ? AND student = ? AND problem = ? AND part = ?",
                  (json.dumps(value), key["assignment"]["id"], student, *part))


def grade_all(gb, key, texts, part=STATIC, field="comment"):
    """Every student's ``part`` graded with one of ``texts`` as its comment (or reason)."""
    for (student, a), text in zip(sorted(answers(gb, key, part).items()), texts):
        edit = Edit(("context",), 0.0, text, "") if field == "comment" else Edit((), 0.25, "", text)
        save(gb, key, *part, [Target(student, a.version, a.result)], edit, "ta1")


def raw_hidden(path) -> list[str]:
    """The control and format characters the file holds raw (beside tabs and line breaks)."""
    text = path.read_bytes().decode("utf-8")
    return sorted({f"U+{ord(c):04X}" for c in text if c not in LAYOUT and not c.isprintable()
                   and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


def round_trip(gb, key, tmp, part=STATIC):
    """The plan of an unedited export of ``part``, with the log's length before and after."""
    path = tmp / "sheet.csv"
    n = export_sheet(gb, key, path, [part])
    before = len(history(gb, key["assignment"]["id"]))
    plan = plan_import(gb, key, path)
    saved = apply_import(gb, key, plan, "ta2")
    return path, n, plan, saved, before, len(history(gb, key["assignment"]["id"]))


def assert_nothing_changes(gb, key, tmp, part=STATIC):
    path, n, plan, saved, before, after = round_trip(gb, key, tmp, part)
    assert (plan.errors, plan.refused, plan.changes, plan.unchanged) == ([], [], [], n)
    assert list(saved) == [] and after == before          # no new version, nothing logged as an import
    assert raw_hidden(path) == []
    return path


# --- findings: a NUL in an answer, the lossy formula guard ------------------------------------

def test_an_answer_with_a_nul_byte_exports_visibly_and_the_sheet_imports(course):
    key, gb, tmp = course
    set_answer(gb, key, "s2026003", "before\x00after \u202eevil\u202c")
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path, [STATIC])
    assert b"\x00" not in path.read_bytes() and raw_hidden(path) == []
    header, rows = read(path)
    row = next(r for r in rows if r["submission"] == "s2026003")
    assert row["answer"] == "before⟨U+0000⟩after ⟨U+202E⟩evil⟨U+202C⟩"
    row["static:context"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == [] and [c.student for c in plan.changes] == ["s2026003"]


def test_a_comment_starting_with_an_apostrophe_survives_an_unedited_round_trip(course):
    key, gb, tmp = course
    grade_all(gb, key, ["'+' joins strings here"] * STUDENTS)
    assert_nothing_changes(gb, key, tmp)
    assert mark_of(gb, key["assignment"]["id"], "s2026001", *STATIC).comment == "'+' joins strings here"


def test_an_answer_starting_with_an_apostrophe_and_a_formula_is_not_refused(course):
    key, gb, tmp = course
    set_answer(gb, key, "s2026004", "'=1+1")
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path, [STATIC])
    header, rows = read(path)
    row = next(r for r in rows if r["submission"] == "s2026004")
    row["static:same_vector"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == [] and [c.student for c in plan.changes] == ["s2026004"]


# --- every string, both ways --------------------------------------------------------------------

def chunks(texts, size=STUDENTS):
    return [texts[i:i + size] + [""] * (size - len(texts[i:i + size])) for i in range(0, len(texts), size)]


@pytest.mark.parametrize("field, part", [("comment", STATIC), ("reason", AUTO)])
def test_every_nasty_comment_and_reason_survives_an_unedited_round_trip(course, field, part):
    key, gb, tmp = course
    for texts in chunks(NASTY):
        grade_all(gb, key, [t if t.strip() or field == "comment" else "r" for t in texts], part, field)
        assert_nothing_changes(gb, key, tmp, part)


def test_every_nasty_answer_is_shown_visibly_read_back_exactly_and_graded(course):
    from grader.marking.sheet_format import text_of

    key, gb, tmp = course
    for n, texts in enumerate(chunks(NASTY), 1):
        for student, text in zip(sorted(answers(gb, key)), texts):
            set_answer(gb, key, student, text)
        path = assert_nothing_changes(gb, key, tmp)
        header, rows = read(path)
        assert [text_of(r["answer"]) for r in rows] == texts
        for r in rows:
            r["adjustment"] = str(0.25 * n)                  # a change on every row
        write(path, header, rows)
        plan = plan_import(gb, key, path)
        assert plan.errors == [] and plan.refused == [] and len(plan.changes) == STUDENTS
        apply_import(gb, key, plan, "ta1")


text = st.text(st.characters(blacklist_categories=()), max_size=60)      # every code point, surrogates too
prefixed = st.tuples(st.sampled_from(["", "'", "''", "=", "+", "-", "@", "\t", "\r", "⟨U+", "\x00", "\u202e"]),
                     text).map("".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(prefixed, min_size=STUDENTS, max_size=STUDENTS))
def test_any_comment_survives_an_unedited_round_trip(course, texts):
    key, gb, tmp = course
    grade_all(gb, key, texts)
    assert_nothing_changes(gb, key, tmp)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(prefixed.filter(str.strip), min_size=STUDENTS, max_size=STUDENTS))
def test_any_reason_survives_an_unedited_round_trip(course, texts):
    key, gb, tmp = course
    grade_all(gb, key, texts, AUTO, "reason")
    assert_nothing_changes(gb, key, tmp, AUTO)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(prefixed, min_size=STUDENTS, max_size=STUDENTS))
def test_any_answer_is_read_back_exactly_and_never_refused(course, texts):
    from grader.marking.sheet_format import text_of

    key, gb, tmp = course
    for student, value in zip(sorted(answers(gb, key)), texts):
        set_answer(gb, key, student, value)
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path, [STATIC])
    assert raw_hidden(path) == []
    header, rows = read(path)
    assert [text_of(r["answer"]) for r in rows] == texts
    for r in rows:
        r["adjustment"] = "0.5" if r["adjustment"] != "0.5" else "0.25"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and plan.refused == [] and len(plan.changes) == STUDENTS


def test_a_cell_a_ta_typed_raw_is_read_as_typed(course):
    key, gb, tmp = course
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path, [STATIC])
    header, rows = read(path)
    typed = {"s2026001": "'tis fine", "s2026002": "⟨q, k⟩ is large", "s2026003": "pasted\u202ertl"}
    for r in rows:
        if r["submission"] in typed:
            r.update({"comment": typed[r["submission"]], "adjustment": "0"})
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.errors == [] and {c.student: c.after.comment for c in plan.changes} == typed


# --- what the sheet shows ------------------------------------------------------------------------

def test_an_override_sheet_shows_the_answer_as_the_student_wrote_it_not_its_json(course):
    key, gb, tmp = course
    part = ("dog_ran_fast", "slide_scaled")
    path = tmp / "auto.csv"
    export_sheet(gb, key, path, [part])
    _, rows = read(path)
    stored = answers(gb, key, part)["s2026001"].result.answer
    row = next(r for r in rows if r["submission"] == "s2026001")
    assert '"dtype"' not in row["answer"] and '"array"' not in row["answer"]
    assert row["answer"] == "[" + ", ".join(map(repr, decoded_answer(stored).tolist())) + "]"
    export_sheet(gb, key, path, [AUTO])
    _, rows = read(path)
    number = answers(gb, key, AUTO)["s2026001"].result.answer
    assert next(r for r in rows if r["submission"] == "s2026001")["answer"] == repr(decoded_answer(number))


def test_the_export_writes_a_legend_of_every_column_with_the_items_points_and_texts(course):
    key, gb, tmp = course
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path)
    legend = tmp / "sheet-rubric.csv"
    header, rows = read(path)
    lheader, lrows = read(legend)
    assert lheader == ["column", "problem", "part", "points", "text", "note"]
    assert [r["column"] for r in lrows] == header             # every column of the sheet, in its order
    item = next(r for r in lrows if r["column"] == "static:same_vector")
    items = part_record(key, *STATIC)["rubric"]["static"]["items"]
    record = next(i for i in items if i["id"] == "same_vector")
    assert (item["problem"], item["part"], item["points"]) == ("motivation", "static", f"{record['points']:g}")
    assert item["text"] == record["text"].strip() and item["note"] == record["note"].strip()
    assert "0 points" in next(r for r in lrows if r["column"] == "adjustment")["text"]
    assert plan_import(gb, key, path).errors == []          # the sheet imports with its legend beside it
    with pytest.raises(SheetError, match="the rubric legend"):
        plan_import(gb, key, legend)


def test_a_refusal_says_when_the_answer_changed_since_the_export(course):
    key, gb, tmp = course
    path = tmp / "sheet.csv"
    export_sheet(gb, key, path, [STATIC])
    set_answer(gb, key, "s2026004", "A later, different answer.")
    header, rows = read(path)
    next(r for r in rows if r["submission"] == "s2026004")["static:context"] = "1"
    write(path, header, rows)
    plan = plan_import(gb, key, path)
    assert plan.changes == [] and "the answer changed since the export" in plan.refused[0]
    assert plan.refused_why == {"the answer changed since the export": 1}
