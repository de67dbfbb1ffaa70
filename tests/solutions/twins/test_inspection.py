"""Hand-written checks of the twins of solutions/twins/inspection.py (reading a trained model's
maps, ablating a head, measuring the change): each twin gives exactly the numbers of the wrong
computation written out in plain NumPy (``cases.check_twin``)."""

import numpy as np
import pytest

from tests.solutions.twins.cases import check_twin, rng


def map_args():
    """A 4 × 5 map whose rows sum to 1 (queries × keys), distinct entries."""
    w = rng().random((4, 5))
    return {"weights": w / w.sum(axis=1, keepdims=True)}


def ablation_args():
    r = rng()
    return {"o": r.standard_normal((2, 6)), "W_O": r.standard_normal((6, 4)), "head": 1, "d_k": 2}


def kl_args():
    r = rng()
    p, q = r.random(5), r.random(5)
    return {"p": p / p.sum(), "q": q / q.sum()}


# twin name → its argument builder (cases.arguments_for reads this).
ARGUMENTS_OF: dict = {
    "strongest_queries": map_args,
    "strongest_keys_from_one": map_args,
    "same_position": lambda: {"t": 2, "length": 7},
    "mirrored_position_from_one": lambda: {"t": 2, "length": 7},
    "head_ablated_output_columns_zeroed": ablation_args,
    "head_ablated_output_kept_only": ablation_args,
    "kl_divergence_reversed": kl_args,
    "kl_divergence_in_bits": kl_args,
    "head_ablated_output_nothing_zeroed": ablation_args,
}


def _columns_zeroed(a):
    W = a["W_O"].copy()
    W[:, 2:4] = 0                        # head 1's block of columns, d_k = 2
    return a["o"] @ W


def _kept_only(a):
    o = np.zeros_like(a["o"])
    o[:, 2:4] = a["o"][:, 2:4]
    return o @ a["W_O"]


HAND_WRITTEN = {
    "strongest_queries": lambda a: np.array([max(range(4), key=lambda i: a["weights"][i, j]) for j in range(5)]),
    "strongest_keys_from_one": lambda a: np.array([1 + max(range(5), key=lambda j: row[j]) for row in a["weights"]]),
    "same_position": lambda a: 2,
    "mirrored_position_from_one": lambda a: 5,          # 7 − 2, where 7 − 1 − 2 = 4 is right
    "head_ablated_output_columns_zeroed": _columns_zeroed,
    "head_ablated_output_kept_only": _kept_only,
    "kl_divergence_reversed": lambda a: sum(q * np.log(q / p) for p, q in zip(a["p"], a["q"])),
    "kl_divergence_in_bits": lambda a: sum(p * np.log2(p / q) for p, q in zip(a["p"], a["q"])),
    "head_ablated_output_nothing_zeroed": lambda a: a["o"] @ a["W_O"],
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_each_twin_equals_its_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name], ARGUMENTS_OF[name])
