"""Inside a trained toy model: what it answers to one input, and every head's attention
weights while it does — the encoder's self-attention, the decoder's causal self-attention and
its cross-attention, read from the teacher-forced pass over the model's own answer (the same
rows greedy decoding computed one at a time)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Transformer
from .toy_tasks import BOS, EOS, TOKENS, ToyTask, batch_of


@dataclass
class HeadMap:
    """One head's weights (rows: queries, columns: keys), each row summing to 1."""
    layer: str            # "encoder.0", "decoder.1", …
    kind: str             # "self" or "cross"
    head: int
    weights: np.ndarray   # (L, S)
    rows: list[str]       # the query tokens
    cols: list[str]       # the key tokens


@dataclass
class AttentionMaps:
    source: list[str]     # the input's tokens
    decoder_input: list[str]   # <bos> and the answer, as the decoder read it
    output: list[str]     # the answer, <eos> last (when it came)
    maps: list[HeadMap]


def _parse(task: ToyTask, text: str) -> tuple[int, ...]:
    shown = [c for c in text if not c.isspace()]
    if not all(c in "0123456789" for c in shown) or not task.min_len <= len(shown) <= task.max_len:
        raise ValueError(f"{task.name}: give {task.min_len} to {task.max_len} digits, e.g. "
                         f"\"{'31415926'[:task.max_len]}\"; got {text!r}")
    return tuple(int(c) for c in shown)


def attention_maps(model: Transformer, task: ToyTask, text: str) -> AttentionMaps:
    """The model's answer to the digits of ``text`` and every head's weights on the way."""
    digits = _parse(task, text)
    batch = batch_of(task, [digits])
    src = batch.src[:, :len(digits)]
    out = model.greedy_decode(src, BOS, EOS, task.max_len + 1)[0]
    ended = np.flatnonzero(out[1:] == EOS)
    answer = out[1: 1 + (int(ended[0]) + 1 if ended.size else len(out) - 1)]
    tgt = out[None, : len(answer)]                      # <bos> + the answer without its last token
    memory, encoder = model.encode(src, return_weights=True)
    _, decoder = model.decode(tgt, memory, return_weights=True)
    source = [TOKENS[i] for i in src[0]]
    read = [TOKENS[i] for i in tgt[0]]
    maps = [HeadMap(f"encoder.{i}", "self", h, w["self_attn"][0, h], source, source)
            for i, w in enumerate(encoder) for h in range(w["self_attn"].shape[1])]
    for i, w in enumerate(decoder):
        for kind, cols in (("self", read), ("cross", source)):
            maps += [HeadMap(f"decoder.{i}", kind, h, w[f"{kind}_attn"][0, h], read, cols)
                     for h in range(w[f"{kind}_attn"].shape[1])]
    return AttentionMaps(source, read, [TOKENS[i] for i in answer], maps)
