import math

import numpy as np
import pytest

import solutions


def test_cross_entropy_by_hand():
    # row 0: log-softmax of [ln 3, 0] at class 0 = ln(3/4); row 1: uniform over 2 → ln 2.
    logits = np.array([[math.log(3.0), 0.0], [5.0, 5.0]])
    assert solutions.cross_entropy(logits, np.array([0, 1])) == pytest.approx(
        -(math.log(0.75) + math.log(0.5)) / 2, rel=1e-14)


def test_ignored_positions_cannot_make_the_loss_nan():
    # A −inf logit (e.g. a blocked [PAD] class) at an ignored position, and a fully −inf row
    # there, must not reach the mean.
    logits = np.array([[-np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 0.0, 0.0]])
    targets = np.array([2, -100, 1])
    loss = solutions.cross_entropy(logits, targets)
    expected = -(2.0 - math.log(math.e + math.e ** 2) + math.log(0.5)) / 2
    assert loss == pytest.approx(expected, rel=1e-14)
    _, cache = solutions.softmax_cross_entropy_forward(logits, targets)
    grad = solutions.softmax_cross_entropy_backward(1.0, cache)
    assert np.isfinite(grad).all() and (grad[1] == 0).all()


def test_every_target_ignored_is_an_error():
    with pytest.raises(ValueError, match="every target is ignore_index"):
        solutions.cross_entropy(np.zeros((2, 3)), np.array([-100, -100]))
