"""Alignment-score functions and the Bahdanau / Luong attention steps, on hand-computed examples."""

from __future__ import annotations

import inspect
import math

import numpy as np
import solutions
import pytest

from solutions import (ALIGNMENT_SCORES, additive_score, bahdanau_step, concat_score,
                       content_score, dot_score, general_score, location_score, luong_step,
                       scaled_dot_score)

# One decoder state s against three encoder states (the rows of H), all in ℝ².
S_STATE = np.array([1.0, 2.0])
H = np.array([[1.0, 0.0],
              [0.0, 1.0],
              [1.0, 1.0]])

# Additive parameters: s W = [1, 0]; the rows of H U are [0, 1], [1, 0], [1, 1].
W = np.array([[1.0, 0.0],
              [0.0, 0.0]])
U = np.array([[0.0, 1.0],
              [1.0, 0.0]])
V_A = np.array([1.0, -1.0])
# s W + h_j U = [1, 1], [2, 0], [2, 1]  →  vᵀ tanh(·) = tanh1 − tanh1, tanh2 − tanh0, tanh2 − tanh1
ADDITIVE_EXPECTED = [0.0, math.tanh(2.0), math.tanh(2.0) - math.tanh(1.0)]


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 3))  # s (B, n), H (B, S, n)


def loop_softmax(scores):
    exps = [math.exp(e) for e in scores]
    return [e / sum(exps) for e in exps]


# --- score functions by hand ---------------------------------------------------------------

def test_dot_score_by_hand():
    # [1·1 + 2·0, 1·0 + 2·1, 1·1 + 2·1]
    np.testing.assert_array_equal(dot_score(S_STATE, H), [1.0, 2.0, 3.0])


def test_scaled_dot_score_divides_by_sqrt_of_the_state_size():
    np.testing.assert_allclose(scaled_dot_score(S_STATE, H),
                               [1 / math.sqrt(2), 2 / math.sqrt(2), 3 / math.sqrt(2)], rtol=1e-15)


def test_content_score_is_the_cosine_by_hand():
    # ‖s‖ = √5, ‖h‖ = 1, 1, √2
    np.testing.assert_allclose(content_score(S_STATE, H),
                               [1 / math.sqrt(5), 2 / math.sqrt(5), 3 / math.sqrt(10)],
                               rtol=1e-15)


def test_general_score_by_hand():
    W_a = np.array([[1.0, 0.0],
                    [0.0, 2.0]])
    # s W_a = [1, 4]; dotted with [1, 0], [0, 1], [1, 1]
    np.testing.assert_array_equal(general_score(S_STATE, H, W_a), [1.0, 4.0, 5.0])


def test_location_score_uses_only_the_decoder_state():
    W_a = np.array([[1.0, 0.0, -1.0],
                    [0.0, 1.0, 1.0]])
    # s W_a = [1·1 + 2·0, 1·0 + 2·1, −1·1 + 2·1]
    np.testing.assert_array_equal(location_score(S_STATE, W_a), [1.0, 2.0, 1.0])


def test_additive_score_by_hand():
    np.testing.assert_allclose(additive_score(S_STATE, H, W, U, V_A), ADDITIVE_EXPECTED,
                               rtol=1e-15, atol=1e-15)


def test_concat_score_by_hand():
    W_a = np.vstack([W, U])  # [s; h] W_a = s W + h U
    np.testing.assert_allclose(concat_score(S_STATE, H, W_a, V_A), ADDITIVE_EXPECTED,
                               rtol=1e-15, atol=1e-15)


# --- shapes with a batch axis --------------------------------------------------------------

def test_parameter_free_scores_have_shape_batch_by_source_and_match_loops(batch):
    s, Hb = batch
    dots = [[sum(s[b, c] * Hb[b, j, c] for c in range(3)) for j in range(4)] for b in range(2)]
    norms_h = [[math.sqrt(sum(x * x for x in Hb[b, j])) for j in range(4)] for b in range(2)]
    norms_s = [math.sqrt(sum(x * x for x in s[b])) for b in range(2)]
    cosines = [[dots[b][j] / (norms_s[b] * norms_h[b][j]) for j in range(4)] for b in range(2)]
    for score, expected in [(dot_score, dots),
                            (scaled_dot_score, np.array(dots) / math.sqrt(3)),
                            (content_score, cosines)]:
        out = score(s, Hb)
        assert out.shape == (2, 4), score.__name__
        np.testing.assert_allclose(out, expected, rtol=1e-12, err_msg=score.__name__)


def test_parametrised_scores_have_shape_batch_by_source(batch):
    s, Hb = batch
    rng = np.random.default_rng(1)
    W_s, W_h, v = rng.normal(size=(3, 5)), rng.normal(size=(3, 5)), rng.normal(size=5)
    assert additive_score(s, Hb, W_s, W_h, v).shape == (2, 4)
    assert concat_score(s, Hb, np.vstack([W_s, W_h]), v).shape == (2, 4)
    assert general_score(s, Hb, rng.normal(size=(3, 3))).shape == (2, 4)
    assert location_score(s, rng.normal(size=(3, 4))).shape == (2, 4)
    expected_general = [[s[b] @ np.eye(3) @ Hb[b, j] for j in range(4)] for b in range(2)]
    np.testing.assert_allclose(general_score(s, Hb, np.eye(3)), expected_general, rtol=1e-12)


def test_concat_score_equals_additive_score_with_W_a_split(batch):
    s, Hb = batch
    rng = np.random.default_rng(2)
    W_a, v = rng.normal(size=(3 + 3, 7)), rng.normal(size=7)
    np.testing.assert_allclose(concat_score(s, Hb, W_a, v),
                               additive_score(s, Hb, W_a[:3], W_a[3:], v), rtol=1e-12)


def test_concat_score_rejects_a_W_a_of_the_wrong_height():
    with pytest.raises(ValueError, match="W_a"):
        concat_score(S_STATE, H, np.ones((3, 2)), V_A)


@pytest.mark.parametrize("score", [dot_score, scaled_dot_score, content_score])
def test_dot_style_scores_require_equal_state_sizes(score):
    with pytest.raises(ValueError):
        score(np.ones(3), np.ones((4, 2)))


def test_content_score_is_invariant_to_positive_rescaling():
    scaled_H = H * np.array([[2.0], [0.5], [7.0]])
    np.testing.assert_allclose(content_score(3.0 * S_STATE, scaled_H), content_score(S_STATE, H),
                               rtol=1e-14)
    np.testing.assert_allclose(content_score(-S_STATE, H), -content_score(S_STATE, H), rtol=1e-14)


def test_content_score_of_a_zero_vector_is_an_error():
    with pytest.raises(ValueError):
        content_score(np.zeros(2), H)


# --- the score table -----------------------------------------------------------------------

def test_alignment_score_table_lists_the_six_lecture_scores_plus_concat():
    assert set(ALIGNMENT_SCORES) == {"content", "additive", "concat", "location", "general",
                                     "dot", "scaled_dot"}


@pytest.mark.parametrize("name", ["content", "dot", "scaled_dot"])
def test_parameter_free_scores_have_no_learnable_parameters(name):
    assert ALIGNMENT_SCORES[name].learnable == ()


@pytest.mark.parametrize("name, learnable", [
    ("additive", {"W", "U", "v"}), ("concat", {"W_a", "v"}), ("general", {"W_a"}),
    ("location", {"W_a"}),
])
def test_learned_scores_name_their_parameters(name, learnable):
    assert set(ALIGNMENT_SCORES[name].learnable) == learnable


@pytest.mark.parametrize("name", sorted(ALIGNMENT_SCORES))
def test_learnable_names_are_the_function_arguments_after_the_states(name):
    entry = ALIGNMENT_SCORES[name]
    arguments = [p for p in inspect.signature(entry.function).parameters if p not in ("s", "H")]
    assert tuple(arguments) == entry.learnable


# --- Bahdanau and Luong steps --------------------------------------------------------------

def test_bahdanau_step_by_hand():
    step = bahdanau_step(S_STATE, H, W, U, V_A)
    weights = loop_softmax(ADDITIVE_EXPECTED)
    context = [sum(weights[j] * H[j, c] for j in range(3)) for c in range(2)]
    np.testing.assert_allclose(step.scores, ADDITIVE_EXPECTED, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(step.weights, weights, rtol=1e-14)
    np.testing.assert_allclose(step.context, context, rtol=1e-14)
    assert step.attentional_state is None


def test_bahdanau_step_with_a_batch_gives_distributions_and_weighted_contexts(batch):
    s, Hb = batch
    rng = np.random.default_rng(3)
    step = bahdanau_step(s, Hb, rng.normal(size=(3, 5)), rng.normal(size=(3, 5)),
                         rng.normal(size=5))
    assert step.weights.shape == (2, 4) and step.context.shape == (2, 3)
    np.testing.assert_allclose(step.weights.sum(axis=-1), 1.0, rtol=0, atol=1e-14)
    for b in range(2):
        np.testing.assert_allclose(step.weights[b], loop_softmax(step.scores[b]), rtol=1e-13)
        expected = [sum(step.weights[b, j] * Hb[b, j, c] for j in range(4)) for c in range(3)]
        np.testing.assert_allclose(step.context[b], expected, rtol=1e-13)


def test_bahdanau_step_gives_masked_source_positions_zero_weight():
    mask = np.array([True, False, True])
    step = bahdanau_step(S_STATE, H, W, U, V_A, mask=mask)
    kept = loop_softmax([ADDITIVE_EXPECTED[0], ADDITIVE_EXPECTED[2]])
    assert step.weights[1] == 0.0
    np.testing.assert_allclose(step.weights, [kept[0], 0.0, kept[1]], rtol=1e-14)
    np.testing.assert_allclose(step.context, kept[0] * H[0] + kept[1] * H[2], rtol=1e-14)


def test_luong_step_attentional_state_is_tanh_of_context_and_state_times_W_c():
    W_c = np.array([[1.0, 0.0, -1.0],
                    [0.0, 1.0, 0.5],
                    [2.0, 0.0, 0.0],
                    [0.0, -1.0, 1.0]])  # rows: c₁, c₂, h₁, h₂
    step = luong_step(S_STATE, H, W_c)  # dot score: [1, 2, 3]
    weights = loop_softmax([1.0, 2.0, 3.0])
    c = [weights[0] + weights[2], weights[1] + weights[2]]
    joined = c + list(S_STATE)
    expected = [math.tanh(sum(joined[r] * W_c[r, k] for r in range(4))) for k in range(3)]
    np.testing.assert_allclose(step.scores, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(step.weights, weights, rtol=1e-14)
    np.testing.assert_allclose(step.context, c, rtol=1e-14)
    np.testing.assert_allclose(step.attentional_state, expected, rtol=1e-14)


def test_luong_step_passes_score_parameters_through():
    W_a = np.array([[1.0, 0.0],
                    [0.0, 2.0]])
    step = luong_step(S_STATE, H, np.eye(4)[:, :2], score=general_score, W_a=W_a)
    np.testing.assert_array_equal(step.scores, [1.0, 4.0, 5.0])
    np.testing.assert_allclose(step.weights, loop_softmax([1.0, 4.0, 5.0]), rtol=1e-14)
    # W_c = the first two columns of I₄ picks the context: h̃ = tanh(c).
    np.testing.assert_allclose(step.attentional_state, np.tanh(step.context), rtol=1e-15)


def test_luong_step_with_location_scores_ignores_the_encoder_states_for_scoring():
    # location-based: a_t = softmax(W_a h_t); W_a (n, S) fixes S = 2. h_t·W_a = [ln 3, 0].
    h_t = np.array([1.0, 0.0])
    W_a = np.array([[np.log(3.0), 0.0], [5.0, 5.0]])
    H = np.array([[4.0, 0.0], [0.0, 8.0]])
    step = luong_step(h_t, H, np.eye(4), score=location_score, W_a=W_a)
    np.testing.assert_allclose(step.weights, [0.75, 0.25])
    np.testing.assert_allclose(step.context, [3.0, 2.0])
    np.testing.assert_allclose(step.attentional_state, np.tanh([3.0, 2.0, 1.0, 0.0]))


def test_luong_step_takes_score_functions_by_name():
    W_a = np.array([[1.0, 2.0], [0.0, 1.0]])
    by_name = luong_step(S_STATE, H, np.eye(4)[:, :2], score="general", W_a=W_a)
    by_function = luong_step(S_STATE, H, np.eye(4)[:, :2], score=general_score, W_a=W_a)
    np.testing.assert_array_equal(by_name.weights, by_function.weights)
    with pytest.raises(ValueError, match="unknown score function 'cosine'"):
        luong_step(S_STATE, H, np.eye(4)[:, :2], score="cosine")


def test_the_winner_is_counted_from_one_as_the_lecture_numbers_h():
    assert solutions.winner(np.array([0.3, -1.2, 2.5, 0.7])) == 3
    assert solutions.winner([4.0]) == 1
    with pytest.raises(ValueError, match="one decoder step"):
        solutions.winner(np.zeros((2, 3)))
