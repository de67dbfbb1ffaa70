"""Seeded distributions for template parameters.

Each distribution is one entry in ``DISTRIBUTIONS``: the keys it takes (required and
optional) and a sampler ``(rng, **options) → value``. Option values may be expressions over
earlier parameters (``shape: [L, d_k]``); the engine evaluates them before sampling.
Arrays come back as float64 (integer-valued where asked) so answers are computed in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

# A small built-in vocabulary for sentence parameters: short, unambiguous, lower-case words.
VOCABULARY = {
    "determiner": ["the", "a", "every", "one", "my", "this"],
    "adjective": ["small", "old", "quick", "quiet", "red", "tired", "happy", "cold"],
    "noun": ["dog", "cat", "bird", "child", "river", "bank", "teacher", "robot", "farmer",
             "train", "student", "horse"],
    "verb": ["ran", "sang", "slept", "jumped", "waited", "smiled", "swam", "left", "worked"],
    "adverb": ["fast", "early", "today", "again", "quietly", "there", "home", "late"],
}
# Sentence shapes by length; every word comes from VOCABULARY.
_PATTERNS = {
    2: ["noun", "verb"],
    3: ["determiner", "noun", "verb"],
    4: ["determiner", "noun", "verb", "adverb"],
    5: ["determiner", "adjective", "noun", "verb", "adverb"],
    6: ["determiner", "adjective", "noun", "verb", "adverb", "adverb"],
}


@dataclass(frozen=True)
class Distribution:
    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    sample: Callable
    summary: str


def _shape(shape):
    if shape is None:
        return None
    shape = tuple(int(s) for s in (shape if isinstance(shape, (list, tuple)) else [shape]))
    if any(s < 0 for s in shape) or math.prod(shape) > 1_000_000:      # exact: no int64 wrap
        raise ValueError(f"shape {shape} is negative or too large")
    return shape


def _rounded(x, decimals):
    x = np.round(x, int(decimals)) + 0.0 if decimals is not None else x  # + 0.0: no −0.0
    return float(x) if np.ndim(x) == 0 else np.asarray(x, dtype=float)


_MAX_VALUES = 1_000_000


def _integers(rng, low, high, shape=None, exclude=()):
    low, high = int(low), int(high)
    if high < low:
        raise ValueError(f"high ({high}) is below low ({low})")
    size = _shape(shape)
    excluded = set(int(e) for e in (exclude or ()))
    if not excluded:
        value = rng.integers(low, high, size=size, endpoint=True)
    else:
        if high - low >= _MAX_VALUES:
            raise ValueError(f"exclude works on ranges of at most {_MAX_VALUES} values")
        allowed = np.array([v for v in range(low, high + 1) if v not in excluded])
        if allowed.size == 0:
            raise ValueError("every value between low and high is excluded")
        value = rng.choice(allowed, size=size)
    return int(value) if shape is None else np.asarray(value, dtype=np.int64)


def _int_matrix(rng, shape, low=-3, high=3, exclude=()):
    return _integers(rng, low, high, shape, exclude).astype(float)


def _choice(rng, values, size=None, replace=True):
    values = list(values)
    if not values:
        raise ValueError("values is empty")
    if size is None:
        return values[int(rng.integers(len(values)))]
    size = int(size)
    if not 0 <= size <= _MAX_VALUES:
        raise ValueError(f"size must be between 0 and {_MAX_VALUES}, got {size}")
    if not replace and size > len(values):
        raise ValueError(f"cannot choose {size} distinct values from {len(values)}")
    picks = rng.choice(len(values), size=size, replace=bool(replace))
    return [values[int(i)] for i in picks]


def _uniform(rng, low, high, shape=None, decimals=None):
    return _rounded(rng.uniform(float(low), float(high), size=_shape(shape)), decimals)


def _normal(rng, mean=0.0, std=1.0, shape=None, decimals=None):
    return _rounded(rng.normal(float(mean), float(std), size=_shape(shape)), decimals)


def _sentence(rng, length=4, vocabulary=None, distinct=True):
    length = int(length)
    if vocabulary is not None and not 1 <= length <= 1000:
        raise ValueError(f"length must be between 1 and 1000, got {length}")
    if vocabulary is not None:
        return _choice(rng, vocabulary, size=length, replace=not distinct)
    if length not in _PATTERNS:
        raise ValueError(f"built-in sentences have 2 to 6 words, not {length}")
    words = []
    for part in _PATTERNS[length]:
        options = [w for w in VOCABULARY[part] if not (distinct and w in words)]
        words.append(options[int(rng.integers(len(options)))])
    return words


def _permutation(rng, n):
    if not 0 <= int(n) <= _MAX_VALUES:
        raise ValueError(f"n must be between 0 and {_MAX_VALUES}, got {n}")
    return [int(i) for i in rng.permutation(int(n))]


DISTRIBUTIONS: dict[str, Distribution] = {d.name: d for d in (
    Distribution("integers", ("low", "high"), ("shape", "exclude"), _integers,
                 "a uniform integer in [low, high] (both included), or an int array of `shape`"),
    Distribution("int_matrix", ("shape",), ("low", "high", "exclude"), _int_matrix,
                 "a float64 array of `shape` with integer entries in [low, high] (default ±3)"),
    Distribution("choice", ("values",), ("size", "replace"), _choice,
                 "one of `values` (or a list of `size` of them)"),
    Distribution("uniform", ("low", "high"), ("shape", "decimals"), _uniform,
                 "uniform in [low, high), rounded to `decimals` if given"),
    Distribution("normal", (), ("mean", "std", "shape", "decimals"), _normal,
                 "Gaussian (default mean 0, std 1), rounded to `decimals` if given"),
    Distribution("sentence", (), ("length", "vocabulary", "distinct"), _sentence,
                 "a short sentence (list of words) from the built-in vocabulary or `vocabulary`"),
    Distribution("permutation", ("n",), (), _permutation, "a random ordering of 0 … n−1"),
)}
