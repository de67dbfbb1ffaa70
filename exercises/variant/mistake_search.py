"""The mistake search: which known mistakes a student could make on this variant, and when a
name would be a guess.

``search`` runs, for each numeric part, every registered twin of every reference function
the part's answer is computed with (``searched_parts``; ``solutions.twins.registry.twins_of``)
and keeps each wrong answer in ``variant.lookalikes``; for an ``implement`` problem, every
unlisted twin of its reference on every hidden case. The grader names a kept mistake when it
alone matches (on a ``formats.compare.telling`` part). Two listed twins that look alike, or a
searched twin that looks like a listed one, are redrawn while that can help (``_Redraws``:
the first AMBIGUITY_REDRAWS attempts, never for a structural look-alike found by
``structural``'s probe draws); otherwise both are kept, and the feedback offers both.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from formats import serialize
from formats.compare import is_numeric, within
from solutions.twins.registry import twins_of

from exercises.template import references
from exercises.template.model import TemplateError
from exercises.variant.evaluation import Rejected, VariantError
from exercises.variant.twin_values import (FLOATS, RAISED, affected_by, answers_with, constant_parts,
                                           needed_by, quick_within, same_on_every_draw, too_close_to,
                                           twin_output)

# the reductions of ndarray.all() and .any(), called without their Python wrappers
_ALL, _ANY = np.logical_and.reduce, np.logical_or.reduce


def search(template, variant, evaluator, attempt: int, collisions: set | None = None, *, probe) -> None:
    """Search the space of known mistakes on this variant, and keep each name unambiguous.

    The search: every registered twin of every reference function a part's answer is
    computed with (``twins_of``) — not only the twins the template lists — is run on the
    student's own variant; where it gives a wrong answer, its value is kept in
    ``variant.lookalikes`` (for ``implement``: its outputs on the hidden cases) and the
    grader names it like a listed twin. A template's list is what the author vouches for
    (synthetic profiles, the twins' tests); the search is what every student gets.

    Unambiguous: two listed twins of a part (for ``implement``: of a test family) that a
    student could match both are redrawn, and so is a searched twin that looks like a
    listed one, while redrawing can help (``_Redraws``). Otherwise both are kept and the
    grader says "matches either … or …" instead of a name. Raises ``Rejected`` to redraw;
    ``collisions`` (a probe, see ``structural``) collects every look-alike pair instead.
    ``probe(template, seed, collisions)``: a probe draw (``variant.probe_variant``; passed in,
    since the search is itself part of a draw).
    """
    redraws = _Redraws(template, attempt, collisions, probe)
    try:
        if template.kind == "implement":
            _functions_distinguishable(template, variant, evaluator, redraws)
        elif template.kind == "numeric":
            _answers_distinguishable(template, variant, evaluator, redraws)
    finally:
        _SIGNATURES.clear()


AMBIGUITY_REDRAWS = 4   # draws that may be redrawn because two mistakes look alike


def _may_redraw(template, parts, attempt: int) -> bool:
    """Redraw for an ambiguity only where that can change something and costs little: not
    for parts the same for every student (a constant part looks alike on every draw), and
    only in the first AMBIGUITY_REDRAWS attempts. Some ambiguities are structural — a batch
    axis makes softmax(axis=1) the softmax over the queries; d_model = h·d_head makes
    1/√d_model equal 1/d_head when h = d_head — and redrawing them for good would make the
    template unbuildable or silently drop a value from its distribution: such a variant
    keeps the ambiguity, and the grader says "matches either … or …"."""
    if attempt > AMBIGUITY_REDRAWS:
        return False
    if template.kind == "implement":
        # Hidden cases are large and many: a redraw costs every twin and every alternative
        # on all of them again, many times the variant's own cost. The grader names the
        # alternatives instead, from the outputs kept in the key.
        return False
    sampled = {p.name for p in template.parameters if p.distribution is not None}
    return bool(needed_by(template, parts) & sampled)


PROBES = 3        # fixed draws that tell a structural ambiguity from a chance one
PROBE_SEED = 2**256   # above every variant_seed (256 bits): no student's variant is a probe


class _Redraws:
    """Whether a draw in which two mistakes look alike is redrawn (``_may_redraw``), except
    for a pair that looks alike on every probe draw of the template (``structural``): a
    masked-after-the-softmax exponential *is* the unmasked one, whatever the numbers, and
    redrawing it can only burn AMBIGUITY_REDRAWS draws per variant and keep the ambiguity
    anyway. When ``collisions`` is a set (a probe), nothing is redrawn and every pair that
    looks alike is added to it."""

    def __init__(self, template, attempt: int, collisions: set | None, probe):
        self.template, self.attempt, self.collisions, self.probe = template, attempt, collisions, probe

    def redraw(self, parts, pair: tuple) -> bool:
        if self.collisions is not None:
            self.collisions.add(pair)
            return False
        return _may_redraw(self.template, parts, self.attempt) and pair not in structural(self.template, self.probe)


_STRUCTURAL: dict[int, tuple] = {}


def structural(template, probe) -> frozenset:
    """(mistake, mistake, part) that look alike on each of PROBES fixed draws of ``template``
    (``probe(template, seed, collisions)``: ``variant.probe_variant``).
    A pure function of the template (the probe seeds are fixed), so every process, worker
    and run draws the same variants; computed once per template and process."""
    cached = _STRUCTURAL.get(id(template))
    if cached is not None and cached[0] is template:
        return cached[1]
    _STRUCTURAL[id(template)] = (template, frozenset())     # while probing: consulted by no one
    seen = None
    for k in range(PROBES):
        collisions: set = set()
        try:
            probe(template, PROBE_SEED + k, collisions)
        except (VariantError, TemplateError):
            continue
        seen = collisions if seen is None else seen & collisions
    result = frozenset(seen or ())
    _STRUCTURAL[id(template)] = (template, result)
    return result


_SIGNATURES: dict[int, tuple] = {}   # id → (value, signature): one variant's, then cleared


def _signature(value):
    """(shape, Σx, Σ|x|, size) of a finite numeric value, else None (also where a sum would
    overflow: such values are then compared in full); computed once per value."""
    hit = _SIGNATURES.get(id(value))
    if hit is not None and hit[0] is value:
        return hit[1]
    try:
        x = np.asarray(value, dtype=float)
        magnitude = float(np.abs(x).sum())     # finite only when every entry is (and no sum overflows)
        signature = (x.shape, float(x.sum()), magnitude, x.size) if math.isfinite(magnitude) else None
    except (TypeError, ValueError):
        signature = None
    _SIGNATURES[id(value)] = (value, signature)
    return signature


def _surely_apart(a, b, rtol, atol) -> bool:
    """True only when a and b cannot be alike: other shapes, or sums further apart than any
    two alike arrays can be (alike ⇒ |Σa − Σb| ≤ Σ|a − b| ≤ 2·(size·atol + rtol·Σ|b|)).
    It spares the full comparison for almost every pair: the search compares every searched
    twin with every listed one on every part, for every student: the pairs are many."""
    sa, sb = _signature(a), _signature(b)
    if sa is None or sb is None:
        return False
    if sa[0] != sb[0]:
        return True
    bound = 2 * (sa[3] * atol + rtol * max(sa[2], sb[2])) + 1e-9 * (sa[2] + sb[2] + 1)
    return abs(sa[1] - sb[1]) > bound


def _alike(a, b, rtol, atol) -> bool:
    """Could one student's value match both a and b (each within the tolerance)? Twice the
    tolerance apart or less; NaN where both have NaN counts as equal, as in the grader."""
    if type(a) in FLOATS and type(b) in FLOATS and math.isfinite(a) and math.isfinite(b):
        # two numbers: the rule below, without arrays (same arithmetic, same verdict)
        return abs(a - b) <= 2 * atol + 2 * rtol * abs(b)
    if _surely_apart(a, b, rtol, atol):
        return False
    try:
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_alike(x, y, rtol, atol) for x, y in zip(a, b))
        if is_numeric(a) and is_numeric(b) and not isinstance(a, str) and not isinstance(b, str):
            x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            if x.shape != y.shape or (np.isnan(x) != np.isnan(y)).any():
                return False
            x, y = np.where(np.isnan(x), 0.0, x), np.where(np.isnan(y), 0.0, y)
            return within(x, y, 2 * rtol, 2 * atol)
        return within(a, b, 2 * rtol, 2 * atol)
    except Exception:  # noqa: BLE001 — values that cannot be compared are told apart
        return False


def _passes(value, expected, rtol, atol) -> bool:
    """Would the grader accept ``value`` (``compare``'s rule, via its fast path ``within``)?"""
    try:
        return quick_within(value, expected, rtol, atol)
    except Exception:  # noqa: BLE001
        return False


def _answers_distinguishable(template, variant, evaluator, redraws: _Redraws) -> None:
    # A part the same on every draw is never redrawn for (``_may_redraw``), so what the search
    # finds there is the same on every draw: found by the first variant, copied by the others
    # (on some templates a good share of the search). A probe (``structural``) searches it all.
    constant = constant_parts(template) if redraws.collisions is None else frozenset()
    known = same_on_every_draw(template)
    stacks: dict = {}
    for part in template.parts:
        if part.id in constant:
            continue
        listed = _listed_values(variant, part)
        stack = _stack(stacks, variant, part) if len(listed) > 1 else None
        alike = stack.pairs_alike(part.rtol, part.atol) if stack else None
        for (i, a), (j, b) in combinations(enumerate(listed), 2):
            if ((alike[i, j] if stack else _alike(listed[a], listed[b], part.rtol, part.atol))
                    and redraws.redraw([part], (a, b, part.id))):
                raise Rejected(f"misconceptions {a} and {b} agree on part {part.id}")
    for shadows, twins in _searched_twins(template):
        for alt, function, unlisted in twins:
            todo = []
            for part in unlisted:
                found = known.get(("searched", alt, part.id), _UNKNOWN) if part.id in constant else _UNKNOWN
                if found is _UNKNOWN:
                    todo.append(part)
                elif found is not None:
                    variant.lookalikes.setdefault(alt, {})[part.id] = found
            if not todo:
                continue
            wrong = answers_with(template, variant, evaluator, shadows, function, todo, where_defined=True)
            for part in todo:
                if part.id in wrong:
                    _keep_searched(variant, part, alt, wrong[part.id], redraws, stacks)
                if part.id in constant:     # kept, or None: nothing to keep
                    known["searched", alt, part.id] = variant.lookalikes.get(alt, {}).get(part.id)


_UNKNOWN = object()


_SEARCHED: dict[int, tuple] = {}


def searched_parts(template) -> dict:
    """reference function with twins → the numeric parts whose answer is computed with it
    (directly or through derived values). Computed once per template and process."""
    cached = _SEARCHED.get(id(template))
    if cached is not None and cached[0] is template:
        return cached[1]
    shadowed = {m.shadows for m in references.TWINS.values()}
    out: dict = {}
    for function in sorted(shadowed):
        affected = affected_by(template, function)
        parts = [p for p in template.parts if p.answer is not None
                 and (function in p.answer.calls or needed_by(template, [p]) & affected)]
        if parts:
            out[function] = parts
    _SEARCHED[id(template)] = (template, out)
    return out


def _searched_twins(template) -> list:
    """[(reference function, [(twin name, twin, the parts it is not listed on)])] in the
    search's order (``searched_parts``, then ``twins_of``), twins listed on every part left
    out: a function of the template alone, worked out once per template and process."""
    cached = _TWINS.get(id(template))
    if cached is not None and cached[0] is template:
        return cached[1]
    out = []
    for shadows, parts in searched_parts(template).items():
        twins = []
        for alt, function in twins_of(shadows).items():
            unlisted = [p for p in parts if alt not in p.misconceptions]
            if unlisted:
                twins.append((alt, function, unlisted))
        out.append((shadows, twins))
    _TWINS[id(template)] = (template, out)
    return out


_TWINS: dict[int, tuple] = {}


def _keep_searched(variant, part, alt, value, redraws: _Redraws, stacks: dict) -> None:
    """Keep ``alt``'s wrong value for ``part``; redraw (or keep both) where it looks like a
    listed twin's. A value within twice the tolerance of the answer is not kept: a student
    who made that mistake may pass, and one who fails could not be told from a slip. Kept on
    every part: on a part whose answer is not ``telling`` the grader never names it alone,
    but it still makes a listed twin's name doubtful."""
    try:
        if not serialize.storable(value):
            return
        stack = _stack(stacks, variant, part)
        verdict = stack.verdict(value, part.rtol, part.atol) if stack else None
        if verdict is None:         # not comparable in one expression: one by one
            if too_close_to(value, variant.answers[part.id], part.rtol, part.atol):
                return
            twin = next((n for n, twin_value in _listed_values(variant, part).items()
                         if _alike(twin_value, value, part.rtol, part.atol)), None)
        else:
            too_close, twin = verdict
            if too_close:
                return
    except Exception:  # noqa: BLE001 — a value that cannot be compared or stored is no diagnosis
        return
    if twin is not None and redraws.redraw([part], (twin, alt, part.id)):
        raise Rejected(f"misconception {twin} looks like {alt} on part {part.id}")
    variant.lookalikes.setdefault(alt, {})[part.id] = value


def _listed_values(variant, part) -> dict:
    """name → value on ``part`` of the listed twins this variant has one for, in the
    template's order."""
    return {n: variant.twins[n][part.id] for n in part.misconceptions
            if part.id in variant.twins.get(n, {})}


def _stack(stacks: dict, variant, part):
    """``part``'s ``_Stack`` on this variant, made on first use and kept in ``stacks`` (one
    search's), or None where its values cannot be stacked."""
    if part.id not in stacks:       # (a part with no answer is not an array: no stack)
        stacks[part.id] = _Stack.of(variant.answers.get(part.id), _listed_values(variant, part))
    return stacks[part.id]


class _Stack:
    """A part's answer and its listed twins' values as the rows of one array, when all are
    finite float64 arrays of one shape (most array parts). A searched value is then compared
    with the answer and every listed twin in one NumPy expression, instead of one
    ``too_close_to`` and one ``_alike`` call per twin, and the listed twins with each other in
    one more: a build compares every searched value of every student this way, and one NumPy
    expression costs less than a Python call per listed twin.

    The same rule in the same IEEE arithmetic as those two, entry by entry — |x − y| ≤
    2·atol + 2·rtol·|y|, y the answer for ``too_close_to`` and the second value for ``_alike``
    — so the same verdicts (tested against them; ``_alike``'s sum test only spares a
    comparison whose verdict it knows). Anything else is compared one by one as before
    (``verdict`` says None): NaN or ±inf, integers, lists, another shape, and plain numbers,
    which ``quick_within`` and ``_alike`` already compare without arrays."""

    __slots__ = ("names", "rows", "shape", "_bound")

    def __init__(self, names: list[str], rows: np.ndarray, shape: tuple):
        self.names, self.rows, self.shape = names, rows, shape
        self._bound = None      # (rtol, atol, 2·atol + 2·rtol·|answer|): one part's tolerances

    @classmethod
    def of(cls, answer, listed: dict):
        values = [answer, *listed.values()]
        shape = getattr(answer, "shape", None)
        if not all(type(v) is np.ndarray and v.dtype == np.float64 and v.shape == shape
                   for v in values):
            return None
        rows = np.stack(values).reshape(len(values), -1)
        return cls(list(listed), rows, shape) if _ALL(np.isfinite(rows), axis=None) else None

    def verdict(self, value, rtol, atol) -> tuple[bool, str | None] | None:
        """(within twice the tolerance of the answer, the first listed twin ``value`` looks
        like or None); None where ``value`` is not a finite float64 array of the shape."""
        if type(value) is not np.ndarray or value.dtype != np.float64 or value.shape != self.shape:
            return None
        row = value.reshape(-1)
        if not _ALL(np.isfinite(row), axis=None):
            return None
        # |x − y| = |y − x| exactly (IEEE subtraction): one difference for every row
        apart = np.abs(self.rows - row)
        if _ALL(apart[0] <= self._answer_bound(rtol, atol), axis=None):
            return True, None
        alike = _ALL(apart[1:] <= 2 * atol + 2 * rtol * np.abs(row), axis=1)
        return False, (self.names[int(alike.argmax())] if _ANY(alike, axis=None) else None)

    def _answer_bound(self, rtol, atol) -> np.ndarray:
        """``too_close_to``'s bound around the answer, the same numbers for every value the
        search compares on the part: made once."""
        bound = self._bound
        if bound is None or bound[0] != rtol or bound[1] != atol:
            bound = self._bound = (rtol, atol, 2 * atol + 2 * rtol * np.abs(self.rows[0]))
        return bound[2]

    def pairs_alike(self, rtol, atol) -> np.ndarray:
        """[i, j]: would ``_alike`` say listed twins i and j look alike (j as y)?"""
        twins = self.rows[1:]
        return _ALL(np.abs(twins[:, None] - twins[None, :])
                    <= 2 * atol + 2 * rtol * np.abs(twins)[None, :], axis=2)


def _functions_distinguishable(template, variant, evaluator, redraws: _Redraws) -> None:
    listed = [n for n in template.misconceptions if n in variant.twins]
    failures = _Failures(template, variant)
    may_redraw = _may_redraw(template, [], redraws.attempt)       # never for implement today
    if redraws.collisions is None and may_redraw:
        for a, b in combinations(listed, 2):
            family = _confused(failures, variant.twins[a], variant.twins[b])
            if family:
                raise Rejected(f"misconceptions {a} and {b} agree on test family {family}")
    for alt, function in twins_of(template.reference, listed).items():
        outputs = [twin_output(template, evaluator, function, case, variant) for case in variant.tests]
        outputs = [None if out is RAISED else out for out in outputs]
        if not failures.of(outputs) or all(out is None for out in outputs):
            continue                    # right on every case, or nothing to name it by
        # Which listed twin it looks like matters only where that redraws (or to a probe):
        # else the grader finds it from the outputs kept, and comparing each with every listed
        # twin would be a large share of an implement variant's build.
        if may_redraw or redraws.collisions is not None:
            twin = next((n for n in listed if _confused(failures, outputs, variant.twins[n])), None)
            if twin is not None and redraws.redraw([], (twin, alt, "")):
                raise Rejected(f"misconception {twin} looks like {alt} on a test family")
        variant.lookalikes[alt] = outputs


class _Failures:
    """The hidden cases each list of outputs fails, computed once per list: a template with
    17 twins compares every pair, and comparing each output with the expected value again
    for every pair would be most of the build's time. Also per list, computed once: the
    failed cases of each test family and each output's signature (``_signature``), which
    tell almost every pair apart without a comparison."""

    def __init__(self, template, variant):
        self.template, self.variant = template, variant
        self.families = [[i for i, c in enumerate(variant.tests) if c.family == f.family]
                         for f in template.tests]
        self._failed: dict[int, tuple[list, set]] = {}
        self._by_family: dict[int, tuple[list, list]] = {}
        self._signatures: dict[int, tuple[list, list]] = {}

    def of(self, outputs) -> set:
        cached = self._failed.get(id(outputs))
        if cached is None or cached[0] is not outputs:
            rtol, atol, tests = self.template.rtol, self.template.atol, self.variant.tests
            failed = {p for p, out in enumerate(outputs)
                      if out is None or not _passes(out, tests[p].expected, rtol, atol)}
            cached = self._failed[id(outputs)] = (outputs, failed)
        return cached[1]

    def by_family(self, outputs) -> list[list[int]]:
        """Per test family, the positions of the cases ``outputs`` fails."""
        cached = self._by_family.get(id(outputs))
        if cached is None or cached[0] is not outputs:
            failing = self.of(outputs)
            cached = self._by_family[id(outputs)] = (
                outputs, [[p for p in positions if p in failing] for positions in self.families])
        return cached[1]

    def signatures(self, outputs) -> list:
        cached = self._signatures.get(id(outputs))
        if cached is None or cached[0] is not outputs:
            cached = self._signatures[id(outputs)] = (
                outputs, [None if out is None else _signature(out) for out in outputs])
        return cached[1]


def _confused(failures: _Failures, first, second) -> str | None:
    """A test family on which a function giving ``first`` could be diagnosed as ``second``,
    or the other way round (the grader's rule: the twin gives what the student's function
    gave on every case of the family it failed)."""
    one = (first, failures.by_family(first), failures.signatures(first))
    other = (second, failures.by_family(second), failures.signatures(second))
    rtol, atol = failures.template.rtol, failures.template.atol
    for k, family in enumerate(failures.template.tests):
        # (a side that fails no case of the family is never named there: no call for it)
        if ((one[1][k] and _named_for(one, other, k, rtol, atol))
                or (other[1][k] and _named_for(other, one, k, rtol, atol))):
            return family.family
    return None


def _named_for(student, twin, family: int, rtol, atol) -> bool:
    """Every case of test family number ``family`` that the student's outputs fail, the
    twin's give alike; each side is (outputs, ``_Failures.by_family``, signatures). The
    signatures first (``_surely_apart``'s test, written out): most pairs differ in a sum,
    and then no comparison is needed."""
    failed = student[1][family]
    if not failed:
        return False
    outputs, theirs_out = student[0], twin[0]
    mine, theirs = student[2], twin[2]
    for p in failed:
        if outputs[p] is None or theirs_out[p] is None:
            return False
        sa, sb = mine[p], theirs[p]
        if sa is not None and sb is not None:
            if sa[0] != sb[0]:
                return False
            bound = 2 * (sa[3] * atol + rtol * max(sa[2], sb[2])) + 1e-9 * (sa[2] + sb[2] + 1)
            if abs(sa[1] - sb[1]) > bound:
                return False
    return all(_alike(outputs[p], theirs_out[p], rtol, atol) for p in failed)
