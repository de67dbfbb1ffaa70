"""Item analysis (grader/reports/item_analysis.py) against values worked out by hand on a class of
five students and three items (maxima 1, 1 and 2):

    student  item 1  item 2  item 3  total
    s1          1       1       2      4
    s2          1       0       2      3
    s3          0       1       1      2
    s4          1       0       0      1
    s5          0       0       0      0
"""

import math

import numpy as np
import pytest

from grader.reports.item_analysis import (chi2_sf, cronbach_alpha, from_summary, got_wrong, item,
                                          kruskal_wallis, wrong_answers)

I1, I2, I3 = [1, 1, 0, 1, 0], [1, 0, 1, 0, 0], [2, 2, 1, 0, 0]
TOTALS = [4, 3, 2, 1, 0]


def test_facility_sd_discrimination_and_efficiency_by_hand():
    x = item("p", "a", I1, TOTALS, 1.0)
    # mean 0.6; Var(x) = 1.2/4 = 0.3; rest = [3, 2, 2, 0, 0], Var = 7.2/4 = 1.8;
    # Cov(x, rest) = 0.8/4 = 0.2; sorted pairs give Cov_max = 2.8/4 = 0.7
    assert x.facility == pytest.approx(0.6)
    assert x.sd == pytest.approx(math.sqrt(0.3))
    assert x.discrimination == pytest.approx(0.2 / math.sqrt(0.3 * 1.8))     # 0.2722
    assert x.efficiency == pytest.approx(0.2 / 0.7)                          # 0.2857
    assert x.flags == ()


def test_cronbach_alpha_by_hand_and_its_standard_error():
    a = cronbach_alpha([I1, I2, I3])
    # ΣVar(x_i) = 0.3 + 0.3 + 1.0 = 1.6, Var(X) = 10/4 = 2.5: α = 3/2 · (1 − 1.6/2.5) = 0.54
    assert a["alpha"] == pytest.approx(0.54)
    assert a["error_ratio"] == pytest.approx(math.sqrt(0.46))
    assert a["sem"] == pytest.approx(math.sqrt(0.46) * math.sqrt(2.5))
    # the asymptotic SE, by the matrix formula written out with NumPy
    S = np.cov(np.array([I1, I2, I3], dtype=float))
    p, n, j = 3, 5, np.ones(3)
    total, tr, S2 = j @ S @ j, np.trace(S), S @ S
    var = 2 * p**2 / ((p - 1) ** 2 * total**3) * (total * (np.trace(S2) + tr**2) - 2 * tr * (j @ S2 @ j)) / n
    assert a["se"] == pytest.approx(math.sqrt(var))


def test_the_standard_error_matches_the_spread_of_alpha_over_samples():
    """On many classes drawn from one population, α spreads about as its SE says."""
    rng = np.random.default_rng(0)
    alphas, ses = [], []
    for _ in range(300):
        ability = rng.normal(size=200)
        items = [(ability + rng.normal(size=200) > 0).astype(float) for _ in range(6)]
        a = cronbach_alpha([list(c) for c in items])
        alphas.append(a["alpha"]), ses.append(a["se"])
    assert np.std(alphas) == pytest.approx(np.mean(ses), rel=0.2)


def test_dubious_items_are_flagged():
    everyone = item("p", "easy", [1, 1, 1, 1, 1], TOTALS, 1.0)
    assert any("facility above" in f for f in everyone.flags) and everyone.discrimination is None
    reversed_item = item("p", "odd", [0, 0, 1, 1, 1], [1, 2, 3, 1, 1], 1.0)   # the weaker do better
    assert any("discrimination below" in f for f in reversed_item.flags)
    hard = item("p", "hard", [0, 0, 0, 0, 1], TOTALS, 1.0)
    assert any("facility below" in f for f in hard.flags)


def _summary():
    students = []
    for sid, scores in zip(["s1", "s2", "s3", "s4", "s5"], zip(I1, I2, I3)):
        parts = [{"problem": "p1", "part": "a", "score": scores[0], "max_score": 1.0},
                 {"problem": "p1", "part": "b", "score": scores[1], "max_score": 1.0},
                 {"problem": "p2", "part": "c", "score": scores[2], "max_score": 2.0}]
        students.append({"id": sid, "status": "graded", "parts": parts})
    students.append({"id": "s6", "status": "missing", "parts": []})
    return {"students": students}


def test_from_a_summary_parts_problems_and_the_assignment():
    result = from_summary(_summary())
    assert result["students"] == 5                               # the missing one is left out
    parts = {(p["problem"], p["part"]): p for p in result["parts"]}
    assert parts[("p1", "a")]["facility"] == pytest.approx(0.6)
    problems = {p["problem"]: p for p in result["problems"]}
    assert problems["p1"]["max_score"] == 2.0
    assert problems["p1"]["facility"] == pytest.approx((2 + 1 + 1 + 1 + 0) / 5 / 2)
    assert result["assignment"]["alpha"] == pytest.approx(0.54)


def test_a_part_waiting_for_a_hand_grade_is_left_out():
    summary = _summary()
    for s in summary["students"][:5]:
        s["parts"].append({"problem": "p3", "part": "essay", "score": 0.0, "max_score": 3.0,
                           "waiting": s["id"] == "s2"})
    result = from_summary(summary)
    assert result["waiting"] == [{"problem": "p3", "part": "essay", "template": None}]
    assert ("p3", "essay") not in {(p["problem"], p["part"]) for p in result["parts"]}
    assert result["assignment"]["alpha"] == pytest.approx(0.54)      # as without it


def test_the_class_summary_and_table_carry_the_item_analysis(graded_class):
    from grader.store.gradebook import Gradebook
    from grader.reports.summary import class_table, summary_json
    build, key, gradebook_path, _ = graded_class(6)
    with Gradebook(gradebook_path) as gradebook:
        summary = summary_json(gradebook, key)
        table = class_table(gradebook, key, summary=summary)
    items = summary["item_analysis"]
    assert items["students"] == summary["counts"]["graded"]
    assert {p["problem"] for p in items["problems"]} <= {p["id"] for p in summary["problems"]}
    assert "Item analysis over" in table and "Cronbach" in table


def test_a_class_spilled_to_disk_has_the_same_summary_and_table(graded_class, monkeypatch):
    """The summary is made in one pass over the class, its students spilled: read a student
    at a time with every record on disk, the same summary, byte for byte, and the same table."""
    from formats.textfile import terminal_json
    from grader.reports.summary import class_table, summary_json
    from grader.store import grades, spilled
    from grader.store.gradebook import Gradebook
    build, key, gradebook_path, _ = graded_class(12)
    with Gradebook(gradebook_path) as gradebook:
        summary = summary_json(gradebook, key)
        before = terminal_json(summary), class_table(gradebook, key, summary=summary)
        monkeypatch.setattr(grades, "CHUNK", 1)
        monkeypatch.setattr(spilled.Spilled.__init__, "__defaults__", ((), 0))
        summary = summary_json(gradebook, key)
        assert summary["students"]._file is not None              # (on disk)
        assert (terminal_json(summary), class_table(gradebook, key, summary=summary)) == before
    assert summary["counts"]["students"] == 12 and summary["item_analysis"]["students"] >= 2


# --- pools: the members side by side and the fairness check ---------------------------------

@pytest.mark.parametrize("x, df", [(3.841459, 1), (5.991465, 2), (7.814728, 3), (9.487729, 4),
                                   (11.070498, 5), (6.634897, 1), (13.276704, 4)])
def test_the_chi_square_tail_matches_the_tables(x, df):
    # the 0.05 points of χ² with 1–5 degrees of freedom, and the 0.01 points of 1 and 4
    assert chi2_sf(x, df) == pytest.approx(0.01 if x in (6.634897, 13.276704) else 0.05, abs=2e-7)


def test_kruskal_wallis_by_hand():
    # no ties: ranks 1 2 3 | 4 5 6, H = 12/42 · (6²/3 + 15²/3) − 21 = 27/7
    test = kruskal_wallis({"A": [1, 2, 3], "B": [4, 5, 6]})
    assert test["statistic"] == pytest.approx(27 / 7) and test["df"] == 1
    assert test["p_value"] == pytest.approx(math.erfc(math.sqrt(27 / 14)))
    # ties: 0 | 1 1 ‖ 1 1 1 → ranks 1 4 4 | 4 4 4; H0 = 12/42 · (9²/3 + 12²/3) − 21 = 3/7,
    # corrected by 1 − (5³ − 5)/(6³ − 6) = 3/7: H = 1
    tied = kruskal_wallis({"A": [0, 1, 1], "B": [1, 1, 1]})
    assert tied["statistic"] == pytest.approx(1.0)
    assert tied["p_value"] == pytest.approx(math.erfc(math.sqrt(0.5)))
    assert kruskal_wallis({"A": [1, 1], "B": [1, 1]})["p_value"] is None     # nothing to rank


def _pool_summary(low: list[float], high: list[float]) -> dict:
    """A pool problem "q" (member X: part x, member Y: parts y1, y2; 2 points each) and a
    plain problem "p" (part a, 1 point)."""
    students = []
    for i, score in enumerate(low):
        students.append({"id": f"x{i}", "status": "graded", "pools": {"q": "X"}, "parts": [
            {"problem": "p", "part": "a", "score": i % 2, "max_score": 1.0},
            {"problem": "q", "part": "x", "score": score, "max_score": 2.0}]})
    for i, score in enumerate(high):
        students.append({"id": f"y{i}", "status": "graded", "pools": {"q": "Y"}, "parts": [
            {"problem": "p", "part": "a", "score": i % 2, "max_score": 1.0},
            {"problem": "q", "part": "y1", "score": score / 2, "max_score": 1.0},
            {"problem": "q", "part": "y2", "score": score / 2, "max_score": 1.0}]})
    return {"students": students}


def test_a_pools_parts_are_items_per_member_and_the_pool_one_item_of_alpha():
    result = from_summary(_pool_summary([0, 2, 2, 0], [2, 2, 0, 2]))
    parts = {(p["problem"], p["template"], p["part"]): p for p in result["parts"]}
    assert set(parts) == {("p", None, "a"), ("q", "X", "x"), ("q", "Y", "y1"), ("q", "Y", "y2")}
    assert parts[("q", "X", "x")]["n"] == 4 and parts[("q", "X", "x")]["facility"] == pytest.approx(0.5)
    assert parts[("q", "Y", "y1")]["n"] == 4 and parts[("q", "Y", "y1")]["facility"] == pytest.approx(0.75)
    problems = {p["problem"]: p for p in result["problems"]}
    assert problems["q"]["max_score"] == 2.0 and problems["q"]["n"] == 8
    assert problems["q"]["facility"] == pytest.approx((4 + 6) / 8 / 2)
    # α over two items that every student has: part a and the pool's score
    a = [0, 1, 0, 1] * 2
    q = [0, 2, 2, 0, 2, 2, 0, 2]
    assert result["assignment"]["alpha"] == pytest.approx(cronbach_alpha([a, q])["alpha"], abs=1e-6)
    assert result["assignment"]["items"] == 2


def test_the_fairness_check_flags_a_member_that_scores_lower():
    unfair = from_summary(_pool_summary([0, 0, 0, 0, 0, 1], [2, 2, 2, 2, 1, 2]))["pools"][0]
    assert unfair["problem"] == "q" and [m["template"] for m in unfair["members"]] == ["X", "Y"]
    assert unfair["fairness"]["flag"] and unfair["fairness"]["lowest"] == "X"
    assert unfair["fairness"]["p_value"] < 0.05 and "X scores lowest" in unfair["fairness"]["message"]
    assert unfair["members"][0]["mean"] == pytest.approx(1 / 6, abs=1e-6)
    fair = from_summary(_pool_summary([0, 2, 2, 0, 2], [2, 0, 2, 0, 2]))["pools"][0]
    assert not fair["fairness"]["flag"] and fair["fairness"]["p_value"] > 0.5


def test_a_members_part_still_waiting_is_not_counted_against_it():
    """Both members score 80 % of their graded parts, but X's essay (0.5 of its 2 points)
    still waits for a hand grade: the shares are of what is graded (1.2 of 1.5 against 1.6
    of 2), so the check does not flag X."""
    summary = _pool_summary([1.2] * 10, [1.6] * 9 + [2.0])
    for s in summary["students"]:
        if s["pools"]["q"] == "X":
            s["parts"][1]["max_score"] = 1.5
            s["parts"].append({"problem": "q", "part": "essay", "score": 0.0, "max_score": 0.5,
                               "waiting": True})
    pool = from_summary(summary)["pools"][0]
    assert not pool["fairness"]["flag"], pool["fairness"]
    assert [m["facility"] for m in pool["members"]] == [pytest.approx(0.8), pytest.approx(0.82)]


def _part(score, status="failed", waiting=False, max_score=2.0, part="a"):
    return {"problem": "p", "part": part, "score": score, "max_score": max_score, "status": status,
            "waiting": waiting}


def test_wrong_is_below_full_marks_after_hand_grades_and_overrides():
    graded = {"status": "graded"}
    assert got_wrong(graded, _part(0.0)) and got_wrong(graded, _part(1.0, "partial"))
    assert not got_wrong(graded, _part(2.0, "overridden"))              # raised to full marks by a grader
    assert got_wrong(graded, _part(1.5, "overridden"))                  # a passed part marked down
    assert not got_wrong(graded, _part(10 / 3 - 4e-7, "passed", max_score=10 / 3))   # stored to 6 decimals
    assert not got_wrong(graded, _part(0.0, "manual", waiting=True))    # not graded yet
    assert not got_wrong(graded, _part(0.0, "marked", waiting=True))    # to look at again
    assert not got_wrong({"status": "error"}, _part(0.0))               # only graded submissions count
    students = [{"id": "s1", "status": "graded", "parts": [_part(2.0, "overridden"), _part(0.0, part="b")]},
                {"id": "s2", "status": "graded", "pools": {"p": "member"}, "parts": [_part(1.0)]}]
    assert wrong_answers(students) == {("p", None, "b"): ["s1"], ("p", "member", "a"): ["s2"]}
