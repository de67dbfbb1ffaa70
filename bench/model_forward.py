"""Forward pass of the mini encoder-decoder against the bare-matmul floor.

The floor is the same number of matmul FLOPs done as one large square NumPy matmul, timed in
the same run, interleaved with the model: the machines are shared and noisy, so only the
ratio is meaningful. Everything the model does besides matmuls (softmax, LayerNorm, masking,
reshapes, Python overhead) shows up as the ratio above 1.

    python -m bench.model_forward [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from solutions import Transformer, TransformerConfig

BATCH, LENGTH, VOCAB = 32, 16, 1000
CONFIG = TransformerConfig(src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=64, num_heads=4,
                           d_ff=256, num_encoder_layers=2, num_decoder_layers=2)


def matmul_flops(config: TransformerConfig, batch: int, src_len: int, tgt_len: int) -> int:
    """FLOPs (2 per multiply-add) of every matmul in one teacher-forced forward pass."""
    d, d_ff = config.d_model, config.d_ff
    n_src, n_tgt = batch * src_len, batch * tgt_len

    def attention(n_q, n_kv, q_len, kv_len):  # projections + QKᵀ + PV (summed over heads)
        projections = 2 * n_q * d * d * 2 + 2 * n_kv * d * d * 2   # W_Q, W_O ; W_K, W_V
        return projections + 2 * (2 * batch * q_len * kv_len * d)

    ffn = lambda n: 2 * 2 * n * d * d_ff  # noqa: E731
    encoder = config.num_encoder_layers * (attention(n_src, n_src, src_len, src_len) + ffn(n_src))
    decoder = config.num_decoder_layers * (attention(n_tgt, n_tgt, tgt_len, tgt_len)
                                           + attention(n_tgt, n_src, tgt_len, src_len)
                                           + ffn(n_tgt))
    generator = 2 * n_tgt * d * config.tgt_vocab_size
    return encoder + decoder + generator


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(repeats: int) -> dict:
    rng = np.random.default_rng(0)
    model = Transformer.from_seed(CONFIG, seed=0)
    src = rng.integers(0, VOCAB, (BATCH, LENGTH))
    tgt = rng.integers(0, VOCAB, (BATCH, LENGTH))
    flops = matmul_flops(CONFIG, BATCH, LENGTH, LENGTH)
    side = round((flops / 2) ** (1 / 3))  # one square matmul of about the same FLOPs
    A, B = rng.standard_normal((side, side)), rng.standard_normal((side, side))
    floor_factor = flops / (2 * side ** 3)

    forward = lambda: model.log_probs(src, tgt)  # noqa: E731
    matmul = lambda: A @ B  # noqa: E731
    for _ in range(3):  # warm up caches, BLAS threads and allocator
        forward(), matmul()
    model_times, floor_times = [], []
    for _ in range(repeats):  # interleaved, so drift on a shared machine hits both alike
        model_times.append(_time(forward))
        floor_times.append(_time(matmul) * floor_factor)
    best_model, best_floor = min(model_times), min(floor_times)
    return {
        "config": {"batch": BATCH, "length": LENGTH, "vocab": VOCAB, "d_model": CONFIG.d_model,
                   "heads": CONFIG.num_heads, "d_ff": CONFIG.d_ff,
                   "layers_per_side": CONFIG.num_encoder_layers},
        "matmul_flops": flops,
        "repeats": repeats,
        "forward_ms_best": best_model * 1e3,
        "forward_ms_median": float(np.median(model_times)) * 1e3,
        "floor_ms_best": best_floor * 1e3,
        "floor_ms_median": float(np.median(floor_times)) * 1e3,
        "ratio_best": best_model / best_floor,
        "ratio_median": float(np.median(model_times) / np.median(floor_times)),
        "goal_ratio": 3.0,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = run(args.repeats)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    c = result["config"]
    print(f"mini encoder-decoder forward: batch {c['batch']}, L = {c['length']}, "
          f"d_model = {c['d_model']}, {c['heads']} heads, d_ff = {c['d_ff']}, "
          f"{c['layers_per_side']} layers per side, vocab {c['vocab']}")
    print(f"matmul FLOPs per forward: {result['matmul_flops'] / 1e6:.1f} M")
    print(f"{'':24}{'best':>10}{'median':>10}")
    print(f"{'forward (ms)':24}{result['forward_ms_best']:>10.2f}{result['forward_ms_median']:>10.2f}")
    print(f"{'bare-matmul floor (ms)':24}{result['floor_ms_best']:>10.2f}{result['floor_ms_median']:>10.2f}")
    print(f"{'ratio to floor':24}{result['ratio_best']:>10.2f}{result['ratio_median']:>10.2f}"
          f"   (goal ≤ {result['goal_ratio']:g}×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
