"""Answer forensics (grader/forensics/flags.py, attnkit forensics): a value that is another
student's expected answer is flagged with its partner; honest students, misconceptions
included, are not; small values many variants share never flag on their own."""

import json
import os
import subprocess
import sys

from formats.compare import telling
from formats.key_shape import gradings, key_students, problem_records
from formats.serialize import decode_names, to_jsonable
from grader.forensics.flags import forensics
from grader.forensics.copied_numbers import other_variant_flags
from grader.forensics.flag_kinds import OTHER_VARIANT
from grader.store.gradebook import Gradebook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _numeric_parts(key, student):
    for pid, record in problem_records(key["students"][student]):
        if record.get("kind") == "numeric":
            for g in gradings(record):
                yield pid, g["id"], decode_names(record["answers"])[g["id"]]


def test_copied_numbers_are_flagged_with_their_partner_and_honest_classes_are_not(graded_class):
    build, key, gradebook_path, secret = graded_class(12)
    with Gradebook(gradebook_path) as gradebook:
        honest = forensics(gradebook, key)
    assert honest["flags"] == [] and honest["students"] == 12
    students = key_students(key)
    copier, source = students[0], students[1]
    theirs = {(pid, part): value for pid, part, value in _numeric_parts(key, source)}
    mine = {(pid, part): value for pid, part, value in _numeric_parts(key, copier)}
    planted = {(copier, pid, part): to_jsonable(value) for (pid, part), value in theirs.items()
               if (pid, part) in mine}
    flags = other_variant_flags(key, planted)
    flagged = {(f.problem, f.part) for f in flags}
    assert all(f.student == copier and f.kind == OTHER_VARIANT and f.partners == (source,) for f in flags)
    # every copied value that differs from the copier's own answer and is an array of real
    # numbers (a shared small number is no evidence) is flagged
    telling_copies = {(pid, part) for (pid, part), v in theirs.items() if (pid, part) in mine
                      and getattr(v, "size", 1) >= 4 and getattr(v, "dtype", None) is not None
                      and v.dtype.kind == "f" and (v.shape != mine[(pid, part)].shape
                                                   or abs(v - mine[(pid, part)]).max() > 0.1)}
    assert telling_copies and telling_copies <= flagged
    assert all(0 < f.p_coincidence <= 1 for f in flags)


def test_a_value_many_variants_share_never_flags_on_its_own(graded_class):
    build, key, gradebook_path, secret = graded_class(12)
    students = key_students(key)
    # the same small whole number given by everyone for a part whose answer it is for some
    answers = {}
    for pid, part, value in _numeric_parts(key, students[0]):
        if getattr(value, "size", 1) == 1:
            for s in students[1:]:
                answers[(s, pid, part)] = to_jsonable(value)
            break
    flags = other_variant_flags(key, answers)
    shared = [f for f in flags if f.p_coincidence > 0.1]
    assert shared == []


def test_the_command_prints_json_for_instructors(graded_class):
    build, key, gradebook_path, secret = graded_class(12)
    env = {**os.environ, "ATTNKIT_SECRET": secret}
    out = subprocess.run([sys.executable, "-m", "attnkit", "forensics",
                          os.path.join(ROOT, "problem_bank", "assignments", "example.yaml"),
                          "--build", str(build), "--json"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["flags"] == [] and data["threshold"] == 0.1


def _a_telling_part(key, student):
    for pid, part, value in _numeric_parts(key, student):
        if getattr(value, "size", 1) >= 4 and value.dtype.kind == "f":
            return pid, part, value
    raise AssertionError("no array part")


def test_a_copied_wrong_answer_is_flagged_with_the_classmate_whose_mistake_it_is(graded_class):
    import numpy as np
    from formats.serialize import from_jsonable
    build, key, gradebook_path, secret = graded_class(12)
    students = key_students(key)
    copier, source = students[2], students[3]
    record = dict(problem_records(key["students"][source]))
    own = dict(problem_records(key["students"][copier]))

    def theirs_only(pid, part, v):
        """a value of the source's mistakes that is neither the copier's answer nor mistake"""
        mine = [decode_names(own[pid]["answers"])[part]]
        mine += [t[part] for t in map(from_jsonable, own[pid].get("twins", {}).values())
                 if isinstance(t, dict) and part in t]
        return all(np.shape(m) != np.shape(v) or np.abs(np.asarray(m, float) - v).max() > 0.1 for m in mine)
    found = None
    for pid, rec in record.items():
        for name, stored in rec.get("twins", {}).items():
            by_part = from_jsonable(stored)
            if isinstance(by_part, dict):
                for part, v in by_part.items():
                    v = np.asarray(v)
                    if telling(v) and np.isfinite(v).all() and theirs_only(pid, part, v):
                        found = pid, part, v
    assert found
    pid, part, value = found
    flags = other_variant_flags(key, {(copier, pid, part): to_jsonable(value)})
    assert [(f.student, f.partners[0], f.kind) for f in flags] == [(copier, source, OTHER_VARIANT)], (pid, part, value)
    assert "gives" in flags[0].evidence


def test_two_students_with_the_same_wrong_numbers_are_flagged_as_a_pair(graded_class):
    import numpy as np
    from grader.forensics.copied_numbers import shared_wrong_flags
    from grader.forensics.flag_kinds import SHARED_WRONG
    build, key, gradebook_path, secret = graded_class(12)
    students = key_students(key)
    pid, part, value = _a_telling_part(key, students[4])
    same = to_jsonable(np.asarray(value) * 0 + 0.123)               # nobody's answer, nobody's mistake
    other = to_jsonable(np.asarray(value) * 0 + 0.456)
    answers = {(students[4], pid, part): same, (students[5], pid, part): same,
               (students[6], pid, part): other}
    flags = shared_wrong_flags(key, answers)
    assert {(f.student, f.partners, f.kind) for f in flags} == {
        (students[4], (students[5],), SHARED_WRONG), (students[5], (students[4],), SHARED_WRONG)}


def test_a_part_compared_for_some_students_keeps_every_answer_as_evidence(graded_class):
    """``part_flags`` asked for one student (``attnkit grade``'s copied chains): that student
    is flagged with a partner who was not asked about, and nobody else is flagged."""
    import numpy as np
    from grader.forensics.copied_numbers import by_part, part_flags, part_rows, shared_wrong_flags
    build, key, gradebook_path, secret = graded_class(12)
    students = key_students(key)
    pid, part, value = _a_telling_part(key, students[4])
    same = to_jsonable(np.asarray(value) * 0 + 0.123)
    answers = {(students[4], pid, part): same, (students[5], pid, part): same}
    given = by_part(answers)[(pid, part)]
    every = shared_wrong_flags(key, answers)

    def flags(ask):
        rows = part_rows(key, {pid: {part}})[(pid, part)]
        other, shared = part_flags(pid, part, rows, given, 0.05, len(students), ask)
        return {(f.student, f.partners, f.kind) for f in other + shared}
    assert flags(None) == {(f.student, f.partners, f.kind) for f in every} and len(every) == 2
    assert flags({students[4]}) == {(f.student, f.partners, f.kind) for f in every if f.student == students[4]}


def test_an_answer_the_gradebook_left_out_or_cannot_decode_is_no_evidence(graded_class):
    build, key, gradebook_path, secret = graded_class(12)
    students = key_students(key)
    pid, part, _ = _a_telling_part(key, students[0])
    answers = {(students[0], pid, part): {"omitted": "too large to store"},
               (students[1], pid, part): {"not": "an encoded value"}}
    assert other_variant_flags(key, answers) == []


def test_the_failed_answers_are_read_from_the_gradebook_for_the_counted_handins(graded_class):
    """class_grades reads no answers: forensics reads each failed part's for the counted
    handins, or it would never see one."""
    from grader.forensics.flags import counted_answers
    from grader.store.grades import class_grades
    build, key, gradebook_path, secret = graded_class(12)
    with Gradebook(gradebook_path) as gradebook:
        grades = class_grades(gradebook, key)
        assert counted_answers(grades) == {}
        answers = counted_answers(grades, gradebook)
    failed = {(s.id, p.problem, p.part) for s in grades for p in s.parts
              if p.result is not None and p.result.status in ("failed", "partial")}
    assert answers and set(answers) <= failed | {
        (s.id, p.problem, p.part) for s in grades for p in s.parts
        if p.result is not None and p.result.message.startswith("Follow-through:")}


def test_code_is_compared_only_in_the_notebook_that_was_graded(graded_class, tmp_path):
    import dataclasses
    import shutil
    from grader.forensics.copied_code import similar_code_flags
    from grader.store.grades import class_grades
    build, key, gradebook_path, secret = graded_class(12)
    with Gradebook(gradebook_path) as gradebook:
        grades = class_grades(gradebook, key)
    flags, info = similar_code_flags(key, grades, build)
    assert flags == [] and info["compared"] == {"implement": 12} and info["skipped"] == []
    changed = tmp_path / "changed.ipynb"
    shutil.copy(grades[0].path, changed)
    changed.write_bytes(changed.read_bytes() + b"\n")             # the same notebook, other bytes
    grades = [dataclasses.replace(grades[0], path=str(changed)), *grades[1:]]
    flags, info = similar_code_flags(key, grades, build)
    assert [s["student"] for s in info["skipped"]] == [grades[0].id] and info["compared"] == {"implement": 11}
    flags, info = similar_code_flags(key, grades, None)
    assert flags == [] and "no build folder" in info["notes"][0]


# --- pools and cost -------------------------------------------------------------------------

def _record(template: str, part: str, value, rtol=1e-3, atol=1e-6):
    from formats.serialize import encode_names
    return {"kind": "numeric", "template": template, "answers": encode_names({part: value}),
            "grading": [{"id": part, "points": 1.0, "rtol": rtol, "atol": atol}]}


def _softmax_rows(rng, n=4):
    import numpy as np
    x = rng.normal(size=(n, n))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _count_comparisons(monkeypatch) -> list:
    """One entry per value compared in full by the forensics' index."""
    import grader.forensics.value_index as index_module
    calls = []
    real = index_module._matches
    monkeypatch.setattr(index_module, "_matches", lambda a, rows, *t: calls.extend([1] * len(rows)) or real(a, rows, *t))
    return calls


def test_each_pool_member_is_compared_on_its_own():
    """Shared wrong numbers on a part only the second member has are found, whichever member
    the key's first student got."""
    import numpy as np
    from grader.forensics.copied_numbers import shared_wrong_flags
    from grader.forensics.flag_kinds import SHARED_WRONG
    rng = np.random.default_rng(1)
    students = {"a0": _record("A", "x", _softmax_rows(rng))}
    students.update({f"b{i}": _record("B", "y", _softmax_rows(rng)) for i in range(6)})
    key = {"students": {s: {"problems": {"p": r}} for s, r in students.items()}}
    invented = to_jsonable(np.full((4, 4), 0.31))
    flags = shared_wrong_flags(key, {("b1", "p", "y"): invented, ("b2", "p", "y"): invented})
    assert {(f.student, f.partners, f.kind) for f in flags} == {("b1", ("b2",), SHARED_WRONG),
                                                                ("b2", ("b1",), SHARED_WRONG)}


def test_softmax_matrices_all_summing_to_their_row_count_are_not_all_compared(monkeypatch):
    """Every attention-weights matrix sums to its row count: the index must not put the whole
    class in one window (that made a class of n cost n² comparisons)."""
    import numpy as np
    rng = np.random.default_rng(2)
    n = 600
    key = {"students": {f"s{i:03d}": {"problems": {"p": _record("A", "w", _softmax_rows(rng))}}
                        for i in range(n)}}
    answers = {(f"s{i:03d}", "p", "w"): to_jsonable(_softmax_rows(rng)) for i in range(n)}
    calls = _count_comparisons(monkeypatch)
    assert other_variant_flags(key, answers) == []
    assert 0 < len(calls) < 20 * n, len(calls)       # near-linear: a few candidates per answer


def test_a_class_handing_in_one_wrong_matrix_costs_one_comparison_each(monkeypatch):
    """The same wrong value from every student (a shared online answer) is one index entry:
    listing stops once more than MAX_PARTNERS hold it, and nobody is flagged on it alone."""
    import numpy as np
    from grader.forensics.copied_numbers import shared_wrong_flags
    rng = np.random.default_rng(3)
    n = 500
    key = {"students": {f"s{i:03d}": {"problems": {"p": _record("A", "w", _softmax_rows(rng))}}
                        for i in range(n)}}
    same = to_jsonable(np.full((4, 4), 0.2))
    answers = {(f"s{i:03d}", "p", "w"): same for i in range(n)}
    calls = _count_comparisons(monkeypatch)
    assert shared_wrong_flags(key, answers) == [] and other_variant_flags(key, answers) == []
    assert 0 < len(calls) < 20 * n, len(calls)


def test_answers_built_to_share_one_projection_cost_a_bounded_number_of_comparisons(monkeypatch):
    """Distinct wrong matrices that all have the index's weighted sum (moved along a direction
    orthogonal to its weights) put the class in one window: each query used to compare with
    all of them (2,000 answers: 4 million comparisons, 25 s). A crowd is no evidence, and
    each query now costs at most CROWD comparisons."""
    import numpy as np
    from grader.forensics.copied_numbers import shared_wrong_flags
    from grader.forensics.value_index import CROWD, _weights
    rng = np.random.default_rng(4)
    n = 2000
    w = _weights(16)
    along = np.zeros(16)
    along[0], along[1] = w[1], -w[0]                # w · along = 0: the projection does not move
    base = np.full(16, 0.25)
    crafted = {f"s{i:04d}": to_jsonable((base + 0.01 * i * along).reshape(4, 4)) for i in range(n)}
    key = {"students": {sid: {"problems": {"p": _record("A", "w", _softmax_rows(rng))}}
                        for sid in crafted}}
    answers = {(sid, "p", "w"): v for sid, v in crafted.items()}
    calls = _count_comparisons(monkeypatch)
    assert shared_wrong_flags(key, answers) == [] and other_variant_flags(key, answers) == []
    assert len(calls) <= 2 * CROWD * n, len(calls)


def test_a_damaged_stored_answer_does_not_stop_forensics(graded_class, tmp_path):
    import shutil
    import sqlite3
    build, key, gradebook_path, secret = graded_class(12)
    copy = tmp_path / "gradebook.sqlite"
    shutil.copy(gradebook_path, copy)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE results SET answer = '{not json' WHERE rowid IN "
                   "(SELECT rowid FROM results WHERE status != 'passed' AND answer IS NOT NULL LIMIT 3)")
    with Gradebook(copy) as gradebook:
        result = forensics(gradebook, key)
    assert result["students"] == 12


def test_a_flags_follow_through_parts_are_said_in_words_for_the_ta():
    from grader.forensics.flags import follow_through_note
    flag = {"problem": "dog_ran_fast", "part": "weights", "follow_through": ["output", "row_sums"]}
    assert follow_through_note(flag) == ("follow-through credit on output, row_sums of dog_ran_fast rests on "
                                         "these answers: it stands or falls with this flag")
    assert follow_through_note({**flag, "follow_through": []}) == ""
