"""Follow-through credit, the template's side: how a part's answer follows from earlier parts'.

A numeric part may say how its answer is computed from the answers before it:

    parts:
      - id: scaled_scores
        answer: steps.scaled_scores
        follow: raw_scores / sqrt(d_k)        # from part raw_scores
      - id: weights
        answer: steps.weights
        follow: softmax(scaled_scores)        # from part scaled_scores

``follow`` is an expression over earlier part ids, parameters, derived values and the
reference functions. On every variant it must give the part's own answer from the correct
earlier answers (checked at build, so a recipe that is wrong can never award credit). The
key keeps it, with the values of the other names it reads, so the grader can compute the
part again from *the student's own* earlier answers (``grader.verdicts.follow_through``): a student
who got (b) wrong and (c) right from their (b) gets (c)'s points times ``follow_credit``
(a template's top-level key or an assignment's; default ``DEFAULT_CREDIT``).

A part that a later part follows from must have a real answer on every variant: a draw whose
correct answer there is all zeros or has flat rows (``formats.degenerate``) is drawn again
(``trivial_source``). The grader withholds credit carried from a degenerate answer only when
the key's own answer lacks that form — so a chain that *starts* degenerate would let any
answer of that form earn every later step; and its later steps would teach nothing.
"""

from __future__ import annotations

from formats import serialize
from formats.compare import within
from formats.degenerate import forms

from exercises.template.expressions import Expression
from exercises.template.loading import LoadErrors, key_path

DEFAULT_CREDIT = 1.0      # a step done right on the student's own numbers earns the step's points


class FollowError(ValueError):
    """A follow expression that does not reproduce the part's answer, or reads a value the
    key cannot keep."""


def load_follow(load: LoadErrors, entry, key: str, kind: str, scope: set[str], earlier: list[str],
                calls: set[str]) -> Expression | None:
    """The part's ``follow`` expression (None without one); problems reported on ``load``."""
    if "follow" not in entry:
        return None
    fkey, line = key_path(key, "follow"), entry.line_of("follow")
    if kind != "numeric":
        load.error(line, fkey, "only numeric parts have a follow expression")
        return None
    follow = load.expression(entry["follow"], line, fkey, scope | set(earlier))
    if follow is None:
        return None
    if "model" in follow.names:
        load.error(line, fkey, "a follow expression cannot read the trained model: the grader "
                               "recomputes it without the weights (read a derived value instead)")
        return None
    if not follow.names & set(earlier):
        load.error(line, fkey, "a follow expression computes this part from earlier parts' answers, "
                               f"but it reads none of them ({', '.join(earlier) or 'this is the first part'})")
        return None
    calls |= follow.calls
    return follow


def load_credit(load: LoadErrors, mapping, key: str) -> float | None:
    """``follow_credit``: the share of a part's points a follow-through earns, in (0, 1]."""
    if "follow_credit" not in mapping:
        return None
    value = load.number(mapping, "follow_credit", key, None)
    if value is not None and not 0 < value <= 1:
        load.error(mapping.line_of("follow_credit"), key, f"must be more than 0 and at most 1, got {value}")
        return None
    return value


def follow_record(variant) -> dict:
    """part id → {expression, parts, values}: what the grader needs to compute each part with
    a follow expression from a student's earlier answers. Raises FollowError when a recipe
    does not give the part's own answer from the correct earlier answers."""
    t = variant.template
    ids = [p.id for p in t.parts]
    out = {}
    for part in t.parts:
        if part.follow is None:
            continue
        used = [i for i in ids if i in part.follow.names]
        again = variant.evaluate(part.follow)
        if not within(again, variant.answers[part.id], part.rtol, part.atol):
            raise FollowError(f"parts.{part.id}.follow: {part.follow.source!r} does not give the part's "
                              f"answer from the correct answers of {', '.join(used)}")
        others = sorted(n for n in part.follow.names if n not in ids and n in variant.values)
        try:
            values = serialize.encode_names({n: variant.values[n] for n in others})
        except (TypeError, ValueError, serialize.NotSerializable) as err:
            raise FollowError(f"parts.{part.id}.follow: it reads a value the key cannot keep ({err}); "
                              "read numbers and arrays only (the givens, parameters, derived values)") from None
        out[part.id] = {"expression": part.follow.source, "parts": used, "values": values}
    return out


def trivial_source(template, answers: dict) -> str | None:
    """Why this draw's chain would carry nothing (None: every part a follow recipe reads has
    an answer that is not degenerate)."""
    ids = {p.id for p in template.parts}
    read = {n for p in template.parts if p.follow is not None for n in p.follow.names & ids}
    for part in template.parts:
        if part.id in read:
            form = forms(answers[part.id], part.rtol, part.atol)
            if form:
                return f"the answer to part {part.id} has {form[0]}: the steps that follow from it would be trivial"
    return None
