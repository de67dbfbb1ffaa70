"""The template's data model: a family of exercises as read from its YAML file (frozen
dataclasses, built by ``schema.parse_template``), and the error a broken file raises."""

from __future__ import annotations

from dataclasses import dataclass, field

from formats.rubric import Rubric
from formats.textfile import InputError

from exercises.template.claims import Claim
from exercises.template.expressions import Expression
from exercises.template.follow import DEFAULT_CREDIT
from exercises.template.reference_code import reference_code

KINDS = ("numeric", "implement", "choice", "free_response")
DEFAULT_RTOL, DEFAULT_ATOL = 1e-5, 1e-8
MAX_OPTIONS = 26                      # a choice is answered with a letter


class TemplateError(InputError):
    """One or more problems in a template file; each line reads file:line: key: message."""


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
    source_digest: str = ""            # SHA-256 of the YAML file (and its model's digest): the key records it
    model: str | None = None           # a trained toy model the expressions read (exercises.template.trained_models)
    model_file: str = ""               # its resolved .json
    model_digest: str = ""             # the digest of its weights when the template was loaded
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
