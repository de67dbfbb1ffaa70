"""Wrong shapes raise ValueError naming what was expected and what came — never a silent broadcast."""

import numpy as np
import pytest

import solutions

rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 6))


def mha_params(d_model=8):
    return {name: rng.normal(size=(d_model, d_model) if name.startswith("W") else (d_model,))
            for name in ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O")}


@pytest.mark.parametrize("call, expected", [
    (lambda: solutions.scaled_dot_product_attention(Q, rng.normal(size=(2, 5, 3)), V),
     r"K: expected shape \(\.\.\., S, d_k\) with d_k=4 \(from Q\), got \(2, 5, 3\)"),
    (lambda: solutions.scaled_dot_product_attention(Q, K, rng.normal(size=(2, 4, 6))),
     r"V: expected shape \(\.\.\., S, d_v\) with S=5 \(from K\), got \(2, 4, 6\)"),
    (lambda: solutions.scaled_dot_product_attention(Q, K[:1], V[:1]),
     r"K: batch dimensions \(1,\) differ from Q's \(2,\)"),
    (lambda: solutions.scaled_dot_product_attention(Q[0, 0], K, V),
     r"Q: expected shape \(\.\.\., L, d_k\), got \(4,\)"),
    (lambda: solutions.scaled_dot_product_attention(Q, K, V, mask=np.ones((3, 4), bool)),
     r"mask: expected shape \(S=5,\), \(L=3 or 1, S=5\) or \(2, 3, 5\) .* got \(3, 4\)"),
    (lambda: solutions.scaled_dot_product_attention(Q, K, V, mask=np.ones((2, 5), bool)),
     r"mask: .* got \(2, 5\)"),
    (lambda: solutions.scaled_dot_product_attention(Q, K, V, mask=np.ones((3, 5), int)),
     r"mask: expected bool .* got dtype int"),
    # A (B, 1, S) padding mask against per-head scores (B, h, L, S) with B = h would line up
    # its batch axis with the heads: refused, not broadcast.
    (lambda: solutions.scaled_dot_product_attention(
        rng.normal(size=(2, 2, 3, 4)), rng.normal(size=(2, 2, 3, 4)), rng.normal(size=(2, 2, 3, 4)),
        mask=solutions.padding_mask([1, 3], 3)), r"mask: .* got \(2, 1, 3\)"),
    # np.tril(np.ones(...)) is float: as an additive mask it would mask nothing.
    (lambda: solutions.scaled_dot_product_attention(Q[0, :3], Q[0, :3], Q[0, :3],
                                                    mask=np.tril(np.ones((3, 3)))),
     r"a 0/1 mask must be given as bool"),
    (lambda: solutions.combine_masks(solutions.causal_mask(4), solutions.padding_mask([1, 1], 1)),
     r"combine_masks: masks must share the key axis S"),
    (lambda: solutions.multi_head_attention(rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8)),
                                            rng.normal(size=(2, 5, 8)), mha_params(), 2,
                                            mask=np.ones((2, 3, 4), bool)),
     r"mask: .* got \(2, 3, 4\)"),
    (lambda: solutions.linear(rng.normal(size=(3, 4)), rng.normal(size=(5, 2))),
     r"W: expected shape \(d_in, d_out\) with d_in=4 \(from x\), got \(5, 2\)"),
    (lambda: solutions.linear(rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), np.zeros(3)),
     r"b: expected shape \(d_out\) with d_out=2 \(from W\), got \(3,\)"),
    (lambda: solutions.multi_head_attention(rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8)),
                                            rng.normal(size=(2, 5, 8)), mha_params(), num_heads=3),
     r"num_heads=3 must divide"),
    (lambda: solutions.multi_head_attention(rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 5, 6)),
                                            rng.normal(size=(2, 5, 6)), mha_params(), num_heads=2),
     r"W_Q: expected shape \(d_model, hd_k\) with d_model=6 \(from query\), got \(8, 8\)"),
    (lambda: solutions.layer_norm(rng.normal(size=(3, 8)), np.ones(7), np.zeros(8)),
     r"gamma: expected shape \(D\) with D=8 \(from x\), got \(7,\)"),
    (lambda: solutions.positional_encoding(4, 5), r"even d_model"),
    (lambda: solutions.padding_mask([2, 7], 5), r"lengths: every length must lie in \[0, S=5\]"),
    (lambda: solutions.cross_entropy(rng.normal(size=(4, 3)), np.array([0, 1, 2])),
     r"targets: expected shape \(4,\) .* got \(3,\)"),
    (lambda: solutions.cross_entropy(rng.normal(size=(2, 3)), np.array([0, 3])),
     r"class ids must lie in \[0, C=3\)"),
    (lambda: solutions.dot_score(rng.normal(size=3), rng.normal(size=(5, 4))),
     r"H: expected shape \(\.\.\., S, n=3\) matching s, got \(5, 4\)"),
    (lambda: solutions.embed(np.array([0, 9]), rng.normal(size=(5, 4))), r"ids must lie in \[0, V=5\)"),
    (lambda: solutions.softmax(np.array([1.0, np.nan])), r"NaN or \+inf"),
], ids=lambda x: "" if callable(x) else None)
def test_bad_shapes_name_expected_and_actual(call, expected):
    with pytest.raises(ValueError, match=expected):
        call()


def test_attention_backward_rejects_a_wrong_upstream_gradient():
    _, cache = solutions.attention_forward(Q, K, V)
    with pytest.raises(ValueError, match=r"dZ: expected shape \(\.\.\., L, d_v\)"):
        solutions.attention_backward(np.ones((2, 3, 5)), cache)


def test_transformer_rejects_missing_and_misshapen_weights():
    config = solutions.TransformerConfig(5, 6, d_model=8, num_heads=2, d_ff=16,
                                         num_encoder_layers=1, num_decoder_layers=1)
    weights = solutions.Transformer.from_seed(config, 0).named_weights()
    del weights["generator.b"]
    with pytest.raises(ValueError, match=r"missing \['generator.b'\]"):
        solutions.Transformer(config, weights)
    weights["generator.b"] = np.zeros(5)
    with pytest.raises(ValueError, match=r"generator.b: expected shape \(6,\), got \(5,\)"):
        solutions.Transformer(config, weights)


def test_a_shape_check_is_remembered_but_a_failure_raises_every_time():
    import numpy as np
    from solutions._shapes import check_shapes
    Q, K = np.zeros((2, 3, 4)), np.zeros((2, 5, 4))
    dims = check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k"))
    dims["L"] = 99                                   # the caller's own copy
    assert check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k")) == {"L": 3, "d_k": 4, "S": 5}
    for _ in range(2):
        with pytest.raises(ValueError, match="K: expected shape"):
            check_shapes(Q=(Q, "... L d_k"), K=(np.zeros((2, 5, 3)), "... S d_k"))
    assert check_shapes(x=([[1, 2, 3]], "n 3")) == {"n": 1}          # not an array: its shape
