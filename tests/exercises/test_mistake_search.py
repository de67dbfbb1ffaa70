"""The mistake search (exercises/mistake_search.py): which mistakes the build runs on a
variant, what it keeps, and which look-alikes it leaves to the feedback instead of redrawing."""

import numpy as np
import pytest

from exercises import mistake_search
from exercises.bank import load_bank
from exercises.variant import make_variant
from formats.compare import telling


@pytest.fixture(scope="module")
def bank():
    return load_bank()[0]


def test_every_reference_function_a_part_uses_is_searched(bank):
    parts = mistake_search.searched_parts(bank["dog_ran_fast"])
    assert "projections" in [p.id for p in parts["linear"]]          # Q = linear(X, W_Q)
    assert {"raw_scores", "weights", "output"} <= {p.id for p in parts["scaled_dot_product_attention"]}
    assert "z_the" not in {p.id for ps in parts.values() for p in ps}  # a sum of given numbers


def test_unlisted_twins_are_kept_where_they_give_a_wrong_answer(bank):
    v = make_variant(bank["sdpa_four_tokens"], 0)
    kept = v.lookalikes["sdpa_weights_transposed"]                    # listed nowhere in the template
    assert "output" in kept and not np.allclose(kept["output"], v.answers["output"])
    assert all(name not in v.template.all_misconceptions for name in v.lookalikes)


def test_a_structural_look_alike_is_found_once_and_never_redrawn(bank):
    template = bank["causal_mask_by_hand"]
    pairs = mistake_search.structural(template)
    # masked after the softmax, the exponentials are the unmasked ones: on every draw
    assert ("sdpa_mask_after_softmax", "sdpa_mask_ignored", "exp_scores") in pairs
    assert mistake_search.structural(template) is pairs                # one probe per process
    redrawn = [r for seed in range(10) for r in make_variant(template, seed).rejections
               if "looks like sdpa_mask_ignored on part exp_scores" in r]
    assert redrawn == []


@pytest.mark.parametrize("value, expected", [
    (np.array([[0.1, 0.2], [0.3, 0.4]]), True),        # four real numbers
    (np.array([[0, -3, 7, 5], [1, 2, 3, 4]]), True),   # whole numbers of many values
    (np.array([1, 2, 3, 3]), False),                   # an argmax row
    (0.38, False), (3, False), ([4, 30522], False),    # one number, a count, a shape
    (["the", "cat"], False), (np.ones((3, 3), dtype=bool), False),
])
def test_telling_values(value, expected):
    assert telling(value) is expected
