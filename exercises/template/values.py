"""A template's named values and the conditions on them: parameters (a constant or drawn from
a distribution), derived values (expressions of those above them) and constraints; each name
joins the scope the expressions below it may read. The template's top level and each family
of hidden tests have their own."""

from __future__ import annotations

import difflib

from exercises.template.distributions import DISTRIBUTIONS
from exercises.template.loading import describe, key_path
from exercises.template.model import Constraint, Derived, Parameter
from exercises.template.names import TemplateErrors, new_name
from exercises.template.yaml_lines import LineDict, LineList

CONSTRAINT_KEYS = {"expr": "required", "why": "optional"}
# NumPy's and other tools' names for our distributions, for the "did you mean" hint.
_DISTRIBUTION_ALIASES = {"randn": "normal", "gaussian": "normal", "rand": "uniform",
                         "randint": "integers", "int": "integers", "integer": "integers",
                         "matrix": "int_matrix", "words": "sentence", "shuffle": "permutation"}


def read_parameters(load: TemplateErrors, block, line: int, key: str,
                    scope: set[str]) -> list[Parameter]:
    """A parameters block: each name a constant or a distribution; the names join ``scope``."""
    out: list[Parameter] = []
    block = load.mapping(block, line, key)
    if block is None:
        return out
    for name, spec in block.items():
        here, pkey = block.line_of(name), key_path(key, name)
        if not new_name(load, name, here, pkey, scope):
            continue
        if not isinstance(spec, LineDict):
            if isinstance(spec, (int, float, str, bool, LineList)):
                out.append(Parameter(name, here, None, {}, _plain(spec)))
                scope.add(name)
            else:
                load.error(here, pkey, f"expected a distribution or a constant, got {describe(spec)}")
            continue
        scope.add(name)  # even if the spec is broken: one error, not one per later use
        parameter = _distribution(load, name, spec, here, pkey, scope)
        if parameter is not None:
            out.append(parameter)
    return out


def _distribution(load: TemplateErrors, name: str, spec: LineDict, here: int, pkey: str,
                  scope: set[str]) -> Parameter | None:
    """A parameter drawn from a distribution ({dist: …, its options}); None if it is wrong."""
    kind = spec.get("dist")
    if kind is None:
        load.error(spec.line, key_path(pkey, "dist"),
                   f"required (one of: {', '.join(DISTRIBUTIONS)})")
        return None
    if kind not in DISTRIBUTIONS:
        hint = ([_DISTRIBUTION_ALIASES[kind]] if kind in _DISTRIBUTION_ALIASES
                else difflib.get_close_matches(str(kind), DISTRIBUTIONS, n=1))
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        load.error(spec.line_of("dist"), pkey, f"unknown distribution '{kind}' (expected one "
                                               f"of: {', '.join(DISTRIBUTIONS)}){suggestion}")
        return None
    dist = DISTRIBUTIONS[kind]
    allowed = {"dist": "required", **{o: "required" for o in dist.required},
               **{o: "optional" for o in dist.optional}}
    load.keys(spec, allowed, pkey)
    options = {}
    for option, raw in spec.items():
        if option == "dist" or option not in allowed:
            continue
        options[option] = _option(load, raw, spec.line_of(option), key_path(pkey, option),
                                  scope, literal=option in ("values", "vocabulary"))
    return Parameter(name, here, kind, options)


def _plain(value):
    if isinstance(value, LineList):
        return [_plain(v) for v in value]
    return value


def _option(load, raw, line, key, scope, literal):
    """A distribution option: a literal list (values, vocabulary), a list of expressions
    (shape), or a single number/expression."""
    if isinstance(raw, LineList):
        if literal:
            return _plain(raw)
        return [load.expression(v, raw.line_of(i), f"{key}[{i}]", scope) for i, v in enumerate(raw)]
    if isinstance(raw, bool) or raw is None:
        return raw
    if isinstance(raw, (int, float)):
        return raw
    if isinstance(raw, str):
        return load.expression(raw, line, key, scope)
    load.error(line, key, f"expected a number, a list or an expression, got {describe(raw)}")
    return None


def read_derived(load, block, line, key, scope) -> list[Derived]:
    out: list[Derived] = []
    block = load.mapping(block, line, key)
    if block is None:
        return out
    for name, source in block.items():
        here, dkey = block.line_of(name), key_path(key, name)
        if not new_name(load, name, here, dkey, scope):
            continue
        expression = load.expression(source, here, dkey, scope)
        scope.add(name)
        if expression is not None:
            out.append(Derived(name, here, expression))
    return out


def read_constraints(load, block, line, key, scope) -> list[Constraint]:
    out: list[Constraint] = []
    if not isinstance(block, LineList):
        load.error(line, key, f"expected a list of expressions, got {describe(block)}")
        return out
    for i, entry in enumerate(block):
        here, ckey = block.line_of(i), f"{key}[{i}]"
        why = ""
        if isinstance(entry, LineDict):
            load.keys(entry, CONSTRAINT_KEYS, ckey)
            why = entry.get("why", "") or ""
            entry = entry.get("expr")
            if entry is None:
                continue
        expression = load.expression(entry, here, ckey, scope)
        if expression is not None:
            out.append(Constraint(here, expression, str(why)))
    return out
