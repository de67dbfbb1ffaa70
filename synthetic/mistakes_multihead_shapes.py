"""Plausible mistakes in multihead_shapes: the shapes of the tensors of multi-head attention
as the heads are split and merged."""

from __future__ import annotations

from .mistakes_base import mistake

# --- multihead_shapes --------------------------------------------------------------------------

SHAPES = "multihead_shapes"


def _width(g):
    return g.number(r"d_\{\\text\{model\}\} = (\d+)")


def _heads(g):
    return g.number(r"\$h = (\d+)\$ heads")


def _batch(g, part):
    return g.number(r"\$B = (\d+)\$", part), g.number(r"\$L = (\d+)\$", part)


@mistake(SHAPES, "head_dim", "d_model itself: the split forgotten", accept=["split_heads_full_width"])
def shapes_head_dim_no_split(g):
    return _width(g)


@mistake(SHAPES, "head_dim", "d_model · h: multiplied instead of divided", accept=["split_heads_width_times_heads"])
def shapes_head_dim_times(g):
    return _width(g) * _heads(g)


@mistake(SHAPES, "q_shape", "(B, L, h, d_k): reshaped but not transposed",
         accept=["split_heads_no_swap"])
def shapes_q_not_transposed(g):
    B, L = _batch(g, "q_shape")
    return [B, L, _heads(g), _width(g) // _heads(g)]


@mistake(SHAPES, "q_shape", "(B, h, L, d_model): every head keeps the full width", accept=["split_heads_full_width"])
def shapes_q_full_width(g):
    B, L = _batch(g, "q_shape")
    return [B, _heads(g), L, _width(g)]


@mistake(SHAPES, "weights_shape", "(B, h, L, d_k): the weights given the queries' shape")
def shapes_weights_like_q(g):
    B, L = _batch(g, "q_shape")
    return [B, _heads(g), L, _width(g) // _heads(g)]


@mistake(SHAPES, "weights_shape", "(B, L, h, L): the head axis in the wrong place", accept=["split_heads_no_swap"])
def shapes_weights_head_axis(g):
    B, L = _batch(g, "q_shape")
    return [B, L, _heads(g), L]


@mistake(SHAPES, "params_bias", "4 d² only: the biases forgotten",
         accept=["mha_param_count_no_bias"])
def shapes_params_no_bias(g):
    return 4 * _width(g) ** 2


@mistake(SHAPES, "params_bias", "3 d² + 3 d: W_O and its bias forgotten",
         accept=["mha_param_count_no_output_projection"])
def shapes_params_no_output(g):
    d = _width(g)
    return 3 * d * d + 3 * d


@mistake(SHAPES, "params_bias", "every head with its own d×d W_Q, W_K, W_V",
         accept=["mha_param_count_per_head", "mha_param_count_full_width_heads"])
def shapes_params_full_heads(g):
    d, h = _width(g), _heads(g)
    return 3 * h * (d * d + d) + d * d + d


@mistake(SHAPES, "params_no_bias", "3 d²: W_O forgotten",
         accept=["mha_param_count_no_output_projection"])
def shapes_params_no_bias_no_output(g):
    return 3 * _width(g) ** 2


@mistake(SHAPES, "params_other_h", "the count scaled with the number of heads")
def shapes_params_scale_with_h(g):
    d, h = _width(g), _heads(g)
    other = g.number(r"\$h = (\d+)\$ head", "params_other_h")
    return (4 * d * d + 4 * d) * other // h


@mistake(SHAPES, "head_block", "reshaped straight to (h, 3, 2) without the transpose",
         accept=["mha_split_without_transpose", "split_heads_without_transpose"])
def shapes_block_no_transpose(g):
    h = g.x.shape[1] // 2
    return g.x.reshape(h, 3, 2)[g.number(r"head (\d+) works on", "head_block")]


@mistake(SHAPES, "head_block", "strided columns i, i + h instead of the block 2i:2i+2",
         accept=["split_heads_interleaved_columns"])
def shapes_block_strided(g):
    h = g.x.shape[1] // 2
    return g.x[:, g.number(r"head (\d+) works on", "head_block")::h]


@mistake(SHAPES, "merged", "reshaped straight to (3, 2h) without transposing back",
         accept=["mha_merge_without_transpose", "merge_heads_without_transpose"])
def shapes_merged_no_transpose(g):
    return g.heads.reshape(3, -1)


@mistake(SHAPES, "merged", "features interleaved: feature-major instead of head-major", accept=["merge_heads_interleaved"])
def shapes_merged_interleaved(g):
    return g.heads.transpose(1, 2, 0).reshape(3, -1)
