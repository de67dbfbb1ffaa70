"""Planted colluders through the real grader, end to end: the example assignment built for
the 30 students of the sample roster, synthetic submissions, colluders planted
(synthetic/colluders.py: copied numbers, all, some or rounded; a renamed, reformatted and
reordered copy of a classmate's own implementation; a shared invented wrong answer),
``attnkit grade`` and ``attnkit forensics --json``. Every planted case is flagged with its
partner, of its kind; no honest student is flagged, independent code included."""

import json
import os
import subprocess
import sys

import pytest

from pathlib import Path

from synthetic.colluders import load_planted, plant_colluders

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "problem_bank" / "assignments" / "example.yaml"

SECRET = "planted colluders secret, tests only"
_PATHS: dict = {}          # where planted_class put the build and the gradebook


@pytest.fixture(scope="module")
def planted_class(example_build, tmp_path_factory):
    build, key = example_build(30, SECRET)
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    subs = tmp_path_factory.mktemp("planted") / "subs"
    gradebook = subs.parent / "gradebook.sqlite"
    subprocess.run([sys.executable, "-m", "synthetic", str(build), "--key",
                    str(build / "instructor" / "answer_key.json"), "--secret-env", "ATTNKIT_SECRET",
                    "--out", str(subs)], check=True, env=env, cwd=ROOT, capture_output=True)
    planted = plant_colluders(build, key, subs, seed=3)
    subprocess.run([sys.executable, "-m", "attnkit", "grade", str(EXAMPLE), str(subs / "submitted"),
                    "--build", str(build), "--gradebook", str(gradebook), "--timeout", "5"],
                   check=True, env=env, cwd=ROOT, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "attnkit", "forensics", str(EXAMPLE), "--build", str(build),
                          "--gradebook", str(gradebook), "--json"],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    _PATHS.update(build=build, gradebook=gradebook, env=env, key=key)
    return planted, json.loads(out.stdout), subs


def test_every_planted_case_is_flagged_with_its_partner(planted_class):
    planted, result, _ = planted_class
    assert {p.kind for p in planted} == {"numbers", "numbers-some", "numbers-rounded", "similar-code",
                                         "shared-wrong"}
    assert all(p.parts for p in planted)
    for p in planted:
        found = [f for f in result["flags"] if f["student"] == p.copier and f["kind"] == p.flag
                 and p.partner in f["with"] and (f["problem"], f["part"]) in set(p.parts)]
        assert found, (p, [f for f in result["flags"] if f["student"] == p.copier])
    code = [f for f in result["flags"] if f["kind"] == "similar-code"]
    case = next(p for p in planted if p.kind == "similar-code")
    assert {(f["student"], tuple(f["with"])) for f in code} == {(case.copier, (case.partner,)),
                                                              (case.partner, (case.copier,))}
    assert all(0 < f["p_coincidence"] <= 1 and len(f["evidence"]) <= 400 for f in result["flags"])
    assert result["code"]["compared"] == {"implement": 30} and result["code"]["skipped"] == []


def test_a_copied_chain_names_the_follow_through_it_earned(planted_class):
    """A whole copied notebook is consistent with itself: its chains earn follow-through
    credit "given your earlier answers", and each flag names those parts for the TA."""
    planted, result, _ = planted_class
    copier = next(p.copier for p in planted if p.kind == "numbers")
    mine = [f for f in result["flags"] if f["student"] == copier]
    carried = {(f["problem"], part) for f in mine for part in f["follow_through"]}
    assert carried, mine
    # every flag of a problem names the same parts: those of the problem passed by follow-through
    by_problem = {}
    for f in mine:
        by_problem.setdefault(f["problem"], set()).add(tuple(f["follow_through"]))
    assert all(len(names) == 1 for names in by_problem.values()), by_problem
    honest = [f for f in result["flags"] if f["student"] != copier]
    assert all(isinstance(f["follow_through"], list) for f in honest)


def test_the_tas_list_names_a_copied_chain_and_its_follow_through(planted_class):
    """The TA's "Needs a human look" (``attnkit report --json``'s ``needs_a_look``): each flag
    whose chain earned follow-through credit, with the parts named; never on an honest student."""
    planted, result, _ = planted_class
    paths = _PATHS
    out = subprocess.run([sys.executable, "-m", "attnkit", "report", str(EXAMPLE), "--build", str(paths["build"]),
                          "--gradebook", str(paths["gradebook"]), "--json"],
                         env=paths["env"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    looks = [x for x in summary["needs_a_look"] if x["code"] == "copied-chain"]
    carried = {f["student"] for f in result["flags"] if f["follow_through"]}
    assert carried and {x["student"] for x in looks} == carried
    for x in looks:
        assert "follow-through credit on" in x["message"] and "rests on these answers" in x["message"]
    students = {s["id"]: s for s in summary["students"]}
    assert all(any(c["code"] == "copied-chain" for c in students[sid]["needs_a_look"]) for sid in carried)
    honest = set(students) - {f["student"] for f in result["flags"]}
    assert not any(x["student"] in honest for x in looks)


def test_the_grade_commands_copied_chains_are_those_every_flag_gives(planted_class):
    """``attnkit grade`` compares only the problems that earned follow-through credit, for
    the students who earned it (the TA's list shows nothing else), every classmate's answer
    still evidence: the same copied chains as from every flag of the class."""
    from grader.forensics.flags import copied_chains
    from grader.store.gradebook import Gradebook
    from grader.store.grades import class_grades
    _, result, _ = planted_class
    key = _PATHS["key"]
    with Gradebook(_PATHS["gradebook"]) as gradebook:
        grades = class_grades(gradebook, key)
        asked = copied_chains(gradebook, key, grades)
        every = copied_chains(gradebook, key, grades, flags=result["flags"])
    assert asked and {s: sorted(x) for s, x in asked.items()} == {s: sorted(x) for s, x in every.items()}


def test_no_honest_student_is_flagged(planted_class):
    planted, result, subs = planted_class
    colluders = {p.copier for p in planted} | {p.partner for p in planted}
    honest_flags = [f for f in result["flags"] if f["student"] not in colluders]
    assert honest_flags == []
    assert len(load_planted(subs)["independent"]) == 3        # independent code among the honest
    assert set(load_planted(subs)["independent"]).isdisjoint(colluders)
    assert result["students"] == 30
