import numpy as np
import pytest

import solutions


def test_linear_from_torch_transposes_and_checks_the_bias():
    weight = np.arange(6.0).reshape(2, 3)  # (d_out, d_in)
    W, b = solutions.linear_from_torch(weight, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(W, weight.T)
    x = np.array([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(solutions.linear(x, W, b), weight @ x + [1.0, 2.0])
    with pytest.raises(ValueError, match=r"bias: expected shape \(d_out\) with d_out=2"):
        solutions.linear_from_torch(weight, np.zeros(3))


def test_in_proj_is_split_q_k_v_in_that_order():
    in_proj = np.concatenate([np.full((2, 2), 1.0), np.full((2, 2), 2.0), np.full((2, 2), 3.0)])
    p = solutions.mha_params_from_torch(in_proj, np.arange(6.0), np.eye(2), np.zeros(2))
    assert (p["W_Q"] == 1).all() and (p["W_K"] == 2).all() and (p["W_V"] == 3).all()
    np.testing.assert_array_equal(p["b_K"], [2.0, 3.0])


def test_torch_masks_are_flipped():
    np.testing.assert_array_equal(solutions.mask_from_torch(np.array([[False, True]])),
                                  [[True, False]])
    np.testing.assert_array_equal(
        solutions.key_padding_mask_from_torch(np.array([[False, True]])), [[[True, False]]])
    with pytest.raises(ValueError, match="expected a bool"):
        solutions.key_padding_mask_from_torch(np.zeros((1, 2)))


def test_a_state_dict_with_more_layers_than_the_config_is_refused():
    layer = {"self_attn.in_proj_weight": np.zeros((6, 2)), "self_attn.in_proj_bias": np.zeros(6),
             "self_attn.out_proj.weight": np.zeros((2, 2)), "self_attn.out_proj.bias": np.zeros(2),
             "linear1.weight": np.zeros((4, 2)), "linear1.bias": np.zeros(4),
             "linear2.weight": np.zeros((2, 4)), "linear2.bias": np.zeros(2),
             "norm1.weight": np.ones(2), "norm1.bias": np.zeros(2),
             "norm2.weight": np.ones(2), "norm2.bias": np.zeros(2)}
    state = {f"encoder.layers.{i}.{k}": v for i in range(3) for k, v in layer.items()}
    with pytest.raises(ValueError, match=r"encoder layers \[2\] beyond the 2"):
        solutions.transformer_weights_from_torch(state, num_encoder_layers=2, num_decoder_layers=0)
    assert len(solutions.transformer_weights_from_torch(state, 3, 0)) == 3 * 16


def test_a_missing_entry_is_named():
    with pytest.raises(ValueError, match="missing 'self_attn.in_proj_weight'"):
        solutions.encoder_layer_params_from_torch({})
