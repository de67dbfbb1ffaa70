"""What a correct grader must report: every part's verdict, computed from the answer key
alone with ``formats.compare`` (the kit's one comparison) and never from the grader's own
code, so the grader's tests compare it against an independent oracle.

Also the answers for other givens (``recompute_answers``): what a problem's parts come to
when a student edits its locked givens (the ``edited_givens`` profile)."""

from __future__ import annotations

import numpy as np

from formats import key_shape as shape
from formats.cells import LETTERS
from formats.compare import compare, within
from formats.serialize import decode_names, from_jsonable, same_value
from solutions.same_error import GROUPS

PASSED, FAILED, PARTIAL, MISSING, MANUAL = "passed", "failed", "partial", "missing", "manual"

LOST = object()           # the answer cell never assigns its variable (placeholder, crash)


def _verdict(status: str, score: float, points: float, misconception: str | None = None) -> dict:
    return {"status": status, "score": float(score), "max_score": float(points),
            "misconception": misconception}


def close(a, b, rtol: float, atol: float) -> bool:
    try:
        return within(a, b, rtol, atol)
    except Exception:  # noqa: BLE001 — values that cannot be compared are not close
        return False


def _one_explanation(found: list[str], alike: list[str]) -> str | None:
    """A correct grader names a mistake only when it is the one explanation: exactly one error
    among the listed twins and the stored lookalikes (the twins the build found for the part)
    that match — two codes of one error (``solutions.same_error.GROUPS``, read as data) being
    one, named by the first that matched."""
    names = found + [n for n in alike if n not in found]
    errors: list[str] = []
    for n in names:
        if not any(n == e or any(n in g and e in g for g in GROUPS) for e in errors):
            errors.append(n)
    return errors[0] if len(errors) == 1 else None


def expect_numeric(grading: dict, expected, value, twins: dict, lookalikes: dict | None = None) -> dict:
    """``twins``: twin name → its value for this part; ``lookalikes``: the other twins the
    build's mistake search stored for this part, name → value."""
    points = shape.points(grading)
    if value is LOST:
        return _verdict(MISSING, 0.0, points)
    rtol, atol = float(grading["rtol"]), float(grading["atol"])
    try:
        ok = compare(value, expected, rtol, atol).ok
    except Exception:  # noqa: BLE001
        ok = False
    if ok:
        return _verdict(PASSED, points, points)
    found = [t for t in grading.get("misconceptions", ()) if t in twins and _close_or_both_nan(value, twins[t], rtol, atol)]
    alike = [n for n, v in (lookalikes or {}).items() if n not in found and _close_or_both_nan(value, v, rtol, atol)]
    if not found and not _many_values(expected):
        alike = []          # a searched mistake alone never names a count, an index or one number
    return _verdict(FAILED, 0.0, points, _one_explanation(found, alike))


def _many_values(expected) -> bool:
    """Is the answer an array a match on can name a mistake by: at least four numbers, real
    or (whole numbers) of at least five different values? (The grader's rule, written here
    again so the oracle does not share its code.)"""
    try:
        a = np.asarray(expected)
        if a.dtype.kind not in "iuf" or isinstance(expected, (str, bool)):
            return False
        a = a.astype(float)[np.isfinite(a.astype(float))]
    except (TypeError, ValueError):
        return False
    return a.size >= 4 and (bool(np.any(a != np.round(a))) or len(set(a.tolist())) >= 5)


def expect_choice(grading: dict, correct: int, value) -> dict:
    points = shape.points(grading)
    if value is LOST:
        return _verdict(MISSING, 0.0, points)
    ok = isinstance(value, str) and value.strip().upper() == LETTERS[correct]
    return _verdict(PASSED if ok else FAILED, points if ok else 0.0, points)


def expect_implement(record: dict, mode: str) -> dict:
    """family → verdict; ``mode`` is "correct", "lost" (the cell never defined the function:
    every case fails), "placeholder" (it raises), "missing" (no readable notebook at all) or a
    twin's name (the function gives that twin's stored output on every case)."""
    rtol, atol = float(record["rtol"]), float(record["atol"])
    stored = {name: from_jsonable(outs) for name, outs in record.get("twins", {}).items()}
    verdicts = {}
    for family in shape.gradings(record):
        name, points = shape.part_id(family), shape.points(family)
        positions = [i for i, t in enumerate(record["tests"]) if t["family"] == name]
        if mode == "correct":
            verdicts[name] = _verdict(PASSED, points, points)
            continue
        if mode == "missing":
            verdicts[name] = _verdict(MISSING, 0.0, points)
            continue
        if mode in ("lost", "placeholder"):
            verdicts[name] = _verdict(FAILED, 0.0, points)
            continue
        outputs = stored[mode]
        failed = [p for p in positions if outputs[p] is None or not _same_outputs(
            outputs[p], from_jsonable(record["tests"][p]["expected"]), rtol, atol)]
        if not failed:
            verdicts[name] = _verdict(PASSED, points, points)
            continue
        passed = len(positions) - len(failed)

        def gives(wrong, failed=frozenset(failed)) -> bool:
            # the twin behaves like the student's function on every case of the problem: where
            # it raises, so must the student's on a failed case; elsewhere a NaN output (a row
            # with nothing to attend to, which the reference gives 0) proves nothing
            if any(p >= len(wrong) for p in failed):
                return False
            for p, w in enumerate(wrong):
                if w is None:
                    if p in failed and outputs[p] is not None:
                        return False
                    continue
                mine = outputs[p]
                if mine is None or not _same_outputs(_blocked_as_zero(mine, w), w, rtol, atol, nan_equal=True):
                    if p in failed or mine is None or _finite(mine):
                        return False
            return True
        found = [t for t in record.get("misconceptions", ()) if t in stored and gives(stored[t])]
        alike = [n for n, outs in record.get("lookalikes", {}).items()
                 if n not in found and gives(from_jsonable(outs))]
        verdicts[name] = _verdict(PARTIAL if passed else FAILED,
                                  points * passed / len(positions), points, _one_explanation(found, alike))
    return verdicts


def _blocked_as_zero(got, want):
    """NaN outputs where the twin gives exactly 0 (every NaN of an output), as 0."""
    pairs = zip(got, want) if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)) else [(got, want)]
    out = []
    for g, w in pairs:
        try:
            g2, w2 = np.asarray(g, dtype=float), np.asarray(w, dtype=float)
        except (TypeError, ValueError):
            out.append(g)
            continue
        nan = np.isnan(g2) if g2.shape == w2.shape else np.zeros(0, bool)
        out.append(np.where(nan, 0.0, g2) if nan.any() and (w2[nan] == 0).all() else g)
    return out if isinstance(got, (list, tuple)) else out[0]


def _finite(got) -> bool:
    try:
        return all(np.isfinite(np.asarray(g, dtype=float)).all()
                   for g in (got if isinstance(got, (list, tuple)) else [got]))
    except (TypeError, ValueError):
        return True


def _same_outputs(got, want, rtol, atol, nan_equal: bool = False) -> bool:
    """The notebook's rule: a tuple or list is the function's outputs, anything else one.
    ``nan_equal``: NaN where the twin has NaN counts as the same (a diagnosis: a softmax that
    overflows gives NaN for the student exactly where it does for the twin)."""
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    same = _close_or_both_nan if nan_equal else close
    return len(got) == len(want) and all(same(g, w, rtol, atol) for g, w in zip(got, want))


def _close_or_both_nan(a, b, rtol: float, atol: float) -> bool:
    try:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    except (TypeError, ValueError):
        return close(a, b, rtol, atol)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    return close(np.where(np.isnan(a), 0.0, a), np.where(np.isnan(b), 0.0, b), rtol, atol)


def expectations(entry: dict, values: dict, modes: dict, follow_through: bool = True) -> dict:
    """problem → part (implement: family) → verdict, for a notebook whose answer cells assign
    ``values`` ((problem, part) → value, ``LOST`` or a free response's text; a part not in it
    is lost) and whose implement problems behave as ``modes`` says (problem → mode of
    ``expect_implement``; "placeholder" where it says nothing). ``follow_through`` False: a
    handin a correct grader gives no follow-through credit (another student's notebook,
    edited givens)."""
    expected = {}
    for pid, record in shape.problem_records(entry):
        kind = shape.kind(record)
        if kind == shape.IMPLEMENT:
            expected[pid] = expect_implement(record, modes.get(pid, "placeholder"))
            continue
        answers = decode_names(record["answers"]) if kind != shape.FREE_RESPONSE else {}
        twins = {name: from_jsonable(v) for name, v in record.get("twins", {}).items()}
        lookalikes = {name: from_jsonable(v) for name, v in record.get("lookalikes", {}).items()}
        parts = {}
        for g in shape.gradings(record):
            part = shape.part_id(g)
            value = values.get((pid, part), LOST)
            if kind == shape.FREE_RESPONSE:
                parts[part] = _verdict(MISSING if value is LOST else MANUAL, 0.0, shape.points(g))
            elif kind == "choice":
                parts[part] = expect_choice(g, int(answers[part]), value)
            else:
                part_twins = {t: v[part] for t, v in twins.items() if isinstance(v, dict) and part in v}
                alike = {n: v[part] for n, v in lookalikes.items() if isinstance(v, dict) and part in v}
                parts[part] = expect_numeric(g, answers[part], value, part_twins, alike)
        if kind == "numeric" and record.get("follow") and follow_through:
            parts = _with_follow_through(record, pid, values, answers, parts, twins)
        expected[pid] = parts
    return expected


def _with_follow_through(record: dict, pid: str, values: dict, answers: dict, parts: dict,
                         twins: dict) -> dict:
    """The follow-through credit a correct grader gives: a failed part whose recipe, run on
    the student's own earlier answers (of the expected shapes), gives the student's value,
    while an earlier answer it reads was not right on its own — unless that earlier answer
    is degenerate (or was worked from one), or is a mistake the part lists."""
    share = float(record.get("follow_credit", 1.0))
    tolerance = {shape.part_id(g): (float(g["rtol"]), float(g["atol"])) for g in shape.gradings(record)}
    out, trivial = dict(parts), set()
    for g in shape.gradings(record):
        part, recipe = shape.part_id(g), record["follow"].get(shape.part_id(g))
        if recipe is None or parts[part]["status"] != FAILED:
            continue
        used = recipe["parts"]
        mine = {u: values.get((pid, u), LOST) for u in used}
        if all(parts[u]["status"] == PASSED for u in used) or any(
                v is LOST or isinstance(v, str) or _shape(v) != np.shape(answers[u]) for u, v in mine.items()):
            continue
        again = _run_recipe(recipe, mine)
        if again is None or not close(values.get((pid, part), LOST), again, float(g["rtol"]), float(g["atol"])):
            continue
        wrong = [u for u in used if parts[u]["status"] != PASSED]
        listed = [t for t in g.get("misconceptions", ()) if t in twins]
        if parts[part]["misconception"] in listed:
            continue
        twin = next((t for t in listed for u in wrong if isinstance(twins[t], dict) and u in twins[t]
                     and _close_or_both_nan(mine[u], twins[t][u], *tolerance[u])), None)
        if twin is not None:
            out[part] = _verdict(FAILED, 0.0, shape.points(g), twin)
            continue
        mine_here = values.get((pid, part), LOST)
        if any(u in trivial or _degenerate(mine[u], answers[u], *tolerance[u]) for u in wrong) or (
                np.ndim(mine_here) >= 1 and np.size(mine_here) >= 2
                and _degenerate(mine_here, answers[part], *tolerance[part])):
            trivial.add(part)
            continue
        points = shape.points(g)
        out[part] = _verdict(PASSED if share >= 1 else PARTIAL, round(points * share, 6), points)
    return out


def _shape(value):
    """The shape of a student's numeric value; None for text, ragged lists and the like."""
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return a.shape if a.dtype.kind in "biuf" else None


def _run_recipe(recipe: dict, mine: dict):
    from exercises.template.expressions import Scope, parse
    from exercises.template.references import FUNCTIONS

    scope = Scope({**decode_names(recipe["values"]), **{u: np.asarray(v, dtype=float) for u, v in mine.items()}},
                  functions=dict(FUNCTIONS), strict=False)
    try:
        with np.errstate(all="ignore"):
            return parse(recipe["expression"]).evaluate(scope)
    except Exception:  # noqa: BLE001 — a recipe that cannot run earns nothing
        return None


def _degenerate(value, expected, rtol: float, atol: float) -> bool:
    """The degenerate-answer rule, written out row by row: not finite, all zero, or every row
    equal on its entries that are not zero — where the expected answer is not so."""
    def forms(a) -> set:
        a = np.asarray(a, dtype=float)
        if not np.isfinite(a).all():
            return {"not finite"}
        found = {"zero"} if a.size and all(abs(x) <= atol for x in a.ravel().tolist()) else set()
        if a.ndim and a.shape[-1] >= 2 and a.size:
            def flat(row):
                big = [x for x in row if abs(x) > atol]
                return not big or max(big) - min(big) <= atol + rtol * max(abs(max(big)), abs(min(big)))
            if all(flat(row) for row in a.reshape(-1, a.shape[-1]).tolist()):
                found.add("flat")
        return found
    return bool(forms(value) - forms(expected))


# --- answers for other givens (edited_givens) --------------------------------------------

class Templates:
    """The bank's templates, loaded on first use, to recompute answers for edited givens."""

    def __init__(self):
        self._by_id = None

    def get(self, template_id: str):
        if self._by_id is None:
            from exercises.course.bank import load_bank
            self._by_id, _ = load_bank(keep_going=True)
        return self._by_id.get(template_id)


def recompute_answers(template, record: dict, edited: dict) -> dict | None:
    """part id → the answer for the record's variant with ``edited`` givens, or None when the
    template does not give back this variant or the edited values break it."""
    from exercises.template import references
    from exercises.template.expressions import Scope
    from exercises.variant.draw import make_variant

    try:
        variant = make_variant(template, int(record["seed"]))
    except Exception:  # noqa: BLE001 — another bank than the build's
        return None
    givens = decode_names(shape.givens_of(record))
    if set(variant.givens) != set(givens) or not all(
            same_value(_plain(variant.givens[n]), _plain(givens[n])) for n in givens):
        return None
    scope = Scope(values={**variant.values, **edited}, functions=dict(references.FUNCTIONS),
                  strict=False, tie_gap=template.tie_gap, rng_seed=variant.rng_seed)
    try:
        for d in template.derived:
            if d.name not in edited:
                scope.values[d.name] = d.expression.evaluate(scope)
        answers = {p.id: _plain(p.answer.evaluate(scope)) for p in template.parts}
    except Exception:  # noqa: BLE001 — easier numbers can make a problem ill-posed
        return None
    return answers


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
