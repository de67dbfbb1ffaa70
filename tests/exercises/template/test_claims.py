"""A template's claims: checked on every kept variant; a false one stops with line, words and seed."""

import pytest

from exercises.course.bank import load_bank
from exercises.template.model import TemplateError
from exercises.variant.draw import make_variant

from tests.exercises.templates import inline, line_of, numeric

CLAIMED = numeric("a: {dist: integers, low: 1, high: 7}\n", answer="a * 2", extra="""
claims:
  - expr: ans % 2 == 0 and a < 6
    says: the answer is even and a is below 6
""")


def _first_seed(template, holds: bool) -> int:
    for seed in range(60):
        a = make_variant(template, seed, validate=False).values["a"]
        if (a < 6) == holds:
            return seed
    raise AssertionError("no such seed")


def test_a_claim_that_holds_keeps_the_variant():
    template = inline(CLAIMED)
    seed = _first_seed(template, holds=True)
    assert make_variant(template, seed).answers["ans"] % 2 == 0


def test_a_false_claim_stops_with_its_line_its_words_and_the_seed():
    template = inline(CLAIMED)
    seed = _first_seed(template, holds=False)
    with pytest.raises(TemplateError) as err:
        make_variant(template, seed)
    message = str(err.value)
    assert f"inline.yaml:{line_of(CLAIMED, 'expr: ans % 2')}: claims[0]" in message
    assert "the answer is even and a is below 6" in message and f"on seed {seed}" in message


def test_a_false_claim_is_not_redrawn_away():
    # a constraint would choose another draw; a claim must report the template instead
    template = inline(CLAIMED)
    seed = _first_seed(template, holds=False)
    with pytest.raises(TemplateError):
        make_variant(template, seed)


@pytest.mark.parametrize("entry, problem", [
    ("  - a < 6\n", "expected {expr: …, says: …}"),
    ("  - expr: a < 6\n", "says"),
    ("  - expr: b < 6\n    says: b is small\n", "'b'"),
])
def test_a_malformed_claim_is_a_load_error(entry, problem):
    source = numeric("a: {dist: integers, low: 1, high: 7}\n") + "claims:\n" + entry
    with pytest.raises(TemplateError) as err:
        inline(source)
    assert problem in str(err.value)


def test_the_banks_claims_hold_on_many_seeds():
    templates, _ = load_bank()
    claimed = [t for t in templates.values() if t.claims]
    assert len(claimed) >= 3
    for template in claimed:
        for seed in range(25):
            make_variant(template, seed)          # raises on a false claim
