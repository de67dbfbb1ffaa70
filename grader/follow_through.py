"""Follow-through credit: a part done right on the student's own earlier (wrong) answers.

The key holds, for each part with a template ``follow`` expression (``exercises.follow``),
how its answer is computed from earlier parts' answers, and the other values that needs.
When such a part failed and an earlier part it reads was wrong, the part is computed again
here — with the reference functions, in this trusted process — from the student's own
earlier answers; if the student's value matches within the part's tolerance, the part earns
``follow_credit`` × its points and says "correct, given your …". Chains work step by step:
(d) is judged on the student's (c), whatever (c) earned.

Bounded work: the recipe runs only on earlier answers of exactly the expected shape (the
template's own sizes), finite or not; one that raises earns nothing. A follow-through is
recorded as such: status ``passed`` (full credit) or ``partial``, and a message starting
with ``FOLLOW_THROUGH``.
"""

from __future__ import annotations

import numpy as np

from exercises.expressions import Scope, parse
from exercises import references
from formats.compare import compare, is_numeric
from formats.key_shape import answer_names, gradings
from formats.serialize import decode_names

from .verdicts import FAILED, PARTIAL, PASSED, Verdict

FOLLOW_THROUGH = "Follow-through:"


def _student_values(recipe: dict, names: dict, values: dict, answers: dict) -> dict | None:
    """The student's answers to the parts the recipe reads, as float arrays of the expected
    shapes; None when one is missing, not numeric or of another shape."""
    out = {}
    for part in recipe["parts"]:
        value = values.get(names.get(part, ""))
        expected = answers.get(part)
        if value is None or isinstance(value, str) or not is_numeric(value) or not is_numeric(expected):
            return None
        if np.shape(value) != np.shape(expected):
            return None
        out[part] = np.asarray(value, dtype=float) if np.ndim(value) else float(value)
    return out


def _recomputed(recipe: dict, student: dict):
    """The part's answer from the student's earlier answers (None when the recipe raises)."""
    scope = Scope(values={**decode_names(recipe["values"]), **student}, functions=dict(references.FUNCTIONS),
                  strict=False)
    try:
        with np.errstate(all="ignore"):
            return parse(recipe["expression"]).evaluate(scope)
    except Exception:  # noqa: BLE001 — a recipe that cannot run on these numbers earns nothing
        return None


def carried(record: dict, values: dict, verdicts: dict) -> dict:
    """``verdicts`` with follow-through credit given where it is due (a new dict)."""
    recipes = record.get("follow") or {}
    if not recipes:
        return verdicts
    share = float(record.get("follow_credit", 1.0))
    names, answers = answer_names(record), decode_names(record["answers"])
    first = dict(verdicts)                       # what each part earned on its own
    out = dict(verdicts)
    for grading in gradings(record):
        part = grading["id"]
        recipe = recipes.get(part)
        verdict = first.get(part)
        if recipe is None or verdict is None or verdict.status != FAILED:
            continue
        wrong = [p for p in recipe["parts"] if first.get(p) is not None and first[p].status != PASSED]
        student = _student_values(recipe, names, values, answers) if wrong else None
        if student is None:
            continue
        again = _recomputed(recipe, student)
        value = values.get(names.get(part, ""))
        if again is None or value is None or not compare(value, again, float(grading["rtol"]),
                                                         float(grading["atol"])).ok:
            continue
        points = verdict.max_score
        given = ", ".join(f"`{names.get(p, p)}`" for p in wrong)
        out[part] = Verdict(round(points * share, 6), points, PASSED if share >= 1 else PARTIAL,
                            f"{FOLLOW_THROUGH} `{names.get(part, part)}` is not the expected value, but it "
                            f"is correct given your {given}, which {'is' if len(wrong) == 1 else 'are'} "
                            f"wrong: this step earns {share:.0%} of its points.")
    return out
