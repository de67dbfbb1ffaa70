"""One mistake, one name: the same-error groups name registered twins, each in one group."""

from solutions import TWINS
from solutions.same_error import GROUPS, one_name_per_error, same_error


def test_every_grouped_name_is_a_registered_twin():
    missing = sorted(n for g in GROUPS for n in g if n not in TWINS)
    assert missing == []


def test_a_group_joins_the_levels_of_one_mistake():
    assert same_error("causal_mask_all_visible", "sdpa_mask_ignored")
    assert same_error("causal_mask_inverted", "sdpa_inverted_mask")
    assert not same_error("sdpa_no_scale", "sdpa_divide_by_d_k")
    assert same_error("linear_skipped", "linear_skipped")


def test_one_name_per_error_keeps_the_first_of_each_group_in_order():
    names = ["sdpa_inverted_mask", "sdpa_no_scale", "causal_mask_inverted", "mha_no_scale",
             "sdpa_divide_by_d_k"]
    assert one_name_per_error(names) == ["sdpa_inverted_mask", "sdpa_no_scale", "sdpa_divide_by_d_k"]
