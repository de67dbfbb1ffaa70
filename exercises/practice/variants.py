"""Practice variants: drawn from ``practice_seed`` (a space apart from every graded seed) and
never one whose givens equal a graded variant's of the same template — the answers would then
be that student's. The graded givens come from a built class's answer key."""

from __future__ import annotations

from dataclasses import dataclass

from formats.key_shape import givens_of, problem_records
from formats.serialize import digest

from exercises.template.model import Template
from exercises.variant.draw import Variant, make_variant
from exercises.variant.evaluation import VariantError
from exercises.variant.seeds import practice_seed

MAX_SKIPPED = 1000      # practice indexes tried beyond the count asked for


class PracticeError(ValueError):
    """No practice variants could be drawn (the template allows too few, or all are graded)."""


@dataclass(frozen=True)
class PracticeVariant:
    index: int            # the practice index: its seed is practice_seed(template, index)
    variant: Variant


def givens_digest(record: dict) -> str:
    """The template and the givens of a key record — an implement problem's hidden cases'
    arguments too: two variants with one digest pose the same numbers, so they have the same
    answers."""
    cases = [case.get("args") for case in record.get("tests", ())]
    return digest({"template": record.get("template"), "givens": givens_of(record), "cases": cases})


def graded_givens(key: dict) -> set[str]:
    """The givens digests of every graded variant of a built class's answer key."""
    return {givens_digest(record) for entry in key.get("students", {}).values()
            for _, record in problem_records(entry, default={})}


def _too_few(template: Template, drawn: int, count: int, graded: int) -> str:
    if drawn == 0 and graded > MAX_SKIPPED // 2:
        return (f"{template.id}: every practice draw poses a graded variant's numbers: the template's "
                "givens are the same for every student (only its options' order may change), so a "
                "practice variant would give the graded answers away")
    return (f"{template.id}: only {drawn} of {count} practice variants after {MAX_SKIPPED} indexes "
            "skipped (their givens were graded ones or repeats, or no valid variant was found): "
            "the template allows too few variants")


def practice_variants(template: Template, count: int, start: int = 0,
                      avoid: frozenset[str] | set[str] = frozenset()) -> list[PracticeVariant]:
    """``count`` practice variants from index ``start`` on: an index whose draw fails (no valid
    variant) or whose givens are in ``avoid`` (graded ones) is skipped."""
    if count < 1:
        raise PracticeError(f"{template.id}: ask for at least one practice variant, not {count}")
    if template.kind == "free_response":
        raise PracticeError(f"{template.id}: a free-response problem is marked by hand; there is "
                            "nothing to practise against")
    drawn: list[PracticeVariant] = []
    seen: set[str] = set()
    index = start
    graded = 0
    while len(drawn) < count:
        if index - start - len(drawn) > MAX_SKIPPED:
            raise PracticeError(_too_few(template, len(drawn), count, graded))
        try:
            variant = make_variant(template, practice_seed(template.id, index))
        except VariantError:
            index += 1
            continue
        shown = givens_digest(variant.record())
        graded += shown in avoid
        if shown not in avoid and shown not in seen:
            seen.add(shown)
            drawn.append(PracticeVariant(index, variant))
        index += 1
    return drawn
