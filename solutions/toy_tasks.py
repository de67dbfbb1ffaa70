"""Toy sequence-to-sequence tasks a mini encoder-decoder learns in seconds: copy, reverse and
sort a string of digits. Token ids: 0 <pad>, 1 <bos>, 2 <eos>, then the digits 0–9.

A batch is teacher-forced: the decoder reads ``tgt`` = <bos> + y and is scored on
``targets`` = y + <eos>, the same sequence shifted by one, <pad> (ignored) after the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

PAD, BOS, EOS = 0, 1, 2
TOKENS = ("<pad>", "<bos>", "<eos>", *"0123456789")
VOCAB = len(TOKENS)

TASKS = {
    "copy": lambda digits: list(digits),
    "reverse": lambda digits: list(digits)[::-1],
    "sort": lambda digits: sorted(digits),
}


@dataclass(frozen=True)
class ToyTask:
    """One task on digit strings of ``min_len``..``max_len`` digits."""
    name: str
    min_len: int = 3
    max_len: int = 8

    def __post_init__(self):
        if self.name not in TASKS:
            raise ValueError(f"no toy task {self.name!r}; the tasks are {', '.join(TASKS)}")
        if not 1 <= self.min_len <= self.max_len <= 11:
            raise ValueError(f"{self.name}: lengths must satisfy 1 ≤ min_len ≤ max_len ≤ 11 "
                             f"(with <bos> or <eos>, at most 12 tokens), got {self.min_len}..{self.max_len}")

    def answer(self, digits) -> list[int]:
        return TASKS[self.name](digits)


class Batch(NamedTuple):
    """src (B, max_len) ids and src_lengths (B,); tgt = <bos> + y and targets = y + <eos>,
    both (B, max_len + 1), padded with <pad>."""
    src: np.ndarray
    src_lengths: np.ndarray
    tgt: np.ndarray
    targets: np.ndarray


def encode_digits(digits) -> list[int]:
    return [3 + int(d) for d in digits]


def decode_tokens(ids) -> str:
    """Token ids as text, e.g. "<bos> 3 1 4": every token, <pad> and <eos> included."""
    return " ".join(TOKENS[int(i)] for i in ids)


def batch_of(task: ToyTask, sequences: list[tuple[int, ...]]) -> Batch:
    """The teacher-forced batch of these digit sequences."""
    n, S = len(sequences), task.max_len
    src = np.full((n, S), PAD, dtype=np.int64)
    tgt = np.full((n, S + 1), PAD, dtype=np.int64)
    targets = np.full((n, S + 1), PAD, dtype=np.int64)
    for row, digits in enumerate(sequences):
        y = encode_digits(task.answer(digits))
        src[row, :len(digits)] = encode_digits(digits)
        tgt[row, :len(y) + 1] = [BOS, *y]
        targets[row, :len(y) + 1] = [*y, EOS]
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    return Batch(src, lengths, tgt, targets)


def random_sequences(task: ToyTask, rng: np.random.Generator, n: int, avoid=frozenset()) -> list[tuple[int, ...]]:
    """``n`` digit sequences of uniformly drawn lengths and digits, none of them in ``avoid``."""
    out: list[tuple[int, ...]] = []
    while len(out) < n:
        length = int(rng.integers(task.min_len, task.max_len + 1))
        digits = tuple(int(d) for d in rng.integers(0, 10, length))
        if digits not in avoid:
            out.append(digits)
    return out


def held_out(task: ToyTask, n: int = 500, seed: int = 10_000) -> list[tuple[int, ...]]:
    """The held-out sequences: drawn from their own seed, distinct, never trained on. At most
    half of the task's sequences may be held out (training needs the rest)."""
    possible = sum(10 ** length for length in range(task.min_len, task.max_len + 1))
    if n > possible // 2:
        raise ValueError(f"{task.name}: {n} held-out sequences of {task.min_len}–{task.max_len} digits "
                         f"would be over half of the {possible} there are; allow longer sequences")
    rng = np.random.default_rng(seed)
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < n:
        seen.setdefault(random_sequences(task, rng, 1)[0])
    return list(seen)
