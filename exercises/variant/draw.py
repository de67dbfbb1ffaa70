"""Variant = template + seed: sample the givens, compute the answers with the reference, and
check the checkers before anyone sees it.

Every variant is validated as it is made; a variant that fails is redrawn from the same
generator (so the seed still determines the result) up to ``sampling.max_attempts``:

- the constraints hold, and nothing is ill-posed: no near-tie where argmax/rank is asked,
  no NaN or +inf in a given or an answer, no fully masked row in a mask argument (unless the
  template allows it);
- the reference passes: the answer survives the answer key's JSON round trip bit for bit and
  satisfies the part's visible checks; for ``implement``, the reference function passes
  every hidden test case;
- every listed misconception is caught: the template recomputed with the twin in place of
  the function it shadows gives an answer outside the part's tolerance (for ``implement``:
  the twin fails at least one hidden case).

A template bug (a reference function raising, a Jinja name that does not exist) is not
redrawn: it raises TemplateError with file:line at once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from formats import serialize
from formats.rubric import Rubric

from exercises.template import follow, rubrics
from exercises.variant import mistake_search
from exercises.template.checks import CHECKS
from exercises.template.claims import false_claim
from formats.compare import is_numeric
from exercises.template.expression_errors import IllPosed
from exercises.template.expressions import Expression
from exercises.template.texts import RenderError, render
from exercises.template.model import MAX_OPTIONS, Template, TemplateError
from exercises.variant.seeds import generator
from exercises.variant.evaluation import (Evaluator, Rejected, VariantError, finite_problem, per_template,
                                          plain_value, scope_for)
from exercises.variant.hidden_tests import hidden_tests
from exercises.variant.twin_values import constant_table, jsonable_twins, misconceptions_caught, quick_within


# The record's values that serialize.to_jsonable or to_packed made (floats finite: NaN and
# ±inf are text or packed there), which the canonical text writes with orjson
# (``formats.compact_json``: the same text as json's, faster on a record full of floats).
_MADE_BY_TO_JSONABLE = frozenset({"givens", "answers", "tests", "twins", "lookalikes"})


@dataclass
class Variant:
    template: Template
    seed: int
    attempts: int
    values: dict                     # every parameter and derived value
    givens: dict                     # what the student is shown
    answers: dict                    # part id → expected value (choice: index of the correct option)
    options: dict                    # choice part id → [{"text", "feedback"}] in shown order
    tests: list                      # implement: TestCase per hidden case
    rng_seed: int
    rejections: Counter = field(default_factory=Counter)
    # What each listed misconception gives on this variant, for the grader's diagnosis:
    # numeric: twin → part id → answer; implement: twin → output per hidden case (None: raised).
    twins: dict = field(default_factory=dict)
    # Plausible mistakes that give what a listed twin gives on this variant (same layout as
    # ``twins``): the grader then says "matches either … or …" instead of one name.
    lookalikes: dict = field(default_factory=dict)
    _rendered: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def context(self) -> dict:
        """What prompts and solutions can use: values, answers by part id, options."""
        return {**self.values, **self.answers, "answers": self.answers, "options": self.options,
                "givens": self.givens}

    def render(self, source: str, fmt: str = "markdown") -> str:
        """``source`` rendered with this variant's values; remembered, since validation has
        already rendered every text once and a notebook build needs it again."""
        key = (source, fmt)
        if key not in self._rendered:
            self._rendered[key] = render(source, self.context, fmt)
        return self._rendered[key]

    def prompt(self, fmt: str = "markdown") -> str:
        return self.render(self.template.prompt, fmt)

    def part_prompt(self, part, fmt: str = "markdown") -> str:
        return self.render(part.prompt, fmt)

    def solution(self, fmt: str = "markdown") -> str:
        return self.render(self.template.solution, fmt)

    def rubric(self, part, fmt: str = "markdown") -> Rubric | None:
        """A part's rubric with this variant's numbers in its texts (None: it has none)."""
        if part.rubric is None:
            return None
        return rubrics.rendered(part.rubric, lambda text: self.render(text, fmt))

    def rubric_text(self, part, fmt: str = "markdown") -> str:
        """The rubric as graders read it in a solution cell or on paper ('' without one)."""
        rubric = self.rubric(part, fmt)
        return rubrics.as_markdown(rubric) if rubric else ""

    def evaluate(self, expression: Expression):
        """One of the template's expressions on this variant's values (a check's argument)."""
        scope = scope_for(self.template, {**self.values, **self.answers}, self.rng_seed)
        return Evaluator(self.template).evaluate(expression, scope, self.template.line_of("parts"),
                                                 "parts")

    def record(self) -> dict:
        """The answer-key entry: JSON-ready givens, expected values and a digest (computed
        once: the notebooks and the key all need it). A shallow copy: add keys, do not
        change the nested values."""
        return dict(self._record())

    def _record(self) -> dict:
        if "record" not in self._rendered:
            self._rendered["record"] = self._make_record()
        return self._rendered["record"]

    def _make_record(self) -> dict:
        t = self.template
        grading = ([{"id": p.id, "points": p.points, "rtol": p.rtol, "atol": p.atol,
                     "misconceptions": list(p.misconceptions),
                     "checks": [[name, arg.source if arg else None] for name, arg in p.checks]}
                    for p in t.parts] if t.kind != "implement" else
                   [{"family": f.family, "points": f.points, "cases": f.cases} for f in t.tests])
        body = {
            "template": t.id, "template_digest": t.source_digest, "kind": t.kind,
            "seed": str(self.seed), "grading": grading,
            **({"rtol": t.rtol, "atol": t.atol, "function": t.function.name,
                "misconceptions": list(t.misconceptions)} if t.kind == "implement" else {}),
            "givens": serialize.encode_names(self.givens),
            "answers": serialize.encode_names(self.answers),
            "options": self.options,
            "rubric": {p.id: self.rubric(p).to_record() for p in self.template.parts if p.rubric},
            # what a grader reads beside the student's answer (the marking page)
            "prompts": {"": self.prompt(), **{p.id: self.part_prompt(p) for p in self.template.parts}},
            "tests": [{"family": case.family, "index": case.index,
                       "args": serialize.encode_names(case.args, packed=True),
                       "expected": serialize.to_packed(case.expected)} for case in self.tests],
            "twins": jsonable_twins(self.twins),
            # only when a diagnosis here is ambiguous, so other records and digests stay as they were
            **({"lookalikes": jsonable_twins(self.lookalikes)} if self.lookalikes else {}),
            **self._follow_fields(),
        }
        # the values' texts are remembered: the key entry holding this record reuses them
        text = serialize.canonical_parts(body, jsonable=_MADE_BY_TO_JSONABLE)
        return {**body, "digest": serialize.digest_text(text)}

    def _follow_fields(self) -> dict:
        """The follow-through recipes and their credit (nothing for a template without one,
        so its records and digests stay as they were)."""
        recipes = self._rendered.get("follow") if self.template.kind == "numeric" else {}
        if recipes is None:     # (not validated: worked out here)
            recipes = follow.follow_record(self)
        return {"follow": recipes, "follow_credit": self.template.follow_credit} if recipes else {}

    @property
    def digest(self) -> str:
        return self._record()["digest"]


# --- making a variant -----------------------------------------------------------------------

def make_variant(template: Template, seed: int, validate: bool = True) -> Variant:
    """The variant of ``template`` for ``seed``, validated; VariantError if none is found.

    ``validate=False`` skips the checker checks (reference re-run, JSON round trip, visible
    checks, misconception twins, rendering) but not constraints or well-posedness, so it
    gives the same variant when the validated one needed no redraw; it exists only so the
    benchmark can show what validation costs."""
    return _made(template, seed, validate, None)


def probe_variant(template: Template, seed: int, collisions: set) -> Variant:
    """A probe draw for ``mistake_search.structural``: every look-alike pair the mistake
    search meets is collected in ``collisions`` and nothing is redrawn for it. (Passed to
    the search rather than imported there: the search is part of a draw.)"""
    return _made(template, seed, True, collisions)


def _made(template: Template, seed: int, validate: bool, collisions: set | None) -> Variant:
    rng = generator(seed)
    evaluator = Evaluator(template)
    rejections: Counter = Counter()
    for attempt in range(1, template.max_attempts + 1):
        rng_seed = int(rng.integers(2**63))
        try:
            variant = _draw(template, evaluator, rng, rng_seed, seed, attempt, validate, collisions)
        except (Rejected, IllPosed) as reason:
            rejections[str(reason)] += 1
            continue
        variant.rejections = rejections
        return variant
    common = "; ".join(f"{reason} ({n}×)" for reason, n in rejections.most_common(3))
    raise VariantError(f"{template.path}: {template.id}: no valid variant in "
                       f"{template.max_attempts} draws for seed {seed}; most common rejections: "
                       f"{common}", rejections)


def _draw(template, evaluator, rng, rng_seed, seed, attempt, validate=True, collisions=None) -> Variant:
    """One draw of ``template``: Rejected (or IllPosed) where it must be drawn again, a
    TemplateError for a template bug, else the variant (checked, with ``validate``)."""
    scope = scope_for(template, {}, rng_seed)
    evaluator.sample(template.parameters, rng, scope, "parameters")
    sampled = set(scope.values)
    early = [(i, c) for i, c in enumerate(template.constraints) if c.expression.names <= sampled]
    # Constraints on parameters alone run first, so they can guard the derived values.
    _check_constraints(template, evaluator, early, scope)
    now, later = _derived_now_and_later(template) if validate else (template.derived, ())
    evaluator.derive(now, scope, "derived", constant_table(template, scope.functions))
    answers, options = _answers_and_options(template, evaluator, scope, rng)
    scope.values.update(answers)
    late = [(i, c) for i, c in enumerate(template.constraints) if (i, c) not in early]
    _check_constraints(template, evaluator, late, scope)
    _check_givens(template, scope, validate)
    _check_answers(template, evaluator, scope, answers, validate)
    tests = hidden_tests(template, evaluator, rng, scope, validate) if template.kind == "implement" else []
    values = {k: v for k, v in scope.values.items() if k not in answers}
    variant = Variant(template, seed, attempt, values,
                      {name: values[name] for name in template.givens}, answers, options, tests,
                      rng_seed)
    if validate:
        _validate(template, variant, evaluator, attempt, collisions, later)
    return variant


def _answers_and_options(template, evaluator, scope, rng) -> tuple[dict, dict]:
    """(part id → its answer, choice part id → its options in shown order)."""
    answers, options = {}, {}
    for i, part in enumerate(template.parts):
        key = f"parts[{i}]"
        if part.answer is not None:
            answers[part.id] = plain_value(evaluator.evaluate(part.answer, scope, part.line, f"{key}.answer"))
            if answers[part.id] is None:
                evaluator.fail(part.line, f"{key}.answer", ValueError(
                    f"{part.answer.source!r} gives nothing (None)"))
        if template.kind == "choice":
            options[part.id], answers[part.id] = _choice(template, evaluator, part, key, scope,
                                                         answers.get(part.id), rng)
    return answers, options


def _check_givens(template, scope, validate: bool) -> None:
    """Every given finite (else Rejected) and, with ``validate``, one the answer key can store."""
    for name in template.givens:
        problem = finite_problem(scope.values[name])
        if problem:
            raise Rejected(f"{problem} in the given {name}")
        if validate:
            try:
                serialize.to_jsonable(scope.values[name])
            except serialize.NotSerializable as err:
                raise TemplateError([f"{template.path}:{template.line_of('givens')}: givens: "
                                     f"{name}: {err}"]) from None


def _check_answers(template, evaluator, scope, answers: dict, validate: bool) -> None:
    """A numeric template's answers finite, each passing its part's own checks (``validate``),
    and none a trivial start for a follow-through recipe (Rejected otherwise)."""
    for i, part in enumerate(template.parts):
        if template.kind != "numeric":
            continue
        expected = answers[part.id]
        problem = finite_problem(expected)
        if problem:
            raise Rejected(f"{problem} in the answer to part {part.id}")
        if validate:
            _reference_passes(template, part, i, expected, scope, evaluator)
    trivial = follow.trivial_source(template, answers) if template.kind == "numeric" else None
    if trivial:
        raise Rejected(trivial)


def _validate(template, variant, evaluator, attempt, collisions, later) -> None:
    """What a kept draw is checked for: every listed misconception caught, no two mistakes
    alike, the values only its texts read worked out, every text rendered, every follow
    recipe right and every claim true."""
    misconceptions_caught(template, variant, evaluator)
    mistake_search.search(template, variant, evaluator, attempt, collisions, probe=probe_variant)
    if later:           # the variant is kept: now the values only its texts read
        kept = scope_for(template, variant.values, variant.rng_seed)
        evaluator.derive(later, kept, "derived", constant_table(template, kept.functions))
    _renders(template, variant, evaluator)
    _follows(template, variant, evaluator)
    problem = false_claim(variant)
    if problem:
        raise TemplateError([problem])


_SPLIT: dict[int, tuple] = {}


def _derived_now_and_later(template) -> tuple[list, list]:
    """(the derived values a draw is validated with, those only the prompt and solution
    read), both in the template's order. A numeric template's draw is redrawn on a failed
    constraint or check, or where two mistakes look alike, after its values are derived:
    a value only the texts read is worked out once the draw is kept (a costly one, such as a
    simulation, would otherwise be worked out again for every draw thrown away). Only for
    numeric templates: nothing there draws from the variant's generator after the derived
    values, so a value that raises (IllPosed, say) then redraws with the same next seed as
    before; and every use of ``rng`` in an expression is a fresh generator of the draw's
    seed, so a value is the same whenever it is worked out."""
    return per_template(_SPLIT, template, _split_derived)


def _split_derived(template) -> tuple[list, list]:
    if template.kind != "numeric":
        return list(template.derived), []
    read: set[str] = set(template.givens)
    for c in template.constraints:
        read |= c.expression.names
    for part in template.parts:
        for expression in (part.answer, part.follow, *(arg for _, arg in part.checks)):
            if expression is not None:
                read |= expression.names
    for d in reversed(template.derived):
        if d.name in read:
            read |= d.expression.names
    return ([d for d in template.derived if d.name in read],
            [d for d in template.derived if d.name not in read])


def _check_constraints(template, evaluator, constraints, scope) -> None:
    for i, c in constraints:
        if not evaluator.truth(c.expression, scope, c.line, f"constraints[{i}]"):
            raise Rejected(f"constraint {c.expression.source!r}" + (f" ({c.why})" if c.why else ""))


def _choice(template, evaluator, part, key, scope, answer, rng):
    if isinstance(part.options, Expression):
        raw = evaluator.evaluate(part.options, scope, part.line, f"{key}.options")
        texts = [str(plain_value(o)) for o in raw]
        feedback = [""] * len(texts)
    else:
        try:
            texts = [render(o.text, scope.values) for o in part.options]
            feedback = [render(o.feedback, scope.values) for o in part.options]
        except RenderError as err:
            evaluator.fail(part.line, f"{key}.options", err)
    if not 2 <= len(texts) <= MAX_OPTIONS:
        evaluator.fail(part.line, f"{key}.options", ValueError(
            f"{len(texts)} option(s); a choice needs 2 to {MAX_OPTIONS} (they are lettered A to Z)"))
    if answer is not None:
        if str(answer) not in texts:
            evaluator.fail(part.line, f"{key}.answer", ValueError(
                f"the answer {answer!r} is not one of the options {texts}"))
        correct = texts.index(str(answer))
    else:
        correct = next(i for i, o in enumerate(part.options) if o.correct)
    if len(set(texts)) != len(texts):
        raise Rejected(f"two options of part {part.id} read the same")
    order = [int(i) for i in rng.permutation(len(texts))] if part.shuffle else list(range(len(texts)))
    shown = [{"text": texts[i], "feedback": feedback[i]} for i in order]
    return shown, order.index(correct)


def _reference_passes(template, part, index, expected, scope, evaluator) -> None:
    key = f"{template.path}:{part.line}: parts[{index}]"
    try:
        stored = serialize.from_jsonable(serialize.to_jsonable(expected))
    except serialize.NotSerializable as err:
        raise TemplateError([f"{key}.answer: {err}"]) from None
    if not serialize.same_value(_comparable(stored), _comparable(expected)):
        raise TemplateError([f"{key}.answer: the answer does not survive the answer key's "
                             f"JSON round trip"])
    if not quick_within(stored, expected, part.rtol, part.atol):      # compare's verdict, faster
        raise TemplateError([f"{key}.answer: the reference answer fails its own comparison"])
    if part.checks and not is_numeric(expected):
        raise TemplateError([f"{key}.checks: checks apply to numbers and arrays, and the answer "
                             f"is {type(expected).__name__}"])
    for name, argument in part.checks:
        value = None if argument is None else evaluator.evaluate(argument, scope, part.line,
                                                                 f"parts[{index}].checks")
        problem = CHECKS[name].test(expected, value, part.atol, part.rtol)
        if problem:
            raise Rejected(f"the reference answer to part {part.id} fails check {name}: {problem}")


def _comparable(value):
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value.astype(np.int64)
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    return value


def _follows(template, variant, evaluator) -> None:
    """Every follow expression gives its part's answer from the correct earlier answers.
    The recipes are kept for the record, which then does not work them out again."""
    try:
        variant._rendered["follow"] = follow.follow_record(variant)
    except follow.FollowError as err:
        part = next((p for p in template.parts if f"parts.{p.id}.follow" in str(err)), None)
        evaluator.fail(part.line if part else 0, "follow", err)


def _renders(template, variant, evaluator) -> None:
    for key, render_text in (("prompt", variant.prompt), ("solution", variant.solution)):
        try:
            render_text()
        except RenderError as err:
            evaluator.fail(template.line_of(key), key, err)
    for i, part in enumerate(template.parts):
        for key, render_text in (("prompt", variant.part_prompt), ("rubric", variant.rubric)):
            try:
                render_text(part)
            except RenderError as err:
                evaluator.fail(part.line, f"parts[{i}].{key}", err)

