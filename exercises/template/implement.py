"""An implement template's own blocks: the function the student writes (its name and
signature), the reference function in ``solutions`` it is compared with, the output
expression, and the families of hidden test cases (each with values of its own)."""

from __future__ import annotations

import ast
import difflib

from exercises.template import references
from exercises.template.expressions import Expression
from exercises.template.loading import describe, key_path
from exercises.template.model import FunctionSpec, TestFamily
from exercises.template.names import ID, NAME, TemplateErrors
from exercises.template.reference_code import reference_code
from exercises.template.rubrics import MISPLACED_TEST
from exercises.template.values import read_constraints, read_derived, read_parameters
from exercises.template.yaml_lines import LineDict, LineList

FUNCTION_KEYS = {"name": "required", "signature": "required", "returns": "optional"}
TEST_KEYS = {"family": "required", "points": "required", "cases": "optional",
             "parameters": "optional", "derived": "optional", "constraints": "optional",
             "args": "required"}


def implement(load: TemplateErrors, data: LineDict, scope: set[str], calls: set[str],
               solution: str) -> tuple[FunctionSpec | None, str | None, Expression | None,
                                       list[TestFamily]]:
    """(function, reference, output, tests) of an implement problem."""
    for forbidden in ("parts",):
        if forbidden in data:
            load.error(data.line_of(forbidden), forbidden, "implement problems have 'tests', not 'parts'")
    for needed in ("function", "reference", "tests"):
        if needed not in data:
            load.error(data.line, needed, "required for an implement problem")
    function = _function(load, data)
    reference = _reference(load, data, function)
    tests: list[TestFamily] = []
    if "tests" in data:
        tests = _tests(load, data["tests"], data.line_of("tests"), scope, function, calls)
    output = None
    if "output" in data:
        output = load.expression(data["output"], data.line_of("output"), "output", scope | {"result"})
    if function is not None:
        try:
            reference_code(solution, function.name)
        except ValueError as err:
            load.error(data.line_of("solution") if "solution" in data else data.line,
                       "solution", str(err))
    return function, reference, output, tests


def _function(load: TemplateErrors, data: LineDict) -> FunctionSpec | None:
    if isinstance(data.get("function"), LineDict):
        return _signature(load, data["function"])
    if "function" in data:
        load.error(data.line_of("function"), "function", "expected a mapping with name and signature")
    return None


def _reference(load: TemplateErrors, data: LineDict, function: FunctionSpec | None) -> str | None:
    """The reference function (in ``solutions``) the hidden tests compare with; None if unknown."""
    reference = data.get("reference")
    if "reference" in data:
        if reference not in references.FUNCTIONS:
            hint = difflib.get_close_matches(str(reference), references.FUNCTIONS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            load.error(data.line_of("reference"), "reference",
                       f"unknown reference function '{reference}'{suggestion}")
            return None
        if function is not None:
            problem = references.signature_error(reference, set(function.parameters))
            if problem:
                load.error(data.line_of("reference"), "reference", problem)
    return reference


def _signature(load, spec: LineDict) -> FunctionSpec | None:
    load.keys(spec, FUNCTION_KEYS, "function")
    name = spec.get("name")
    signature = spec.get("signature")
    if not isinstance(name, str) or not NAME.match(name):
        load.error(spec.line_of("name"), "function.name", f"'{name}' is not a valid Python name")
        return None
    if not isinstance(signature, str):
        load.error(spec.line_of("signature"), "function.signature",
                   "expected text like '(Q, K, V, mask=None)'")
        return None
    try:
        tree = ast.parse(f"def {name}{signature.strip()}: pass")
        args = tree.body[0].args
    except SyntaxError:
        load.error(spec.line_of("signature"), "function.signature",
                   f"cannot parse {signature!r} as a parameter list like '(Q, K, V, mask=None)'")
        return None
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        load.error(spec.line_of("signature"), "function.signature",
                   "only plain parameters (and defaults) are supported")
        return None
    return FunctionSpec(name, signature.strip(), tuple(a.arg for a in args.args),
                        str(spec.get("returns", "") or ""))


def _tests(load, raw, line, scope, function: FunctionSpec | None, calls) -> list[TestFamily]:
    if not isinstance(raw, LineList) or not raw:
        load.error(line, "tests", f"expected a list of test-case families, got {describe(raw)}")
        return []
    out, names = [], set()
    for i, key, entry in load.mappings(raw, "tests"):
        out.append(_test_family(load, entry, key, i, names, scope, function, calls))
    return out


def _test_family(load: TemplateErrors, entry: LineDict, key: str, i: int, names: set[str],
                 scope: set[str], function: FunctionSpec | None, calls: set[str]) -> TestFamily:
    """One family of hidden test cases: its own parameters, derived values and constraints
    (seen by this family only) and the arguments of the student's function."""
    load.keys(entry, TEST_KEYS, key, refused=MISPLACED_TEST)
    family = entry.get("family")
    if not isinstance(family, str) or not ID.match(family):
        load.error(entry.line_of("family"), key_path(key, "family"), f"'{family}' is not a valid name")
        family = f"family{i + 1}"
    if family in names:
        load.error(entry.line_of("family"), key_path(key, "family"), f"duplicate family '{family}'")
    names.add(family)
    local = set(scope)
    params = read_parameters(load, entry.get("parameters", LineDict()), entry.line_of("parameters"),
                         key_path(key, "parameters"), local)
    derived = read_derived(load, entry.get("derived", LineDict()), entry.line_of("derived"),
                       key_path(key, "derived"), local)
    constraints = read_constraints(load, entry.get("constraints", LineList()),
                               entry.line_of("constraints"), key_path(key, "constraints"), local)
    args = _test_args(load, entry, key, local, function, calls)
    for d in derived:
        calls |= d.expression.calls
    return TestFamily(family, entry.line,
                      load.number(entry, "points", key_path(key, "points"), 0.0, minimum=0),
                      load.number(entry, "cases", key_path(key, "cases"), 1, minimum=1, integer=True),
                      tuple(params), tuple(derived), tuple(constraints), args)


def _test_args(load: TemplateErrors, entry: LineDict, key: str, scope: set[str],
               function: FunctionSpec | None, calls: set[str]) -> dict:
    """student-function parameter → the expression a family passes for it."""
    args = {}
    raw_args = load.mapping(entry.get("args"), entry.line_of("args"), key_path(key, "args")) \
        if "args" in entry else None
    for arg, source in (raw_args or {}).items():
        akey = key_path(key_path(key, "args"), arg)
        if function is not None and arg not in function.parameters:
            load.error(raw_args.line_of(arg), akey,
                       f"{function.name}{function.signature} has no parameter '{arg}'")
            continue
        expression = load.expression(source, raw_args.line_of(arg), akey, scope)
        if expression is not None:
            args[arg] = expression
            calls |= expression.calls
    return args
