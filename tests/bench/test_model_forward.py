"""The benchmark still runs and counts FLOPs right (its timings are not asserted)."""

import importlib.util

import numpy as np
import pytest

from bench import model_forward
from solutions import Transformer, transformer_weights_from_torch

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_matmul_flops_match_a_count_by_hand():
    config = model_forward.config_for(1000)
    tokens, d, d_ff, heads, d_head, L = 32 * 16, 64, 256, 4, 16, 16
    projections = 4 * 2 * tokens * d * d                    # W_Q, W_K, W_V, W_O
    scores_and_values = 2 * (2 * 32 * heads * L * L * d_head)
    attention = projections + scores_and_values
    ffn = 2 * (2 * tokens * d * d_ff)
    encoder_layer, decoder_layer = attention + ffn, 2 * attention + ffn
    generator = 2 * tokens * d * 1000
    expected = 2 * encoder_layer + 2 * decoder_layer + generator
    assert model_forward.matmul_flops(model_forward.matmul_shapes(config, 32, 16, 16)) == expected
    assert round(expected / 1e6, 1) == 313.0


def test_one_repeat_reports_positive_ratios():
    result = model_forward.run(repeats=1, vocab=50, compare_torch=False)
    assert result["vocab"] == 50
    assert result["ratio_to_floor"] > 0 and result["ratio_to_same_shape_matmuls"] > 0
    assert set(result["best_ms"]) == {"forward", "floor", "same_shape"}
    assert "ratio_to_torch" not in result


def test_main_prints_a_table(capsys):
    assert model_forward.main(["--repeats", "1", "--vocab", "20", "--no-torch"]) == 0
    out = capsys.readouterr().out
    assert "floor" in out and "    20" in out
    assert "ratio to torch not measured" in out


def test_the_torch_state_dict_converts_back_to_the_same_weights():
    model = Transformer.from_seed(model_forward.config_for(30), seed=1)
    config = model.config
    back = transformer_weights_from_torch(model_forward.torch_state_dict(model),
                                          config.num_encoder_layers, config.num_decoder_layers)
    layer_weights = {name: value for name, value in model.weights.items()
                     if name.startswith(("encoder.", "decoder."))}
    assert set(back) == set(layer_weights)
    for name, value in layer_weights.items():
        np.testing.assert_array_equal(back[name], value, err_msg=name)


def test_one_blas_thread_restores_the_thread_count():
    get, set_ = model_forward._openblas_thread_functions()
    if get is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS this process can find")
    before = get()
    with model_forward.one_blas_thread() as how:
        if how.startswith("OpenBLAS"):
            assert get() == 1
    assert get() == before


@pytest.mark.skipif(not HAS_TORCH, reason="torch is an optional extra")
def test_torch_runs_the_same_model_and_is_timed_alongside():
    result = model_forward.run(repeats=1, vocab=50, compare_torch=True)
    assert set(result["best_ms"]) == {"forward", "floor", "same_shape", "torch"}
    assert result["ratio_to_torch"] > 0 and result["goal_ratio_to_torch"] == 1.0
    assert result["torch_max_abs_difference"] < 1e-12
    assert result["torch_threads"] == 1


@pytest.mark.skipif(not HAS_TORCH, reason="torch is an optional extra")
def test_main_prints_the_ratio_to_torch(capsys):
    assert model_forward.main(["--repeats", "1", "--vocab", "20"]) == 0
    out = capsys.readouterr().out
    assert "torch ms" in out and "nn.Transformer" in out and "≤ 1× torch" in out


def test_without_torch_the_floor_ratio_is_still_reported(monkeypatch):
    monkeypatch.setattr(model_forward, "torch_forward", lambda model: None)
    result = model_forward.run(repeats=1, vocab=20)
    assert result["torch"].startswith("not installed") and result["ratio_to_floor"] > 0
    with pytest.raises(RuntimeError, match="not installed"):
        model_forward.run(repeats=1, vocab=20, compare_torch=True)
