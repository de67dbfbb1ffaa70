"""Follow-through credit: a part done right on the student's own earlier (wrong) answers.

The key holds, for each part with a template ``follow`` expression (``exercises.template.follow``),
how its answer is computed from earlier parts' answers, and the other values that needs.
When such a part failed and an earlier part it reads was wrong, the part is computed again
here — with the reference functions, in this trusted process — from the student's own
earlier answers; if the student's value matches within the part's tolerance, the part earns
``follow_credit`` × its points and says "correct, given your …". Chains work step by step:
(d) is judged on the student's (c), whatever (c) earned.

Credit is withheld, and the feedback says why, where it would pay for no understanding:

* a carried answer is **degenerate** (``formats.degenerate``: all zeros, flat rows such as
  constant or one-hot ones, NaN) while the key's answer for that step is not: the later
  steps then do no real work, and any page of zeros would be "consistent";
* the part **lists the mistake** the carried answer makes (a twin the part lists gives the
  student's earlier answer, or the part's own verdict names one): the part exists to catch
  exactly that mistake, so carrying it forward must not pay.

Bounded work: the recipe runs only on earlier answers of exactly the expected shape (the
template's own sizes), finite or not; one that raises earns nothing. A follow-through is
recorded as such: status ``passed`` (full credit) or ``partial``, and a message starting
with ``FOLLOW_THROUGH``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from exercises.template.expressions import Scope, parse
from exercises.template import references
from formats.compare import compare, is_numeric, matches_twin
from formats.degenerate import degenerate
from formats.degenerate import describe as describe_form
from formats.key_shape import answer_names, gradings
from formats.serialize import decode_names, from_jsonable
from solutions import TWINS

from grader.verdicts.parts import FAILED, PARTIAL, PASSED, Verdict, gives_part

FOLLOW_THROUGH = "Follow-through:"
FOLLOW_WITHHELD = "No follow-through:"


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


def recompute(recipe: dict, student: dict):
    """The part's answer from the student's earlier answers (None when the recipe raises)."""
    scope = Scope(values={**decode_names(recipe["values"]), **student}, functions=dict(references.FUNCTIONS),
                  strict=False)
    try:
        with np.errstate(all="ignore"):
            return parse(recipe["expression"]).evaluate(scope)
    except Exception:  # noqa: BLE001 — a recipe that cannot run on these numbers earns nothing
        return None


def carried(record: dict, values: dict, verdicts: dict) -> dict:
    """``verdicts`` with follow-through credit given where it is due (a new dict), and withheld
    with the reason said where the carried answer is degenerate or is the part's own mistake."""
    recipes = record.get("follow") or {}
    if not recipes:
        return verdicts
    share = float(record.get("follow_credit", 1.0))
    names, answers = answer_names(record), decode_names(record["answers"])
    tolerances = {g["id"]: (float(g["rtol"]), float(g["atol"])) for g in gradings(record) if "id" in g}
    first = dict(verdicts)                       # what each part earned on its own
    out = dict(verdicts)
    trivial: dict[str, str] = {}                 # part → why: consistent with a degenerate answer
    for grading in gradings(record):
        part = grading["id"]
        recipe = recipes.get(part)
        verdict = first.get(part)
        if recipe is None or verdict is None or verdict.status != FAILED:
            continue
        wrong = [p for p in recipe["parts"] if first.get(p) is not None and first[p].status != PASSED]
        student = _student_values(recipe, names, values, answers) if wrong else None
        if student is None or not _consistent(recipe, student, values.get(names.get(part, "")), grading):
            continue
        withheld = _own_mistake(record, grading, verdict, wrong, student, tolerances)
        if withheld is None:
            why = (_trivial(wrong, student, answers, tolerances, names, trivial)
                   or _trivial_result(part, values.get(names.get(part, "")), answers, tolerances, names))
            withheld = None if why is None else (why, None)
            if why is not None:
                trivial[part] = why
        if withheld is not None:
            out[part] = _withheld(verdict, *withheld, names.get(part, part))
            continue
        points = verdict.max_score
        given = ", ".join(f"`{names.get(p, p)}`" for p in wrong)
        out[part] = Verdict(round(points * share, 6), points, PASSED if share >= 1 else PARTIAL,
                            f"{FOLLOW_THROUGH} `{names.get(part, part)}` is not the expected value, but it "
                            f"is correct given your {given}, which {'is' if len(wrong) == 1 else 'are'} "
                            f"wrong: this step earns {share:.0%} of its points.")
    return out


def _consistent(recipe: dict, student: dict, value, grading: dict) -> bool:
    """Does the student's value for the part follow, by the recipe, from their earlier answers?"""
    again = recompute(recipe, student)
    return again is not None and value is not None and compare(
        value, again, float(grading["rtol"]), float(grading["atol"])).ok


def _own_mistake(record: dict, grading: dict, verdict: Verdict, wrong: list[str], student: dict,
                 tolerances: dict) -> tuple[str, str | None] | None:
    """(why, twin) when the part exists to catch the student's mistake: its verdict already
    names a twin it lists, or a twin it lists gives the student's carried answer."""
    listed = [name for name in grading.get("misconceptions", ()) if name in TWINS]
    if verdict.misconception in listed:
        return "", None                       # the verdict's own message names it already
    twins = record.get("twins", {})
    for name in listed:
        for part in wrong:
            stored = twins.get(name)
            if not gives_part(stored, part):
                continue
            rtol, atol = tolerances.get(part, (0.0, 0.0))
            if matches_twin(student[part], from_jsonable(stored["dict"][part]), rtol, atol):
                return (f"it follows from your earlier answers, but they carry the very mistake this "
                        f"step checks for: {TWINS[name].summary}. {TWINS[name].explanation} "
                        "No credit is carried forward."), name
    return None


def _trivial(wrong: list[str], student: dict, answers: dict, tolerances: dict, names: dict,
             trivial: dict[str, str]) -> str | None:
    """Why a carried answer makes this step trivial: it is degenerate (``formats.degenerate``),
    or it was itself worked from a degenerate answer (``trivial``: part → why, down a chain)."""
    for part in wrong:
        if part in trivial:
            return trivial[part]
        rtol, atol = tolerances.get(part, (0.0, 0.0))
        form = degenerate(student[part], answers[part], rtol, atol)
        if form is not None:
            return (f"it follows from your `{names.get(part, part)}`, but that "
                    f"{describe_form(form, student[part], atol)}, so the steps after it do no real "
                    "work: no credit is carried forward.")
    return None


def _trivial_result(part: str, value, answers: dict, tolerances: dict, names: dict) -> str | None:
    """Why the step's own result is trivial: an array that is degenerate where the answer is
    not (``V = 0`` in a list of projections makes the output 0, whatever the weights). A
    single number is never judged so: 0 is an ordinary token id or count."""
    if np.ndim(value) == 0 or np.size(value) < 2:
        return None
    rtol, atol = tolerances.get(part, (0.0, 0.0))
    form = degenerate(value, answers[part], rtol, atol)
    if form is None:
        return None
    return (f"it follows from your earlier answers, but it {describe_form(form, value, atol)} itself, "
            "so this step did no real work on them: no credit is carried forward.")


def _withheld(verdict: Verdict, why: str, twin: str | None, name: str) -> Verdict:
    """The part's own verdict, with why follow-through credit is not given (and the twin named).
    Where the carried answer names the mistake its own verdict could not tell apart from others
    ("3 different mistakes give this value"), the mistake is known now: one explanation, not two."""
    if not why:
        return verdict
    if twin is not None and not verdict.misconception:
        return replace(verdict, message=f"`{name}` is not the expected value. {FOLLOW_WITHHELD} {why}",
                       misconception=twin)
    return replace(verdict, message=f"{verdict.message} {FOLLOW_WITHHELD} {why}",
                   misconception=verdict.misconception or twin)
