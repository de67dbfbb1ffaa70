"""Hand-written checks of the layer twins (multi-head attention, shapes, the encoder and
decoder layers) added after the first issue-17 batch (``test_misconceptions.check_twin``)."""

import numpy as np
import pytest

from tests.solutions.test_misconceptions import _mha_by_hand, check_twin

HAND_WRITTEN = {
    "mha_no_scale": lambda a: _mha_by_hand(a, lambda d: 1.0, a.get("mask")),
    "mha_divide_by_d_head": lambda a: _mha_by_hand(a, lambda d: 1.0 / d, a.get("mask")),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])
