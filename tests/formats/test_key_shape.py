"""The key's shape, read through formats/key_shape.py on a real key."""

import pytest

from formats import key_shape as shape
from formats.key_shape import CLASS_STUDENT

SECRET = "key-shape test secret: long enough"


@pytest.fixture(scope="module")
def key(example_build):
    return example_build(3, SECRET)[1]


def test_the_head_lists_the_problems_and_parts_every_entry_grades(key):
    head = shape.head_parts(key)
    assert [pid for pid, _ in head] == shape.problem_order(key)
    assert sum(points for _, parts in head for _, points in parts) == shape.total_points(key)
    for student in shape.key_students(key):
        records = dict(shape.problem_records(shape.entry_for(key, student)))
        assert [(pid, shape.graded_parts(records[pid])) for pid in shape.problem_order(key)] == head


def test_answer_names_cover_the_graded_parts_of_numeric_and_choice_problems(key):
    entry = shape.entry_for(key, shape.key_students(key)[0])
    for pid, record in shape.problem_records(entry):
        names = shape.answer_names(record)
        if shape.kind(record) in ("numeric", "choice"):
            assert set(names) == {part for part, _ in shape.graded_parts(record)}, pid
        else:
            assert names == {}, pid


def test_a_class_key_grades_everyone_with_its_one_entry(key):
    entry = shape.entry_for(key, shape.key_students(key)[0])
    class_key = {**key, "students": {CLASS_STUDENT: entry}}
    assert shape.is_class_key(class_key) and not shape.is_class_key(key)
    assert shape.entry_for(class_key, "anyone") is entry
    assert shape.grading_student(class_key, "anyone") == CLASS_STUDENT
    assert shape.entry_for(key, "anyone") is None and shape.entry_for(None, "x") is None
    assert shape.problem_record(entry, "no such problem", {}) == {}
    with pytest.raises(KeyError):
        shape.problem_record(entry, "no such problem")
