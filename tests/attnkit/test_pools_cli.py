"""A pooled assignment end to end through the real commands: ``attnkit build`` reports the
members' counts, the synthetic class is graded for real, ``attnkit report --json`` compares
the members, and the marking queue lists each member's parts for its own students."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from exercises.render.html import escape

from formats.answer_key import load_key
from grader.store.gradebook import Gradebook
from grader.marking.queue import markable_parts, part_queue

ROOT = Path(__file__).resolve().parents[2]
POOLED = ROOT / "problem_bank" / "assignments" / "pooled.yaml"
ROSTER = ROOT / "problem_bank" / "assignments" / "sample_roster.csv"
SECRET = "pooled class secret, tests only"


def _run(*args, env):
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=True)


@pytest.fixture(scope="module")
def pooled_class(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pooled")
    roster = tmp / "roster.csv"
    roster.write_text("".join(ROSTER.read_text(encoding="utf-8").splitlines(keepends=True)[:15]),
                      encoding="utf-8")
    env = {**os.environ, "ATTNKIT_SECRET": SECRET}
    out = tmp / "build"
    built = _run("attnkit", "build", str(POOLED), "--roster", str(roster), "--out", str(out),
                 "--json", env=env)
    _run("synthetic", str(out), "--key", str(out / "instructor" / "answer_key.json"),
         "--secret-env", "ATTNKIT_SECRET", "--out", str(out / "submissions"), env=env)
    _run("attnkit", "grade", str(POOLED), str(out / "submissions" / "submitted"), "--build", str(out),
         "--timeout", "5", env=env)
    report = _run("attnkit", "report", str(POOLED), "--build", str(out), "--json", env=env)
    key = load_key(out / "instructor" / "answer_key.json", SECRET.encode())
    return json.loads(built.stdout), json.loads(report.stdout), key, out


def test_the_build_reports_balanced_members_that_the_key_holds(pooled_class):
    built, _, key, _ = pooled_class
    assert built["built"] == 14
    for pid, members in built["pools"].items():
        assert max(members.values()) - min(members.values()) <= 1 and sum(members.values()) == 14
        held = Counter(e["problems"][pid]["template"] for e in key["students"].values())
        assert held == Counter({m: n for m, n in members.items() if n})


def test_every_student_is_graded_on_their_own_member(pooled_class):
    _, report, key, _ = pooled_class
    assert report["counts"]["graded"] == 14 and report["counts"]["error"] == 0
    for s in report["students"]:
        entry = key["students"][s["id"]]["problems"]
        for pid, template in s["pools"].items():
            assert template == entry[pid]["template"]
            mine = {g.get("id") or g["family"] for g in entry[pid]["grading"]}
            assert {p["part"] for p in s["parts"] if p["problem"] == pid} == mine
            assert s["problems"][pid] <= sum(g["points"] for g in entry[pid]["grading"]) + 1e-9


def test_the_report_compares_the_members_with_a_fairness_check(pooled_class):
    built, report, _, _ = pooled_class
    pools = {p["problem"]: p for p in report["pools"]}
    assert set(pools) == set(built["pools"])
    for pid, pool in pools.items():
        assert {m["template"]: m["students"] for m in pool["members"]} == built["pools"][pid]
        assert sum(m["graded"] for m in pool["members"]) == 14
        fairness = pool["fairness"]
        assert fairness["test"] == "Kruskal-Wallis" and fairness["df"] == len(pool["members"]) - 1
        assert fairness["p_value"] is None or 0 <= fairness["p_value"] <= 1
    # each member's parts are items of their own, over that member's students only
    items = report["item_analysis"]
    by_hand = [p for p in items["parts"] if p["problem"] == "by_hand"]
    assert {p["template"] for p in by_hand} == {"sdpa_four_tokens", "dog_ran_fast"}
    for p in by_hand:
        assert p["n"] == next(m["graded"] for m in pools["by_hand"]["members"] if m["template"] == p["template"])
    # misconceptions per part: the share of wrong answers they explain
    for row in report["misconceptions_by_part"]:
        assert row["explained"] <= row["wrong"]
        assert row["share_explained"] is None or row["share_explained"] == pytest.approx(
            row["explained"] / row["wrong"], abs=1e-6)
    assert any(row["explained"] for row in report["misconceptions_by_part"])


def test_the_marking_queue_lists_each_members_parts_for_its_students(pooled_class):
    _, _, key, out = pooled_class
    parts = {(pid, part) for pid, part, *_ in markable_parts(key)}
    sdpa_only = ("by_hand", "raw_scores") in parts and ("by_hand", "slide_scaled") in parts
    assert sdpa_only, parts
    with Gradebook(out / "instructor" / "gradebook.sqlite") as gb:
        queue = part_queue(gb, key, "by_hand", "slide_scaled")      # a part of dog_ran_fast only
    dog = {s for s, e in key["students"].items() if e["problems"]["by_hand"]["template"] == "dog_ran_fast"}
    assert {a.student for a in queue.answers} == dog


def test_each_student_reads_their_own_members_title(pooled_class):
    _, _, key, out = pooled_class
    head = {p["id"]: p for p in key["assignment"]["problems"]}
    titles = {m["template"]: m["title"] for m in head["heads_and_masks"]["pool"]}
    for sid, entry in key["students"].items():
        mine = titles[entry["problems"]["heads_and_masks"]["template"]]
        other = next(t for m, t in titles.items() if m != entry["problems"]["heads_and_masks"]["template"])
        page = (out / "reports" / "feedback" / f"{sid}.html").read_text(encoding="utf-8")
        assert escape(mine) in page and escape(other) not in page


def test_the_dashboards_matrix_parts_are_per_member(pooled_class):
    from grader.reports.wrong_matrices import matrix_parts as _matrix_parts
    _, _, key, _ = pooled_class
    parts = _matrix_parts(key, sorted(key["students"]))
    assert ("heads_and_masks", "causal_mask_by_hand", "combined") in parts
    assert all(template is not None for pid, template, _ in parts if pid != "motivation")
