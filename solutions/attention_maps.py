"""Inside a trained toy model: what it answers to one input, and every head's attention
weights while it does — the encoder's self-attention, the decoder's causal self-attention and
its cross-attention, read from the teacher-forced pass over the model's own answer (the same
rows greedy decoding computed one at a time)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .heads import head_maps
from .model import Transformer
from .toy_tasks import TOKENS, ToyTask


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
    maps = head_maps(model, _parse(task, text), task.max_len + 1)
    source = [TOKENS[i] for i in maps.source]
    read = [TOKENS[i] for i in maps.tgt]
    heads = [HeadMap(f"encoder.{i}", "self", h, w, source, source)
             for i, layer in enumerate(maps.encoder) for h, w in enumerate(layer)]
    for i in range(len(maps.self)):
        heads += [HeadMap(f"decoder.{i}", "self", h, w, read, read) for h, w in enumerate(maps.self[i])]
        heads += [HeadMap(f"decoder.{i}", "cross", h, w, read, source) for h, w in enumerate(maps.cross[i])]
    return AttentionMaps(source, read, [TOKENS[i] for i in maps.answer], heads)
