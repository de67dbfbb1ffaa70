"""Templates: the YAML schema, checked on load with errors that name file:line and the key.

A template is data. Its values are sampled from ``distributions``, computed by expressions
(``expressions``) that may call the reference functions in ``solutions``, and shown through
Jinja2 text. ``problem_bank/README.md`` documents the schema for instructors; this module is
the schema's single source of truth (the README's key tables mirror the KEYS below).
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from exercises.template import expressions, references
from exercises.template.claims import Claim, parse_claims
from exercises.template.texts import RenderError, text_names
from exercises.template.follow import DEFAULT_CREDIT, load_credit, load_follow
from exercises.template.rubrics import MISPLACED_TEST, MISPLACED_TOP, load_rubric, texts as rubric_texts
from formats.rubric import Rubric
from exercises.template.checks import CHECKS
from exercises.template.distributions import DISTRIBUTIONS
from exercises.template.expressions import Expression, ExpressionError
from exercises.template.objectives import OBJECTIVES
from formats.textfile import ProblemsError
from exercises.template.loading import (LoadProblems, describe, key_path, parse_yaml_file, require_mapping,
                                        shown_path)
from exercises.template.yaml_lines import LineDict, LineList

KINDS = ("numeric", "implement", "choice", "free_response")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names that expressions and text read as values; a part id (a value, never called) must avoid
# only these, a parameter also the function names.
_RESERVED_VALUES = {"rng", "result", "answers", "options", "givens", "pi", "inf",
                    *references.CONSTANTS}
# Names a notebook defines itself (its helpers, the code of its checks, IPython's own): a
# given or an answer variable of that name would break the notebook's cells.
NOTEBOOK_NAMES = {"np", "answered", "try_example", "show_heatmap", "out", "outs", "expected",
                  "In", "Out", "get_ipython", "display", "exit", "quit"}
_RESERVED = {*_RESERVED_VALUES, *expressions.BUILTINS, *expressions.TIE_AWARE,
             *references.FUNCTIONS, *references.CONSTANTS, *NOTEBOOK_NAMES}

TOP_KEYS = {"id": "required", "title": "required", "objective": "required", "kind": "required",
            "prompt": "required", "parameters": "optional", "derived": "optional",
            "constraints": "optional", "givens": "optional", "parts": "optional",
            "function": "optional", "reference": "optional", "output": "optional",
            "tests": "optional", "misconceptions": "optional", "rtol": "optional",
            "atol": "optional", "solution": "optional", "sampling": "optional",
            "tags": "optional", "notes": "optional", "follow_credit": "optional",
            "claims": "optional"}
PART_KEYS = {"id": "required", "prompt": "optional", "points": "required", "answer": "optional",
             "rtol": "optional", "atol": "optional", "misconceptions": "optional",
             "checks": "optional", "options": "optional", "shuffle": "optional",
             "rubric": "optional", "follow": "optional"}
OPTION_KEYS = {"text": "required", "correct": "optional", "feedback": "optional"}
FUNCTION_KEYS = {"name": "required", "signature": "required", "returns": "optional"}
TEST_KEYS = {"family": "required", "points": "required", "cases": "optional",
             "parameters": "optional", "derived": "optional", "constraints": "optional",
             "args": "required"}
SAMPLING_KEYS = {"max_attempts": "optional", "tie_gap": "optional",
                 "allow_fully_masked_rows": "optional"}
CONSTRAINT_KEYS = {"expr": "required", "why": "optional"}
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8
MAX_OPTIONS = 26                      # a choice is answered with a letter
# NumPy's and other tools' names for our distributions, for the "did you mean" hint.
_DISTRIBUTION_ALIASES = {"randn": "normal", "gaussian": "normal", "rand": "uniform",
                         "randint": "integers", "int": "integers", "integer": "integers",
                         "matrix": "int_matrix", "words": "sentence", "shuffle": "permutation"}


class TemplateError(ProblemsError):
    """One or more problems in a template file; each line reads file:line: key: message."""


# --- the template model ----------------------------------------------------------------------

@dataclass(frozen=True)
class Parameter:
    name: str
    line: int
    distribution: str | None          # None: a constant
    options: dict                     # option → Expression | literal
    constant: object = None


@dataclass(frozen=True)
class Derived:
    name: str
    line: int
    expression: Expression


@dataclass(frozen=True)
class Constraint:
    line: int
    expression: Expression
    why: str = ""


@dataclass(frozen=True)
class Option:
    text: str
    correct: bool
    feedback: str = ""


@dataclass(frozen=True)
class Part:
    id: str
    line: int
    points: float
    prompt: str = ""
    answer: Expression | None = None
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    misconceptions: tuple[str, ...] = ()
    checks: tuple[tuple[str, Expression | None], ...] = ()
    options: tuple[Option, ...] | Expression | None = None
    shuffle: bool = True
    rubric: Rubric | None = None     # formats.rubric; texts unrendered (exercises.template.rubrics)
    follow: Expression | None = None  # the answer from earlier parts' answers (exercises.template.follow)


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    signature: str                    # "(Q, K, V, mask=None)"
    parameters: tuple[str, ...]
    returns: str = ""


@dataclass(frozen=True)
class TestFamily:
    family: str
    line: int
    points: float
    cases: int
    parameters: tuple[Parameter, ...]
    derived: tuple[Derived, ...]
    constraints: tuple[Constraint, ...]
    args: dict                        # student-function parameter → Expression


@dataclass(frozen=True)
class Template:
    path: str
    id: str
    title: str
    objective: str
    kind: str
    prompt: str
    parameters: tuple[Parameter, ...] = ()
    derived: tuple[Derived, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    givens: tuple[str, ...] = ()
    parts: tuple[Part, ...] = ()
    function: FunctionSpec | None = None
    reference: str | None = None
    output: Expression | None = None
    tests: tuple[TestFamily, ...] = ()
    misconceptions: tuple[str, ...] = ()
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    solution: str = ""
    max_attempts: int = 200
    tie_gap: float = 0.01
    allow_fully_masked_rows: bool = False
    tags: tuple[str, ...] = ()
    notes: str = ""
    follow_credit: float = DEFAULT_CREDIT   # the share a follow-through earns (exercises.template.follow)
    claims: tuple[Claim, ...] = ()     # what its texts say of every variant (exercises.template.claims)
    source_digest: str = ""            # SHA-256 of the YAML file: the answer key records it
    lines: dict = field(default_factory=dict, compare=False)   # key path → line

    @property
    def points(self) -> float:
        if self.kind == "implement":
            return sum(t.points for t in self.tests)
        return sum(p.points for p in self.parts)

    def line_of(self, key: str) -> int:
        return self.lines.get(key, 1)

    def reference_code(self) -> tuple[str, str]:
        """(signature, body) of an implement problem's reference code (checked on load)."""
        return reference_code(self.solution, self.function.name)

    @property
    def all_misconceptions(self) -> tuple[str, ...]:
        names = list(self.misconceptions)
        for part in self.parts:
            names += [m for m in part.misconceptions if m not in names]
        return tuple(names)


# --- loading: the whole template, then its blocks --------------------------------------------

TEMPLATE_MAPPING = "a template is a mapping of keys (id, title, …)"


class TemplateProblems(LoadProblems):
    """LoadProblems of a template file, which also read the template's expressions."""

    def expression(self, source, line: int, key: str, scope: set[str]) -> Expression | None:
        """``source`` parsed; every name it reads must be in ``scope`` (defined above this
        line), every function it calls a built-in or a reference function."""
        try:
            expression = expressions.parse(source, where=key)
        except ExpressionError as err:
            self.error(line, key, str(err))
            return None
        for name in sorted(expression.names - scope - set(references.CONSTANTS) - {"rng", "pi", "inf"}):
            hint = difflib.get_close_matches(name, scope, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            self.error(line, key, f"unknown name '{name}' in {expression.source!r} (names must be "
                                  f"defined above this line){suggestion}")
        for name in expressions.unknown_functions(expression):
            known = list(expressions.KNOWN_FUNCTIONS) + list(references.FUNCTIONS)
            hint = difflib.get_close_matches(name, known, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            self.error(line, key, f"unknown function '{name}' (not a built-in and not a reference "
                                  f"function in solutions){suggestion}")
        return expression


def load_template(path: str | Path, display: str | None = None) -> Template:
    """Read and validate one template file. ``display`` is the path used in messages."""
    path = Path(path)
    shown = display or shown_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise TemplateError([f"{shown}: not UTF-8 text (byte {err.start})"]) from None
    except OSError as err:
        raise TemplateError([f"{shown}: cannot read: {err.strerror}"]) from None
    data = parse_yaml_file(text, shown, TemplateError, TEMPLATE_MAPPING)
    template = parse_template(data, shown)
    return replace(template, source_digest=hashlib.sha256(text.encode("utf-8")).hexdigest())


def parse_template(data, path: str) -> Template:
    """Validate YAML data (from load_yaml) as a template; TemplateError lists every problem.

    The blocks are read in the order below, which is the order problems are reported in;
    names are defined top to bottom (parameters, derived values, then part ids), and the
    misconceptions come last, once every function the template calls is known."""
    require_mapping(data, path, TemplateError, TEMPLATE_MAPPING)
    load = TemplateProblems(path)
    load.keys(data, TOP_KEYS, "", refused=MISPLACED_TOP)
    header = _header(load, data)
    kind = header["kind"]
    rtol, atol = _tolerances(load, data, kind)
    scope: set[str] = set()
    params, derived, calls = _values(load, data, scope)
    givens = _givens(load, data, params, scope)
    values_scope = set(scope)          # what option texts see: the parameters and derived values
    parts: list[Part] = []
    part_entries: list[LineDict] = []
    function = reference = output = None
    tests: list[TestFamily] = []
    if kind == "implement":
        function, reference, output, tests = _implement(load, data, scope, calls, header["solution"])
    else:
        parts, part_entries = _exercise_parts(load, data, kind, scope, calls, (rtol, atol))
    constraints = _constraints(load, data.get("constraints", LineList()), data.line_of("constraints"),
                               "constraints", scope)
    parts, misconceptions = _misconceptions(load, data, kind, parts, part_entries, calls, reference)
    sampling, allow_masked = _sampling(load, data)
    tags = _tags(load, data)
    max_attempts, tie_gap = _attempts(load, sampling)
    _texts(load, data, part_entries, scope, values_scope)
    credit = load_credit(load, data, "follow_credit")
    claims = parse_claims(load, data, scope | {p.id for p in parts})
    if load.problems:
        raise TemplateError(load.problems)
    lines = {str(k): data.line_of(k) for k in data}
    return Template(
        path=path, **header,
        parameters=tuple(params), derived=tuple(derived), constraints=tuple(constraints),
        givens=givens, parts=tuple(parts), function=function, reference=reference,
        output=output, tests=tuple(tests), misconceptions=misconceptions, rtol=rtol, atol=atol,
        max_attempts=max_attempts, tie_gap=tie_gap,
        allow_fully_masked_rows=allow_masked, tags=tuple(tags),
        notes=str(data.get("notes", "") or ""), lines=lines,
        follow_credit=credit if credit is not None else DEFAULT_CREDIT, claims=claims)


# What every text of a variant may read besides its values (``Variant.context``).
_TEXT_NAMES = {"answers", "options", "givens"}


def _texts(load: TemplateProblems, data: LineDict, part_entries: list[LineDict], scope: set[str],
           values_scope: set[str]) -> None:
    """Every Jinja text of the template compiles and reads only names it will be given (the
    parameters, derived values and part ids; option texts only the first two): a misspelt
    name is reported once, here, at its line, not once per variant."""
    # A name whose definition is broken has its own problem already: never a second one here.
    defined = {str(name) for block in ("parameters", "derived")
               if isinstance(data.get(block), LineDict) for name in data[block]}
    everything = scope | _TEXT_NAMES | defined
    values = values_scope | defined
    where = "(a text can use the parameters, the derived values and the part ids)"
    for name in ("prompt", "solution"):
        _text(load, data, name, name, everything, where)
    for i, entry in enumerate(part_entries):
        for name in ("prompt", "rubric"):
            _text(load, entry, name, f"parts[{i}].{name}", everything, where)
        for container, name, suffix in rubric_texts(entry.get("rubric")):
            _text(load, container, name, f"parts[{i}].rubric.{suffix}", everything, where)
        options = entry.get("options")
        if not isinstance(options, LineList):
            continue
        for j, option in enumerate(options):
            okey = f"parts[{i}].options[{j}]"
            if isinstance(option, str):
                _text(load, options, j, okey, values, "(an option can use the parameters and "
                                                      "the derived values)")
            elif isinstance(option, LineDict):
                for name in ("text", "feedback"):
                    _text(load, option, name, key_path(okey, name), values,
                          "(an option can use the parameters and the derived values)")


def _text(load: TemplateProblems, container, name, key: str, known: set[str], where: str) -> None:
    """One text (``container[name]``, a mapping's value or a list's item) checked."""
    source = container[name] if isinstance(container, LineList) else container.get(name)
    if not isinstance(source, str) or ("{" not in source):
        return
    try:
        names = text_names(source)
    except RenderError as err:
        load.error(container.text_line(name, err.lineno or 1), key, f"{err}")
        return
    for unknown, lineno in names.items():
        if unknown in known:
            continue
        hint = difflib.get_close_matches(unknown, sorted(known - _TEXT_NAMES), n=1)
        suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
        load.error(container.text_line(name, lineno), key,
                   f"unknown name '{unknown}' in the text {where}{suggestion}")


def _header(load: TemplateProblems, data: LineDict) -> dict:
    """id, title, objective, kind, prompt and solution (the Template fields of those names)."""
    tid = data.get("id")
    if "id" in data and (not isinstance(tid, str) or not _ID.match(tid)):
        load.error(data.line_of("id"), "id", f"'{tid}' is not a valid id (lower-case letters, digits, _)")
    objective = data.get("objective")
    if "objective" in data and objective not in OBJECTIVES:
        load.error(data.line_of("objective"), "objective",
                   f"unknown objective '{objective}' (expected one of: {', '.join(OBJECTIVES)})")
    kind = data.get("kind")
    if "kind" in data and kind not in KINDS:
        load.error(data.line_of("kind"), "kind", f"unknown kind '{kind}' (expected one of: {', '.join(KINDS)})")
    return {"id": tid, "title": load.text(data, "title", "title"), "objective": objective,
            "kind": kind, "prompt": load.text(data, "prompt", "prompt"),
            "solution": load.text(data, "solution", "solution") or ""}


def _tolerances(load: TemplateProblems, data: LineDict, kind) -> tuple[float, float]:
    """Top-level (rtol, atol): the comparison of implement problems, the default of numeric parts."""
    rtol = load.number(data, "rtol", "rtol", DEFAULT_RTOL, minimum=0)
    atol = load.number(data, "atol", "atol", DEFAULT_ATOL, minimum=0)
    if kind in ("choice", "free_response"):
        for key in ("rtol", "atol"):
            if key in data:
                load.error(data.line_of(key), key, "only numeric and implement problems have this key")
    return rtol, atol


def _values(load: TemplateProblems, data: LineDict,
            scope: set[str]) -> tuple[list[Parameter], list[Derived], set[str]]:
    """The parameters and derived values (their names join ``scope``), and the functions
    their expressions call."""
    params = _parameters(load, data.get("parameters", LineDict()), data.line_of("parameters"),
                         "parameters", scope)
    derived = _derived(load, data.get("derived", LineDict()), data.line_of("derived"), "derived", scope)
    calls: set[str] = set()
    for d in derived:
        calls |= d.expression.calls
    for p in params:
        for option in p.options.values():
            for e in option if isinstance(option, list) else [option]:
                if isinstance(e, Expression):
                    calls |= e.calls
    return params, derived, calls


def _givens(load: TemplateProblems, data: LineDict, params: list[Parameter],
            scope: set[str]) -> tuple[str, ...]:
    """The names the problem shows the student (default: every parameter)."""
    givens_raw = data.get("givens")
    if givens_raw is None:
        return tuple(p.name for p in params)
    if isinstance(givens_raw, LineList):
        for i, g in enumerate(givens_raw):
            if g not in scope:
                load.error(givens_raw.line_of(i), f"givens[{i}]",
                           f"'{g}' is not a parameter or derived value")
        return tuple(str(g) for g in givens_raw)
    load.error(data.line_of("givens"), "givens", f"expected a list of names, got {describe(givens_raw)}")
    return ()


def _misconceptions(load: TemplateProblems, data: LineDict, kind, parts: list[Part],
                    entries: list[LineDict], calls: set[str],
                    reference: str | None) -> tuple[list[Part], tuple[str, ...]]:
    """The parts with their misconceptions, and the problem's own (implement problems).
    They need every call known: a twin must shadow something the template calls."""
    callable_here = calls | ({reference} if reference else set())
    parts = [replace(part, misconceptions=_misconception_list(load, entry, f"parts[{i}]", callable_here))
             if kind == "numeric" else part
             for i, (part, entry) in enumerate(zip(parts, entries))]
    misconceptions: tuple[str, ...] = ()
    if "misconceptions" in data:
        if kind != "implement":
            load.error(data.line_of("misconceptions"), "misconceptions",
                       "list misconceptions on the parts they affect (parts[i].misconceptions)")
        else:
            misconceptions = _misconception_list(load, data, "", {reference} if reference else set())
    return parts, misconceptions


def _sampling(load: TemplateProblems, data: LineDict) -> tuple[LineDict, bool]:
    """The sampling block (its numbers are read by ``_attempts``) and allow_fully_masked_rows."""
    sampling = data.get("sampling", LineDict())
    sampling = load.mapping(sampling, data.line_of("sampling"), "sampling") or LineDict()
    load.keys(sampling, SAMPLING_KEYS, "sampling")
    allow_masked = sampling.get("allow_fully_masked_rows", False)
    if not isinstance(allow_masked, bool):
        load.error(sampling.line_of("allow_fully_masked_rows"), "sampling.allow_fully_masked_rows",
                   "expected true or false")
        allow_masked = False
    return sampling, allow_masked


def _tags(load: TemplateProblems, data: LineDict) -> list:
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        load.error(data.line_of("tags"), "tags", "expected a list of words")
        return []
    return tags


def _attempts(load: TemplateProblems, sampling: LineDict) -> tuple[int, float]:
    """sampling.max_attempts and sampling.tie_gap (read after the tags, as they always were)."""
    max_attempts = load.number(sampling, "max_attempts", "sampling.max_attempts", 200,
                               minimum=1, integer=True)
    tie_gap = load.number(sampling, "tie_gap", "sampling.tie_gap", 0.01, minimum=0)
    return max_attempts, tie_gap


# --- names, parameters, derived values, constraints ------------------------------------------

def _new_name(load: TemplateProblems, name, line: int, key: str, scope: set[str]) -> bool:
    if not isinstance(name, str) or not _NAME.match(name):
        load.error(line, key, f"'{name}' is not a valid name (letters, digits, _)")
        return False
    if name in _RESERVED:
        load.error(line, key, f"'{name}' is reserved (a built-in, a reference function or a "
                              "name the notebook defines)")
        return False
    if name.startswith("_"):
        load.error(line, key, f"'{name}' starts with _ (IPython keeps its output history in such names)")
        return False
    if name in scope:
        load.error(line, key, f"'{name}' is already defined")
        return False
    return True


def _parameters(load: TemplateProblems, block, line: int, key: str, scope: set[str]) -> list[Parameter]:
    """A parameters block: each name a constant or a distribution; the names join ``scope``."""
    out: list[Parameter] = []
    block = load.mapping(block, line, key)
    if block is None:
        return out
    for name, spec in block.items():
        here, pkey = block.line_of(name), key_path(key, name)
        if not _new_name(load, name, here, pkey, scope):
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


def _distribution(load: TemplateProblems, name: str, spec: LineDict, here: int, pkey: str,
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


def _derived(load, block, line, key, scope) -> list[Derived]:
    out: list[Derived] = []
    block = load.mapping(block, line, key)
    if block is None:
        return out
    for name, source in block.items():
        here, dkey = block.line_of(name), key_path(key, name)
        if not _new_name(load, name, here, dkey, scope):
            continue
        expression = load.expression(source, here, dkey, scope)
        scope.add(name)
        if expression is not None:
            out.append(Derived(name, here, expression))
    return out


def _constraints(load, block, line, key, scope) -> list[Constraint]:
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


def _misconception_list(load, mapping, key, allowed_shadows: set[str] | None) -> tuple[str, ...]:
    raw = mapping.get("misconceptions", LineList())
    if not isinstance(raw, LineList):
        load.error(mapping.line_of("misconceptions"), key_path(key, "misconceptions"),
                   f"expected a list of misconception names, got {describe(raw)}")
        return ()
    names = []
    for i, name in enumerate(raw):
        here = raw.line_of(i)
        mkey = f"{key_path(key, 'misconceptions')}[{i}]"
        twin = references.MISCONCEPTIONS.get(name) if isinstance(name, str) else None
        if twin is None:
            hint = difflib.get_close_matches(str(name), references.MISCONCEPTIONS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            load.error(here, mkey, f"unknown misconception '{name}' (see 'attnkit "
                                   f"misconceptions'){suggestion}")
            continue
        if allowed_shadows is not None and twin.shadows not in allowed_shadows:
            load.error(here, mkey, f"'{name}' is a twin of {twin.shadows}(), which this template "
                                   f"never calls")
            continue
        names.append(name)
    return tuple(names)


# --- the parts of numeric, choice and free-response problems ---------------------------------

def _exercise_parts(load: TemplateProblems, data: LineDict, kind, scope: set[str], calls: set[str],
                    tolerance: tuple[float, float]) -> tuple[list[Part], list[LineDict]]:
    """The parts of a problem that is not an implement problem, and their YAML entries."""
    for forbidden in ("function", "reference", "tests", "output"):
        if forbidden in data:
            load.error(data.line_of(forbidden), forbidden, "only implement problems have this key")
    if "parts" not in data:
        load.error(data.line, "parts", "required")
        return [], []
    return _parts(load, data["parts"], data.line_of("parts"), kind, scope, calls, tolerance)


def _parts(load, raw, line, kind, scope, calls, tolerance) -> tuple[list[Part], list[LineDict]]:
    """The parts, and their YAML entries (misconceptions are resolved once every call is known)."""
    if not isinstance(raw, LineList) or not raw:
        load.error(line, "parts", f"expected a list of at least one part, got {describe(raw)}")
        return [], []
    entries = []
    parts, ids = [], set()
    part_scope = set(scope)
    for i, key, entry in load.mappings(raw, "parts", PART_KEYS):
        _numeric_only_keys(load, entry, key, kind)
        entries.append(entry)
        pid = _part_id(load, entry, key, i, ids, scope)
        earlier = [p.id for p in parts]
        ids.add(pid)
        part = _part(load, entry, key, pid, kind, scope, calls, tolerance)
        follow = load_follow(load, entry, key, kind, scope, earlier, calls)
        parts.append(replace(part, follow=follow) if follow is not None else part)
        part_scope.add(pid)
    scope |= part_scope
    return parts, entries


def _numeric_only_keys(load: TemplateProblems, entry: LineDict, key: str, kind) -> None:
    if kind != "numeric":
        for numeric_only in ("rtol", "atol", "checks", "misconceptions"):
            if numeric_only in entry:
                load.error(entry.line_of(numeric_only), key_path(key, numeric_only),
                           "only numeric parts have this key"
                           + (" (choice options carry 'feedback')" if numeric_only == "misconceptions" else ""))


def _part_id(load: TemplateProblems, entry: LineDict, key: str, i: int, ids: set[str],
             scope: set[str]) -> str:
    """The part's id (partN when it is missing or not a name), unique and not reserved."""
    pid = entry.get("id")
    if not isinstance(pid, str) or not _NAME.match(pid):
        if "id" in entry:
            load.error(entry.line_of("id"), key_path(key, "id"),
                       f"'{pid}' is not a valid part id (letters, digits, _)")
        pid = f"part{i + 1}"
    elif pid in ids:
        load.error(entry.line_of("id"), key_path(key, "id"), f"duplicate part id '{pid}'")
    elif pid in _RESERVED_VALUES or pid in NOTEBOOK_NAMES or pid.startswith("_"):
        load.error(entry.line_of("id"), key_path(key, "id"),
                   f"'{pid}' is reserved (it names something templates or notebooks read)")
    elif pid in scope:
        load.error(entry.line_of("id"), key_path(key, "id"),
                   f"part id '{pid}' is also a parameter or derived name")
    return pid


def _part(load: TemplateProblems, entry: LineDict, key: str, pid: str, kind, scope: set[str],
          calls: set[str], tolerance: tuple[float, float]) -> Part:
    points = load.number(entry, "points", key_path(key, "points"), 0.0, minimum=0)
    answer = _answer(load, entry, key, kind, scope, calls)
    options = _part_options(load, entry, key, kind, scope, calls)
    rubric = _rubric(load, entry, key, kind, points)
    shuffle = entry.get("shuffle", True)
    if not isinstance(shuffle, bool):
        load.error(entry.line_of("shuffle"), key_path(key, "shuffle"), "expected true or false")
        shuffle = True
    return Part(
        id=pid, line=entry.line, points=points,
        prompt=load.text(entry, "prompt", key_path(key, "prompt")) or "",
        answer=answer,
        rtol=load.number(entry, "rtol", key_path(key, "rtol"), tolerance[0], minimum=0),
        atol=load.number(entry, "atol", key_path(key, "atol"), tolerance[1], minimum=0),
        checks=_checks(load, entry, key, scope) if kind == "numeric" else (),
        options=options, shuffle=shuffle, rubric=rubric)


def _answer(load: TemplateProblems, entry: LineDict, key: str, kind, scope: set[str],
            calls: set[str]) -> Expression | None:
    """The part's answer expression: required for a numeric part, refused for a free-response one."""
    if "answer" not in entry:
        if kind == "numeric":
            load.error(entry.line, key_path(key, "answer"), "required for a numeric part")
        return None
    if kind == "free_response":
        load.error(entry.line_of("answer"), key_path(key, "answer"),
                   "free-response parts are graded by hand: give a 'rubric', not an answer")
        return None
    answer = load.expression(entry["answer"], entry.line_of("answer"), key_path(key, "answer"), scope)
    if answer is not None:
        calls |= answer.calls
    return answer


def _part_options(load: TemplateProblems, entry: LineDict, key: str, kind, scope: set[str],
                  calls: set[str]):
    """A choice part's options (required there, refused elsewhere)."""
    if kind != "choice":
        if "options" in entry:
            load.error(entry.line_of("options"), key_path(key, "options"), "only choice parts have options")
        return None
    if "options" not in entry:
        load.error(entry.line, key_path(key, "options"), "required for a choice part")
        return None
    options = _options(load, entry, key, scope)
    if isinstance(options, Expression):
        calls |= options.calls
    return options


def _rubric(load: TemplateProblems, entry: LineDict, key: str, kind, points: float) -> Rubric | None:
    """The part's rubric (``exercises.template.rubrics``): required for a free-response part, optional
    for the others (used when a grader overrides the automatic score)."""
    if kind == "free_response" and "rubric" not in entry:
        load.error(entry.line, key_path(key, "rubric"), "required for a free-response part "
                   "(what a full answer contains: items with points, or a text guide)")
    return load_rubric(load, entry, key, points, hand=kind == "free_response")


def _checks(load, part: LineDict, key: str, scope: set[str]):
    """A numeric part's visible checks (``exercises.template.checks``): (name, argument expression or None)."""
    raw = part.get("checks", LineList())
    if not isinstance(raw, LineList):
        load.error(part.line_of("checks"), key_path(key, "checks"), f"expected a list, got {describe(raw)}")
        return ()
    out = []
    for i, entry in enumerate(raw):
        here, ckey = raw.line_of(i), f"{key_path(key, 'checks')}[{i}]"
        argument = None
        if isinstance(entry, LineDict) and len(entry) == 1:
            (name, argument), = entry.items()
        else:
            name = entry
        if not isinstance(name, str) or name not in CHECKS:
            load.error(here, ckey, f"unknown check '{name}' (expected one of: {', '.join(CHECKS)})")
            continue
        if CHECKS[name].takes_argument != (argument is not None):
            load.error(here, ckey, f"check '{name}' " + ("needs an argument, e.g. {" + name + ": mask}"
                                                         if CHECKS[name].takes_argument
                                                         else "takes no argument"))
            continue
        expression = load.expression(argument, here, ckey, scope) if argument is not None else None
        out.append((name, expression))
    return tuple(out)


def _options(load, part: LineDict, key: str, scope: set[str]):
    raw = part["options"]
    okey = key_path(key, "options")
    if isinstance(raw, str):
        if "answer" not in part:
            load.error(part.line_of("options"), okey, "options computed by an expression need an "
                                                      "'answer' expression giving the correct one")
        return load.expression(raw, part.line_of("options"), okey, scope)
    if not isinstance(raw, LineList) or len(raw) < 2:
        load.error(part.line_of("options"), okey, "expected a list of at least two options or "
                                                  "an expression")
        return None
    if len(raw) > MAX_OPTIONS:
        load.error(part.line_of("options"), okey, f"at most {MAX_OPTIONS} options (they are "
                                                  "lettered A to Z)")
        return None
    options = []
    for i, entry in enumerate(raw):
        here, ekey = raw.line_of(i), f"{okey}[{i}]"
        if isinstance(entry, str):
            options.append(Option(entry, False))
            continue
        if not isinstance(entry, LineDict):
            load.error(here, ekey, f"expected text or a mapping with 'text', got {describe(entry)}")
            continue
        load.keys(entry, OPTION_KEYS, ekey)
        correct = entry.get("correct", False)
        if not isinstance(correct, bool):
            load.error(entry.line_of("correct"), key_path(ekey, "correct"), "expected true or false")
            correct = False
        options.append(Option(str(entry.get("text", "")), correct, str(entry.get("feedback", "") or "")))
    if "answer" not in part and sum(o.correct for o in options) != 1:
        load.error(part.line_of("options"), okey, f"exactly one option must have 'correct: true' "
                                                  f"(found {sum(o.correct for o in options)})")
    if "answer" in part and any(o.correct for o in options):
        load.error(part.line_of("options"), okey, "give either 'correct: true' on an option or "
                                                  "an 'answer' expression, not both")
    return tuple(options)


# --- implement problems: the function, its reference, the hidden tests -----------------------

def _implement(load: TemplateProblems, data: LineDict, scope: set[str], calls: set[str],
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


def _function(load: TemplateProblems, data: LineDict) -> FunctionSpec | None:
    if isinstance(data.get("function"), LineDict):
        return _signature(load, data["function"])
    if "function" in data:
        load.error(data.line_of("function"), "function", "expected a mapping with name and signature")
    return None


def _reference(load: TemplateProblems, data: LineDict, function: FunctionSpec | None) -> str | None:
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
    if not isinstance(name, str) or not _NAME.match(name):
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


@functools.lru_cache(maxsize=256)
def reference_code(solution: str, function: str) -> tuple[str, str]:
    """(signature lines, body) of the reference implementation an ``implement`` template shows
    in the first ```python block of its solution: the instructor notebook runs it, and the
    student's notebook keeps its signature. ValueError when the block is not one function."""
    match = re.search(r"```python\n(.*?)```", solution, re.S)
    if not match:
        raise ValueError(f"an implement problem needs its reference code, def {function}(...), "
                         "in a ```python block of its solution (the instructor notebook runs it)")
    code = match.group(1)
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        # Python's own message may end "(detected at line 2)": say the line once
        message = re.sub(r"\s*\(detected at line \d+\)$", "", err.msg)
        raise ValueError(f"the ```python block does not parse: {message} (line {err.lineno} of "
                         f"the block)") from None
    lines = code.splitlines()
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    others = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.Import, ast.ImportFrom))]
    if len(defs) != 1 or defs[0].name != function or others:
        raise ValueError(f"the ```python block must define {function}() and nothing else "
                         "(helpers go inside it): the student's notebook keeps only its signature")
    node = defs[0]
    if node.body[0].lineno == node.lineno:
        raise ValueError(f"put the body of {function}() on the lines after its signature")
    # the signature ends on the first line after which 'def …:' parses on its own
    for end in range(node.lineno, node.body[0].lineno):
        try:
            ast.parse("\n".join(lines[node.lineno - 1:end]) + "\n    pass")
        except SyntaxError:
            continue
        return "\n".join(lines[node.lineno - 1:end]), "\n".join(lines[end:node.end_lineno])
    raise ValueError(f"cannot find where the signature of {function}() ends")


def _tests(load, raw, line, scope, function: FunctionSpec | None, calls) -> list[TestFamily]:
    if not isinstance(raw, LineList) or not raw:
        load.error(line, "tests", f"expected a list of test-case families, got {describe(raw)}")
        return []
    out, names = [], set()
    for i, key, entry in load.mappings(raw, "tests"):
        out.append(_test_family(load, entry, key, i, names, scope, function, calls))
    return out


def _test_family(load: TemplateProblems, entry: LineDict, key: str, i: int, names: set[str],
                 scope: set[str], function: FunctionSpec | None, calls: set[str]) -> TestFamily:
    """One family of hidden test cases: its own parameters, derived values and constraints
    (seen by this family only) and the arguments of the student's function."""
    load.keys(entry, TEST_KEYS, key, refused=MISPLACED_TEST)
    family = entry.get("family")
    if not isinstance(family, str) or not _ID.match(family):
        load.error(entry.line_of("family"), key_path(key, "family"), f"'{family}' is not a valid name")
        family = f"family{i + 1}"
    if family in names:
        load.error(entry.line_of("family"), key_path(key, "family"), f"duplicate family '{family}'")
    names.add(family)
    local = set(scope)
    params = _parameters(load, entry.get("parameters", LineDict()), entry.line_of("parameters"),
                         key_path(key, "parameters"), local)
    derived = _derived(load, entry.get("derived", LineDict()), entry.line_of("derived"),
                       key_path(key, "derived"), local)
    constraints = _constraints(load, entry.get("constraints", LineList()),
                               entry.line_of("constraints"), key_path(key, "constraints"), local)
    args = _test_args(load, entry, key, local, function, calls)
    for d in derived:
        calls |= d.expression.calls
    return TestFamily(family, entry.line,
                      load.number(entry, "points", key_path(key, "points"), 0.0, minimum=0),
                      load.number(entry, "cases", key_path(key, "cases"), 1, minimum=1, integer=True),
                      tuple(params), tuple(derived), tuple(constraints), args)


def _test_args(load: TemplateProblems, entry: LineDict, key: str, scope: set[str],
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
