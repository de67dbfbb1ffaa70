"""An implement variant's test cases: the hidden ones, drawn family by family (each case's
own parameters, derived values and constraints) and checked against the reference function
as the answer key stores them, and the visible example the notebook shows, drawn apart."""

from __future__ import annotations

from collections import Counter

import numpy as np

from formats import serialize

from exercises.template import references
from exercises.template.expression_errors import IllPosed
from exercises.template.model import TemplateError
from exercises.variant.evaluation import (Evaluator, Rejected, TestCase, VariantError, finite_problem,
                                          fresh_copy, functions_for, output_of, plain_value, scope_for)
from exercises.variant.seeds import generator
from exercises.variant.twin_values import quick_within


def hidden_tests(template, evaluator, rng, scope, validate=True) -> list[TestCase]:
    reference = references.FUNCTIONS[template.reference]
    cases = []
    for t, family in enumerate(template.tests):
        key = f"tests[{t}]"
        for index in range(family.cases):
            args, expected, local = _draw_case(template, evaluator, rng, scope, family, key)
            try:        # as the record stores them
                stored = serialize.encode_names(args, packed=True)
                serialize.to_packed(expected)
            except serialize.NotSerializable as err:
                raise TemplateError([f"{template.path}:{family.line}: {key}: {err}"]) from None
            # The reference must pass on the arguments as the answer key stores them.
            if validate and not quick_within(
                    output_of(template, evaluator, reference(**serialize.decode_names(stored)), local),
                    expected, template.rtol, template.atol):
                raise TemplateError([f"{template.path}:{template.line_of('reference')}: reference: "
                                     f"{template.reference}() does not pass its own test "
                                     f"({family.family} case {index}) on the stored arguments"])
            cases.append(TestCase(family.family, index, args, expected))
    return cases


def _draw_case(template, evaluator, rng, scope, family, key):
    """One valid case of a test family: (args, expected output, its scope); Rejected if the
    family's constraints keep failing."""
    guarded = functions_for(template)[template.reference]
    for _ in range(template.max_attempts):
        local = scope_for(template, dict(scope.values), int(rng.integers(2**63)))
        try:
            evaluator.sample(family.parameters, rng, local, f"{key}.parameters")
            evaluator.derive(family.derived, local, f"{key}.derived")
            if not all(evaluator.truth(c.expression, local, c.line, f"{key}.constraints[{j}]")
                       for j, c in enumerate(family.constraints)):
                raise Rejected(f"constraint in test family {family.family}")
            args = {name: plain_value(evaluator.evaluate(e, local, family.line, f"{key}.args.{name}"))
                    for name, e in family.args.items()}
            try:
                result = guarded(**fresh_copy(args))
            except (Rejected, IllPosed):
                raise
            except Exception as err:  # noqa: BLE001 — the template's args do not fit
                evaluator.fail(family.line, f"{key}.args",
                               ValueError(f"{template.reference}() raised {type(err).__name__}: {err}"))
            expected = output_of(template, evaluator, result, local)
        except (Rejected, IllPosed):
            continue
        problem = finite_problem(expected)
        if problem:
            raise Rejected(f"{problem} in a hidden {family.family} case")
        return args, expected, local
    raise Rejected(f"no valid hidden case for test family {family.family}")


def example_case(variant) -> TestCase:
    """A visible example for an ``implement`` variant (``draw.Variant``): one more case of its first test family,
    drawn from a stream of its own, so it is never one of the hidden cases. Its floats are
    rounded to 3 decimals (easy to read) and its expected output is the reference's on
    exactly those rounded inputs: the notebook shows it, and the student's function is
    checked against it before handing in. Showing it leaks nothing about the hidden cases."""
    template = variant.template
    evaluator = Evaluator(template)
    rng = generator(variant.rng_seed ^ 0x6578616D706C65)   # "example" in ASCII
    scope = scope_for(template, dict(variant.values), variant.rng_seed)
    family = template.tests[0]
    for _ in range(template.max_attempts):
        try:
            args, _, local = _draw_case(template, evaluator, rng, scope, family, "tests[0]")
            args = rounded_example(args)
            result = functions_for(template)[template.reference](**fresh_copy(args))
            expected = output_of(template, evaluator, result, local)
        except (Rejected, IllPosed):
            continue
        if finite_problem(expected):
            continue
        return TestCase(family.family, -1, args, expected)
    raise VariantError(f"{template.path}: {template.id}: no visible example case", Counter())


def rounded_example(value):
    """The example's floats to 3 decimals (its integers, masks and text as they are)."""
    if isinstance(value, dict):
        return {k: rounded_example(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(rounded_example(v) for v in value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.round(value, 3)
    if isinstance(value, float):
        return round(value, 3)
    return value
