"""The benchmark still runs and counts FLOPs right (its timings are not asserted)."""

from bench import model_forward


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
    result = model_forward.run(repeats=1, vocab=50)
    assert result["vocab"] == 50
    assert result["ratio_to_floor"] > 0 and result["ratio_to_same_shape_matmuls"] > 0
    assert set(result["best_ms"]) == {"forward", "floor", "same_shape"}


def test_main_prints_a_table(capsys):
    assert model_forward.main(["--repeats", "1", "--vocab", "20"]) == 0
    out = capsys.readouterr().out
    assert "floor" in out and "    20" in out
