"""Parameter counts (with biases), checked against PyTorch and the papers.

Transformer-base (d = 512, d_ff = 2048): MHA 1,050,624; FFN 2,099,712; encoder layer
3,152,384; decoder layer 4,204,032; ``nn.Transformer()`` 44,140,544. BERT-base 109,482,240.
"""

from __future__ import annotations


def mha_param_count(d_model: int, num_heads: int = 1, d_k: int | None = None,
                    d_v: int | None = None, bias: bool = True) -> int:
    """h heads, each with W_Q^i, W_K^i (d × d_k) and W_V^i (d × d_v), then W_O (h·d_v × d):
    2·d·h·d_k + 2·h·d_v·d weights, plus biases 2·h·d_k + h·d_v + d.
    With the usual d_k = d_v = d/h (the default) that is 4d² + 4d — independent of h."""
    if num_heads < 1 or (d_k is None or d_v is None) and d_model % num_heads:
        raise ValueError(f"mha_param_count: num_heads={num_heads} must be ≥ 1 and divide "
                         f"d_model={d_model} unless d_k and d_v are given")
    d_k = d_model // num_heads if d_k is None else d_k
    d_v = d_model // num_heads if d_v is None else d_v
    weights = 2 * d_model * num_heads * d_k + 2 * num_heads * d_v * d_model
    biases = 2 * num_heads * d_k + num_heads * d_v + d_model
    return weights + (biases if bias else 0)


def ffn_param_count(d_model: int, d_ff: int) -> int:
    """W₁ (d × d_ff) + b₁ + W₂ (d_ff × d) + b₂ = 2·d·d_ff + d_ff + d."""
    return 2 * d_model * d_ff + d_ff + d_model


def layer_norm_param_count(d_model: int) -> int:
    """γ and β: 2d."""
    return 2 * d_model


def encoder_layer_param_count(d_model: int, d_ff: int) -> int:
    """Self-attention + FFN + 2 LayerNorms = 4d² + 9d + 2·d·d_ff + d_ff."""
    return (mha_param_count(d_model) + ffn_param_count(d_model, d_ff)
            + 2 * layer_norm_param_count(d_model))


def decoder_layer_param_count(d_model: int, d_ff: int) -> int:
    """Masked self-attention + cross-attention + FFN + 3 LayerNorms = 8d² + 15d + 2·d·d_ff + d_ff."""
    return (2 * mha_param_count(d_model) + ffn_param_count(d_model, d_ff)
            + 3 * layer_norm_param_count(d_model))


def transformer_param_count(d_model: int = 512, d_ff: int = 2048, num_encoder_layers: int = 6,
                            num_decoder_layers: int = 6, final_layer_norms: bool = True) -> int:
    """Encoder and decoder stacks without embeddings; ``final_layer_norms`` adds the LayerNorm
    that ``nn.Transformer`` puts after each stack (44,140,544 at the defaults)."""
    count = (num_encoder_layers * encoder_layer_param_count(d_model, d_ff)
             + num_decoder_layers * decoder_layer_param_count(d_model, d_ff))
    return count + (2 * layer_norm_param_count(d_model) if final_layer_norms else 0)


def bert_param_count(vocab_size: int = 30522, d_model: int = 768, num_layers: int = 12,
                     d_ff: int = 3072, max_positions: int = 512, type_vocab_size: int = 2,
                     pooler: bool = True) -> int:
    """Token + position + segment embeddings and their LayerNorm, the encoder layers and the
    tanh pooler over [CLS]. BERT-base: 109,482,240 ("110M")."""
    embeddings = (vocab_size + max_positions + type_vocab_size) * d_model
    embeddings += layer_norm_param_count(d_model)
    pooler_params = d_model * d_model + d_model if pooler else 0
    return embeddings + num_layers * encoder_layer_param_count(d_model, d_ff) + pooler_params
