"""Hand-written checks of the alignment twins added after the first issue-17 batch: each twin
gives exactly the numbers of the wrong computation written out in plain NumPy
(``test_misconceptions.check_twin``)."""

import numpy as np
import pytest

import solutions
from tests.solutions import test_misconceptions as registry
from tests.solutions.test_misconceptions import B, S, _softmax, check_twin, rng


def square_additive_args():
    """n_s = n_h (= 4), the only shapes for which W and U can be swapped."""
    r = rng()
    return {"s": r.standard_normal((B, 4)), "H": r.standard_normal((B, S, 4)),
            "W": r.standard_normal((4, 6)), "U": r.standard_normal((4, 6)), "v": r.standard_normal(6)}


def large_bahdanau_args():
    """v in the thousands: the scores reach the thousands and only an unshifted softmax overflows."""
    return {**registry.bahdanau_step_args(), "v": 1000 * registry.bahdanau_step_args()["v"]}


def general_score_args():
    """A square, non-symmetric W_a: n_s = n_h, so W_a can be transposed or left out."""
    r = rng()
    return {"s": r.standard_normal((B, 4)), "H": r.standard_normal((B, S, 4)),
            "W_a": r.standard_normal((4, 4))}


# --- by hand, from the lecture's formulas -----------------------------------------------------

def _pre(s, a):
    """s W + h_j U for every j: (B, S, n_a)."""
    return (s @ a["W"])[:, None, :] + a["H"] @ a["U"]


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _keys_masked(e, mask):
    return np.where(mask, e, -np.inf)


def _blend(w, H):
    return np.einsum("bs,bsn->bn", w, H)


def _step(e, w, H):
    return solutions.AlignmentStep(e, w, _blend(w, H))


def _bahdanau(a, act=np.tanh):
    """e_ij = v · act(s W + h_j U) with the correct masked softmax and context."""
    e = act(_pre(a["s_prev"], a)) @ a["v"]
    return _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"])


def _right_scores(a):
    return np.tanh(_pre(a["s_prev"], a)) @ a["v"]


def _exp_not_normalised(a):
    e = _right_scores(a)
    w = np.exp(_keys_masked(e, a["mask"]))
    return _step(e, w, a["H"])


def _context_from_projected(a):
    e = _right_scores(a)
    w = _softmax(_keys_masked(e, a["mask"]))
    return solutions.AlignmentStep(e, w, _blend(w, a["H"] @ a["U"]))


def _uniform(a):
    e = _right_scores(a)
    real = a["mask"].astype(float)
    w = real / real.sum(-1, keepdims=True)           # 1 / (number of real words) each
    return _step(e, w, a["H"])


def _scaled(a):
    e = _right_scores(a)
    return _step(e, _softmax(_keys_masked(e / np.sqrt(len(a["v"])), a["mask"])), a["H"])


def _mask_ignored(a):
    e = _right_scores(a)
    return _step(e, _softmax(e), a["H"])


def _mask_with_zero(a):
    e = _right_scores(a)
    return _step(e, _softmax(np.where(a["mask"], e, 0.0)), a["H"])


def _no_max_subtraction(a):
    e = _right_scores(a)
    with np.errstate(over="ignore", invalid="ignore"):     # inf / inf = NaN: the mistake
        x = np.exp(_keys_masked(e, a["mask"]))
        return _step(e, x / x.sum(-1, keepdims=True), a["H"])


def _dots(a):
    return np.einsum("bn,bsn->bs", a["s"], a["H"])


HAND_WRITTEN: dict = {
    "additive_score_tanh_after_v": lambda a: np.tanh(_pre(a["s"], a) @ a["v"]),
    "additive_score_no_v": lambda a: np.tanh(_pre(a["s"], a)).sum(-1),
    "additive_score_sigmoid": lambda a: _sigmoid(_pre(a["s"], a)) @ a["v"],
    "additive_score_W_U_swapped": lambda a: np.tanh((a["s"] @ a["U"])[:, None, :] + a["H"] @ a["W"]) @ a["v"],
    "bahdanau_step_tanh_after_v": lambda a: (
        e := np.tanh(_pre(a["s_prev"], a) @ a["v"]),
        _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"]))[1],
    "bahdanau_step_no_v": lambda a: (
        e := np.tanh(_pre(a["s_prev"], a)).sum(-1),
        _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"]))[1],
    "bahdanau_step_sigmoid": lambda a: _bahdanau(a, _sigmoid),
    "bahdanau_step_scaled_by_sqrt_n_a": _scaled,
    "bahdanau_step_exp_not_normalised": _exp_not_normalised,
    "bahdanau_step_context_from_projected": _context_from_projected,
    "bahdanau_step_uniform_weights": _uniform,
    "bahdanau_step_mask_ignored": _mask_ignored,
    "bahdanau_step_mask_with_zero": _mask_with_zero,
    "bahdanau_step_no_max_subtraction": _no_max_subtraction,
    "general_score_W_transposed": lambda a: np.einsum("bsn,nm,bm->bs", a["H"], a["W_a"], a["s"]),
    "general_score_without_W": _dots,
    "content_score_without_h_norm": lambda a: _dots(a) / np.linalg.norm(a["s"], axis=-1, keepdims=True),
    "content_score_by_s_norm_squared": lambda a: _dots(a) / (a["s"] ** 2).sum(-1, keepdims=True),
}

ARGUMENTS_OF = {"additive_score_W_U_swapped": square_additive_args,
                "bahdanau_step_no_max_subtraction": large_bahdanau_args,
                "general_score_W_transposed": general_score_args,
                "general_score_without_W": general_score_args}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name], ARGUMENTS_OF.get(name))


def test_the_overflow_twin_gives_nan_where_the_reference_does_not():
    # The point of the large arguments: the reference stays finite, the unshifted softmax not.
    a = large_bahdanau_args()
    right = solutions.bahdanau_step(**a)
    with np.errstate(all="ignore"):
        wrong = solutions.MISCONCEPTIONS["bahdanau_step_no_max_subtraction"].function(**large_bahdanau_args())
    assert np.isfinite(right.weights).all() and np.isnan(wrong.weights).any()


def test_the_swap_and_the_transpose_raise_where_the_shapes_do_not_fit():
    # As the student's code would: s @ U needs n_s = n_h, H @ W_a @ s a square W_a.
    twins = solutions.MISCONCEPTIONS
    with pytest.raises(ValueError):
        twins["additive_score_W_U_swapped"].function(**registry.additive_score_args())
    r = rng()
    with pytest.raises(ValueError):
        twins["general_score_W_transposed"].function(r.standard_normal(3), r.standard_normal((S, 4)),
                                                     r.standard_normal((3, 4)))
