"""Hand-written checks of the gradients twins added after the first issue-17 batch: each twin
gives exactly the numbers of the wrong computation written out in plain NumPy
(``test_misconceptions.check_twin``)."""

import numpy as np  # noqa: F401
import pytest

from tests.solutions.test_misconceptions import check_twin

HAND_WRITTEN: dict = {}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])
