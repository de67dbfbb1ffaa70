"""Hand-written checks of the attention twins added after the first issue-17 batch (the
mistake search's scale and mask mistakes): each twin gives exactly the numbers of the wrong
computation written out in plain NumPy (``test_misconceptions.check_twin``)."""

import numpy as np
import pytest

from tests.solutions.test_misconceptions import (D_K, D_V, L, S, _masked, _scores, _sdpa_by_hand,
                                                 _softmax, _tril, check_twin)

HAND_WRITTEN = {
    "sdpa_scale_by_sqrt_d_v": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_V)),
    "sdpa_scale_by_sqrt_head_dim": lambda a: _sdpa_by_hand(a, 1 / 8.0),
    "causal_mask_shifted_by_one": lambda a: np.tril(np.ones((L, S), dtype=bool), k=1),
    "causal_attention_mask_shifted_by_one": lambda a: _sdpa_by_hand(a, 1 / np.sqrt(D_K), mask=_tril(L, S, 1)),
    "causal_attention_mask_no_diagonal": lambda a: _softmax(_masked(_scores(a) / np.sqrt(D_K),
                                                                    _tril(L, S, -1))) @ a["V"],
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])
