"""Hand-written checks of the alignment twins (solutions/twins/): each twin
gives exactly the numbers of the wrong computation written out in plain NumPy
(``cases.check_twin``)."""

import numpy as np
import pytest

import solutions
from tests.solutions.twins import cases
from tests.solutions.twins.cases import B, S, _softmax, check_twin, rng


def square_additive_args():
    """n_s = n_h (= 4), the only shapes for which W and U can be swapped."""
    r = rng()
    return {"s": r.standard_normal((B, 4)), "H": r.standard_normal((B, S, 4)),
            "W": r.standard_normal((4, 6)), "U": r.standard_normal((4, 6)), "v": r.standard_normal(6)}


def large_bahdanau_args():
    """v in the thousands: the scores reach the thousands and only an unshifted softmax overflows."""
    return {**cases.bahdanau_step_args(), "v": 1000 * cases.bahdanau_step_args()["v"]}


def square_bahdanau_args():
    """n_s = n_h = n_a (= 4): the only shapes for which `W @ s_prev` and `U @ h_j` run."""
    r = rng()
    return {"s_prev": r.standard_normal((B, 4)), "H": r.standard_normal((B, S, 4)),
            "W": r.standard_normal((4, 4)), "U": r.standard_normal((4, 4)),
            "v": r.standard_normal(4), "mask": cases.bahdanau_step_args()["mask"]}


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


def _without_state(a):
    e = np.tanh(a["H"] @ a["U"]) @ a["v"]
    return _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"])


def _column_form(a):
    """e_ij = v · tanh(W s + U h_j) with the row-layout matrices read as column-form ones."""
    pre = np.einsum("ab,xb->xa", a["W"], a["s_prev"])[:, None, :] + np.einsum("ab,xsb->xsa", a["U"], a["H"])
    e = np.tanh(pre) @ a["v"]
    return _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"])


def _normalised_without_exp(a):
    e = _right_scores(a)
    kept = np.where(a["mask"], e, 0.0)
    return _step(e, kept / kept.sum(-1, keepdims=True), a["H"])


def _softmax_over_batch(a):
    e = _right_scores(a)
    return _step(e, _softmax(_keys_masked(e, a["mask"]), axis=0), a["H"])


def _mask_after_softmax(a):
    e = _right_scores(a)
    return _step(e, _softmax(e) * a["mask"], a["H"])


def _raw_scores_blended(a):
    """c = Σ_j e_ij h_j with the scores as computed, before any mask (as the code edit of
    ``synthetic.twin_edits`` writes it: ``raw_scores = e`` kept before the masking)."""
    e = _right_scores(a)
    return solutions.AlignmentStep(e, _softmax(_keys_masked(e, a["mask"])), _blend(e, a["H"]))


def _dots(a):
    return np.einsum("bn,bsn->bs", a["s"], a["H"])


HAND_WRITTEN: dict = {
    "winner_counted_from_zero": lambda a: 2,          # scores [0.3, −1.2, 2.5, 0.7]: h_3 wins, index 2
    "additive_score_tanh_after_v": lambda a: np.tanh(_pre(a["s"], a) @ a["v"]),
    "additive_score_no_v": lambda a: np.tanh(_pre(a["s"], a)).sum(-1),
    "additive_score_sigmoid": lambda a: _sigmoid(_pre(a["s"], a)) @ a["v"],
    "additive_score_W_U_swapped": lambda a: np.tanh((a["s"] @ a["U"])[:, None, :] + a["H"] @ a["W"]) @ a["v"],
    "additive_score_without_state": lambda a: np.tanh(a["H"] @ a["U"]) @ a["v"],
    "bahdanau_step_tanh_after_v": lambda a: (
        e := np.tanh(_pre(a["s_prev"], a) @ a["v"]),
        _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"]))[1],
    "bahdanau_step_no_v": lambda a: (
        e := np.tanh(_pre(a["s_prev"], a)).sum(-1),
        _step(e, _softmax(_keys_masked(e, a["mask"])), a["H"]))[1],
    "bahdanau_step_sigmoid": lambda a: _bahdanau(a, _sigmoid),
    "bahdanau_step_without_state": _without_state,
    "bahdanau_step_W_U_transposed": _column_form,
    "bahdanau_step_normalised_without_exp": _normalised_without_exp,
    "bahdanau_step_softmax_over_batch": _softmax_over_batch,
    "bahdanau_step_mask_after_softmax": _mask_after_softmax,
    "bahdanau_step_unnormalised": _raw_scores_blended,
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
                "bahdanau_step_W_U_transposed": square_bahdanau_args,
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
        wrong = solutions.TWINS["bahdanau_step_no_max_subtraction"].function(**large_bahdanau_args())
    assert np.isfinite(right.weights).all() and np.isnan(wrong.weights).any()


def test_the_swap_and_the_transpose_raise_where_the_shapes_do_not_fit():
    # As the student's code would: s @ U needs n_s = n_h, H @ W_a @ s a square W_a.
    twins = solutions.TWINS
    with pytest.raises(ValueError):
        twins["additive_score_W_U_swapped"].function(**cases.additive_score_args())
    r = rng()
    with pytest.raises(ValueError):
        twins["general_score_W_transposed"].function(r.standard_normal(3), r.standard_normal((S, 4)),
                                                     r.standard_normal((3, 4)))


# --- issue 36: the new twins on small cases worked out by hand --------------------------------

def _twin(name):
    return solutions.TWINS[name].function


# s = (1, 0), h_1 = (1, 0), h_2 = (0, 1); W = [[1, 0], [0, 0]] (s W = (1, 0)), U = I, v = (1, 1):
# s W + h_1 U = (2, 0), s W + h_2 U = (1, 1); the right scores are tanh 2 and 2 tanh 1.
SMALL = {"s_prev": np.array([1.0, 0.0]), "H": np.array([[1.0, 0.0], [0.0, 1.0]]),
         "W": np.array([[1.0, 0.0], [0.0, 0.0]]), "U": np.eye(2), "v": np.array([1.0, 1.0])}


def test_without_state_by_hand():
    # Without s W: h_1 U = (1, 0) → tanh 1; h_2 U = (0, 1) → tanh 1: equal scores, uniform weights.
    step = _twin("bahdanau_step_without_state")(**SMALL)
    np.testing.assert_allclose(step.scores, [np.tanh(1), np.tanh(1)])
    np.testing.assert_allclose(step.weights, [0.5, 0.5])
    np.testing.assert_allclose(step.context, [0.5, 0.5])
    right = solutions.bahdanau_step(**SMALL)
    np.testing.assert_allclose(right.scores, [np.tanh(2), 2 * np.tanh(1)])
    s = {k: v for k, v in SMALL.items() if k != "s_prev"}
    np.testing.assert_allclose(_twin("additive_score_without_state")(SMALL["s_prev"], **s),
                               [np.tanh(1), np.tanh(1)])


def test_column_form_by_hand():
    # W @ s = (1, 0) (W s with W = [[1, 0], [0, 0]]: the same as s W here), U @ h_j = h_j (U = I):
    # take a non-symmetric W instead, W = [[0, 1], [0, 0]]: s W = (0, 1) but W @ s = (0, 0).
    args = {**SMALL, "W": np.array([[0.0, 1.0], [0.0, 0.0]]), "U": np.array([[0.0, 1.0], [0.0, 0.0]])}
    # W @ s = (0, 0); U @ h_1 = (0, 0), U @ h_2 = (1, 0): scores 0 and tanh 1.
    step = _twin("bahdanau_step_W_U_transposed")(**args)
    np.testing.assert_allclose(step.scores, [0.0, np.tanh(1)])
    w = np.exp([0.0, np.tanh(1)]) / np.exp([0.0, np.tanh(1)]).sum()
    np.testing.assert_allclose(step.weights, w)
    np.testing.assert_allclose(step.context, w)           # H = I: the context is the weights
    # the right scores: s W = (0, 1); h_1 U = (0, 1), h_2 U = (0, 0) → 2 tanh… = tanh 2, tanh 1
    np.testing.assert_allclose(solutions.bahdanau_step(**args).scores, [np.tanh(2), np.tanh(1)])


def test_column_form_raises_where_the_shapes_do_not_fit():
    with pytest.raises(ValueError):
        _twin("bahdanau_step_W_U_transposed")(**cases.bahdanau_step_args())


def test_normalised_without_exp_by_hand():
    # v = (1, −1): scores tanh 2 − 0 = 0.9640 and tanh 1 − tanh 1 = 0 → weights (1, 0);
    # with v = (1, −2) the second score is −tanh 1 and a weight falls below 0.
    args = {**SMALL, "v": np.array([1.0, -2.0])}
    e = np.array([np.tanh(2), -np.tanh(1)])
    step = _twin("bahdanau_step_normalised_without_exp")(**args)
    np.testing.assert_allclose(step.scores, e)
    np.testing.assert_allclose(step.weights, e / e.sum())
    assert step.weights.min() < 0 < step.weights.max()
    np.testing.assert_allclose(step.context, e / e.sum())   # H = I


def test_softmax_over_batch_by_hand():
    # Two sentences, the same scores e = (tanh 2, 2 tanh 1) and (0, 0): over axis 0 each
    # position's two scores are normalised against each other instead of along the sentence.
    s = np.array([[1.0, 0.0], [0.0, 0.0]])
    H = np.stack([SMALL["H"], SMALL["H"]])
    W = np.array([[1.0, 0.0], [0.0, 0.0]])
    H2 = H.copy()
    H2[1] = 0.0                                      # sentence 2: zero states, scores (0, 0)
    step = _twin("bahdanau_step_softmax_over_batch")(s, H2, W, np.eye(2), SMALL["v"])
    e = np.array([[np.tanh(2), 2 * np.tanh(1)], [0.0, 0.0]])
    np.testing.assert_allclose(step.scores, e)
    np.testing.assert_allclose(step.weights, np.exp(e) / np.exp(e).sum(axis=0))
    np.testing.assert_allclose(step.weights.sum(axis=0), [1.0, 1.0])
    # one sentence alone: axis 0 is the source axis, and the twin is the reference
    one = _twin("bahdanau_step_softmax_over_batch")(**SMALL)
    np.testing.assert_allclose(one.weights, solutions.bahdanau_step(**SMALL).weights)


def test_mask_after_softmax_by_hand():
    # h_2 padded: the right weights are (1, 0); zeroing after the softmax keeps h_1's share
    # softmax(tanh 2, 2 tanh 1)_1 = 1 / (1 + exp(2 tanh 1 − tanh 2)), which is less than 1.
    mask = np.array([True, False])
    step = _twin("bahdanau_step_mask_after_softmax")(**SMALL, mask=mask)
    first = 1 / (1 + np.exp(2 * np.tanh(1) - np.tanh(2)))
    np.testing.assert_allclose(step.weights, [first, 0.0])
    np.testing.assert_allclose(step.context, [first, 0.0])
    np.testing.assert_allclose(solutions.bahdanau_step(**SMALL, mask=mask).weights, [1.0, 0.0])


# --- one notation across the Bahdanau / Luong families (issue 36) ------------------------------

FAMILY_FILES = ("bahdanau_step_by_hand", "alignment_scores_side_by_side", "alignment_learnable",
                "bottleneck_free_response", "implement_additive_attention")


def _strings(node, skip=("notes",)):
    """Every text of a template, its `notes` (for authors, never shown) left out."""
    if isinstance(node, dict):
        return [s for k, v in node.items() if k not in skip for s in _strings(v, skip)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v, skip)]
    return [node] if isinstance(node, str) else []


def _family_texts():
    from pathlib import Path

    import yaml
    bank = Path(__file__).resolve().parents[3] / "problem_bank"
    return {name: "\n".join(_strings(yaml.safe_load((bank / f"{name}.yaml").read_text(encoding="utf-8"))))
            for name in FAMILY_FILES}


def test_the_families_write_bahdanau_in_the_row_form_only():
    # The bank's W, U multiply from the right (s_{i−1} W + h_j U, as `s_prev @ W + H @ U`);
    # the column form with the same letters (W s_{i−1} + U h_j) reads as `W @ s_prev`. The
    # paper's own W_a s_{i−1} (its transposes) may be quoted as such, with its subscript.
    import re
    column = re.compile(r"(?<![\w'])W\s*s_|(?<![\w'])U\s*h_|W\s*@\s*s_prev(?!`)")
    for name, text in _family_texts().items():
        for line in text.splitlines():
            if "cannot tell" in line or "does not even have" in line:
                continue                   # the texts that name the column reading as a mistake
            assert not column.search(line), f"{name}: column form in {line.strip()!r}"


def test_luong_scores_read_the_current_state():
    # Luong scores the current decoder state s_i; only Bahdanau's additive score reads s_{i−1}.
    import re
    luong = re.compile(r"s_\{i[−-]1\}(\^\\top)?\s*(W_a|\\cdot\s*h_j|h_j)|softmax\(W_a s_\{i[−-]1\}"
                       r"|\\cos\(s_\{i[−-]1\}")
    for name, text in _family_texts().items():
        assert not luong.search(text), f"{name}: a Luong score written with s_{{i−1}}: {luong.search(text)[0]!r}"
