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

from . import expressions, references
from .checks import CHECKS
from .distributions import DISTRIBUTIONS
from .expressions import Expression, ExpressionError
from .objectives import OBJECTIVES
from formats.textfile import ProblemsError
from .yaml_lines import LineDict, LineList, YAMLError, load_yaml

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
            "tags": "optional", "notes": "optional"}
PART_KEYS = {"id": "required", "prompt": "optional", "points": "required", "answer": "optional",
             "rtol": "optional", "atol": "optional", "misconceptions": "optional",
             "checks": "optional", "options": "optional", "shuffle": "optional",
             "rubric": "optional"}
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
    rubric: str = ""


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


# --- validation ------------------------------------------------------------------------------

class _Checker:
    """Collects problems as 'file:line: key: message'."""

    def __init__(self, path: str):
        self.path = path
        self.problems: list[str] = []

    def error(self, line: int, key: str, message: str) -> None:
        where = f"{self.path}:{line}" if line else self.path
        self.problems.append(f"{where}: {key}: {message}" if key else f"{where}: {message}")

    def keys(self, mapping: LineDict, spec: dict, key: str) -> None:
        for name in mapping:
            if name not in spec:
                hint = difflib.get_close_matches(str(name), spec, n=1)
                suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
                self.error(mapping.line_of(name), _join(key, name),
                           f"unknown key '{name}' (expected one of: {', '.join(spec)}){suggestion}")
        for name, need in spec.items():
            if need == "required" and name not in mapping:
                self.error(mapping.line, _join(key, name), "required")

    def mapping(self, value, line: int, key: str) -> LineDict | None:
        if isinstance(value, LineDict):
            return value
        self.error(line, key, f"expected a mapping (key: value lines), got {_kind(value)}")
        return None

    def text(self, mapping: LineDict, name: str, key: str, default: str | None = "") -> str | None:
        value = mapping.get(name, default)
        if not isinstance(value, str):
            self.error(mapping.line_of(name), key, f"expected text, got {_kind(value)}")
            return None
        return value

    def number(self, mapping: LineDict, name: str, key: str, default, minimum=None,
               integer=False):
        value = mapping.get(name, default)
        if isinstance(value, str):  # YAML 1.1 reads 1e-5 as text
            try:
                value = float(value)
            except ValueError:
                pass
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and integer:
            ok = float(value).is_integer()
        if not ok:
            self.error(mapping.line_of(name), key,
                       f"expected {'a whole number' if integer else 'a number'}, got {_kind(value)}")
            return default
        if minimum is not None and value < minimum:
            self.error(mapping.line_of(name), key, f"must be at least {minimum}, got {value}")
            return default
        return int(value) if integer else float(value)

    def expression(self, source, line: int, key: str, scope: set[str]) -> Expression | None:
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


def _join(prefix: str, name) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _kind(value) -> str:
    if isinstance(value, LineDict):
        return "a mapping"
    if isinstance(value, LineList):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"


def _new_name(check: _Checker, name, line: int, key: str, scope: set[str]) -> bool:
    if not isinstance(name, str) or not _NAME.match(name):
        check.error(line, key, f"'{name}' is not a valid name (letters, digits, _)")
        return False
    if name in _RESERVED:
        check.error(line, key, f"'{name}' is reserved (a built-in, a reference function or a "
                               "name the notebook defines)")
        return False
    if name.startswith("_"):
        check.error(line, key, f"'{name}' starts with _ (IPython keeps its output history in such names)")
        return False
    if name in scope:
        check.error(line, key, f"'{name}' is already defined")
        return False
    return True


def _parameters(check: _Checker, block, line: int, key: str, scope: set[str]) -> list[Parameter]:
    out: list[Parameter] = []
    block = check.mapping(block, line, key)
    if block is None:
        return out
    for name, spec in block.items():
        here, pkey = block.line_of(name), _join(key, name)
        if not _new_name(check, name, here, pkey, scope):
            continue
        if not isinstance(spec, LineDict):
            if isinstance(spec, (int, float, str, bool, LineList)):
                out.append(Parameter(name, here, None, {}, _plain(spec)))
                scope.add(name)
            else:
                check.error(here, pkey, f"expected a distribution or a constant, got {_kind(spec)}")
            continue
        scope.add(name)  # even if the spec is broken: one error, not one per later use
        kind = spec.get("dist")
        if kind is None:
            check.error(spec.line, _join(pkey, "dist"),
                        f"required (one of: {', '.join(DISTRIBUTIONS)})")
            continue
        if kind not in DISTRIBUTIONS:
            hint = ([_DISTRIBUTION_ALIASES[kind]] if kind in _DISTRIBUTION_ALIASES
                    else difflib.get_close_matches(str(kind), DISTRIBUTIONS, n=1))
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            check.error(spec.line_of("dist"), pkey, f"unknown distribution '{kind}' (expected one "
                                                    f"of: {', '.join(DISTRIBUTIONS)}){suggestion}")
            continue
        dist = DISTRIBUTIONS[kind]
        allowed = {"dist": "required", **{o: "required" for o in dist.required},
                   **{o: "optional" for o in dist.optional}}
        check.keys(spec, allowed, pkey)
        options = {}
        for option, raw in spec.items():
            if option == "dist" or option not in allowed:
                continue
            options[option] = _option(check, raw, spec.line_of(option), _join(pkey, option),
                                      scope, literal=option in ("values", "vocabulary"))
        out.append(Parameter(name, here, kind, options))
        scope.add(name)
    return out


def _plain(value):
    if isinstance(value, LineList):
        return [_plain(v) for v in value]
    return value


def _option(check, raw, line, key, scope, literal):
    """A distribution option: a literal list (values, vocabulary), a list of expressions
    (shape), or a single number/expression."""
    if isinstance(raw, LineList):
        if literal:
            return _plain(raw)
        return [check.expression(v, raw.line_of(i), f"{key}[{i}]", scope) for i, v in enumerate(raw)]
    if isinstance(raw, bool) or raw is None:
        return raw
    if isinstance(raw, (int, float)):
        return raw
    if isinstance(raw, str):
        return check.expression(raw, line, key, scope)
    check.error(line, key, f"expected a number, a list or an expression, got {_kind(raw)}")
    return None


def _derived(check, block, line, key, scope) -> list[Derived]:
    out: list[Derived] = []
    block = check.mapping(block, line, key)
    if block is None:
        return out
    for name, source in block.items():
        here, dkey = block.line_of(name), _join(key, name)
        if not _new_name(check, name, here, dkey, scope):
            continue
        expression = check.expression(source, here, dkey, scope)
        scope.add(name)
        if expression is not None:
            out.append(Derived(name, here, expression))
    return out


def _constraints(check, block, line, key, scope) -> list[Constraint]:
    out: list[Constraint] = []
    if not isinstance(block, LineList):
        check.error(line, key, f"expected a list of expressions, got {_kind(block)}")
        return out
    for i, entry in enumerate(block):
        here, ckey = block.line_of(i), f"{key}[{i}]"
        why = ""
        if isinstance(entry, LineDict):
            check.keys(entry, CONSTRAINT_KEYS, ckey)
            why = entry.get("why", "") or ""
            entry = entry.get("expr")
            if entry is None:
                continue
        expression = check.expression(entry, here, ckey, scope)
        if expression is not None:
            out.append(Constraint(here, expression, str(why)))
    return out


def _misconception_list(check, mapping, key, allowed_shadows: set[str] | None) -> tuple[str, ...]:
    raw = mapping.get("misconceptions", LineList())
    if not isinstance(raw, LineList):
        check.error(mapping.line_of("misconceptions"), _join(key, "misconceptions"),
                    f"expected a list of misconception names, got {_kind(raw)}")
        return ()
    names = []
    for i, name in enumerate(raw):
        here = raw.line_of(i)
        mkey = f"{_join(key, 'misconceptions')}[{i}]"
        twin = references.MISCONCEPTIONS.get(name) if isinstance(name, str) else None
        if twin is None:
            hint = difflib.get_close_matches(str(name), references.MISCONCEPTIONS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            check.error(here, mkey, f"unknown misconception '{name}' (see 'attnkit "
                                    f"misconceptions'){suggestion}")
            continue
        if allowed_shadows is not None and twin.shadows not in allowed_shadows:
            check.error(here, mkey, f"'{name}' is a twin of {twin.shadows}(), which this template "
                                    f"never calls")
            continue
        names.append(name)
    return tuple(names)


def _checks(check, part: LineDict, key: str, scope: set[str]):
    raw = part.get("checks", LineList())
    if not isinstance(raw, LineList):
        check.error(part.line_of("checks"), _join(key, "checks"), f"expected a list, got {_kind(raw)}")
        return ()
    out = []
    for i, entry in enumerate(raw):
        here, ckey = raw.line_of(i), f"{_join(key, 'checks')}[{i}]"
        argument = None
        if isinstance(entry, LineDict) and len(entry) == 1:
            (name, argument), = entry.items()
        else:
            name = entry
        if not isinstance(name, str) or name not in CHECKS:
            check.error(here, ckey, f"unknown check '{name}' (expected one of: {', '.join(CHECKS)})")
            continue
        if CHECKS[name].takes_argument != (argument is not None):
            check.error(here, ckey, f"check '{name}' " + ("needs an argument, e.g. {" + name + ": mask}"
                                                          if CHECKS[name].takes_argument
                                                          else "takes no argument"))
            continue
        expression = check.expression(argument, here, ckey, scope) if argument is not None else None
        out.append((name, expression))
    return tuple(out)


def _options(check, part: LineDict, key: str, scope: set[str]):
    raw = part["options"]
    okey = _join(key, "options")
    if isinstance(raw, str):
        if "answer" not in part:
            check.error(part.line_of("options"), okey, "options computed by an expression need an "
                                                       "'answer' expression giving the correct one")
        return check.expression(raw, part.line_of("options"), okey, scope)
    if not isinstance(raw, LineList) or len(raw) < 2:
        check.error(part.line_of("options"), okey, "expected a list of at least two options or "
                                                   "an expression")
        return None
    if len(raw) > MAX_OPTIONS:
        check.error(part.line_of("options"), okey, f"at most {MAX_OPTIONS} options (they are "
                                                   "lettered A to Z)")
        return None
    options = []
    for i, entry in enumerate(raw):
        here, ekey = raw.line_of(i), f"{okey}[{i}]"
        if isinstance(entry, str):
            options.append(Option(entry, False))
            continue
        if not isinstance(entry, LineDict):
            check.error(here, ekey, f"expected text or a mapping with 'text', got {_kind(entry)}")
            continue
        check.keys(entry, OPTION_KEYS, ekey)
        correct = entry.get("correct", False)
        if not isinstance(correct, bool):
            check.error(entry.line_of("correct"), _join(ekey, "correct"), "expected true or false")
            correct = False
        options.append(Option(str(entry.get("text", "")), correct, str(entry.get("feedback", "") or "")))
    if "answer" not in part and sum(o.correct for o in options) != 1:
        check.error(part.line_of("options"), okey, f"exactly one option must have 'correct: true' "
                                                    f"(found {sum(o.correct for o in options)})")
    if "answer" in part and any(o.correct for o in options):
        check.error(part.line_of("options"), okey, "give either 'correct: true' on an option or "
                                                   "an 'answer' expression, not both")
    return tuple(options)


def _parts(check, raw, line, kind, scope, calls, tolerance) -> tuple[list[Part], list[LineDict]]:
    """The parts, and their YAML entries (misconceptions are resolved once every call is known)."""
    if not isinstance(raw, LineList) or not raw:
        check.error(line, "parts", f"expected a list of at least one part, got {_kind(raw)}")
        return [], []
    entries = []
    parts, ids = [], set()
    part_scope = set(scope)
    for i, entry in enumerate(raw):
        key = f"parts[{i}]"
        entry = check.mapping(entry, raw.line_of(i), key)
        if entry is None:
            continue
        check.keys(entry, PART_KEYS, key)
        if kind != "numeric":
            for numeric_only in ("rtol", "atol", "checks", "misconceptions"):
                if numeric_only in entry:
                    check.error(entry.line_of(numeric_only), _join(key, numeric_only),
                                "only numeric parts have this key"
                                + (" (choice options carry 'feedback')" if numeric_only == "misconceptions" else ""))
        entries.append(entry)
        pid = entry.get("id")
        if not isinstance(pid, str) or not _NAME.match(pid):
            if "id" in entry:
                check.error(entry.line_of("id"), _join(key, "id"),
                            f"'{pid}' is not a valid part id (letters, digits, _)")
            pid = f"part{i + 1}"
        elif pid in ids:
            check.error(entry.line_of("id"), _join(key, "id"), f"duplicate part id '{pid}'")
        elif pid in _RESERVED_VALUES or pid in NOTEBOOK_NAMES or pid.startswith("_"):
            check.error(entry.line_of("id"), _join(key, "id"),
                        f"'{pid}' is reserved (it names something templates or notebooks read)")
        elif pid in scope:
            check.error(entry.line_of("id"), _join(key, "id"),
                        f"part id '{pid}' is also a parameter or derived name")
        ids.add(pid)
        points = check.number(entry, "points", _join(key, "points"), 0.0, minimum=0)
        answer = None
        needs_answer = kind == "numeric"
        if "answer" in entry:
            if kind in ("free_response",):
                check.error(entry.line_of("answer"), _join(key, "answer"),
                            "free-response parts are graded by hand: give a 'rubric', not an answer")
            else:
                answer = check.expression(entry["answer"], entry.line_of("answer"),
                                          _join(key, "answer"), scope)
                if answer is not None:
                    calls |= answer.calls
        elif needs_answer:
            check.error(entry.line, _join(key, "answer"), "required for a numeric part")
        options = None
        if kind == "choice":
            if "options" not in entry:
                check.error(entry.line, _join(key, "options"), "required for a choice part")
            else:
                options = _options(check, entry, key, scope)
                if isinstance(options, Expression):
                    calls |= options.calls
        elif "options" in entry:
            check.error(entry.line_of("options"), _join(key, "options"), "only choice parts have options")
        rubric = ""
        if kind == "free_response":
            rubric = check.text(entry, "rubric", _join(key, "rubric"), default=None) or ""
        elif "rubric" in entry:
            check.error(entry.line_of("rubric"), _join(key, "rubric"), "only free_response parts have a rubric")
        shuffle = entry.get("shuffle", True)
        if not isinstance(shuffle, bool):
            check.error(entry.line_of("shuffle"), _join(key, "shuffle"), "expected true or false")
            shuffle = True
        parts.append(Part(
            id=pid, line=entry.line, points=points,
            prompt=check.text(entry, "prompt", _join(key, "prompt")) or "",
            answer=answer,
            rtol=check.number(entry, "rtol", _join(key, "rtol"), tolerance[0], minimum=0),
            atol=check.number(entry, "atol", _join(key, "atol"), tolerance[1], minimum=0),
            checks=_checks(check, entry, key, scope) if kind == "numeric" else (),
            options=options, shuffle=shuffle, rubric=rubric))
        part_scope.add(pid)
    scope |= part_scope
    return parts, entries


def _signature(check, spec: LineDict) -> FunctionSpec | None:
    check.keys(spec, FUNCTION_KEYS, "function")
    name = spec.get("name")
    signature = spec.get("signature")
    if not isinstance(name, str) or not _NAME.match(name):
        check.error(spec.line_of("name"), "function.name", f"'{name}' is not a valid Python name")
        return None
    if not isinstance(signature, str):
        check.error(spec.line_of("signature"), "function.signature",
                    "expected text like '(Q, K, V, mask=None)'")
        return None
    try:
        tree = ast.parse(f"def {name}{signature.strip()}: pass")
        args = tree.body[0].args
    except SyntaxError:
        check.error(spec.line_of("signature"), "function.signature",
                    f"cannot parse {signature!r} as a parameter list like '(Q, K, V, mask=None)'")
        return None
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        check.error(spec.line_of("signature"), "function.signature",
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
        raise ValueError(f"the ```python block does not parse: {err.msg} (line {err.lineno})") from None
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


def _tests(check, raw, line, scope, function: FunctionSpec | None, calls) -> list[TestFamily]:
    if not isinstance(raw, LineList) or not raw:
        check.error(line, "tests", f"expected a list of test-case families, got {_kind(raw)}")
        return []
    out, names = [], set()
    for i, entry in enumerate(raw):
        key = f"tests[{i}]"
        entry = check.mapping(entry, raw.line_of(i), key)
        if entry is None:
            continue
        check.keys(entry, TEST_KEYS, key)
        family = entry.get("family")
        if not isinstance(family, str) or not _ID.match(family):
            check.error(entry.line_of("family"), _join(key, "family"), f"'{family}' is not a valid name")
            family = f"family{i + 1}"
        if family in names:
            check.error(entry.line_of("family"), _join(key, "family"), f"duplicate family '{family}'")
        names.add(family)
        local = set(scope)
        params = _parameters(check, entry.get("parameters", LineDict()), entry.line_of("parameters"),
                             _join(key, "parameters"), local)
        derived = _derived(check, entry.get("derived", LineDict()), entry.line_of("derived"),
                           _join(key, "derived"), local)
        constraints = _constraints(check, entry.get("constraints", LineList()),
                                   entry.line_of("constraints"), _join(key, "constraints"), local)
        args = {}
        raw_args = check.mapping(entry.get("args"), entry.line_of("args"), _join(key, "args")) \
            if "args" in entry else None
        for arg, source in (raw_args or {}).items():
            akey = _join(_join(key, "args"), arg)
            if function is not None and arg not in function.parameters:
                check.error(raw_args.line_of(arg), akey,
                            f"{function.name}{function.signature} has no parameter '{arg}'")
                continue
            expression = check.expression(source, raw_args.line_of(arg), akey, local)
            if expression is not None:
                args[arg] = expression
                calls |= expression.calls
        for d in derived:
            calls |= d.expression.calls
        out.append(TestFamily(family, entry.line,
                              check.number(entry, "points", _join(key, "points"), 0.0, minimum=0),
                              check.number(entry, "cases", _join(key, "cases"), 1, minimum=1, integer=True),
                              tuple(params), tuple(derived), tuple(constraints), args))
    return out


def parse_template(data, path: str) -> Template:
    """Validate YAML data (from load_yaml) as a template; TemplateError lists every problem."""
    check = _Checker(path)
    if not isinstance(data, LineDict):
        check.error(1, "", f"a template is a mapping of keys (id, title, …), got {_kind(data)}")
        raise TemplateError(check.problems)
    check.keys(data, TOP_KEYS, "")
    tid = data.get("id")
    if "id" in data and (not isinstance(tid, str) or not _ID.match(tid)):
        check.error(data.line_of("id"), "id", f"'{tid}' is not a valid id (lower-case letters, digits, _)")
    objective = data.get("objective")
    if "objective" in data and objective not in OBJECTIVES:
        check.error(data.line_of("objective"), "objective",
                    f"unknown objective '{objective}' (expected one of: {', '.join(OBJECTIVES)})")
    kind = data.get("kind")
    if "kind" in data and kind not in KINDS:
        check.error(data.line_of("kind"), "kind", f"unknown kind '{kind}' (expected one of: {', '.join(KINDS)})")
    title = check.text(data, "title", "title")
    prompt = check.text(data, "prompt", "prompt")
    solution = check.text(data, "solution", "solution") or ""

    # Top-level tolerances: the comparison of implement problems, the default of numeric parts.
    rtol = check.number(data, "rtol", "rtol", DEFAULT_RTOL, minimum=0)
    atol = check.number(data, "atol", "atol", DEFAULT_ATOL, minimum=0)
    if kind in ("choice", "free_response"):
        for key in ("rtol", "atol"):
            if key in data:
                check.error(data.line_of(key), key, "only numeric and implement problems have this key")

    scope: set[str] = set()
    params = _parameters(check, data.get("parameters", LineDict()), data.line_of("parameters"),
                         "parameters", scope)
    derived = _derived(check, data.get("derived", LineDict()), data.line_of("derived"), "derived", scope)
    calls: set[str] = set()
    for d in derived:
        calls |= d.expression.calls
    for p in params:
        for option in p.options.values():
            for e in option if isinstance(option, list) else [option]:
                if isinstance(e, Expression):
                    calls |= e.calls

    givens_raw = data.get("givens")
    if givens_raw is None:
        givens = tuple(p.name for p in params)
    elif isinstance(givens_raw, LineList):
        givens = tuple(str(g) for g in givens_raw)
        for i, g in enumerate(givens_raw):
            if g not in scope:
                check.error(givens_raw.line_of(i), f"givens[{i}]",
                            f"'{g}' is not a parameter or derived value")
    else:
        check.error(data.line_of("givens"), "givens", f"expected a list of names, got {_kind(givens_raw)}")
        givens = ()

    parts: list[Part] = []
    part_entries: list[LineDict] = []
    function = reference = output = None
    tests: list[TestFamily] = []
    if kind == "implement":
        for forbidden in ("parts",):
            if forbidden in data:
                check.error(data.line_of(forbidden), forbidden, "implement problems have 'tests', not 'parts'")
        for needed in ("function", "reference", "tests"):
            if needed not in data:
                check.error(data.line, needed, "required for an implement problem")
        if isinstance(data.get("function"), LineDict):
            function = _signature(check, data["function"])
        elif "function" in data:
            check.error(data.line_of("function"), "function", "expected a mapping with name and signature")
        reference = data.get("reference")
        if "reference" in data:
            if reference not in references.FUNCTIONS:
                hint = difflib.get_close_matches(str(reference), references.FUNCTIONS, n=1)
                suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
                check.error(data.line_of("reference"), "reference",
                            f"unknown reference function '{reference}'{suggestion}")
                reference = None
            elif function is not None:
                problem = references.signature_error(reference, set(function.parameters))
                if problem:
                    check.error(data.line_of("reference"), "reference", problem)
        if "tests" in data:
            tests = _tests(check, data["tests"], data.line_of("tests"), scope, function, calls)
        if "output" in data:
            output = check.expression(data["output"], data.line_of("output"), "output",
                                      scope | {"result"})
        if function is not None:
            try:
                reference_code(solution, function.name)
            except ValueError as err:
                check.error(data.line_of("solution") if "solution" in data else data.line,
                            "solution", str(err))
    else:
        for forbidden in ("function", "reference", "tests", "output"):
            if forbidden in data:
                check.error(data.line_of(forbidden), forbidden, "only implement problems have this key")
        if "parts" not in data:
            check.error(data.line, "parts", "required")
        else:
            parts, part_entries = _parts(check, data["parts"], data.line_of("parts"), kind, scope,
                                         calls, (rtol, atol))

    constraints = _constraints(check, data.get("constraints", LineList()), data.line_of("constraints"),
                               "constraints", scope)
    # Misconceptions need every call known: a twin must shadow something the template calls.
    callable_here = calls | ({reference} if reference else set())
    parts = [replace(part, misconceptions=_misconception_list(check, entry, f"parts[{i}]", callable_here))
             if kind == "numeric" else part
             for i, (part, entry) in enumerate(zip(parts, part_entries))]
    misconceptions: tuple[str, ...] = ()
    if "misconceptions" in data:
        if kind != "implement":
            check.error(data.line_of("misconceptions"), "misconceptions",
                        "list misconceptions on the parts they affect (parts[i].misconceptions)")
        else:
            misconceptions = _misconception_list(check, data, "", {reference} if reference else set())

    sampling = data.get("sampling", LineDict())
    sampling = check.mapping(sampling, data.line_of("sampling"), "sampling") or LineDict()
    check.keys(sampling, SAMPLING_KEYS, "sampling")
    allow_masked = sampling.get("allow_fully_masked_rows", False)
    if not isinstance(allow_masked, bool):
        check.error(sampling.line_of("allow_fully_masked_rows"), "sampling.allow_fully_masked_rows",
                    "expected true or false")
        allow_masked = False
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        check.error(data.line_of("tags"), "tags", "expected a list of words")
        tags = []

    max_attempts = check.number(sampling, "max_attempts", "sampling.max_attempts", 200,
                                minimum=1, integer=True)
    tie_gap = check.number(sampling, "tie_gap", "sampling.tie_gap", 0.01, minimum=0)
    if check.problems:
        raise TemplateError(check.problems)
    lines = {str(k): data.line_of(k) for k in data}
    return Template(
        path=path, id=tid, title=title, objective=objective, kind=kind, prompt=prompt,
        parameters=tuple(params), derived=tuple(derived), constraints=tuple(constraints),
        givens=givens, parts=tuple(parts), function=function, reference=reference,
        output=output, tests=tuple(tests), misconceptions=misconceptions, rtol=rtol, atol=atol,
        solution=solution, max_attempts=max_attempts, tie_gap=tie_gap,
        allow_fully_masked_rows=allow_masked, tags=tuple(tags),
        notes=str(data.get("notes", "") or ""), lines=lines)


def load_template(path: str | Path, display: str | None = None) -> Template:
    """Read and validate one template file. ``display`` is the path used in messages."""
    path = Path(path)
    shown = display or _display(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise TemplateError([f"{shown}: not UTF-8 text (byte {err.start})"]) from None
    except OSError as err:
        raise TemplateError([f"{shown}: cannot read: {err.strerror}"]) from None
    try:
        data = load_yaml(text)
    except YAMLError as err:
        raise TemplateError([f"{shown}:{err.line}: {err.message}" if err.line
                             else f"{shown}: {err.message}"]) from None
    if data is None:
        raise TemplateError([f"{shown}: the file is empty"])
    template = parse_template(data, shown)
    return replace(template, source_digest=hashlib.sha256(text.encode("utf-8")).hexdigest())


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
