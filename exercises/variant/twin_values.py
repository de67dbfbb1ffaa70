"""The twins' values on a variant: each listed twin's answers (it must be caught: outside
twice the tolerance), an answer with one reference function swapped for another and only
what the swap changes worked out again, the values the same on every draw, and a twin run
on a hidden case. ``variant`` keeps the listed twins' values; ``mistake_search`` searches
the unlisted ones with the same tools."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from formats import serialize

from exercises.template import references
from formats.compare import within
from exercises.template.builtin_functions import BUILTINS as _BUILTINS

from exercises.variant.evaluation import (UNSET, Rejected, TestCase, fresh_copy, output_of,
                                          per_template, plain_value, scope_for)


def jsonable_twins(twins: dict) -> dict:
    """The twins' answers as the key stores them (packed: only the kit reads them); one that
    cannot be stored (an object, a complex number) is left out: that mistake is then caught
    but not named."""
    stored = {}
    for name, answers in twins.items():
        try:
            stored[name] = serialize.to_packed(answers)
        except serialize.NotSerializable:
            continue
    return stored


def misconceptions_caught(template, variant, evaluator) -> None:
    """Every listed twin is caught on this variant; what each gives is kept in
    ``variant.twins`` so the grader can name the mistake a wrong answer matches."""
    if template.kind == "implement":
        for name in template.misconceptions:
            twin = references.TWINS[name].function
            outputs = [twin_output(template, evaluator, twin, case, variant) for case in variant.tests]
            if not any(out is RAISED or not too_close_to(out, case.expected, template.rtol, template.atol)
                       for out, case in zip(outputs, variant.tests)):
                raise Rejected(f"misconception {name} passes every hidden test")
            variant.twins[name] = [None if out is RAISED else out for out in outputs]
        return
    constant, known = constant_parts(template), same_on_every_draw(template)
    for name in template.all_misconceptions:
        twin = references.TWINS[name]
        parts = [p for p in template.parts if name in p.misconceptions]
        # a part the same on every draw was checked by the first variant that got this far
        todo = [p for p in parts if ("twin", name, p.id) not in known]
        try:
            wrong = answers_with(template, variant, evaluator, twin.shadows, twin.function, todo) if todo else {}
        except Exception as err:  # noqa: BLE001 — a twin that crashes could never be diagnosed
            raise Rejected(f"misconception {name} raises {type(err).__name__} here") from None
        for part in todo:
            if too_close_to(wrong[part.id], variant.answers[part.id], part.rtol, part.atol):
                raise Rejected(f"misconception {name} is within twice the tolerance of the "
                               f"answer to part {part.id}")
            if part.id in constant:
                known["twin", name, part.id] = wrong[part.id]
        variant.twins[name] = {p.id: wrong[p.id] if p.id in wrong else known["twin", name, p.id]
                               for p in parts}


def answers_with(template, variant, evaluator, shadows: str, function, parts,
                  where_defined: bool = False) -> dict:
    """part id → the answer of each of ``parts`` with ``function`` in place of the reference
    function ``shadows`` (a twin, or a lookalike). Values the swap cannot change are reused;
    only what these parts need and the swapped call can change is recomputed. A swapped call
    that raises raises, unless ``where_defined``: then it leaves out only the parts that need
    it (QK needs a square K, and a template may call the function on other shapes elsewhere).

    What the swap changes in a value that is the same on every draw (the lecture's own
    numbers: ``constant_table``) is the same on every draw too: computed once per template,
    twin and process."""
    plan = _plan(template, shadows, parts)
    functions = {**references.FUNCTIONS, shadows: function}
    redo = plan.redo
    unchanged = {k: v for k, v in variant.values.items() if k not in redo}
    scope = scope_for(template, unchanged, variant.rng_seed, strict=False, functions=functions)
    cached = constant_table(template, functions, (shadows, function))
    values = scope.values
    if not where_defined:
        evaluator.derive(plan.derived, scope, "derived", cached)
        return {part.id: plain_value(part.answer.evaluate(scope)) for part in parts}
    broken: set[str] = set()
    for d in plan.derived:
        if not d.expression.names & broken:
            name = d.name
            if name in cached.names:
                hit = cached.values.get(name, UNSET)
                if hit is not UNSET:
                    values[name] = hit
                    continue
            try:
                value = values[name] = d.expression.evaluate(scope)
                if name in cached.names:
                    cached.values[name] = value
                continue
            except Exception:  # noqa: BLE001 — the mistake cannot be made here: no value to name
                pass
        broken.add(d.name)
    out = {}
    for part, needs in zip(parts, plan.needs):
        if not needs & broken:
            try:
                out[part.id] = plain_value(part.answer.evaluate(scope))
            except Exception:  # noqa: BLE001
                pass
    return out


@dataclass
class _Plan:
    redo: frozenset           # the derived values to recompute
    derived: list             # those, in the template's order
    needs: list               # per part: the derived values its answer reads


_PLANS: dict[int, tuple] = {}


def _plan(template, shadows: str, parts) -> _Plan:
    """What ``answers_with`` recomputes for a swap of ``shadows`` on ``parts``: a function
    of the template alone, so worked out once per (template, function, parts) and process."""
    cached = _PLANS.get(id(template))
    if cached is None or cached[0] is not template:
        cached = _PLANS[id(template)] = (template, {})
    key = (shadows, tuple(id(p) for p in parts))
    plan = cached[1].get(key)
    if plan is None:
        redo = frozenset(affected_by(template, shadows) & needed_by(template, parts))
        plan = _Plan(redo, [d for d in template.derived if d.name in redo],
                     [needed_by(template, [p]) for p in parts])
        cached[1][key] = (parts, plan)
    else:
        plan = plan[1]
    return plan


@dataclass
class _Constant:
    names: frozenset          # derived values that read only constants (no draw, no rng)
    values: dict              # name → value, filled on first use


_CONSTANT: dict[int, tuple] = {}


def constant_names(template) -> frozenset:
    """The derived values that are the same on every draw of ``template``: they read only
    constant parameters, other such values and built-in constants (never ``rng``, never a
    drawn parameter). Their values with any one function table are therefore the same on
    every draw too."""
    return _same_on_every_draw(template)[0]


def constant_parts(template) -> frozenset:
    """The ids of the parts whose answer is the same on every draw: it reads only what
    ``constant_names`` holds, constant parameters and built-in constants (the lecture's own
    numbers). What a twin gives on such a part, and what the mistake search finds there, is
    then the same on every draw too (``same_on_every_draw``)."""
    return _same_on_every_draw(template)[1]


_SAME: dict[int, tuple] = {}


def _same_on_every_draw(template) -> tuple[frozenset, frozenset]:
    return per_template(_SAME, template, _constant_names_and_parts)


def _constant_names_and_parts(template) -> tuple[frozenset, frozenset]:
    parameters = {p.name: p for p in template.parameters}
    derived = {d.name for d in template.derived}
    constant = {name for name, p in parameters.items() if p.distribution is None}

    def reads_constants_only(names) -> bool:
        return all(n in constant or (n not in parameters and n not in derived and n != "rng"
                                     and (n in references.CONSTANTS
                                          or (n in _BUILTINS and not callable(_BUILTINS[n]))))
                   for n in names)

    for d in template.derived:
        if reads_constants_only(d.expression.names):
            constant.add(d.name)
    parts = frozenset(p.id for p in template.parts
                      if p.answer is not None and reads_constants_only(p.answer.names))
    return frozenset(constant & derived), parts


def same_on_every_draw(template) -> dict:
    """A per-template, per-process table for what validation finds on ``constant_parts``:
    filled by the first variant, read by every later one (keys are the caller's)."""
    return per_template(_SAME_FOUND, template, lambda _: {})


_SAME_FOUND: dict[int, tuple] = {}


def constant_table(template, functions: dict, swap=None) -> _Constant:
    """The cache of ``constant_names(template)`` for one function table: the template's own
    (``swap`` None) or the reference table with ``swap`` = (name, function) in place."""
    cached = _CONSTANT.get(id(template))
    if cached is None or cached[0] is not template:
        cached = _CONSTANT[id(template)] = (template, constant_names(template), {})
    key = (swap, id(functions.get(swap[0])) if swap else id(functions))
    table = cached[2].get(key)
    if table is None:
        table = cached[2][key] = _Constant(cached[1], {})
    return table


def affected_by(template, function_name: str) -> set[str]:
    """The derived values that call ``function_name``, directly or through another one."""
    affected: set[str] = set()
    for d in template.derived:
        if function_name in d.expression.calls or d.expression.names & affected:
            affected.add(d.name)
    return affected


def too_close_to(wrong, expected, rtol, atol) -> bool:
    """A twin's answer must lie outside twice the tolerance, so that no answer the grader
    accepts is also within tolerance of the mistake (diagnosis is never ambiguous)."""
    return quick_within(wrong, expected, 2 * rtol, 2 * atol)


FLOATS = (float, np.float64)
_INTS = (int, np.int64)


def quick_within(actual, expected, rtol, atol) -> bool:
    """``formats.compare.within``, with the answer to the commonest question of validation
    — two finite floats, or two whole numbers — given without building arrays: the same
    rule, the same IEEE arithmetic (|a − e| ≤ atol + rtol·|e|; whole numbers exactly), so
    the same verdict. Everything else goes to ``within``."""
    ta, te = type(actual), type(expected)
    if ta in FLOATS and te in FLOATS:
        if math.isfinite(actual) and math.isfinite(expected):
            return abs(actual - expected) <= atol + rtol * abs(expected)
    elif ta in _INTS and te in _INTS and -2**62 < actual < 2**62 and -2**62 < expected < 2**62:
        return actual == expected
    return within(actual, expected, rtol, atol)


def needed_by(template, parts) -> set[str]:
    """The derived values the answers of ``parts`` read, directly or through another one."""
    needed: set[str] = set().union(*(p.answer.names for p in parts)) if parts else set()
    for d in reversed(template.derived):
        if d.name in needed:
            needed |= d.expression.names
    return needed


RAISED = object()


def twin_output(template, evaluator, twin, case, variant):
    """The twin's output on a hidden case, or RAISED (a function that raises fails it)."""
    try:
        result = _called(twin, case)
        if template.output is None:
            return plain_value(result)
        scope = scope_for(template, dict(variant.values), variant.rng_seed, strict=False)
        return output_of(template, evaluator, result, scope)
    except Exception:  # noqa: BLE001 — a student function that raises fails the case
        return RAISED


def _called(function, case: TestCase):
    """``function(**case.args)`` on read-only views of the case's arrays: no copy for each of
    the many twins run on a case. A function that writes into its arguments is called again
    on copies, as a student's function would be; an output that is a view of the arguments is
    copied."""
    views = _read_only_args(case)
    if views is None:
        return function(**fresh_copy(case.args))
    try:
        result = function(**views)
    except ValueError as err:
        if "read-only" not in str(err):
            raise
        return function(**fresh_copy(case.args))
    if isinstance(result, np.ndarray) and not result.flags.writeable:
        result = result.copy()
    return result


_IMMUTABLE = (int, float, bool, str, bytes, type(None), np.generic)


def _read_only_args(case: TestCase) -> dict | None:
    """The case's arguments as read-only views (made once per case), or None when one is not
    an array or an immutable value (a list could be changed in place)."""
    views = case._read_only
    if views is None:
        if not all(isinstance(v, (np.ndarray, *_IMMUTABLE)) for v in case.args.values()):
            views = False
        else:
            views = {}
            for name, value in case.args.items():
                if isinstance(value, np.ndarray):
                    value = value.view()
                    value.flags.writeable = False
                views[name] = value
        case._read_only = views
    return views or None
