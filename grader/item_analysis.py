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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LOW_DISCRIMINATION = 0.15
LOW_FACILITY, HIGH_FACILITY = 0.30, 0.95


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

    def as_json(self) -> dict:
        def r(x):
            return None if x is None else round(x, 6)
        return {"problem": self.problem, "part": self.part, "max_score": self.max_score, "n": self.n,
                "facility": r(self.facility), "sd": r(self.sd), "discrimination": r(self.discrimination),
                "efficiency": r(self.efficiency), "flags": list(self.flags)}


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


def from_summary(summary: dict) -> dict:
    """Item analysis of ``reports.summary_json``'s graded students: per part, per problem, and
    α for the assignment (over the parts). A part still waiting for a hand grade for some
    student is left out (its 0 is not a score yet); ``waiting`` lists those parts."""
    students = [s for s in summary["students"] if s["status"] == "graded"]
    by_student = [{(p["problem"], p["part"]): p for p in s["parts"]} for s in students]
    waiting = list(dict.fromkeys(k for parts in by_student for k, p in parts.items() if p.get("waiting")))
    keys = [k for k in dict.fromkeys(k for parts in by_student for k in parts) if k not in waiting]
    maxima = {k: max((parts[k]["max_score"] for parts in by_student if k in parts), default=0.0) for k in keys}
    columns = {k: [parts[k]["score"] if k in parts else 0.0 for parts in by_student] for k in keys}
    totals = [sum(column[i] for column in columns.values()) for i in range(len(students))]
    parts = [item(pid, part, columns[(pid, part)], totals, maxima[(pid, part)]) for pid, part in keys]
    problems = []
    for pid in dict.fromkeys(pid for pid, _ in keys):
        mine = [k for k in keys if k[0] == pid]
        scores = [sum(columns[k][i] for k in mine) for i in range(len(students))]
        problems.append(item(pid, None, scores, totals, sum(maxima[k] for k in mine)))
    alpha = cronbach_alpha([columns[k] for k in keys])
    flagged = [x for x in parts + problems if x.flags]
    return {"students": len(students), "waiting": [{"problem": a, "part": b} for a, b in waiting],
            "parts": [x.as_json() for x in parts],
            "problems": [x.as_json() for x in problems],
            "assignment": {k: round(v, 6) if isinstance(v, float) else v for k, v in alpha.items()},
            "flagged": len(flagged)}
