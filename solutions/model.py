"""A full mini encoder-decoder Transformer (Vaswani et al. 2017), evaluation mode.

    memory    = Encoder(Embed(src)·√d_model + PE)
    log p(y)  = log_softmax(Decoder(Embed(tgt)·√d_model + PE, memory) W_gen + b_gen)

Weights are named like ``encoder.layers.0.self_attn.W_Q`` (see ``parameter_shapes``); a model
is built from a seed (``Transformer.from_seed``), from such named weights, or from a PyTorch
``nn.Transformer`` state dict (``Transformer.from_torch``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._params import subtree
from ._shapes import as_float
from .layer_norm import layer_norm
from .linear import linear
from .masks import causal_mask, padding_mask
from .multihead import MHA_PARAM_NAMES
from .positional import embed, positional_encoding
from .softmax import log_softmax_in_place
from .torch_layout import linear_from_torch, transformer_weights_from_torch
from .transformer_layers import decoder_layer, encoder_layer


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of the mini encoder-decoder. ``final_layer_norm`` adds the extra LayerNorm that
    ``nn.Transformer`` puts after each stack (the paper has none). ``tie_output``: the
    generator's W is the target embedding table transposed (the paper shares them), and
    ``generator.W`` is no weight of its own."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    d_ff: int = 256
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    layer_norm_eps: float = 1e-5
    final_layer_norm: bool = False
    tie_output: bool = False

    def __post_init__(self):
        sizes = {name: getattr(self, name) for name in (
            "src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff")}
        too_small = {name: size for name, size in sizes.items() if size < 1}
        if too_small or self.num_encoder_layers < 0 or self.num_decoder_layers < 0:
            raise ValueError(f"TransformerConfig: sizes must be ≥ 1 and layer counts ≥ 0, got "
                             f"{too_small or (self.num_encoder_layers, self.num_decoder_layers)}")
        if self.d_model % self.num_heads or self.d_model % 2:
            raise ValueError(f"TransformerConfig: d_model={self.d_model} must be even and "
                             f"divisible by num_heads={self.num_heads}")


def parameter_shapes(config: TransformerConfig) -> dict[str, tuple[int, ...]]:
    """Every named weight of the model and its shape, in a fixed order."""
    d, d_ff = config.d_model, config.d_ff
    shapes: dict[str, tuple[int, ...]] = {
        "src_embedding": (config.src_vocab_size, d),
        "tgt_embedding": (config.tgt_vocab_size, d),
    }

    def attention(prefix):
        for name in MHA_PARAM_NAMES:
            shapes[prefix + name] = (d, d) if name.startswith("W") else (d,)

    def norm(prefix):
        shapes[prefix + "gamma"] = (d,)
        shapes[prefix + "beta"] = (d,)

    def feed_forward(prefix):
        shapes.update({prefix + "W1": (d, d_ff), prefix + "b1": (d_ff,),
                       prefix + "W2": (d_ff, d), prefix + "b2": (d,)})

    for i in range(config.num_encoder_layers):
        layer = f"encoder.layers.{i}."
        attention(layer + "self_attn.")
        norm(layer + "norm1.")
        feed_forward(layer + "ffn.")
        norm(layer + "norm2.")
    if config.final_layer_norm:
        norm("encoder.norm.")
    for i in range(config.num_decoder_layers):
        layer = f"decoder.layers.{i}."
        attention(layer + "self_attn.")
        norm(layer + "norm1.")
        attention(layer + "cross_attn.")
        norm(layer + "norm2.")
        feed_forward(layer + "ffn.")
        norm(layer + "norm3.")
    if config.final_layer_norm:
        norm("decoder.norm.")
    if not config.tie_output:
        shapes["generator.W"] = (d, config.tgt_vocab_size)
    shapes["generator.b"] = (config.tgt_vocab_size,)
    return shapes


def encoder_stack(x, encoder, config: TransformerConfig, mask=None, return_weights=False):
    """N encoder layers (then the optional final LayerNorm). x (..., S, d_model) → same shape.
    ``encoder`` is the nested weights under "encoder.". With ``return_weights`` also returns
    a list with each layer's {"self_attn": (..., h, S, S)}."""
    weights = []
    for i in range(config.num_encoder_layers):
        layer = encoder["layers"][str(i)]
        if return_weights:
            x, layer_weights = encoder_layer(x, layer, config.num_heads, mask,
                                             config.layer_norm_eps, return_weights=True)
            weights.append(layer_weights)
        else:
            x = encoder_layer(x, layer, config.num_heads, mask, config.layer_norm_eps)
    if config.final_layer_norm:
        x = layer_norm(x, **encoder["norm"], eps=config.layer_norm_eps)
    return (x, weights) if return_weights else x


def decoder_stack(y, memory, decoder, config: TransformerConfig, self_mask=None,
                  memory_mask=None, return_weights=False):
    """N decoder layers (then the optional final LayerNorm).
    y (..., T, d_model), memory (..., S, d_model) → (..., T, d_model). With ``return_weights``
    also returns each layer's {"self_attn": (..., h, T, T), "cross_attn": (..., h, T, S)}."""
    weights = []
    for i in range(config.num_decoder_layers):
        layer = decoder["layers"][str(i)]
        if return_weights:
            y, layer_weights = decoder_layer(y, memory, layer, config.num_heads, self_mask,
                                             memory_mask, config.layer_norm_eps,
                                             return_weights=True)
            weights.append(layer_weights)
        else:
            y = decoder_layer(y, memory, layer, config.num_heads, self_mask, memory_mask,
                              config.layer_norm_eps)
    if config.final_layer_norm:
        y = layer_norm(y, **decoder["norm"], eps=config.layer_norm_eps)
    return (y, weights) if return_weights else y


class Transformer:
    """The mini encoder-decoder: a config plus named float64 weights."""

    def __init__(self, config: TransformerConfig, weights: Mapping[str, np.ndarray]):
        expected = parameter_shapes(config)
        missing = [n for n in expected if n not in weights]
        unexpected = [n for n in weights if n not in expected]
        if missing or unexpected:
            raise ValueError(f"Transformer weights: missing {missing or 'none'}; "
                             f"unexpected {unexpected or 'none'}")
        self.config = config
        self.weights: dict[str, np.ndarray] = {}
        for name, shape in expected.items():
            value = as_float(weights[name], name)
            if value.shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {value.shape}")
            self.weights[name] = value
        self._tree = subtree(self.weights, "")
        self._encodings: dict[int, np.ndarray] = {}

    def _positional(self, L: int) -> np.ndarray:
        """``positional_encoding(L, d_model)``, made once per length (read-only): it depends
        on the length alone, and every forward pass adds it twice."""
        pe = self._encodings.get(L)
        if pe is None:
            pe = self._encodings[L] = positional_encoding(L, self.config.d_model)
            pe.flags.writeable = False
        return pe

    @classmethod
    def from_seed(cls, config: TransformerConfig, seed: int) -> "Transformer":
        """Random weights from ``np.random.default_rng(seed)`` (PCG64): W ~ N(0, 1/d_in),
        embeddings ~ N(0, 1/d_model) (unit scale after ×√d_model), biases and β ~ N(0, 0.1²),
        γ ~ 1 + N(0, 0.1²). Non-trivial biases and norms so that no term can hide."""
        rng = np.random.default_rng(seed)
        weights = {}
        for name, shape in parameter_shapes(config).items():
            leaf = name.rsplit(".", 1)[-1]
            if name.endswith("embedding"):
                weights[name] = rng.normal(0.0, 1.0 / np.sqrt(config.d_model), shape)
            elif leaf.startswith("W"):
                weights[name] = rng.normal(0.0, 1.0 / np.sqrt(shape[0]), shape)
            elif leaf == "gamma":
                weights[name] = 1.0 + rng.normal(0.0, 0.1, shape)
            else:
                weights[name] = rng.normal(0.0, 0.1, shape)
        return cls(config, weights)

    @classmethod
    def from_torch(cls, config: TransformerConfig, state_dict: Mapping[str, np.ndarray],
                   src_embedding, tgt_embedding, generator_weight, generator_bias,
                   prefix: str = "") -> "Transformer":
        """From an ``nn.Transformer`` state dict (arrays, e.g. ``t.detach().numpy()``), plus the
        embedding tables (V, d_model) and the output ``nn.Linear`` weight (V, d_model) and bias."""
        weights = transformer_weights_from_torch(state_dict, config.num_encoder_layers,
                                                 config.num_decoder_layers, prefix)
        weights["src_embedding"] = src_embedding
        weights["tgt_embedding"] = tgt_embedding
        weights["generator.W"], weights["generator.b"] = linear_from_torch(generator_weight,
                                                                           generator_bias)
        return cls(config, weights)

    def named_weights(self) -> dict[str, np.ndarray]:
        """Copies of all weights by name (the format ``Transformer(config, weights)`` takes)."""
        return {name: value.copy() for name, value in self.weights.items()}

    def generator_weight(self) -> np.ndarray:
        """W_gen (d_model, V_tgt): the target embedding table transposed when tied."""
        return self.weights["tgt_embedding"].T if self.config.tie_output else self.weights["generator.W"]

    def _source_mask(self, src_lengths, S):
        return None if src_lengths is None else padding_mask(src_lengths, S)

    def encode(self, src, src_lengths=None, return_weights=False):
        """src (B, S) token ids → memory (B, S, d_model). ``src_lengths`` (B,) masks padding.
        With ``return_weights`` also returns each layer's self-attention weights."""
        S = np.shape(src)[-1]
        x = embed(src, self.weights["src_embedding"])
        x += self._positional(S)
        return encoder_stack(x, self._tree["encoder"], self.config,
                             self._source_mask(src_lengths, S), return_weights)

    def decode(self, tgt, memory, src_lengths=None, return_weights=False):
        """tgt (B, T) ids (shifted right, starting with <bos>), memory (B, S, d_model)
        → log-probabilities (B, T, V_tgt) of the next token at every position. With
        ``return_weights`` also returns each layer's self- and cross-attention weights."""
        T, S = np.shape(tgt)[-1], np.shape(memory)[-2]
        y = embed(tgt, self.weights["tgt_embedding"])
        y += self._positional(T)
        decoded = decoder_stack(y, memory, self._tree["decoder"], self.config, causal_mask(T),
                                self._source_mask(src_lengths, S), return_weights)
        y, weights = decoded if return_weights else (decoded, None)
        logits = linear(y, self.generator_weight(), self.weights["generator.b"])
        log_probs = log_softmax_in_place(logits, axis=-1)  # the logits are not needed again
        return (log_probs, weights) if return_weights else log_probs

    def log_probs(self, src, tgt, src_lengths=None) -> np.ndarray:
        """Teacher-forced forward pass: (B, S), (B, T) → log-probabilities (B, T, V_tgt)."""
        return self.decode(tgt, self.encode(src, src_lengths), src_lengths)

    def greedy_step(self, memory, prefix, src_lengths=None) -> tuple[np.ndarray, np.ndarray]:
        """One greedy decoding step: the most likely next token after ``prefix`` (B, t).
        Returns (next_token (B,), log-probabilities (B, V_tgt) of that position).
        Ties go to the lowest token id, so decoding is deterministic."""
        log_probs = self.decode(prefix, memory, src_lengths)[:, -1]
        return np.argmax(log_probs, axis=-1), log_probs

    def greedy_decode(self, src, bos_id: int, eos_id: int, max_len: int,
                      src_lengths=None) -> np.ndarray:
        """Greedy decoding: start from <bos>, append the argmax token until every sequence has
        produced <eos> or ``max_len`` tokens were generated. Finished sequences are padded with
        <eos>. Returns (B, 1 + generated) token ids, <bos> first."""
        memory = self.encode(src, src_lengths)
        out = np.full((memory.shape[0], 1), bos_id, dtype=np.int64)
        done = np.zeros(memory.shape[0], dtype=bool)
        for _ in range(max_len):
            next_token, _ = self.greedy_step(memory, out, src_lengths)
            next_token = np.where(done, eos_id, next_token)
            out = np.concatenate([out, next_token[:, None]], axis=1)
            done |= next_token == eos_id
            if done.all():
                break
        return out
