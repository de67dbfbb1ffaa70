"""The mini encoder-decoder's training pass: the forward pass kept for backprop, and its
backward pass, layer by layer (the forward/backward pairs of CS231n's ``layers.py``):

    memory = Encoder(Embed(src)·√d + PE)           logits = Decoder(Embed(tgt)·√d + PE, memory) W_gen + b_gen
    loss   = CrossEntropy(logits, targets)          ∂loss/∂θ for every named weight θ

With ``tie_output`` the generator's W is the target embedding table transposed, and that
table's gradient is the sum of its two uses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._params import flatten
from .layer_norm import LayerNormCache, layer_norm_backward, layer_norm_forward
from .linear import LinearCache, linear_backward, linear_forward
from .losses import IGNORE_INDEX, softmax_cross_entropy_backward, softmax_cross_entropy_forward
from .masks import causal_mask, padding_mask
from .positional import EmbedCache, embed_backward, embed_forward
from .transformer_layers import (decoder_layer_backward, decoder_layer_forward, encoder_layer_backward,
                                 encoder_layer_forward)


class StackCache(NamedTuple):
    """One stack's forward pass: its input embedding, its layers, its optional final norm."""
    embedding: EmbedCache
    layers: list
    norm: LayerNormCache | None


class ModelCache(NamedTuple):
    """What ``transformer_backward`` needs of ``transformer_forward``."""
    encoder: StackCache
    decoder: StackCache
    generator: LinearCache
    tied: bool


def _stack_forward(x, tree, config, layer_forward, norm_name: str, **masks):
    """A stack of layers, then its optional final LayerNorm: (out, [layer caches], norm cache)."""
    layers = []
    for i in range(len(tree.get("layers", {}))):
        x, cache = layer_forward(x, tree["layers"][str(i)], config.num_heads, **masks,
                                 eps=config.layer_norm_eps)
        layers.append(cache)
    norm = None
    if config.final_layer_norm:
        x, norm = layer_norm_forward(x, **tree[norm_name], eps=config.layer_norm_eps)
    return x, layers, norm


def transformer_forward(model, src, tgt, src_lengths=None):
    """Teacher-forced pass of ``model`` (a ``Transformer``) kept for backprop.
    src (B, S), tgt (B, T) ids (shifted right) → logits (B, T, V_tgt) and a ``ModelCache``."""
    config, tree, weights = model.config, model._tree, model.weights
    S, T = np.shape(src)[-1], np.shape(tgt)[-1]
    memory_mask = None if src_lengths is None else padding_mask(src_lengths, S)
    x, src_embed = embed_forward(src, weights["src_embedding"])
    x += model._positional(S)
    memory, enc_layers, enc_norm = _stack_forward(x, tree.get("encoder", {}), config,
                                                  encoder_layer_forward, "norm", mask=memory_mask)
    y, tgt_embed = embed_forward(tgt, weights["tgt_embedding"])
    y += model._positional(T)
    def decoder_layer(h, params, heads, eps):     # this pass's memory and masks, fixed
        return decoder_layer_forward(h, memory, params, heads, causal_mask(T), memory_mask, eps)

    y, dec_layers, dec_norm = _stack_forward(y, tree.get("decoder", {}), config, decoder_layer, "norm")
    logits, generator = linear_forward(y, model.generator_weight(), weights["generator.b"])
    return logits, ModelCache(StackCache(src_embed, enc_layers, enc_norm),
                              StackCache(tgt_embed, dec_layers, dec_norm), generator, config.tie_output)


def _norm_backward(dx, norm: LayerNormCache | None, grads: dict, name: str):
    if norm is None:
        return dx
    dx, grads[name + ".gamma"], grads[name + ".beta"] = layer_norm_backward(dx, norm)
    return dx


def transformer_backward(dlogits, cache: ModelCache) -> dict[str, np.ndarray]:
    """∂loss/∂θ for every named weight θ, from dlogits = ∂loss/∂logits (B, T, V_tgt)."""
    grads: dict[str, np.ndarray] = {}
    dy, dW, grads["generator.b"] = linear_backward(dlogits, cache.generator)
    dy = _norm_backward(dy, cache.decoder.norm, grads, "decoder.norm")
    dmemory = 0.0
    for i in reversed(range(len(cache.decoder.layers))):
        dy, dm, layer = decoder_layer_backward(dy, cache.decoder.layers[i])
        dmemory = dmemory + dm
        grads.update(flatten(layer, f"decoder.layers.{i}."))
    dtgt = embed_backward(dy, cache.decoder.embedding)
    if np.ndim(dmemory) == 0:                  # no decoder layer read the memory
        dmemory = np.zeros(cache.encoder.embedding.tokens.shape + cache.encoder.embedding.table_shape[1:])
    dx = _norm_backward(dmemory, cache.encoder.norm, grads, "encoder.norm")
    for i in reversed(range(len(cache.encoder.layers))):
        dx, layer = encoder_layer_backward(dx, cache.encoder.layers[i])
        grads.update(flatten(layer, f"encoder.layers.{i}."))
    grads["src_embedding"] = embed_backward(dx, cache.encoder.embedding)
    if cache.tied:
        grads["tgt_embedding"] = dtgt + dW.T       # the table's two uses, summed
    else:
        grads["tgt_embedding"], grads["generator.W"] = dtgt, dW
    return grads


def loss_and_gradients(model, src, tgt, targets, src_lengths=None, ignore_index: int = IGNORE_INDEX,
                       label_smoothing: float = 0.0) -> tuple[float, dict[str, np.ndarray]]:
    """The mean cross-entropy of ``targets`` (B, T) under the teacher-forced pass, and its
    gradient with respect to every named weight of ``model``."""
    logits, cache = transformer_forward(model, src, tgt, src_lengths)
    loss, loss_cache = softmax_cross_entropy_forward(logits, targets, ignore_index, label_smoothing)
    return loss, transformer_backward(softmax_cross_entropy_backward(1.0, loss_cache), cache)
