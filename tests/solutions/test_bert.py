"""BERT's pre-training objectives: MLM position selection and corruption, MLM and NSP losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solutions import bert_pretraining_loss, mlm_loss, mlm_select, nsp_loss

CLS, SEP, PAD, MASK_ID = 0, 1, 2, 3
SPECIAL = (CLS, SEP, PAD)
VOCAB = 30
KEEP, MASK, RANDOM, UNCHANGED = 0, 1, 2, 3  # the action codes in MLMSelection.actions


def sentence_pair(rng, length=40, pad=0):
    """[CLS] a… [SEP] b… [SEP] [PAD]…, ordinary tokens drawn from 4..VOCAB−1."""
    words = rng.integers(4, VOCAB, size=length - 3 - pad)
    half = len(words) // 2
    parts = [[CLS], words[:half], [SEP], words[half:], [SEP], [PAD] * pad]
    return np.concatenate([np.asarray(part, dtype=np.int64) for part in parts])


@pytest.fixture
def tokens():
    return sentence_pair(np.random.default_rng(0), pad=5)


# --- mlm_select ----------------------------------------------------------------------------

@pytest.mark.parametrize("T, count", [
    (1, 1), (3, 1),      # 0.45 rounds to 0, but at least one position is always chosen
    (4, 1), (10, 2), (20, 3),
    (30, 4),             # 4.5 → 4: Python's round (and Google's code) rounds half to even
    (40, 6), (100, 15), (128, 19),
])
def test_mlm_select_chooses_max_1_round_15_percent_positions(T, count):
    tokens = np.arange(T) + 4
    selection = mlm_select(tokens, rng=0, vocab_size=VOCAB, mask_id=MASK_ID)
    assert selection.selected.sum() == count == max(1, round(0.15 * T))


@pytest.mark.parametrize("seed", range(20))
def test_mlm_select_never_selects_special_tokens(tokens, seed):
    selection = mlm_select(tokens, seed, VOCAB, MASK_ID, special_ids=SPECIAL)
    assert selection.selected.sum() == 6
    assert not selection.selected[np.isin(tokens, SPECIAL)].any()


def test_mlm_select_takes_every_ordinary_token_when_there_are_too_few():
    tokens = np.array([CLS, 7, SEP, 8, SEP] + [PAD] * 35)  # 15% of 40 = 6 > 2 candidates
    selection = mlm_select(tokens, 0, VOCAB, MASK_ID, special_ids=SPECIAL)
    np.testing.assert_array_equal(np.flatnonzero(selection.selected), [1, 3])


def test_mlm_select_is_reproducible_from_a_seed_or_generator(tokens):
    a = mlm_select(tokens, 123, VOCAB, MASK_ID, special_ids=SPECIAL)
    b = mlm_select(tokens, 123, VOCAB, MASK_ID, special_ids=SPECIAL)
    c = mlm_select(tokens, np.random.default_rng(123), VOCAB, MASK_ID, special_ids=SPECIAL)
    for other in (b, c):
        for field in ("inputs", "selected", "labels", "actions"):
            np.testing.assert_array_equal(getattr(other, field), getattr(a, field), err_msg=field)


def test_mlm_select_differs_between_seeds(tokens):
    # 6 of 33 candidates: two seeds agree by chance with probability 1/C(33, 6) ≈ 1e-6.
    a = mlm_select(tokens, 1, VOCAB, MASK_ID, special_ids=SPECIAL)
    b = mlm_select(tokens, 2, VOCAB, MASK_ID, special_ids=SPECIAL)
    assert not np.array_equal(a.selected, b.selected)


def test_mlm_select_labels_are_the_original_ids_at_selected_positions_and_minus_100_elsewhere(
        tokens):
    selection = mlm_select(tokens, 5, VOCAB, MASK_ID, special_ids=SPECIAL)
    for i, token in enumerate(tokens):
        assert selection.labels[i] == (token if selection.selected[i] else -100)


def test_mlm_select_inputs_follow_the_actions(tokens):
    for seed in range(50):
        s = mlm_select(tokens, seed, VOCAB, MASK_ID, special_ids=SPECIAL)
        np.testing.assert_array_equal(s.selected, s.actions != KEEP)
        np.testing.assert_array_equal(s.inputs[s.actions == KEEP], tokens[s.actions == KEEP])
        np.testing.assert_array_equal(s.inputs[s.actions == MASK], MASK_ID)
        np.testing.assert_array_equal(s.inputs[s.actions == UNCHANGED],
                                      tokens[s.actions == UNCHANGED])
        random_ids = s.inputs[s.actions == RANDOM]
        assert np.all((random_ids >= 0) & (random_ids < VOCAB))


@pytest.fixture(scope="module")
def many_selections():
    """2000 sequences of length 40: 6 selected positions each, 12,000 in all."""
    rng = np.random.default_rng(2024)
    selections = []
    for seed in range(2000):
        tokens = sentence_pair(rng)
        selections.append((tokens, mlm_select(tokens, seed, VOCAB, MASK_ID, special_ids=SPECIAL)))
    return selections


def test_mlm_corruption_fractions_are_80_10_10(many_selections):
    actions = np.concatenate([s.actions[s.selected] for _, s in many_selections])
    n = len(actions)
    assert n == 12_000
    for action, p in [(MASK, 0.8), (RANDOM, 0.1), (UNCHANGED, 0.1)]:
        # Binomial std √(p(1−p)/n): 0.0037 for 0.8 and 0.0027 for 0.1; allow 5 std.
        tolerance = 5 * math.sqrt(p * (1 - p) / n)
        assert abs(np.mean(actions == action) - p) < tolerance, action


def test_mlm_random_replacements_are_uniform_over_the_vocabulary(many_selections):
    random_ids = np.concatenate([s.inputs[s.actions == RANDOM] for _, s in many_selections])
    counts = np.bincount(random_ids, minlength=VOCAB)
    n = len(random_ids)
    expected = n / VOCAB
    # Each count is Binomial(n, 1/V); 5 std either side. Special and [MASK] ids are included.
    tolerance = 5 * math.sqrt(n * (1 / VOCAB) * (1 - 1 / VOCAB))
    assert len(counts) == VOCAB
    assert np.all(np.abs(counts - expected) < tolerance), counts


def test_mlm_selected_positions_are_uniform_over_ordinary_tokens(many_selections):
    hits = sum(s.selected.astype(int) for _, s in many_selections)
    ordinary = hits[1:-1][np.arange(1, 39) != 19]  # drop [CLS], the middle [SEP] and the last
    assert hits[0] == hits[19] == hits[39] == 0
    # 12,000 picks over 37 positions: Binomial(2000, 6/37) each, mean 324, std ≈ 16.5.
    p = 6 / 37
    tolerance = 5 * math.sqrt(2000 * p * (1 - p))
    assert np.all(np.abs(ordinary - 2000 * p) < tolerance), ordinary


# --- losses --------------------------------------------------------------------------------

LOGITS = np.array([[1.0, 0.0, 0.0],
                   [5.0, -3.0, 9.0],
                   [0.0, 2.0, 0.0],
                   [4.0, 4.0, -1.0]])
ORIGINAL = np.array([2, 0, 1, 1])
SELECTED = np.array([True, False, True, False])
# Selected rows: log softmax([1,0,0])[2] = −log(e + 2); log softmax([0,2,0])[1] = 2 − log(e² + 2).
MLM_EXPECTED = (math.log(math.e + 2) + math.log(math.e**2 + 2) - 2) / 2


def test_mlm_loss_is_the_mean_cross_entropy_over_selected_positions_by_hand():
    assert mlm_loss(LOGITS, ORIGINAL, SELECTED) == pytest.approx(MLM_EXPECTED, rel=1e-14)


def test_mlm_loss_ignores_logits_and_tokens_at_unselected_positions():
    logits = LOGITS.copy()
    logits[~SELECTED] = [[-50.0, 80.0, 3.0], [0.0, 0.0, 100.0]]
    tokens = ORIGINAL.copy()
    tokens[~SELECTED] = [0, 2]
    assert mlm_loss(logits, tokens, SELECTED) == pytest.approx(MLM_EXPECTED, rel=1e-14)


def test_mlm_loss_over_a_batch_averages_over_all_selected_positions_not_per_sequence():
    logits = np.stack([LOGITS, np.zeros((4, 3))])
    tokens = np.stack([ORIGINAL, [0, 1, 2, 0]])
    selected = np.stack([SELECTED, [True, False, False, False]])
    # Two positions from sequence 0 plus one uniform position (loss log 3) from sequence 1.
    expected = (2 * MLM_EXPECTED + math.log(3)) / 3
    assert mlm_loss(logits, tokens, selected) == pytest.approx(expected, rel=1e-14)


def test_mlm_loss_rejects_a_selection_of_the_wrong_shape():
    with pytest.raises(ValueError):
        mlm_loss(LOGITS, ORIGINAL, SELECTED[:3])


def test_nsp_loss_for_is_next_is_minus_log_softmax_of_class_zero():
    # −log(e² / (e² + e⁰)) = log(1 + e^−2)
    assert nsp_loss(np.array([[2.0, 0.0]]), np.array([0])) == pytest.approx(
        math.log(1 + math.exp(-2)), rel=1e-14)


def test_nsp_loss_averages_over_the_batch():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 3.0]])
    labels = np.array([0, 1, 1])  # IsNext, NotNext, NotNext
    expected = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-1)) + math.log(2)) / 3
    assert nsp_loss(logits, labels) == pytest.approx(expected, rel=1e-14)


def test_bert_pretraining_loss_is_the_sum_of_the_two_means():
    nsp_logits, nsp_labels = np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([0, 1])
    expected = MLM_EXPECTED + (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-1))) / 2
    loss = bert_pretraining_loss(LOGITS, ORIGINAL, SELECTED, nsp_logits, nsp_labels)
    assert loss == pytest.approx(expected, rel=1e-14)


def test_nsp_loss_rejects_anything_but_two_classes_and_binary_labels():
    with pytest.raises(ValueError, match=r"expected shape \(\.\.\., 2\)"):
        nsp_loss(np.zeros((2, 3)), np.array([0, 1]))
    with pytest.raises(ValueError, match="expected 0 \\(IsNext\\) or 1"):
        nsp_loss(np.zeros((2, 2)), np.array([0, 2]))


def test_mlm_loss_needs_a_bool_selection():
    with pytest.raises(ValueError, match="selected: expected a bool array"):
        mlm_loss(np.zeros((3, 4)), np.array([1, 2, 3]), np.array([1.0, 0.0, 1.0]))


def test_nsp_head_is_the_tanh_pooler_then_a_two_way_linear_layer():
    from solutions import nsp_head

    C = np.array([[1.0, -1.0]])
    W_pool, b_pool = np.eye(2), np.array([0.0, 1.0])          # pooled = tanh([1, 0]) = [tanh 1, 0]
    W_cls, b_cls = np.array([[2.0, 0.0], [0.0, 3.0]]), np.array([0.5, -0.5])
    np.testing.assert_allclose(nsp_head(C, W_pool, b_pool, W_cls, b_cls),
                               [[2 * np.tanh(1.0) + 0.5, -0.5]], rtol=1e-14)


# --- the input sequence, the MLM count and the MLM logits' shape ---------------------------

def test_bert_input_tokens_wraps_one_sentence_or_a_pair_in_cls_and_sep():
    from solutions import bert_input_tokens
    assert bert_input_tokens(["the", "cat"]) == ["[CLS]", "the", "cat", "[SEP]"]
    assert bert_input_tokens(["the", "cat"], ["it", "ran"]) == [
        "[CLS]", "the", "cat", "[SEP]", "it", "ran", "[SEP]"]


@pytest.mark.parametrize("T", [1, 3, 4, 10, 20, 30, 37, 40, 100, 128])
def test_mlm_num_selected_is_the_count_mlm_select_selects(tokens, T):
    from solutions import mlm_num_selected
    seq = np.concatenate([[CLS], np.arange(T - 2) + 4, [SEP]]) if T >= 3 else np.arange(T) + 4
    chosen = mlm_select(seq, 0, VOCAB, MASK_ID, SPECIAL)
    assert mlm_num_selected(seq, SPECIAL) == chosen.selected.sum()
    assert mlm_num_selected(tokens, SPECIAL) == mlm_select(tokens, 1, VOCAB, MASK_ID, SPECIAL).selected.sum()


def test_mlm_num_selected_counts_the_special_tokens_in_t_but_never_selects_more_than_the_rest():
    from solutions import mlm_num_selected
    # T = 37 with 3 specials: round(0.15 · 37) = round(5.55) = 6, not round(0.15 · 34) = 5.
    assert mlm_num_selected(np.array([CLS] + [5] * 17 + [SEP] + [6] * 17 + [SEP]), SPECIAL) == 6
    assert mlm_num_selected(np.array([CLS, 5, SEP] + [PAD] * 20), SPECIAL) == 1


def test_mlm_head_output_shape_is_one_row_per_position_and_one_column_per_vocabulary_entry():
    from solutions import mlm_head_output_shape
    assert mlm_head_output_shape(12, 768, 30522) == [12, 30522]
    with pytest.raises(ValueError):
        mlm_head_output_shape(0, 768, 30522)
