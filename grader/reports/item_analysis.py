"""Item analysis of one assignment: how hard each part and problem was, how well it told the
stronger students from the weaker ones, and how consistent the assignment is as a whole.

The statistics are Moodle's quiz statistics (``question/classes/statistics``; Moodle docs,
"Quiz statistics calculations"), over the *s* graded submissions, with x a student's score
on one item (a part, or a problem: the sum of its parts), X their total and X − x the rest:

* facility F = mean(x) / max(x), the share of the item's points the class earned;
* SD = √(Σ(x − x̄)² / (s − 1)) / max, as a share of the item's points;
* discrimination index D = Cov(x, X − x) / √(Var(x) · Var(X − x)): the item–rest
  correlation (Moodle prints it ×100), None where x or the rest does not vary;
* discriminative efficiency E = Cov(x, X − x) / Cov_max, with Cov_max the covariance of the
  item scores and the rest scores each *sorted*: the largest covariance these marginals
  allow (Moodle; "dubious" below 0.15);
* Cronbach's α = p/(p − 1) · (1 − Σ Var(x_i) / Var(X)) over the p parts, with its asymptotic
  standard error (van Zyl, Neudecker & Nel 2000, Psychometrika 65; Duhachek & Iacobucci 2004,
  J. Appl. Psych. 89): with Σ the parts' covariance matrix and j a vector of ones,
  Var(α) = 2p² / ((p − 1)² (jᵀΣj)³) · [jᵀΣj (tr Σ² + (tr Σ)²) − 2 tr Σ · jᵀΣ²j] / s;
  the error ratio √(1 − α) and the standard error of measurement SEM = √(1 − α) · SD(X).

Every variance and covariance divides by s − 1. An item is flagged when its discrimination
is below 0.15, or its facility below 0.3 or above 0.95 (``FLAGS``). Pure functions of the
numbers: ``from_summary`` reads ``reports.summary_json``'s students.

A *pool* problem (``exercises.course.pools``) gives each student one of its member templates, whose
parts are not each other's: its parts are items per member (``template`` says which), over
the students who got that member, and the assignment's α counts the pool as one item, the
problem's score, which every student has. The *fairness check* asks whether the members are
equally hard: the Kruskal–Wallis test (Kruskal & Wallis 1952, JASA 47; with the correction
for ties) on the problem's score share, H = [12/(N(N+1)) Σ R_i²/n_i − 3(N+1)] / [1 −
Σ(t³ − t)/(N³ − N)], against χ² with k − 1 degrees of freedom. Ranks, not means, since scores
pile up at full marks; members are drawn at random, so a difference is the members' own.

What a *wrong* answer is, for every table that counts them, is ``got_wrong``'s: a counted
score below full marks, after hand grades and overrides.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, replace

import numpy as np

LOW_DISCRIMINATION = 0.15
LOW_FACILITY, HIGH_FACILITY = 0.30, 0.95
FAIRNESS_LEVEL = 0.05          # a pool is flagged when its members differ at this level


@dataclass(frozen=True)
class Item:
    """One item's statistics; ``flags`` says why it is dubious (empty: it is not)."""

    problem: str
    part: str | None              # None: the whole problem
    max_score: float
    n: int
    facility: float | None
    sd: float | None
    discrimination: float | None
    efficiency: float | None
    flags: tuple[str, ...]
    template: str | None = None   # a pool member's part: the member it belongs to

    def as_json(self) -> dict:
        def r(x):
            return None if x is None else round(x, 6)
        return {"problem": self.problem, "part": self.part, "template": self.template,
                "max_score": self.max_score, "n": self.n,
                "facility": r(self.facility), "sd": r(self.sd), "discrimination": r(self.discrimination),
                "efficiency": r(self.efficiency), "flags": list(self.flags)}


def got_wrong(student: dict, part: dict) -> bool:
    """Whether a student got a part wrong — the one definition every table of wrong answers
    uses (``reports.misconceptions_by_part``, the dashboard's wrong matrices): a graded
    student's part whose counted score, a grader's hand grade or override when there is one,
    is below its full points. A part a grader raised to full marks is not wrong, whatever the
    automatic grader said; one still waiting for a hand grade (or another look) is not wrong
    yet. ``student``, ``part``: as ``reports.summary_json`` gives them."""
    if student["status"] != "graded" or part["waiting"] or part["status"] == "manual":
        return False
    # (scores are stored to 6 decimals: 3.333333 of 10/3 points is full marks)
    return part["score"] < part["max_score"] * (1 - 1e-6)


def wrong_answers(students: list[dict]) -> dict[tuple, list[str]]:
    """(problem, template, part) → the students who got it wrong (``got_wrong``), in the
    summary's order; ``template`` is the pool member the student got (None: no pool)."""
    out: dict[tuple, list[str]] = {}
    for s in students:
        for p in s["parts"]:
            if got_wrong(s, p):
                out.setdefault((p["problem"], s.get("pools", {}).get(p["problem"]), p["part"]), []).append(s["id"])
    return out


def _mean(xs) -> float:
    return sum(xs) / len(xs)


def _cov(xs, ys) -> float:
    """Sample covariance (divides by s − 1)."""
    mx, my = _mean(xs), _mean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / (len(xs) - 1)


def item(problem: str, part: str | None, scores: list[float], totals: list[float],
         max_score: float) -> Item:
    """The statistics of one item from each student's score on it and their total."""
    n = len(scores)
    if n == 0 or max_score <= 0:
        return Item(problem, part, max_score, n, None, None, None, None, ("no graded submission",) if n == 0 else ())
    facility = _mean(scores) / max_score
    if n < 2:
        return Item(problem, part, max_score, n, facility, None, None, None, ("one submission",))
    rest = [t - x for t, x in zip(totals, scores)]
    var_x, var_rest, cov = _cov(scores, scores), _cov(rest, rest), _cov(scores, rest)
    # Scores are stored rounded (6 decimals): a variance at that level is rounding, not spread.
    tiny = 1e-10 * max(max_score, max(map(abs, totals), default=0.0), 1.0) ** 2
    var_x, var_rest = (0.0 if v < tiny else v for v in (var_x, var_rest))
    sd = math.sqrt(var_x) / max_score
    discrimination = cov / math.sqrt(var_x * var_rest) if var_x > 0 and var_rest > 0 else None
    cov_max = _cov(sorted(scores), sorted(rest))
    efficiency = cov / cov_max if cov_max > 0 else None
    flags = []
    if facility < LOW_FACILITY:
        flags.append(f"facility below {LOW_FACILITY:g}: hard for almost everyone")
    if facility > HIGH_FACILITY:
        flags.append(f"facility above {HIGH_FACILITY:g}: easy for almost everyone")
    if var_x == 0:
        flags.append("every student scored the same: it tells no one apart")
    elif discrimination is not None and discrimination < LOW_DISCRIMINATION:
        flags.append(f"discrimination below {LOW_DISCRIMINATION:g}: the stronger students do not do better on it")
    return Item(problem, part, max_score, n, facility, sd, discrimination, efficiency, tuple(flags))


def cronbach_alpha(columns: list[list[float]]) -> dict:
    """α, its standard error, the error ratio and the SEM for items given as columns (one list
    of the students' scores per item, all of the same length)."""
    p, n = len(columns), len(columns[0]) if columns else 0
    none = {"alpha": None, "se": None, "error_ratio": None, "sem": None, "items": p, "n": n}
    if p < 2 or n < 2:
        return none
    sigma = np.cov(np.asarray(columns, dtype=float))               # p × p, divides by s − 1
    j = np.ones(p)
    total, trace = float(j @ sigma @ j), float(np.trace(sigma))    # jᵀΣj = Var(X)
    if total <= 0:
        return none
    alpha = p / (p - 1) * (1 - trace / total)
    sigma2 = sigma @ sigma
    var_alpha = (2 * p * p / ((p - 1) ** 2 * total ** 3)
                 * (total * (np.trace(sigma2) + trace ** 2) - 2 * trace * float(j @ sigma2 @ j)) / n)
    ratio = math.sqrt(1 - alpha) if alpha <= 1 else None
    return {**none, "alpha": alpha, "se": math.sqrt(var_alpha) if var_alpha >= 0 else None,
            "error_ratio": ratio, "sem": None if ratio is None else ratio * math.sqrt(total)}


def chi2_sf(x: float, df: int) -> float:
    """P(χ²_df ≥ x) for a whole number of degrees of freedom, in closed form (Abramowitz &
    Stegun 26.4.4–5): even df sum a Poisson tail, odd df add erfc."""
    if x <= 0:
        return 1.0
    half = x / 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, df // 2):
            term *= half / i
            total += term
        return min(1.0, math.exp(-half) * total)
    term = math.sqrt(half) / math.gamma(1.5)         # (x/2)^(1/2) / Γ(3/2)
    total = 0.0
    for i in range(1, (df + 1) // 2):
        total += term
        term *= half / (i + 0.5)
    return min(1.0, math.erfc(math.sqrt(half)) + math.exp(-half) * total)


def _ranks(values: list[float]) -> list[float]:
    """Ranks 1…N, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def kruskal_wallis(groups: dict[str, list[float]]) -> dict:
    """The Kruskal–Wallis H (tie-corrected), its degrees of freedom and p-value, over the
    groups with at least one value; H and p are None when every value ties."""
    groups = {g: v for g, v in groups.items() if v}
    values = [x for v in groups.values() for x in v]
    n, k = len(values), len(groups)
    out = {"test": "Kruskal-Wallis", "statistic": None, "df": k - 1, "p_value": None}
    if k < 2 or n < 3:
        return out
    ranks, start, sums = _ranks(values), 0, {}
    for g, v in groups.items():
        sums[g] = sum(ranks[start:start + len(v)])
        start += len(v)
    ties = sum(t ** 3 - t for t in _tie_sizes(values))
    correction = 1 - ties / (n ** 3 - n)
    if correction <= 0:
        return out
    h = (12 / (n * (n + 1)) * sum(sums[g] ** 2 / len(v) for g, v in groups.items())
         - 3 * (n + 1)) / correction
    return {**out, "statistic": h, "p_value": chi2_sf(h, k - 1)}


def _tie_sizes(values: list[float]) -> list[int]:
    counts: dict[float, int] = {}
    for x in values:
        counts[x] = counts.get(x, 0) + 1
    return [c for c in counts.values() if c > 1]


def _item_over(problem, part, column, totals, max_score, template=None) -> Item:
    """An item over the students who have it (a pool member's students)."""
    pairs = [(x, t) for x, t in zip(column, totals) if x == x]      # (NaN: no such item)
    return replace(item(problem, part, [x for x, _ in pairs], [t for _, t in pairs], max_score),
                   template=template)


def from_summary(summary: dict) -> dict:
    """``from_students`` of ``reports.summary_json``'s students."""
    return from_students(summary["students"])


def from_students(students) -> dict:
    """Item analysis of the graded ones of ``students`` (``reports.summary_json``'s, read once,
    in order): per part, per problem, and α for the assignment (over the parts, a pool's
    score counted as one item), and per pool its members side by side with the fairness
    check. A part still waiting for a hand grade for some student is left out (its 0 is not
    a score yet); ``waiting`` lists those parts."""
    read = _read_columns(students)
    n, columns, maxima, templates = read.n, read.columns, read.maxima, read.templates
    keys = [k for k in columns if k not in read.waiting]
    totals = array("d", (sum(_score(columns[k][i]) for k in keys) for i in range(n)))
    parts = [_item_over(pid, part, columns[k], totals, maxima[k], template)
             for k in keys for pid, template, part in [k]]
    problems, scores, worths = [], {}, {}
    for pid in dict.fromkeys(k[0] for k in keys):
        mine = [k for k in keys if k[0] == pid]
        scores[pid] = array("d", (sum(_score(columns[k][i]) for k in mine) for i in range(n)))
        # what each member's graded parts are worth (the same for all, unless a part of one
        # still waits for a hand grade and is left out)
        worths[pid] = {t: sum(maxima[k] for k in mine if k[1] == t) for t in dict.fromkeys(k[1] for k in mine)}
        problems.append(item(pid, None, scores[pid], totals, max(worths[pid].values())))
    alpha = cronbach_alpha([columns[k] for k in keys if k[0] not in templates]
                           + [scores[pid] for pid in scores if pid in templates])
    pools = [_pool(pid, templates[pid], scores[pid], totals, worths[pid]) for pid in scores if pid in templates]
    flagged = [x for x in parts + problems if x.flags]
    return {"students": n, "waiting": [{"problem": a, "part": c, "template": b}
                                       for a, b, c in read.waiting],
            "parts": [x.as_json() for x in parts],
            "problems": [x.as_json() for x in problems],
            "assignment": {k: round(v, 6) if isinstance(v, float) else v for k, v in alpha.items()},
            "pools": pools, "flagged": len(flagged) + sum(p["fairness"]["flag"] for p in pools)}


def _score(x: float) -> float:
    return 0.0 if x != x else x          # (NaN: the student has no such item)


@dataclass
class _Columns:
    """The graded students' scores per item key (problem, template, part), read in one pass:
    a column per key (an array of floats, NaN where a student has no such item: 8 bytes a
    student and item), its maximum, the keys some student still waits on, and per pool
    problem each student's member."""
    n: int = 0
    columns: dict = field(default_factory=dict)
    maxima: dict = field(default_factory=dict)
    waiting: dict = field(default_factory=dict)        # (an ordered set)
    templates: dict = field(default_factory=dict)      # pool problem → each student's member


def _read_columns(students) -> _Columns:
    out = _Columns()
    for s in students:
        if s["status"] != "graded":
            continue
        pools = s.get("pools", {})
        mine = {(p["problem"], pools.get(p["problem"]), p["part"]): p for p in s["parts"]}
        for k, p in mine.items():
            if k not in out.columns:
                out.columns[k], out.maxima[k] = array("d", [math.nan] * out.n), p["max_score"]
            out.columns[k].append(p["score"])
            out.maxima[k] = max(out.maxima[k], p["max_score"])
            if p.get("waiting"):
                out.waiting[k] = None
        for k, column in out.columns.items():
            if len(column) == out.n:
                column.append(math.nan)
        for pid, template in pools.items():
            out.templates.setdefault(pid, [None] * out.n).append(template)
        for column in out.templates.values():
            if len(column) == out.n:
                column.append(None)
        out.n += 1
    return out


def _pool(pid: str, templates: list[str], scores: list[float], totals: list[float],
          worths: dict[str, float]) -> dict:
    """One pool's members side by side (each member's problem item over its students) and
    the fairness check on the score share (of what the member's graded parts are worth).
    ``templates``: each graded student's member."""
    members: dict[str, list[int]] = {}
    for i, template in enumerate(templates):
        members.setdefault(template, []).append(i)
    side, shares = [], {}
    for template, rows in sorted(members.items()):
        worth = worths.get(template, 0.0)
        x = item(pid, None, [scores[i] for i in rows], [totals[i] for i in rows], worth).as_json()
        side.append({"template": template, "graded": len(rows), "facility": x["facility"],
                     "mean": round(sum(scores[i] for i in rows) / len(rows), 6), "sd": x["sd"],
                     "discrimination": x["discrimination"], "flags": x["flags"]})
        # (rounded: the same share reached through different parts is a tie, not two ranks)
        shares[template] = [round(scores[i] / worth, 9) if worth else 0.0 for i in rows]
    test = kruskal_wallis(shares)
    lowest = min(side, key=lambda m: m["facility"] if m["facility"] is not None else 1.0)["template"] \
        if len(side) > 1 else None
    flag = test["p_value"] is not None and test["p_value"] < FAIRNESS_LEVEL
    if test["p_value"] is None:
        message = "too few graded students (or every score the same) to compare the members"
    elif flag:
        message = (f"the members differ in difficulty (Kruskal-Wallis p = {test['p_value']:.3g} < "
                   f"{FAIRNESS_LEVEL:g}): {lowest} scores lowest; consider adjusting its points or "
                   f"dropping it from the pool")
    else:
        message = f"no significant difference between the members (p = {test['p_value']:.3g})"
    fairness = {**{k: (float(f"{v:.6g}") if isinstance(v, float) else v) for k, v in test.items()},
                "lowest": lowest, "flag": flag, "level": FAIRNESS_LEVEL, "message": message}
    return {"problem": pid, "members": side, "fairness": fairness}
