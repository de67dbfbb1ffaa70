"""Hand grades: saved with versions (conflicts shown, never overwritten), logged for good,
untouched by re-autograding, re-scored when a rubric changes, and counted by every report."""

from __future__ import annotations

import copy
import shutil
import sqlite3

import pytest

from formats.key_shape import assignment_id, entry_for, problem_record
from grader.store import marks
from grader.reports.exports import INCOMPLETE, export_status
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow
from grader.store.grades import MARKED, OVERRIDDEN, RECHECK, class_grades, class_look, with_answers
from grader.marking.queue import part_queue
from grader.reports.summary import summary_json
from grader.reports.feedback_page import feedback_page

FREE = ("motivation", "static")            # items same_vector (+1), context (+1), claims_different (−1)
FREE_PARTS = ("static", "bottleneck", "common_cause")


@pytest.fixture
def course(graded_class, tmp_path):
    """(key, open gradebook): a copy of the graded example class."""
    _, key, path, _ = graded_class(6)
    copy_path = tmp_path / "gradebook.sqlite"
    shutil.copy(path, copy_path)
    with Gradebook(copy_path) as gb:
        # a plain copy of the verified key (its entries are read lazily from the file)
        yield {**key, "students": {sid: copy.deepcopy(key["students"][sid]) for sid in key["students"]}}, gb


def answered(gb, key, problem="motivation", part="static"):
    """The queue's answers that have a written answer (status manual), in queue order."""
    q = part_queue(gb, key, problem, part)
    return [a for a in q.answers if a.result is not None and a.result.status == "manual"]


def target(a, version=None):
    return marks.Target(a.student, a.version if version is None else version, a.result)


def grade(gb, key, a, items=(), adjustment=0.0, comment="", part=FREE, grader="ta1", reason=""):
    return marks.save(gb, key, *part, [target(a)], marks.Edit(tuple(items), adjustment, comment, reason),
                      grader)[0]


def test_a_hand_grade_is_scored_by_its_rubric_and_logged(course):
    key, gb = course
    a = answered(gb, key)[0]
    m = grade(gb, key, a, ["same_vector", "context"], -0.5, "Good, but name the context words.")
    assert (m.kind, m.score, m.version, m.items) == (marks.HAND, 1.5, 1, {"same_vector": 1.0, "context": 1.0})
    m2 = marks.save(gb, key, *FREE, [marks.Target(a.student, 1, a.result)],
                    marks.Edit(("same_vector", "claims_different")), "ta2")[0]
    assert (m2.score, m2.version, m2.grader) == (0.0, 2, "ta2")        # 1 − 1, never below the floor
    log = marks.history(gb, assignment_id(key), a.student, *FREE)
    assert [(e.version, e.event, e.grader) for e in log] == [(1, "mark", "ta1"), (2, "mark", "ta2")]
    assert log[0].mark["comment"] == "Good, but name the context words."


def test_a_save_from_a_stale_version_is_a_conflict_and_changes_nothing(course):
    key, gb = course
    a = answered(gb, key)[0]
    first = grade(gb, key, a, ["same_vector"])
    with pytest.raises(marks.Conflict) as err:
        marks.save(gb, key, *FREE, [marks.Target(a.student, 0, a.result)], marks.Edit(("context",)), "ta2")
    assert err.value.current == first
    assert marks.mark_of(gb, assignment_id(key), a.student, *FREE) == first


def test_a_group_is_saved_whole_or_not_at_all(course):
    key, gb = course
    group = answered(gb, key)[:3]
    grade(gb, key, group[1], ["context"])                       # someone graded one member meanwhile
    with pytest.raises(marks.Conflict):
        marks.save(gb, key, *FREE, [target(a, 0) for a in group], marks.Edit(("same_vector",)), "ta1")
    assert set(marks.marks(gb, assignment_id(key))) == {(group[1].student, *FREE)}
    saved = marks.save(gb, key, *FREE, [target(a, v) for a, v in zip(group, (0, 1, 0))],
                       marks.Edit(("same_vector",)), "ta1")
    assert [m.score for m in saved] == [1.0, 1.0, 1.0]
    assert all("3 answers graded together" == e.note for e in marks.history(gb, assignment_id(key))[1:])


@pytest.mark.parametrize("edit, message", [
    (marks.Edit(("nope",)), "unknown rubric item 'nope' (the items: same_vector, context, claims_different)"),
    (marks.Edit(("context", "context")), "an item is applied twice"),
    (marks.Edit((), 2.5), "the adjustment 2.5 is outside ±2"),
    (marks.Edit((), float("nan")), "the adjustment nan is outside ±2"),
    (marks.Edit((), "lots"), "the adjustment must be a number, not 'lots'"),
    (marks.Edit((), 0, "x" * 10_001), "the comment is 10001 characters"),
    # a reason over the limit is refused as a comment is, never cut without a word
    (marks.Edit((), 0, "", "r" * 10_001), "the reason is 10001 characters (at most 10000)"),
])
def test_an_invalid_grade_is_refused_with_the_reason(course, edit, message):
    key, gb = course
    a = answered(gb, key)[0]
    with pytest.raises(marks.MarkError, match=message.replace("(", r"\(").replace(")", r"\)").replace("±", "±")):
        marks.save(gb, key, *FREE, [target(a)], edit, "ta1")
    assert marks.marks(gb, assignment_id(key)) == {}


def auto_part(gb, key):
    """An auto-graded part and an answer the kit scored below full points."""
    for pid, part in (("dog_ran_fast", "slide_scaled"), ("scaling", "var_raw")):
        for a in part_queue(gb, key, pid, part).answers:
            if a.result is not None and a.result.score < a.result.max_score and a.result.status != "missing":
                return (pid, part), a
    pytest.skip("no wrong auto-graded answer in the synthetic class")


def test_an_override_needs_a_reason_and_starts_from_the_auto_score(course):
    key, gb = course
    part, a = auto_part(gb, key)
    with pytest.raises(marks.MarkError, match="needs a reason"):
        grade(gb, key, a, adjustment=1.0, part=part)
    m = grade(gb, key, a, adjustment=1.0, part=part, reason="right method, a rounding slip")
    assert m.kind == marks.OVERRIDE and m.base == a.result.score
    assert m.score == min(a.result.score + 1.0, a.result.max_score)
    assert marks.history(gb, assignment_id(key), a.student)[-1].event == "override"
    (s,) = [s for s in class_grades(gb, key) if s.id == a.student]
    (p,) = [p for p in s.parts if (p.problem, p.part) == part]
    assert (p.status, p.score, p.recheck) == (OVERRIDDEN, m.score, "")


def regraded(gb, a, problem, part, **changes):
    """The student's counted handin recorded again (as a re-run of attnkit grade would)
    with one part's result changed."""
    sub = gb.submission(a.result.assignment, a.student)
    rows = gb.results(a.result.assignment, a.student, handin=sub.handin)
    rows = [ResultRow(**{**r.__dict__, **changes}) if (r.problem, r.part) == (problem, part) else r
            for r in rows]
    gb.record(sub, rows)


def test_regrading_never_touches_a_mark_and_flags_a_changed_auto_result(course):
    key, gb = course
    part, a = auto_part(gb, key)
    m = grade(gb, key, a, adjustment=0.5, part=part, reason="partial credit")
    free = answered(gb, key)[0]
    hand = grade(gb, key, free, ["same_vector"])
    regraded(gb, a, *part, message="a new kit's message")          # the auto result changed
    regraded(gb, free, *FREE, message="Graded by hand.")           # the same (hand-graded) result
    assert marks.mark_of(gb, assignment_id(key), a.student, *part) == m
    assert marks.mark_of(gb, assignment_id(key), free.student, *FREE) == hand
    grades = {s.id: s for s in class_grades(gb, key)}
    (p,) = [p for p in grades[a.student].parts if (p.problem, p.part) == part]
    assert p.score == m.score and "automatic result changed" in p.recheck
    assert (RECHECK, f"{part[0]}/{part[1]}: {p.recheck}") in grades[a.student].look
    assert any(code == RECHECK for sid, _, look in class_look(gb, key) if sid == a.student for code, _ in look)
    (h,) = [p for p in grades[free.student].parts if (p.problem, p.part) == FREE]
    assert (h.status, h.recheck) == (MARKED, "")


def test_a_changed_answer_flags_the_mark_for_another_look(course):
    key, gb = course
    a = answered(gb, key)[0]
    grade(gb, key, a, ["same_vector", "context"])
    regraded(gb, a, *FREE, answer="A different answer, handed in later.")
    (s,) = [s for s in class_grades(gb, key) if s.id == a.student]
    (p,) = [p for p in s.parts if (p.problem, p.part) == FREE]
    assert p.score == 2.0 and "answer changed" in p.recheck and p.waiting
    assert export_status(s) == INCOMPLETE


def rubric_record(key, student, part="static"):
    return problem_record(entry_for(key, student), "motivation")["rubric"][part]


def test_changing_an_items_points_rescores_every_mark_that_applied_it(course):
    key, gb = course
    first, second = answered(gb, key)[:2]
    grade(gb, key, first, ["same_vector", "context"])
    grade(gb, key, second, ["context"])
    assert marks.rescore(gb, key) == []                              # nothing changed yet
    for sid in key["students"]:
        items = rubric_record(key, sid)["items"]
        items[0]["points"] = 0.5                                     # same_vector: 1 → 0.5
        del items[1]                                                 # context removed
        items.append({"id": "extra", "points": 1.5, "text": "t", "note": ""})
        rubric_record(key, sid)["version"] = "ignored: computed"
    written = marks.rescore(gb, key, grader="instructor")
    assert sorted(e.student for e in written) == sorted([first.student, second.student])
    now = marks.mark_of(gb, assignment_id(key), first.student, *FREE)
    assert (now.items, now.score, now.version) == ({"same_vector": 0.5}, 0.5, 2)
    assert "rubric items removed: context" in now.flag
    (note,) = [e.note for e in written if e.student == first.student]
    assert "same_vector 1 → 0.5 pts" in note and "context no longer in the rubric" in note and "score 2 → 0.5" in note
    assert marks.history(gb, assignment_id(key), first.student)[-1].event == "rescore"
    assert marks.rescore(gb, key) == []                              # re-scored once, not at every run


def test_clearing_a_mark_makes_the_part_wait_again(course):
    key, gb = course
    a = answered(gb, key)[0]
    m = grade(gb, key, a, ["same_vector"])
    cleared = marks.clear(gb, key, *FREE, marks.Target(a.student, m.version, a.result), "ta1")
    assert not cleared.active and cleared.version == 2
    (s,) = [s for s in class_grades(gb, key) if s.id == a.student]
    (p,) = [p for p in s.parts if (p.problem, p.part) == FREE]
    assert p.mark is None and p.waiting
    again = marks.save(gb, key, *FREE, [marks.Target(a.student, 2, a.result)], marks.Edit(("context",)), "ta1")
    assert again[0].version == 3                                    # grading it again goes on from there


def test_the_log_is_append_only(course):
    key, gb = course
    grade(gb, key, answered(gb, key)[0], ["same_vector"])
    with sqlite3.connect(gb.path) as c:
        for statement in ("UPDATE mark_log SET grader = 'x'", "DELETE FROM mark_log"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                c.execute(statement)


def test_every_report_counts_hand_grades_and_a_student_is_complete_only_when_none_waits(course):
    key, gb = course
    sid = answered(gb, key)[0].student
    before = {s.id: s for s in class_grades(gb, key)}[sid]
    assert export_status(before) == INCOMPLETE
    for part in FREE_PARTS:
        (a,) = [a for a in part_queue(gb, key, "motivation", part).answers if a.student == sid]
        items = [i["id"] for i in rubric_record(key, sid, part)["items"] if i["points"] > 0]
        marks.save(gb, key, "motivation", part, [target(a)],
                   marks.Edit(tuple(items), 0, "<script>alert(1)</script> well done"), "ta1")
    after = {s.id: s for s in class_grades(gb, key)}[sid]
    assert after.total == before.total + 8 and after.waiting == 0
    assert export_status(after) == "graded"
    summary = {s["id"]: s for s in summary_json(gb, key)["students"]}[sid]
    assert summary["complete"] and summary["problems"]["motivation"] == 8
    assert {p["part"]: p["mark"]["kind"] for p in summary["parts"] if p["mark"]} == dict.fromkeys(FREE_PARTS, "hand")
    page = feedback_page(with_answers(gb, key, after), key)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; well done" in page and "<script>alert" not in page
    item = rubric_record(key, sid)["items"][0]
    assert "Word2Vec looks every word type" in item["text"] and "Word2Vec looks every word type" in page
    assert item["note"] and item["note"] not in page                 # graders' notes never reach a student


def test_a_schema_2_gradebook_gains_the_hand_grade_tables_and_keeps_every_grade(course, tmp_path):
    key, gb = course
    before = gb.results(assignment_id(key))
    path = tmp_path / "schema2.sqlite"
    shutil.copy(gb.path, path)
    with sqlite3.connect(path) as c:
        for statement in ("DROP TRIGGER mark_log_append_only_update", "DROP TRIGGER mark_log_append_only_delete",
                          "DROP TABLE mark_log", "DROP TABLE marks",
                          "UPDATE meta SET value = '2' WHERE key = 'schema_version'"):
            c.execute(statement)
    with Gradebook(path) as old:
        assert old.results(assignment_id(key)) == before
        assert marks.marks(old, assignment_id(key)) == {}
        grade(old, key, answered(old, key)[0], ["same_vector"])


def test_an_override_saved_again_after_a_regrade_starts_from_the_new_auto_score(course):
    key, gb = course
    part, a = auto_part(gb, key)
    grade(gb, key, a, adjustment=0.5, part=part, reason="partial credit")
    new_auto = 0.0 if a.result.score else min(1.0, a.result.max_score)
    regraded(gb, a, *part, score=new_auto, message="a fixed key")        # the auto result changed
    (now,) = [x for x in part_queue(gb, key, *part).answers if x.student == a.student]
    assert "automatic result changed" in now.look
    again = marks.save(gb, key, *part, [target(now)], marks.Edit((), 0.5, "", "partial credit, checked"), "ta1")[0]
    assert again.base == new_auto and again.score == min(new_auto + 0.5, a.result.max_score)
    (p,) = [p for p in {s.id: s for s in class_grades(gb, key)}[a.student].parts if (p.problem, p.part) == part]
    assert p.recheck == "" and p.score == again.score


def test_a_mark_is_judged_by_the_counted_handin_alone_whatever_the_others_hold(course):
    key, gb = course
    a = answered(gb, key)[0]
    grade(gb, key, a, ["same_vector"])
    sub = gb.submission(assignment_id(key), a.student)
    rows = gb.results(assignment_id(key), a.student, handin=sub.handin)
    older = sub.__class__(**{**sub.__dict__, "handin": "an-older-notebook", "content_hash": "older",
                             "received_at": "2000-01-01T00:00:00+00:00"})
    gb.record(older, [ResultRow(**{**r.__dict__, "answer": "an earlier answer"}) for r in rows])
    assert gb.submission(assignment_id(key), a.student).handin == sub.handin     # the mark's still counts
    assert marks.rechecks(gb, assignment_id(key), {a.student: sub.handin}) == {}
    assert (a.student, *FREE) in marks.rechecks(gb, assignment_id(key), {a.student: "an-older-notebook"})
    assert marks.rechecks(gb, assignment_id(key), {}) == {}
