"""Variant pools (exercises/course/pools.py, the ``pool:`` key of an assignment): one member per
student, drawn from the course secret, balanced across the class, kept across rebuilds;
specs that break a pool's rules fail with 'file:line: key: message'."""

from collections import Counter
from pathlib import Path

import pytest

from exercises.course.assignment import AssignmentError, load_assignment
from exercises.course.build import build, build_nbgrader, problem_variants
from exercises.course.pools import draw, draws
from exercises.course.roster import Student
from formats.answer_key import load_key

ROOT = Path(__file__).resolve().parents[3]
BANK = ROOT / "problem_bank"
SECRET = "pool tests secret, not for a course"
HEAD = f"""\
id: hw1
title: Homework 1
secret: {{env: ATTNKIT_TEST_SECRET}}
bank: {BANK}
problems:
"""


def spec(tmp_path, body: str) -> Path:
    path = tmp_path / "hw.yaml"
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def problems(tmp_path, body: str) -> list[str]:
    with pytest.raises(AssignmentError) as err:
        load_assignment(spec(tmp_path, body))
    return [line.split(": ", 1)[1] for line in err.value.errors]


@pytest.mark.parametrize("n, members", [(1, 2), (7, 2), (30, 3), (101, 4), (10, 3)])
def test_the_draw_is_balanced_and_deterministic(n, members):
    students = [f"s{i:03d}" for i in range(n)]
    names = [f"m{j}" for j in range(members)]
    drawn = draw(b"secret one", "hw1", "p", names, students)
    counts = Counter(drawn.values())
    assert set(drawn) == set(students)
    assert max(counts.values()) - min(counts[m] for m in names) <= 1
    assert draw(b"secret one", "hw1", "p", names, list(reversed(students))) == drawn   # order-free


def test_the_draw_depends_on_the_secret_and_the_problem():
    students = [f"s{i:03d}" for i in range(40)]
    one = draw(b"secret one", "hw1", "p", ["a", "b"], students)
    assert one != draw(b"secret two", "hw1", "p", ["a", "b"], students)
    assert one != draw(b"secret one", "hw1", "q", ["a", "b"], students)


def test_a_rebuild_keeps_every_issued_member_and_balances_the_newcomers():
    first = [f"s{i:03d}" for i in range(21)]
    drawn = draw(b"k", "hw1", "p", ["a", "b", "c"], first)
    later = draw(b"k", "hw1", "p", ["a", "b", "c"], first + [f"t{i}" for i in range(8)], earlier=drawn)
    assert all(later[s] == drawn[s] for s in first)
    counts = Counter(later.values())
    assert max(counts.values()) - min(counts.values()) <= 1


def test_a_pool_loads_with_its_members_scaled_to_its_points(tmp_path):
    a = load_assignment(spec(tmp_path, """\
  - pool: [sdpa_four_tokens, dog_ran_fast]
    id: by_hand
    points: 10
  - template: bottleneck_free_response
"""))
    pool = a.problems[0]
    assert [t.id for t in pool.members] == ["sdpa_four_tokens", "dog_ran_fast"]
    assert [t.points for t in pool.members] == [10, 10] and pool.points == 10 and a.points == 18
    assert pool.own_titles and pool.title_of(pool.members[1]) == pool.members[1].title


@pytest.mark.parametrize("body, message", [
    ("  - pool: [sdpa_four_tokens, why_sqrt_dk]\n    id: p\n    points: 5\n",
     "a pool's members must serve the same objective: sdpa_four_tokens (self_attention), why_sqrt_dk (scaling)"),
    ("  - pool: [sdpa_four_tokens, dog_ran_fast]\n    id: p\n",
     "a pool's members must be worth the same: sdpa_four_tokens (6 points), dog_ran_fast (13 points); "
     "give the problem's 'points' to scale each member to it"),
    ("  - pool: [sdpa_four_tokens, sdpa_four_tokens]\n    id: p\n",
     "'sdpa_four_tokens' is in the pool twice (a pool draws among different templates)"),
    ("  - pool: [sdpa_four_tokens]\n    id: p\n",
     "expected a list of at least two templates (bank ids or paths), got a list"),
    ("  - pool: [sdpa_four_tokens, dog_ran_fast]\n    id: p\n    points: 6\n    parts: {weights: {points: 2}}\n",
     "a pool's members have parts (and tests) of their own: 'parts' cannot apply to all of them; "
     "give the whole problem's 'points', or override the member in a template file of its own"),
    ("  - pool: [sdpa_four_tokens, dog_ran_fast]\n    points: 6\n", "required"),
    ("  - pool: [sdpa_four_tokens, dog_ran_fsat]\n    id: p\n    points: 6\n",
     "unknown template 'dog_ran_fsat' (not an id in the bank problem_bank, nor a path ending in .yaml); "
     "did you mean 'dog_ran_fast'?"),
])
def test_a_broken_pool_is_refused_with_file_line_key_message(tmp_path, monkeypatch, body, message):
    monkeypatch.chdir(ROOT)
    found = problems(tmp_path, body)
    assert any(m.endswith(message) for m in found), found


def _roster(n: int) -> list[Student]:
    return [Student(f"s{i:03d}", f"Student {i}", f"s{i}@example.edu", i + 2) for i in range(n)]


def test_a_pooled_build_is_balanced_reported_and_keyed(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", SECRET)
    a = load_assignment(spec(tmp_path, """\
  - pool: [nsp_loss, mlm_selection_loss, wordpiece_to_mlm]
    id: bert
    points: 5
  - template: sdpa_four_tokens
"""))
    result = build(a, _roster(11), tmp_path / "out")
    assert result.ok and list(result.pools) == ["bert"]
    assert sorted(result.pools["bert"].values()) == [3, 4, 4]
    key = load_key(result.key_path, SECRET.encode())
    head = key["assignment"]["problems"][0]
    assert "parts" not in head and [m["template"] for m in head["pool"]] == [
        "nsp_loss", "mlm_selection_loss", "wordpiece_to_mlm"]
    got = Counter(e["problems"]["bert"]["template"] for e in key["students"].values())
    assert got == Counter(result.pools["bert"])
    # the student's notebook and the key agree on the member, and points are the pool's
    entry = key["students"]["s000"]["problems"]["bert"]
    assert sum(g["points"] for g in entry["grading"]) == pytest.approx(5)
    drawn = draws(a, SECRET.encode(), [s.id for s in _roster(11)])
    again = problem_variants(a, SECRET.encode(), "s000", drawn["s000"])
    assert again[0].variant.template.id == entry["template"]
    # a rebuild for a bigger class keeps every issued notebook and stays balanced
    bigger = build(a, _roster(14), tmp_path / "out")
    assert bigger.ok and not bigger.refused and sorted(bigger.pools["bert"].values()) == [4, 5, 5]
    rekey = load_key(bigger.key_path, SECRET.encode())
    assert all(rekey["students"][s]["problems"]["bert"]["template"] ==
               key["students"][s]["problems"]["bert"]["template"] for s in key["students"])


def test_an_nbgrader_build_refuses_a_pool(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", SECRET)
    a = load_assignment(spec(tmp_path, "  - pool: [nsp_loss, wordpiece_to_mlm]\n    id: bert\n"))
    result = build_nbgrader(a, tmp_path / "course")
    assert not result.ok and "one notebook for the whole class" in result.failures[0]
    assert not (tmp_path / "course").exists()


def test_a_student_removed_and_later_back_gets_the_same_member(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", SECRET)
    a = load_assignment(spec(tmp_path, "  - pool: [nsp_loss, mlm_selection_loss, wordpiece_to_mlm]\n"
                                       "    id: bert\n    points: 5\n"))
    out = tmp_path / "out"
    first = load_key(build(a, _roster(12), out).key_path, SECRET.encode())
    members = {s: e["problems"]["bert"]["template"] for s, e in first["students"].items()}
    smaller = build(a, _roster(12)[:6], out)
    assert smaller.ok and not smaller.refused
    back = load_key(build(a, _roster(12), out).key_path, SECRET.encode())
    assert {s: e["problems"]["bert"]["template"] for s, e in back["students"].items()} == members
    head = back["assignment"]["problems"][0]
    assert head["drawn"] == dict(sorted(members.items()))


@pytest.mark.parametrize("points", ["ten", "-3", "true"])
def test_a_bad_points_value_is_the_only_complaint(tmp_path, points):
    found = problems(tmp_path, f"  - pool: [sdpa_four_tokens, dog_ran_fast]\n    id: p\n    points: {points}\n")
    assert len(found) == 1 and found[0].startswith("problems[0].points: "), found
