"""Pure-NumPy converters from PyTorch's parameter layout to ours.

PyTorch's ``nn.Linear`` stores ``weight`` as (d_out, d_in) and computes x Wᵀ + b; we write the
lecture's x W + b with W (d_in, d_out), so every weight is transposed. ``nn.MultiheadAttention``
stacks the three input projections as ``in_proj_weight`` (3E, E) = [W_q; W_k; W_v] (in that
order, split like ``chunk(3)``). Its masks use the opposite convention to ours: in
``attn_mask`` and ``key_padding_mask`` True means *blocked*.

Arrays are taken as NumPy arrays (``tensor.detach().numpy()``); torch itself is never imported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from ._params import flatten
from ._shapes import as_float, check_shapes


def linear_from_torch(weight, bias=None):
    """``nn.Linear`` (weight (d_out, d_in), bias (d_out,)) → (W (d_in, d_out), b)."""
    weight = as_float(weight, "weight")
    if bias is None:
        check_shapes(weight=(weight, "d_out d_in"))
        return weight.T.copy(), None
    bias = as_float(bias, "bias")
    check_shapes(weight=(weight, "d_out d_in"), bias=(bias, "d_out"))
    return weight.T.copy(), bias


def mha_params_from_torch(in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias) -> dict:
    """``nn.MultiheadAttention`` → our MHA params {W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O}.

    Shapes: in_proj_weight (3E, E) = [W_q; W_k; W_v], in_proj_bias (3E,), out_proj_weight
    (E, E), out_proj_bias (E,) → W_Q, W_K, W_V, W_O (E, E) in x @ W layout, biases (E,).
    """
    in_proj_weight = as_float(in_proj_weight, "in_proj_weight")
    in_proj_bias = as_float(in_proj_bias, "in_proj_bias")
    dims = check_shapes(in_proj_weight=(in_proj_weight, "3E E"),  # "3E" is a free symbol
                        in_proj_bias=(in_proj_bias, "3E"))
    if dims["3E"] != 3 * dims["E"]:
        raise ValueError(f"in_proj_weight: expected shape (3E, E), got {in_proj_weight.shape}")
    w_q, w_k, w_v = np.split(in_proj_weight, 3, axis=0)
    b_q, b_k, b_v = np.split(in_proj_bias, 3)
    W_O, b_O = linear_from_torch(out_proj_weight, out_proj_bias)
    return {"W_Q": w_q.T.copy(), "b_Q": b_q, "W_K": w_k.T.copy(), "b_K": b_k,
            "W_V": w_v.T.copy(), "b_V": b_v, "W_O": W_O, "b_O": b_O}


def mask_from_torch(torch_mask) -> np.ndarray:
    """A PyTorch ``attn_mask``/``key_padding_mask`` bool (True = blocked) → ours (True = may attend).
    Float masks are additive in both conventions and pass through unchanged."""
    torch_mask = np.asarray(torch_mask)
    return ~torch_mask if torch_mask.dtype == bool else torch_mask


def key_padding_mask_from_torch(key_padding_mask) -> np.ndarray:
    """``key_padding_mask`` (B, S), True = ignore → our mask (B, 1, S), True = may attend."""
    key_padding_mask = np.asarray(key_padding_mask)
    if key_padding_mask.ndim != 2 or key_padding_mask.dtype != bool:
        raise ValueError(f"key_padding_mask: expected a bool (B, S) array, got dtype "
                         f"{key_padding_mask.dtype} and shape {key_padding_mask.shape}")
    return ~key_padding_mask[:, None, :]


def _get(state_dict: Mapping, name: str):
    if name not in state_dict:
        raise ValueError(f"state_dict: missing '{name}'")
    return state_dict[name]


def _mha(state_dict, prefix):
    return mha_params_from_torch(*(_get(state_dict, prefix + n) for n in (
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")))


def _norm(state_dict, prefix):
    return {"gamma": as_float(_get(state_dict, prefix + "weight"), prefix + "weight"),
            "beta": as_float(_get(state_dict, prefix + "bias"), prefix + "bias")}


def _ffn(state_dict, prefix):
    W1, b1 = linear_from_torch(_get(state_dict, prefix + "linear1.weight"),
                               _get(state_dict, prefix + "linear1.bias"))
    W2, b2 = linear_from_torch(_get(state_dict, prefix + "linear2.weight"),
                               _get(state_dict, prefix + "linear2.bias"))
    return {"W1": W1, "b1": b1, "W2": W2, "b2": b2}


def encoder_layer_params_from_torch(state_dict: Mapping, prefix: str = "") -> dict:
    """``nn.TransformerEncoderLayer`` state dict → params for ``encoder_layer``
    (self_attn, norm1, ffn = linear1/linear2, norm2)."""
    return {"self_attn": _mha(state_dict, prefix + "self_attn."),
            "norm1": _norm(state_dict, prefix + "norm1."),
            "ffn": _ffn(state_dict, prefix),
            "norm2": _norm(state_dict, prefix + "norm2.")}


def decoder_layer_params_from_torch(state_dict: Mapping, prefix: str = "") -> dict:
    """``nn.TransformerDecoderLayer`` state dict → params for ``decoder_layer``
    (self_attn, norm1, cross_attn = multihead_attn, norm2, ffn, norm3)."""
    return {"self_attn": _mha(state_dict, prefix + "self_attn."),
            "norm1": _norm(state_dict, prefix + "norm1."),
            "cross_attn": _mha(state_dict, prefix + "multihead_attn."),
            "norm2": _norm(state_dict, prefix + "norm2."),
            "ffn": _ffn(state_dict, prefix),
            "norm3": _norm(state_dict, prefix + "norm3.")}


def transformer_weights_from_torch(state_dict: Mapping, num_encoder_layers: int,
                                   num_decoder_layers: int, prefix: str = "") -> dict:
    """``nn.Transformer`` state dict → our flat named weights for both stacks, including the
    final ``encoder.norm``/``decoder.norm`` when present (embeddings and generator excluded)."""
    for stack, count in (("encoder", num_encoder_layers), ("decoder", num_decoder_layers)):
        extra = sorted({int(m.group(1)) for name in state_dict
                        if (m := re.match(rf"{re.escape(prefix)}{stack}\.layers\.(\d+)\.", name))
                        and int(m.group(1)) >= count})
        if extra:
            raise ValueError(f"state_dict: has {stack} layers {extra} beyond the "
                             f"{count} the config expects")
    tree: dict = {"encoder": {"layers": {}}, "decoder": {"layers": {}}}
    for i in range(num_encoder_layers):
        tree["encoder"]["layers"][str(i)] = encoder_layer_params_from_torch(
            state_dict, f"{prefix}encoder.layers.{i}.")
    for i in range(num_decoder_layers):
        tree["decoder"]["layers"][str(i)] = decoder_layer_params_from_torch(
            state_dict, f"{prefix}decoder.layers.{i}.")
    for stack in ("encoder", "decoder"):
        if f"{prefix}{stack}.norm.weight" in state_dict:
            tree[stack]["norm"] = _norm(state_dict, f"{prefix}{stack}.norm.")
    return flatten(tree)
