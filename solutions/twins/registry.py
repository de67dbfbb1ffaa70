"""The twins' registry: named, deliberately wrong versions of the reference functions.

Each twin has the signature of the function it shadows and makes exactly one mistake that
students really make (``attnkit misconceptions -v`` lists each with what it gets wrong). The grader runs a
student's wrong answer against the twins of the same function on the student's own variant;
a match turns "wrong" into "your weights equal softmax(QKᵀ) without the 1/√d_k scale".

Look twins up with ``TWINS[name]`` or ``twins_for("causal_mask")``.

A twin coincides with the reference where its mistake has nothing to act on — no mask for the
masking twins, d_k = 1 for the scaling twins, one head for the head-splitting twins, 2-D input
for ``softmax_axis_1``, N = 1 for the unaveraged gradient. A problem variant that is meant to
diagnose a twin must avoid those cases; the variant validation checks that each listed twin's
answer is outside the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable




@dataclass(frozen=True)
class Twin:
    """name: stable code stored in the gradebook; shadows: the correct function's name in
    ``solutions``; summary: completes "your answer equals …"; explanation: why it is wrong
    and what to do; code: the wrong line beside the right one."""

    name: str
    shadows: str
    function: Callable
    summary: str
    explanation: str
    code: str


TWINS: dict[str, Twin] = {}


def add_twin(name: str, shadows: str, function: Callable, summary: str, explanation: str,
             code: str) -> Callable:
    """Register ``function`` as the twin ``name``: the one entry point, so that the factories
    that generate a family of twins (one per variant of a mistake) and the ``twin`` decorator
    fill the same registry."""
    if name in TWINS:
        raise ValueError(f"misconception {name!r} registered twice")
    function.__name__ = function.__qualname__ = name
    TWINS[name] = Twin(name, shadows, function, summary, explanation, code)
    return function


def twins_of(function_name: str, listed=()) -> dict[str, Callable]:
    """name → function of every registered twin of the reference function ``function_name``
    besides those in ``listed``: the space the build searches for a part's other mistakes."""
    return {name: m.function for name, m in TWINS.items()
            if m.shadows == function_name and name not in listed}


def twin(shadows: str, summary: str, explanation: str, code: str):
    """Register the decorated function as the twin named after it."""
    def register(function):
        return add_twin(function.__name__, shadows, function, summary, explanation, code)
    return register


def get_twin(name: str) -> Twin:
    """The twin called ``name``; KeyError lists the known names."""
    try:
        return TWINS[name]
    except KeyError:
        raise KeyError(f"unknown misconception {name!r}; known: {', '.join(sorted(TWINS))}") from None


def twins_for(function_name: str) -> list[Twin]:
    """Every twin of the reference function ``function_name``, in registration order."""
    return [m for m in TWINS.values() if m.shadows == function_name]
