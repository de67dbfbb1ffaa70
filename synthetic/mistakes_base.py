"""The corpus's building blocks: the ``Mistake`` entry, its registry, the givens a mistake
reads, and the few NumPy pieces (softmax, masks, layer norm) the mistakes are written with.

Written here, from the lecture's equations, and never imported from ``solutions`` or the
grader: the corpus measures the kit's diagnosis, so it must not share the kit's code (the
same rule as ``synthetic.oracle``). Only ``formats`` is read, to decode the answer key."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from formats import key_shape as shape
from formats.cells import LETTERS
from formats.serialize import decode_names

NUMERIC, CHOICE, IMPLEMENT = "numeric", "choice", "implement"
EVERY_FAMILY = "*"                 # an implement mistake is judged on every test family


@dataclass(frozen=True)
class Mistake:
    """One plausible wrong answer. ``wrong``: for a numeric or choice part, givens → the wrong
    value (None: the mistake has nothing to act on in this variant); for an implement
    problem, the student's wrong function itself. ``accept``: the kit's misconception names
    that would name it correctly (empty: the kit has no twin for it, so any name is wrong).
    ``alternatives_ok``: a feedback listing alternatives counts as right when one is in
    ``accept``."""

    id: str
    template: str
    part: str
    description: str
    wrong: Callable
    accept: frozenset
    kind: str = NUMERIC
    alternatives_ok: bool = True


CORPUS: dict[str, Mistake] = {}


def _register(template, part, description, accept, kind, alternatives_ok):
    def register(function):
        name = function.__name__
        if name in CORPUS:
            raise ValueError(f"mistake {name!r} registered twice")
        CORPUS[name] = Mistake(name, template, part, description, function,
                               frozenset(accept), kind, alternatives_ok)
        return function
    return register


def mistake(template: str, part: str, description: str, accept=(), alternatives_ok=True):
    """A numeric part's mistake: the decorated function takes ``Givens`` and returns the value."""
    return _register(template, part, description, accept, NUMERIC, alternatives_ok)


def choice_mistake(template: str, part: str, description: str, accept=()):
    """A choice part's mistake: the decorated function takes ``Givens`` and returns a letter."""
    return _register(template, part, description, accept, CHOICE, True)


def code_mistake(template: str, description: str, accept=(), alternatives_ok=True):
    """An implement problem's mistake: the decorated function is the student's wrong code."""
    return _register(template, EVERY_FAMILY, description, accept, IMPLEMENT, alternatives_ok)


class Givens:
    """What a student of this variant is shown: the givens (as attributes), the prompts and
    the choices' option texts, all read from the answer key's record."""

    def __init__(self, record: dict):
        self.record = record
        self.values = decode_names(shape.givens_of(record))

    def __getattr__(self, name):
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def prompt(self, part: str = "") -> str:
        return self.record.get("prompts", {}).get(part, "")

    def number(self, pattern: str, part: str = "") -> int:
        """An integer the prompt states (the first group of ``pattern``), for values a
        student reads in the text rather than in a given."""
        found = re.search(pattern, self.prompt(part))
        if not found:
            raise LookupError(f"{pattern!r} not in the prompt of part {part!r}")
        return int(found.group(1))

    def letter(self, part: str, fragment: str, exact: bool = False) -> str | None:
        """The letter of the option whose text contains ``fragment`` (``exact``: is it);
        None when no option does."""
        for i, option in enumerate(self.record.get("options", {}).get(part, [])):
            text = option.get("text", "")
            if (text.strip() == fragment) if exact else (fragment in text):
                return LETTERS[i]
        return None


# --- the lecture's equations, in plain NumPy ------------------------------------------------

def softmax(x, axis=-1):
    """exp(x − max) / Σ exp(x − max); a slice that is −inf everywhere gives NaN, as a
    student's own softmax would."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def naive_softmax(x, axis=-1):
    """exp(x) / Σ exp(x) without subtracting the max: overflows to NaN on large scores."""
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(np.asarray(x, dtype=float))
        return e / np.sum(e, axis=axis, keepdims=True)


def blocked(scores, allowed, fill=-np.inf):
    """Scores with every entry where ``allowed`` is False set to ``fill``."""
    return np.where(np.asarray(allowed, dtype=bool), scores, fill)


def lower(L, S=None, k=0):
    """np.tril of ones as bool: query i may see key j when j ≤ i + k."""
    return np.tril(np.ones((L, L if S is None else S), dtype=bool), k=k)


def attention(Q, K, V, scale=None, allowed=None, axis=-1, fill=-np.inf):
    """(weights, output) of softmax(QKᵀ·scale, masked) V; scale defaults to 1/√d_k."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if allowed is not None:
        scores = blocked(scores, allowed, fill)
    weights = softmax(scores, axis=axis)
    return weights, weights @ V


def layer_norm(x, eps=1e-5, axis=-1, ddof=0):
    """(x − μ)/√(σ² + ε) over ``axis`` with γ = 1, β = 0."""
    mu = x.mean(axis=axis, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=axis, ddof=ddof, keepdims=True) + eps)


def sinusoid(L, d, swapped=False):
    """The Transformer's positional encoding: sin on even columns, cos on odd ones."""
    angle = np.arange(L)[:, None] / 10000.0 ** (np.arange(0, d, 2)[None, :] / d)
    pe = np.zeros((L, d))
    first, second = (np.cos, np.sin) if swapped else (np.sin, np.cos)
    pe[:, 0::2], pe[:, 1::2] = first(angle), second(angle)
    return pe


def log_softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
