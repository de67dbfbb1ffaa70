"""The marking queue: one part across the class, in a stable pseudo-random order, with
identical answers (or, for auto-graded parts, answers with the same diagnosis) grouped."""

from __future__ import annotations

import shutil

import pytest

from formats.key_shape import entry_for, problem_record
from grader.store import marks
from grader.store.gradebook import Gradebook
from grader.store.rows import ResultRow
from grader.marking.queue import HAND, OVERRIDE, detail, normalised, order_key, part_queue, parts_to_mark


@pytest.fixture
def course(graded_class, tmp_path):
    _, key, path, _ = graded_class(12)
    shutil.copy(path, tmp_path / "gradebook.sqlite")
    with Gradebook(tmp_path / "gradebook.sqlite") as gb:
        yield key, gb


def test_every_part_is_listed_free_response_first_with_its_progress(course):
    key, gb = course
    parts = parts_to_mark(gb, key)
    assert [(p.problem, p.part, p.kind) for p in parts[:3]] == [
        ("motivation", "static", HAND), ("motivation", "bottleneck", HAND), ("motivation", "common_cause", HAND)]
    assert all(p.kind == OVERRIDE for p in parts[3:]) and len(parts) > 10
    static = parts[0]
    blank = [a for a in part_queue(gb, key, "motivation", "static").answers if a.result and a.result.status == "missing"]
    assert static.answers == 12 and static.graded == len(blank)    # a blank answer is scored 0, not waiting
    a = next(a for a in part_queue(gb, key, "motivation", "static").answers if not a.done)
    marks.save(gb, key, "motivation", "static", [marks.Target(a.student, 0, a.result)],
               marks.Edit(("same_vector",)), "ta")
    assert parts_to_mark(gb, key)[0].graded == static.graded + 1


def test_the_order_is_stable_pseudo_random_and_differs_per_part(course):
    key, gb = course
    first = [a.student for a in part_queue(gb, key, "motivation", "static").answers]
    assert first == [a.student for a in part_queue(gb, key, "motivation", "static").answers]
    assert first != sorted(first)
    assert first != [a.student for a in part_queue(gb, key, "motivation", "bottleneck").answers]
    assert [a.position for a in part_queue(gb, key, "motivation", "static").answers] == list(range(1, 13))
    assert first == sorted(first, key=lambda s: order_key("attention-hw1", "motivation", "static", s))


def test_identical_normalised_answers_form_one_group(course):
    key, gb = course
    q = part_queue(gb, key, "motivation", "static")
    for group in q.groups:
        texts = {normalised(a.text) for a in q.answers if a.student in group.members}
        assert len(group.members) >= 2 and (len(texts) == 1 or group.key == "blank")
    assert q.groups and q.groups[0].label.endswith("identical answers")
    grouped = {s for g in q.groups for s in g.members}
    singles = [a for a in q.answers if a.student not in grouped]
    assert len({a.group for a in singles}) == len(singles)


def test_normalising_ignores_spacing_and_a_final_full_stop_only():
    assert normalised("  The same   vector,\n for both. ") == normalised("The same vector, for both")
    assert normalised("e\u0301t\u00e9") == normalised("\u00e9te\u0301")          # NFC: one spelling of é
    assert normalised("the same vector") != normalised("a different vector")


@pytest.mark.parametrize("one, other", [
    ("2*3", "23"), ("x_1 + x_2", "x1 + x2"), ("`a` * b", "a b"), ("**not** linear", "not linear"),
    ("Q K^T", "q k^t"), ("d_k", "D_k"), ("x²", "x2"), ("n!", "n"), ("½", "1⁄2")])
def test_normalising_never_folds_a_difference_that_can_change_the_answer(one, other):
    # a group's grade goes to every member: two answers that may say different things
    # must never share a group, or a student gets a grade for an answer nobody read
    assert normalised(one) != normalised(other)


def test_answers_too_large_to_keep_are_never_grouped_as_identical(course, tmp_path):
    key, gb = course
    sub = next(s for s in gb.submissions("attention-hw1")
               if any(r.status == "manual" for r in gb.results("attention-hw1", s.student, handin=s.handin)
                      if (r.problem, r.part) == ("motivation", "static")))
    others = [s for s in gb.submissions("attention-hw1") if s.student != sub.student][:1]
    for s in [sub, *others]:
        rows = gb.results("attention-hw1", s.student, handin=s.handin)
        # two different answers of the same (too large) size: the gradebook keeps the same marker for both
        big = ("a" if s is sub else "b") * (70 * 1024)
        gb.record(s, [ResultRow(**{**r.__dict__, "answer": big, "status": "manual", "score": 0.0})
                      if (r.problem, r.part) == ("motivation", "static") else r for r in rows])
    q = part_queue(gb, key, "motivation", "static")
    texts = {a.student: a.text for a in q.answers}
    assert texts[sub.student] == texts[others[0].student]                # the same marker text
    assert not any({sub.student, others[0].student} <= set(g.members) for g in q.groups)


def test_auto_graded_parts_are_grouped_by_the_diagnosis(course):
    key, gb = course
    q = part_queue(gb, key, "dog_ran_fast", "slide_scaled")
    assert q.kind == OVERRIDE
    by_key = {g.key: g for g in q.groups}
    for g in q.groups:
        results = [a.result for a in q.answers if a.student in g.members]
        if g.key.startswith("misconception:"):
            assert {r.misconception for r in results} == {g.key.split(":", 1)[1]}
            assert "diagnosed" in g.label
        else:
            assert {r.status for r in results if r} <= {g.key.split(":", 1)[1]}
    assert "status:passed" in by_key


def test_the_detail_is_the_students_own_prompt_givens_and_rubric(course):
    key, gb = course
    a, b = part_queue(gb, key, "motivation", "static").answers[:2]
    da = detail(gb, key, "motivation", "static", a.student)
    assert da.kind == "free_response" and da.givens == {} and da.history == ()
    assert da.part_prompt.startswith("What vector does Word2Vec give")
    assert [i.id for i in da.rubric.items] == ["same_vector", "context", "claims_different"]
    assert "{{" not in da.rubric.items[0].text and da.rubric.items[0].note
    # a numeric part: this student's own matrices, as NumPy literals
    dn, dm = (detail(gb, key, "dog_ran_fast", "slide_scaled", x.student) for x in (a, b))
    assert dn.kind == "numeric" and {"W_Q", "W_K", "W_V", "X"} <= set(dn.givens)
    assert dn.givens["X"].startswith("np.array(") and dn.givens["X"] != dm.givens["X"]
    assert dn.rubric.items == () and dn.rubric.ceiling == 1.0      # no rubric: the part's range


def test_an_auto_graded_parts_progress_counts_the_overrides_in_the_queue_and_the_list_alike(course):
    key, gb = course
    q = part_queue(gb, key, "dog_ran_fast", "slide_scaled")
    a = q.answers[0]
    marks.save(gb, key, "dog_ran_fast", "slide_scaled", [marks.Target(a.student, 0, a.result)],
               marks.Edit((), 0.0, "", "checked by hand"), "ta")
    q = part_queue(gb, key, "dog_ran_fast", "slide_scaled")
    (summary,) = [s for s in parts_to_mark(gb, key) if (s.problem, s.part) == ("dog_ran_fast", "slide_scaled")]
    assert summary.kind == OVERRIDE and summary.graded == q.graded == 1
