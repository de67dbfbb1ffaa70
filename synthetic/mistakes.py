"""A corpus of plausible wrong answers, one entry per student mistake, for every family of the
problem bank: what the kit's diagnosis is measured against (``python -m bench.diagnosis``).

Each ``Mistake`` computes its wrong value from the variant's givens with NumPy written in
``synthetic/mistakes_*.py``, never with the kit's twins or the grader's diagnosis, so a
mistake the kit has no twin for is still a mistake here (the same independence as
``synthetic.oracle``). ``accept`` says which of the kit's misconception names would name it
correctly; the benchmark decides whether the grader's name is one of them.

This module holds the runner's synthetic half: the variants of a template as answer-key
records, and a mistake's answer on one of them (a value, or its wrong function's outputs on
the hidden cases). Judging those answers is the grader's, so it lives in ``bench.diagnosis``.
"""

from __future__ import annotations

import functools

import numpy as np

from formats import key_shape as shape
from formats.compare import compare
from formats.serialize import decode_names, from_jsonable

# Each module registers its mistakes as it is imported: this order (not sorted) is the corpus's.
from . import (mistakes_alignment, mistakes_multihead_shapes, mistakes_attention_backward,  # noqa: F401
               mistakes_attention, mistakes_scaling_masks, mistakes_multihead_perspectives,
               mistakes_encoder_decoder, mistakes_bert, mistakes_gradients, mistakes_implement,
               mistakes_layers, mistakes_positions, mistakes_cross_attention, mistakes_training_step,
               mistakes_trained, mistakes_generation)
from .mistakes_base import CHOICE, CORPUS, EVERY_FAMILY, IMPLEMENT, NUMERIC, Givens, Mistake

__all__ = ["CORPUS", "Mistake", "Givens", "NUMERIC", "CHOICE", "IMPLEMENT", "EVERY_FAMILY",
           "by_template", "templates", "record", "answer", "case_outputs", "equals_answer",
           "variable_of"]


def by_template() -> dict[str, list[Mistake]]:
    """template id → its mistakes, in registration order."""
    grouped: dict[str, list[Mistake]] = {}
    for m in CORPUS.values():
        grouped.setdefault(m.template, []).append(m)
    return grouped


@functools.lru_cache(maxsize=1)
def templates() -> dict:
    """The problem bank's templates by id (loaded once; a broken neighbour is left out)."""
    from exercises.course.bank import load_bank
    loaded, _ = load_bank(keep_going=True)
    return loaded


def variable_of(part: str) -> str:
    """The notebook variable the runner gives a part's answer (records from a bare variant
    have no ``answer_names``: the build adds them)."""
    return f"answer_{part}"


@functools.lru_cache(maxsize=4096)
def _record(template_id: str, seed: int) -> dict | None:
    from exercises.variant.evaluation import VariantError
    from exercises.variant.draw import make_variant
    try:
        made = make_variant(templates()[template_id], seed).record()
    except (VariantError, KeyError):
        return None
    if made["kind"] != shape.IMPLEMENT and made["kind"] != shape.FREE_RESPONSE:
        made["answer_names"] = {shape.part_id(g): variable_of(shape.part_id(g))
                                for g in shape.gradings(made)}
    return made


def record(template_id: str, seed: int) -> dict | None:
    """The answer-key record of ``template_id``'s variant for ``seed``, as the build writes it
    (with ``answer_names``); None when the bank has no such template or the seed gives no
    valid variant (a template being edited). Cached: do not change it."""
    return _record(template_id, seed)


def answer(m: Mistake, rec: dict):
    """What the student who makes ``m`` answers on this variant (a value or a letter), or
    None when the mistake has nothing to act on here or its computation breaks (a shape that
    does not fit is a mistake the student would have noticed)."""
    try:
        with np.errstate(all="ignore"):
            return m.wrong(Givens(rec))
    except (ValueError, IndexError, LookupError, TypeError, ZeroDivisionError):
        return None


def case_outputs(m: Mistake, rec: dict) -> list[tuple[bool, object, str]]:
    """The wrong function's outcome on each hidden case of an implement record, in the key's
    order: (ran, its value, the error when it raised). The corpus is trusted code, so it runs
    in-process on a copy of the stored arguments."""
    outcomes = []
    for case in rec["tests"]:
        args = decode_names(case["args"])
        try:
            with np.errstate(all="ignore"):
                outcomes.append((True, m.wrong(**args), ""))
        except Exception as err:  # noqa: BLE001 — a student's function that raises fails the case
            outcomes.append((False, None, f"{type(err).__name__}: {err}"))
    return outcomes


def equals_answer(m: Mistake, rec: dict, value) -> bool:
    """Does the mistake give the right answer on this variant (nothing to act on)? For an
    implement mistake ``value`` is its ``case_outputs``: right when every case passes."""
    rtol_atol = _tolerance(m, rec)
    if m.kind == IMPLEMENT:
        return all(ran and _same_outputs(got, from_jsonable(case["expected"]), *rtol_atol)
                   for (ran, got, _), case in zip(value, rec["tests"]))
    if value is None:
        return False
    expected = decode_names(rec["answers"])[m.part]
    if m.kind == CHOICE:
        from formats.cells import LETTERS
        return isinstance(value, str) and value.strip().upper() == LETTERS[int(expected)]
    try:
        return compare(value, expected, *rtol_atol).ok
    except Exception:  # noqa: BLE001 — a value that cannot be compared is not the answer
        return False


def _tolerance(m: Mistake, rec: dict) -> tuple[float, float]:
    if m.kind == IMPLEMENT:
        return float(rec["rtol"]), float(rec["atol"])
    grading = next(g for g in shape.gradings(rec) if shape.part_id(g) == m.part)
    return float(grading["rtol"]), float(grading["atol"])


def _same_outputs(got, want, rtol, atol) -> bool:
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    want = list(want) if isinstance(want, (list, tuple)) else [want]
    try:
        return len(got) == len(want) and all(compare(g, w, rtol, atol).ok for g, w in zip(got, want))
    except Exception:  # noqa: BLE001
        return False
