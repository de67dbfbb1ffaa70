"""WordPiece against the examples of the BERT paper and repository, worked by hand."""

import pytest

from solutions import TWINS, token_ids, wordpiece_tokenize, wordpiece_word

# The docstring example of google-research/bert's WordpieceTokenizer.
VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


def test_the_bert_repository_example():
    assert wordpiece_tokenize("unaffable", ["un", "##aff", "##able"]) == ["un", "##aff", "##able"]
    assert wordpiece_tokenize("unwanted running", VOCAB) == ["un", "##want", "##ed", "runn", "##ing"]
    assert wordpiece_tokenize("unwantedX running", VOCAB) == ["[UNK]", "runn", "##ing"]


def test_longest_match_first_keeps_a_known_word_whole():
    assert wordpiece_word("want", set(VOCAB)) == ["want"]          # not wa ##nt
    assert wordpiece_word("wanted", set(VOCAB)) == ["want", "##ed"]


def test_a_word_is_unknown_as_a_whole_not_piece_by_piece():
    assert wordpiece_word("wantz", set(VOCAB)) == ["[UNK]"]
    assert wordpiece_tokenize("", VOCAB) == []


def test_token_ids_are_positions_in_the_vocabulary():
    tokens = wordpiece_tokenize("unwanted running", VOCAB)
    assert token_ids(["[CLS]", *tokens, "[SEP]"], VOCAB) == [1, 7, 4, 5, 8, 9, 2]
    assert token_ids(["b"], ["a", "b", "b"]) == [1]  # a repeated piece keeps its first id
    with pytest.raises(ValueError, match="not in the vocabulary"):
        token_ids(["nope"], VOCAB)


def test_the_twins_make_their_documented_mistakes():
    vocab = ["un", "##aff", "##able", "aff", "able", "play", "##ing", "p", "##l", "##a", "##y", "##i", "##n", "##g"]
    no_prefix = TWINS["wordpiece_tokenize_no_prefix"].function
    shortest = TWINS["wordpiece_tokenize_shortest_first"].function
    assert no_prefix("unaffable", vocab) == ["un", "aff", "able"]     # pieces without "##"
    assert no_prefix("playing", vocab) == ["[UNK]"]                    # "ing" alone is not in vocab
    assert shortest("playing", vocab) == ["p", "##l", "##a", "##y", "##i", "##n", "##g"]
    assert wordpiece_tokenize("playing", vocab) == ["play", "##ing"]
