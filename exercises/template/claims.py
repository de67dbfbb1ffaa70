"""A template's stated claims: what its prompt or solution says of every variant, checked.

A solution that says "each token looks at the next word" or "the unscaled gradient almost
vanishes" states a fact about the numbers; a constraint can choose the variants where it
holds, but nothing tells the author when the text and the numbers part. ``claims`` does:

    claims:
      - expr: all(top_keys[0] == target_0)
        says: each query of head 0 attends most to the key its relation points at

Every claim is an expression over the variant's values and answers that must be true on
every variant: a constraint redraws, a claim that fails is a mistake in the template, and
the build and ``attnkit bank validate`` stop on it with the template's line, the claim's
words and the seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exercises.template.expressions import Expression
from exercises.template.loading import LoadErrors
from exercises.template.yaml_lines import LineDict, LineList

CLAIM_KEYS = {"expr": "required", "says": "required"}


@dataclass(frozen=True)
class Claim:
    line: int
    expression: Expression
    says: str


def parse_claims(load: LoadErrors, data: LineDict, scope: set[str]) -> tuple[Claim, ...]:
    """The template's ``claims``, each with what it says in words."""
    block, line = data.get("claims", LineList()), data.line_of("claims")
    if not isinstance(block, LineList):
        load.error(line, "claims", "expected a list of {expr, says} entries")
        return ()
    out = []
    for i, entry in enumerate(block):
        here, key = block.line_of(i), f"claims[{i}]"
        if not isinstance(entry, LineDict):
            load.error(here, key, "expected {expr: …, says: …}: a claim says in words what it checks")
            continue
        load.keys(entry, CLAIM_KEYS, key)
        if entry.get("expr") is None or not str(entry.get("says") or "").strip():
            continue
        expression = load.expression(entry["expr"], here, key, scope)
        if expression is not None:
            out.append(Claim(here, expression, str(entry["says"]).strip()))
    return tuple(out)


def false_claim(variant) -> str | None:
    """The problem (file:line: claims[i]: …) of the first claim false on this variant; None
    when every claim holds."""
    template = variant.template
    for i, claim in enumerate(template.claims):
        try:
            value = variant.evaluate(claim.expression)
            holds = bool(np.all(value))
        except Exception:  # noqa: BLE001 — a claim that cannot be worked out does not hold
            holds = False
        if not holds:
            return (f"{template.path}:{claim.line}: claims[{i}]: the template says {claim.says!r}, "
                    f"but on seed {variant.seed} {claim.expression.source!r} is not true")
    return None
