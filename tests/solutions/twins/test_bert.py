"""Hand-written checks of the bert twins (solutions/twins/): each twin
gives exactly the numbers of the wrong computation written out in plain NumPy
(``cases.check_twin``)."""

import numpy as np  # noqa: F401
import pytest

import solutions
from tests.solutions.twins.cases import check_twin, long_mlm_select_args, rng


def _ln_softmax(z):
    """ln p of each row, written out: z − ln Σ exp(z)."""
    z = np.asarray(z, dtype=float)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _nll(a, labels):
    """−ln p_n(labels_n) of every pair."""
    return -_ln_softmax(a["logits"])[np.arange(len(labels)), labels]


def two_class_softmax_args():
    """Rows of two logits of order 1, where σ(z) and the softmax are far apart."""
    return {"x": rng().standard_normal((3, 4, 2))}


def token_ids_args():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "play", "##ing", "un", "##able"]
    return {"tokens": ["[CLS]", "play", "##ing", "un", "##able", "[SEP]"], "vocab": vocab}


def bert_input_tokens_args():
    return {"tokens_a": ["play", "##ing", "un", "##able"], "tokens_b": None}


def mlm_num_selected_args():
    # T = 37: 0.15 T = 5.55 → 6 selected.
    return {"tokens": np.array([2] + [7] * 17 + [3] + [8] * 17 + [3]), "special_ids": (0, 1, 2, 3)}


def mlm_head_output_shape_args():
    return {"seq_len": 12, "d_model": 768, "vocab_size": 30522}


# twin name → its argument builder (cases.arguments_for reads this).
ARGUMENTS_OF: dict = {
    "softmax_two_classes_as_sigmoids": two_class_softmax_args,
    "mlm_select_labels_from_inputs": long_mlm_select_args,
    "token_ids_from_one": token_ids_args,
    "bert_input_tokens_no_specials": bert_input_tokens_args,
    "mlm_num_selected_unrounded": mlm_num_selected_args,
    "mlm_num_selected_masked_only": mlm_num_selected_args,
    "mlm_num_selected_without_specials": mlm_num_selected_args,
    "mlm_num_selected_truncated": mlm_num_selected_args,
    "mlm_num_selected_every_token": mlm_num_selected_args,
    "mlm_head_output_shape_hidden": mlm_head_output_shape_args,
    "mlm_head_output_shape_transposed": mlm_head_output_shape_args,
}


def _labels_from_inputs_by_hand(a):
    chosen = solutions.mlm_select(**a)
    assert (chosen.inputs != a["tokens"])[chosen.selected].any(), "the fixture must corrupt a position"
    labels = np.full(len(a["tokens"]), -100)
    labels[chosen.selected] = chosen.inputs[chosen.selected]     # the corrupted id, not the original
    return solutions.MLMSelection(chosen.inputs, chosen.selected, labels, chosen.actions)


HAND_WRITTEN: dict = {
    # NSP: tanh(C W_pool) W_cls, no b_pool and no b_cls.
    "nsp_head_no_biases": lambda a: np.tanh(a["C"] @ a["W_pool"]) @ a["W_cls"],
    # NSP loss: −ln p(IsNext) for every pair; ln p(y) without the minus; −z_y.
    "nsp_loss_always_isnext": lambda a: _nll(a, np.zeros(len(a["labels"]), dtype=int)).mean(),
    "nsp_loss_sign_dropped": lambda a: -_nll(a, a["labels"]).mean(),
    "nsp_loss_without_normaliser": lambda a: -a["logits"][np.arange(len(a["labels"])), a["labels"]].mean(),
    # σ(x) of every entry.
    "softmax_two_classes_as_sigmoids": lambda a: 1 / (1 + np.exp(-a["x"])),
    # log₂ p = ln p / ln 2.
    "log_softmax_base_2": lambda a: _ln_softmax(a["x"]) / np.log(2),
    "mlm_select_labels_from_inputs": _labels_from_inputs_by_hand,
    # ids counted from 1: [CLS]=2 → 3, play=4 → 5, ##ing=5 → 6, un=6 → 7, ##able=7 → 8, [SEP]=3 → 4.
    "token_ids_from_one": lambda a: [3, 5, 6, 7, 8, 4],
    "bert_input_tokens_no_specials": lambda a: ["play", "##ing", "un", "##able"],
    "mlm_num_selected_unrounded": lambda a: 0.15 * 37,
    # T = 37 with 3 specials (34 pieces); the rule gives round(5.55) = 6.
    "mlm_num_selected_masked_only": lambda a: 4,          # round(0.12 · 37) = round(4.44)
    "mlm_num_selected_without_specials": lambda a: 5,     # round(0.15 · 34) = round(5.1)
    "mlm_num_selected_truncated": lambda a: 5,            # floor(5.55)
    "mlm_num_selected_every_token": lambda a: 34,
    # "unaffable playing": neither word is in the vocabulary whole, and neither starts with a
    # "##" piece of it ("##u", "##p").
    "wordpiece_tokenize_no_split": lambda a: ["[UNK]", "[UNK]"],
    "wordpiece_tokenize_prefix_on_first": lambda a: ["[UNK]", "[UNK]"],
    "mlm_head_output_shape_hidden": lambda a: [12, 768],
    "mlm_head_output_shape_transposed": lambda a: [30522, 12],
}


def test_the_two_class_sigmoid_twin_is_the_softmax_for_more_than_two_classes():
    # The binary-classification habit has nothing to act on: the twin is the reference there.
    x = rng().standard_normal((3, 4, 5))
    twin = solutions.TWINS["softmax_two_classes_as_sigmoids"].function
    np.testing.assert_allclose(twin(x), solutions.softmax(x), rtol=1e-12, atol=0)
    np.testing.assert_allclose(twin(x[..., :2], axis=0), solutions.softmax(x[..., :2], axis=0),
                               rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_twin_equals_the_hand_written_wrong_computation(name):
    check_twin(name, HAND_WRITTEN[name])


# --- issue 36: the MLM count and WordPiece twins -------------------------------------------------

def _twin_fn(name):
    from solutions.twins.registry import TWINS
    return TWINS[name].function


# T = 24: [CLS], 20 pieces, [SEP], ... — here [CLS] + 12 + [SEP] + 9 + [SEP], 3 special tokens.
COUNT_TOKENS = np.array([1] + [4] * 12 + [2] + [5] * 9 + [2])


@pytest.mark.parametrize("name, expected", [
    ("mlm_num_selected_masked_only", 3),        # round(0.12 · 24) = round(2.88)
    ("mlm_num_selected_without_specials", 3),   # round(0.15 · 21) = round(3.15)
    ("mlm_num_selected_truncated", 3),          # floor(0.15 · 24) = floor(3.6)
    ("mlm_num_selected_every_token", 21),       # every word piece
])
def test_the_mlm_count_twins(name, expected):
    assert solutions.mlm_num_selected(COUNT_TOKENS, [0, 1, 2]) == 4     # round(3.6)
    assert _twin_fn(name)(COUNT_TOKENS, [0, 1, 2]) == expected


def test_no_specials_nothing_to_leave_out():
    with pytest.raises(ValueError, match="no special tokens"):
        _twin_fn("mlm_num_selected_without_specials")(np.array([4, 5, 6]), [0, 1, 2])


WP_VOCAB = ["[UNK]", "the", "play", "##ing", "##play"]


def test_wordpiece_without_splitting():
    assert solutions.wordpiece_tokenize("playing the", WP_VOCAB) == ["play", "##ing", "the"]
    assert _twin_fn("wordpiece_tokenize_no_split")("playing the", WP_VOCAB) == ["[UNK]", "the"]


def test_wordpiece_with_the_prefix_on_the_first_piece():
    assert _twin_fn("wordpiece_tokenize_prefix_on_first")("playing", WP_VOCAB) == ["##play", "##ing"]
    assert _twin_fn("wordpiece_tokenize_prefix_on_first")("playing", WP_VOCAB[:4]) == ["[UNK]"]
