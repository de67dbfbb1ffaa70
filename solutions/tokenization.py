"""WordPiece, BERT's tokenizer (Lecture 19): how text becomes the ids that MLM predicts.

Each whitespace-separated word is split greedily, longest match first, into pieces of the
vocabulary; every piece after the first carries the continuation prefix "##". A word that
cannot be covered becomes [UNK] as a whole. This is the algorithm of
``WordpieceTokenizer.tokenize`` in google-research/bert (without its lower-casing and
punctuation splitting, which happen before it).
"""

from __future__ import annotations

UNK = "[UNK]"
CONTINUATION = "##"


def wordpiece_word(word: str, vocab, unk: str = UNK) -> list[str]:
    """The pieces of one word: at each position the longest vocabulary entry that matches."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else CONTINUATION + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return [unk]  # no piece matches here: the whole word is unknown
        pieces.append(piece)
        start = end
    return pieces


def wordpiece_tokenize(text: str, vocab, unk: str = UNK) -> list[str]:
    """WordPiece tokens of ``text`` (words separated by whitespace); ``vocab`` any container
    of pieces, continuation pieces written with "##"."""
    return tokenize_words(text, vocab, unk, wordpiece_word)


def tokenize_words(text: str, vocab, unk: str, split_word) -> list[str]:
    """Split ``text`` at whitespace and each word with ``split_word(word, vocab, unk)``."""
    if not isinstance(text, str):
        raise ValueError(f"text: expected a string, got {type(text).__name__}")
    vocab = set(vocab)
    return [piece for word in text.split() for piece in split_word(word, vocab, unk)]


def token_ids(tokens, vocab) -> list[int]:
    """The id of each token: its position in the ordered ``vocab`` list (the first one, should
    a piece be listed twice)."""
    index: dict = {}
    for i, piece in enumerate(vocab):
        index.setdefault(piece, i)
    missing = [t for t in tokens if t not in index]
    if missing:
        raise ValueError(f"tokens not in the vocabulary: {missing}")
    return [index[t] for t in tokens]
