"""Forward pass of the mini encoder-decoder against the bare-matmul floor.

Two baselines, timed in the same run and interleaved with the model (the machines are shared
and noisy, so only ratios are meaningful):

* floor: the model's matmul FLOPs done as one large square NumPy matmul — the speed of the
  arithmetic alone, the ratio the goal (≤ 3×) is about;
* same-shape matmuls: exactly the model's matmuls at the model's shapes, nothing else — what
  is left of the ratio above this line is softmax, LayerNorm, masking, copies and Python.

    python -m bench.model_forward [--repeats N] [--vocab V ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from solutions import Transformer, TransformerConfig

BATCH, LENGTH, GOAL = 32, 16, 3.0


def config_for(vocab: int) -> TransformerConfig:
    return TransformerConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=64,
                             num_heads=4, d_ff=256, num_encoder_layers=2, num_decoder_layers=2)


def matmul_shapes(config: TransformerConfig, batch: int, src_len: int, tgt_len: int):
    """Every matmul of one teacher-forced forward pass as (left shape, right shape)."""
    d, d_ff, h = config.d_model, config.d_ff, config.num_heads
    d_head = d // h

    def linear(tokens, d_in, d_out):
        return [((tokens, d_in), (d_in, d_out))]

    def attention(q_len, kv_len):
        return (linear(batch * q_len, d, d) + 2 * linear(batch * kv_len, d, d)   # W_Q; W_K, W_V
                + [((batch, h, q_len, d_head), (batch, h, d_head, kv_len)),       # Q Kᵀ
                   ((batch, h, q_len, kv_len), (batch, h, kv_len, d_head))]       # P V
                + linear(batch * q_len, d, d))                                     # W_O

    def ffn(tokens):
        return linear(tokens, d, d_ff) + linear(tokens, d_ff, d)

    shapes = []
    for _ in range(config.num_encoder_layers):
        shapes += attention(src_len, src_len) + ffn(batch * src_len)
    for _ in range(config.num_decoder_layers):
        shapes += attention(tgt_len, tgt_len) + attention(tgt_len, src_len) + ffn(batch * tgt_len)
    return shapes + linear(batch * tgt_len, d, config.tgt_vocab_size)


def matmul_flops(shapes) -> int:
    """2 FLOPs per multiply-add: 2 · (batch · m · k · n) for (…, m, k) @ (…, k, n)."""
    return sum(2 * int(np.prod(left)) * right[-1] for left, right in shapes)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(repeats: int, vocab: int) -> dict:
    rng = np.random.default_rng(0)
    config = config_for(vocab)
    model = Transformer.from_seed(config, seed=0)
    src = rng.integers(0, vocab, (BATCH, LENGTH))
    tgt = rng.integers(0, vocab, (BATCH, LENGTH))
    shapes = matmul_shapes(config, BATCH, LENGTH, LENGTH)
    flops = matmul_flops(shapes)
    side = round((flops / 2) ** (1 / 3))  # one square matmul of about the same FLOPs
    A, B = rng.standard_normal((side, side)), rng.standard_normal((side, side))
    square_factor = flops / (2 * side ** 3)
    operands = [(rng.standard_normal(left), rng.standard_normal(right)) for left, right in shapes]

    def same_shape_matmuls():
        for left, right in operands:
            left @ right

    forward = lambda: model.log_probs(src, tgt)  # noqa: E731
    square = lambda: A @ B  # noqa: E731
    for _ in range(3):  # warm up caches, BLAS threads and the allocator
        forward(), square(), same_shape_matmuls()
    times = {"forward": [], "floor": [], "same_shape": []}
    for _ in range(repeats):  # interleaved, so drift on a shared machine hits all three alike
        times["forward"].append(_time(forward))
        times["floor"].append(_time(square) * square_factor)
        times["same_shape"].append(_time(same_shape_matmuls))
    best = {k: min(v) * 1e3 for k, v in times.items()}
    median = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    return {
        "batch": BATCH, "length": LENGTH, "vocab": vocab, "d_model": config.d_model,
        "heads": config.num_heads, "d_ff": config.d_ff,
        "layers_per_side": config.num_encoder_layers, "matmul_flops": flops,
        "repeats": repeats, "best_ms": best, "median_ms": median,
        "ratio_to_floor": best["forward"] / best["floor"],
        "ratio_to_floor_median": median["forward"] / median["floor"],
        "ratio_to_same_shape_matmuls": best["forward"] / best["same_shape"],
        "goal_ratio_to_floor": GOAL,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--vocab", type=int, nargs="+", default=[100, 1000],
                        help="vocabulary sizes to run (default: 100 1000)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = [run(args.repeats, vocab) for vocab in args.vocab]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    r = results[0]
    print(f"mini encoder-decoder forward: batch {r['batch']}, L = {r['length']}, "
          f"d_model = {r['d_model']}, {r['heads']} heads, d_ff = {r['d_ff']}, "
          f"{r['layers_per_side']} layers per side; best of {r['repeats']} (median in brackets)")
    print(f"{'vocab':>6} {'MFLOP':>7} {'forward ms':>16} {'floor ms':>14} {'ratio':>12}"
          f" {'same-shape ms':>16} {'ratio':>6}")
    for r in results:
        b, m = r["best_ms"], r["median_ms"]
        print(f"{r['vocab']:>6} {r['matmul_flops'] / 1e6:>7.1f} "
              f"{b['forward']:>7.2f} ({m['forward']:>6.2f}) {b['floor']:>5.2f} ({m['floor']:>5.2f}) "
              f"{r['ratio_to_floor']:>5.2f} ({r['ratio_to_floor_median']:>4.2f}) "
              f"{b['same_shape']:>7.2f} ({m['same_shape']:>6.2f}) {r['ratio_to_same_shape_matmuls']:>6.2f}")
    print(f"floor = the same FLOPs as one square matmul; goal: forward ≤ {GOAL:g}× floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
