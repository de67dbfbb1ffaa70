"""Reference NumPy implementation of the attention lecture — the answer key.

Everything is float64 and batch-agnostic: arrays are (..., L, d) with any leading batch axes.
Projections are x @ W + b with W (d_in, d_out). Boolean masks mean True = may attend.
Imports numpy only.
"""

from importlib import import_module as _import_module

from .alignment import (ALIGNMENT_SCORES, AlignmentStep, ScoreFunction, additive_score, attend, winner,
                        bahdanau_step, concat_score, content_score, dot_score, general_score,
                        location_score, luong_step, scaled_dot_score)
from .attention import (AttentionSteps, attention_backward, attention_forward, attention_weights_backward, causal_attention,
                        gradient_check, scaled_dot_product_attention, self_attention)
from .bert import (MLMSelection, bert_input_tokens, bert_pretraining_loss, mlm_head_output_shape,
                   mlm_loss, mlm_num_selected, mlm_select, nsp_head, nsp_loss)
from .feed_forward import ffn, ffn_backward, ffn_forward, relu
from .heads import (HeadMaps, ablate_head, head_ablated_output, head_maps, kl_divergence, mirrored_position,
                    model_answer, pattern_scores, strongest_keys, teacher_forced_probs)
from .layer_norm import layer_norm, layer_norm_backward, layer_norm_forward
from .linear import linear, linear_backward, linear_forward
from .losses import (cross_entropy, softmax_cross_entropy_backward,
                     softmax_cross_entropy_forward)
from .masks import additive_mask, apply_mask, causal_mask, combine_masks, padding_mask
from .twins.registry import TWINS, Twin, get_twin, twins_for
from .model import Transformer, TransformerConfig, decoder_stack, encoder_stack, parameter_shapes
from .multihead import (head_projection, merge_heads, mha_backward, mha_forward, mha_weights,
                        multi_head_attention, split_heads)
from .param_counts import (bert_param_count, decoder_layer_param_count,
                           encoder_layer_param_count, ffn_param_count, layer_norm_param_count,
                           mha_param_count, transformer_param_count)
from .backprop import loss_and_gradients, transformer_backward, transformer_forward
from .decoding import (cached_attention, cached_greedy_decode, causal_mask_bottom_right, cross_attention,
                       decode_step, positional_self_attention, self_attention_decode_step, shift_right)
from .positional import embed, embed_backward, embed_forward, positional_encoding
from .scaling import (DotProductMoments, ScalingReport, attention_entropy, dot_product_moments,
                      dot_product_variance, scaling_comparison, softmax_jacobian)
from .softmax import log_softmax, softmax, softmax_backward, softmax_forward
from .tokenization import token_ids, wordpiece_tokenize, wordpiece_word
from .torch_layout import (decoder_layer_params_from_torch, encoder_layer_params_from_torch,
                           key_padding_mask_from_torch, linear_from_torch, mask_from_torch,
                           mha_params_from_torch, transformer_weights_from_torch)
from .transformer_layers import (add_and_norm, add_and_norm_backward, add_and_norm_forward, decoder_layer,
                                 decoder_layer_backward, decoder_layer_forward, encoder_layer,
                                 encoder_layer_backward, encoder_layer_forward)

# Importing a family of twins registers it. In this order: the mistake search tries them in it,
# and the causal twins lift the core attention twins registered before them.
for _family in ("core_attention", "core_layers", "attention", "attention_masks", "layers", "layers_stack",
                "bert", "alignment", "gradients", "decoding", "inspection"):
    _import_module(f"{__name__}.twins.{_family}")
