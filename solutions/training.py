"""Training the mini encoder-decoder on a toy task: Adam on the teacher-forced cross-entropy,
deterministic from a seed, and the held-out exact match of greedy left-to-right decoding."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .backprop import transformer_backward, transformer_forward
from .checkpoint import save_model
from .losses import softmax_cross_entropy_backward, softmax_cross_entropy_forward
from .model import Transformer, TransformerConfig
from .optim import Adam
from .toy_tasks import BOS, EOS, PAD, VOCAB, ToyTask, batch_of, held_out, random_sequences


@dataclass(frozen=True)
class Recipe:
    """Everything a training run depends on: the same recipe gives the same weights."""
    task: str
    min_len: int = 3
    max_len: int = 8
    d_model: int = 32
    num_heads: int = 4
    d_ff: int = 64
    num_encoder_layers: int = 1
    num_decoder_layers: int = 1
    tie_output: bool = False
    steps: int = 1500
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 100
    label_smoothing: float = 0.0
    seed: int = 0

    def toy_task(self) -> ToyTask:
        return ToyTask(self.task, self.min_len, self.max_len)

    def config(self) -> TransformerConfig:
        return TransformerConfig(VOCAB, VOCAB, self.d_model, self.num_heads, self.d_ff,
                                 self.num_encoder_layers, self.num_decoder_layers,
                                 tie_output=self.tie_output)

    def as_dict(self) -> dict:
        return asdict(self)


def train_step(model: Transformer, optimizer: Adam, batch, label_smoothing: float = 0.0) -> tuple[float, float]:
    """One Adam step on ``batch``: (loss, token accuracy) before the step."""
    logits, cache = transformer_forward(model, batch.src, batch.tgt, batch.src_lengths)
    loss, loss_cache = softmax_cross_entropy_forward(logits, batch.targets, PAD, label_smoothing)
    optimizer.step(model.weights, transformer_backward(softmax_cross_entropy_backward(1.0, loss_cache), cache))
    counted = batch.targets != PAD
    accuracy = float(np.mean((logits.argmax(axis=-1) == batch.targets)[counted]))
    return loss, accuracy


def train(recipe: Recipe, progress: Callable[[int, float, float], None] | None = None) -> Transformer:
    """A model trained by ``recipe``; ``progress(step, loss, accuracy)`` after every step.
    Training sequences never include a held-out one."""
    task = recipe.toy_task()
    model = Transformer.from_seed(recipe.config(), recipe.seed)
    rng = np.random.default_rng([recipe.seed, 1])
    avoid = frozenset(held_out(task))
    optimizer = Adam(recipe.lr, warmup=recipe.warmup, steps=recipe.steps)
    for step in range(1, recipe.steps + 1):
        batch = batch_of(task, random_sequences(task, rng, recipe.batch_size, avoid))
        loss, accuracy = train_step(model, optimizer, batch, recipe.label_smoothing)
        if progress is not None:
            progress(step, loss, accuracy)
    return model


def exact_match(model: Transformer, task: ToyTask, sequences=None) -> float:
    """The share of ``sequences`` (default: the held-out set) whose greedy left-to-right
    output is exactly the answer followed by <eos>."""
    sequences = list(held_out(task) if sequences is None else sequences)
    batch = batch_of(task, sequences)
    out = model.greedy_decode(batch.src, BOS, EOS, task.max_len + 1, batch.src_lengths)
    right = 0
    for row, target in zip(out, batch.targets):
        wanted = target[: int(np.argmax(target == EOS)) + 1]
        right += np.array_equal(row[1: 1 + len(wanted)], wanted)
    return right / len(sequences)


# The shipped models' recipes (problem_bank/models/; their .json records what each scored).
RECIPES = {
    "copy": Recipe("copy", steps=1200),
    "reverse": Recipe("reverse", num_encoder_layers=2, steps=2000),
    "sort": Recipe("sort", steps=2000),
}


def train_and_save(recipe: Recipe, path, progress=None) -> dict:
    """Train by ``recipe``, measure the held-out exact match, and save the model at ``path``
    (solutions.checkpoint.save_model); what its .json holds."""
    started = time.perf_counter()
    model = train(recipe, progress)
    seconds = time.perf_counter() - started
    return save_model(model, path, {
        "name": Path(path).stem, "recipe": recipe.as_dict(),
        "held_out_exact_match": exact_match(model, recipe.toy_task()),
        "training_seconds": round(seconds, 1),
        "command": f"attnkit model train {recipe.task} --out {Path(path).parent} --steps {recipe.steps} "
                   f"--seed {recipe.seed}"})
