"""Forward pass of the mini encoder-decoder against the bare-matmul floor and PyTorch.

Baselines timed in the same run and interleaved with the model (the machines are shared and
noisy, so only ratios are meaningful), every one on 1 thread (NumPy's BLAS and torch alike):

* floor: the model's matmul FLOPs done as one large square NumPy matmul — the speed of the
  arithmetic alone (goal: forward ≤ 3× floor);
* same-shape matmuls: exactly the model's matmuls at the model's shapes, nothing else — what
  is left of the ratio above this line is softmax, LayerNorm, masking, copies and Python;
* torch: PyTorch's ``nn.Transformer`` (float64, eval mode, inference mode) on the same weights
  and inputs, with the same embedding, positional encoding, generator and log-softmax
  (goal: forward ≤ 1.0× torch). Torch is optional (``pip install attention-kit[torch]``);
  without it the line says so and the floor ratio is still printed. Before timing, the two
  outputs are compared, so the ratio is between two computations of the same numbers.

    python -m bench.model_forward [--repeats N] [--vocab V ...] [--no-torch] [--json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import time
from contextlib import contextmanager, nullcontext

import numpy as np

from solutions import Transformer, TransformerConfig, positional_encoding

BATCH, LENGTH, GOAL, TORCH_GOAL = 32, 16, 3.0, 1.0


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


@contextmanager
def one_blas_thread():
    """NumPy's BLAS on one thread inside the block (restored after), so that the model, the
    floor and torch all run single-threaded. Uses threadpoolctl when it is installed, else
    OpenBLAS's own ``set_num_threads`` (the BLAS NumPy's wheels bundle). Yields how."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(limits=1, user_api="blas"):
            yield "threadpoolctl"
        return
    get_threads, set_threads = _openblas_thread_functions()
    if set_threads is None:
        yield "not limited (no threadpoolctl, no OpenBLAS found; set OPENBLAS_NUM_THREADS=1)"
        return
    before = get_threads()
    set_threads(1)
    try:
        yield "OpenBLAS set_num_threads(1)"
    finally:
        set_threads(before)


def _openblas_thread_functions():
    """(get, set) of the OpenBLAS loaded by NumPy, from the shared libraries this process maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({fields[-1] for fields in map(str.split, maps) if len(fields) == 6
                            and "openblas" in fields[-1].lower() and ".so" in fields[-1]})
    except OSError:
        return None, None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"), ("openblas", "")):
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                set_.argtypes, get.restype = [ctypes.c_int], ctypes.c_int
                return get, set_
    return None, None


def torch_forward(model: Transformer):
    """The same model as PyTorch's ``nn.Transformer`` (float64, post-LN, no final norms — as
    ``final_layer_norm=False`` — dropout 0, eval mode): returns ``forward(src, tgt)`` on
    torch tensors → log-probabilities (B, T, V), and the torch module. None without torch."""
    try:
        import torch
    except ImportError:
        return None
    from torch import nn

    config, w, d = model.config, model.weights, model.config.d_model
    if config.final_layer_norm:
        raise ValueError("torch_forward: the benchmark's config has no final LayerNorms")
    options = dict(dropout=0.0, batch_first=True, dtype=torch.float64)
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(d, config.num_heads, config.d_ff, **options),
        config.num_encoder_layers, norm=None, enable_nested_tensor=False)
    decoder = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(d, config.num_heads, config.d_ff, **options),
        config.num_decoder_layers, norm=None)
    transformer = nn.Transformer(d, config.num_heads, custom_encoder=encoder,
                                 custom_decoder=decoder, **options).eval()
    transformer.load_state_dict({name: torch.from_numpy(np.ascontiguousarray(value))
                                 for name, value in torch_state_dict(model).items()})
    src_embedding = torch.from_numpy(w["src_embedding"])
    tgt_embedding = torch.from_numpy(w["tgt_embedding"])
    generator_weight = torch.from_numpy(np.ascontiguousarray(w["generator.W"].T))
    generator_bias = torch.from_numpy(w["generator.b"])
    scale = float(np.sqrt(d))
    constants = {}  # positional encodings and causal masks, made once per length like buffers

    def forward(src, tgt):
        S, T = src.shape[-1], tgt.shape[-1]
        if (S, T) not in constants:
            causal = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
            constants[S, T] = (torch.from_numpy(positional_encoding(S, d)),
                               torch.from_numpy(positional_encoding(T, d)), causal)
        pe_src, pe_tgt, causal = constants[S, T]
        with torch.inference_mode():
            x = src_embedding[src] * scale + pe_src
            y = tgt_embedding[tgt] * scale + pe_tgt
            out = transformer(x, y, tgt_mask=causal, tgt_is_causal=True)
            logits = nn.functional.linear(out, generator_weight, generator_bias)
            return torch.log_softmax(logits, dim=-1)

    return forward, transformer


def torch_state_dict(model: Transformer) -> dict[str, np.ndarray]:
    """Our named weights in ``nn.Transformer``'s layout: the inverse of
    ``solutions.transformer_weights_from_torch`` (W (d_in, d_out) → weight (d_out, d_in);
    W_Q, W_K, W_V stacked as in_proj_weight)."""
    w, state = model.weights, {}

    def attention(torch_prefix, prefix):
        state[torch_prefix + "in_proj_weight"] = np.concatenate(
            [w[prefix + "W_Q"].T, w[prefix + "W_K"].T, w[prefix + "W_V"].T])
        state[torch_prefix + "in_proj_bias"] = np.concatenate(
            [w[prefix + "b_Q"], w[prefix + "b_K"], w[prefix + "b_V"]])
        state[torch_prefix + "out_proj.weight"] = w[prefix + "W_O"].T
        state[torch_prefix + "out_proj.bias"] = w[prefix + "b_O"]

    def norm(torch_prefix, prefix):
        state[torch_prefix + "weight"], state[torch_prefix + "bias"] = (w[prefix + "gamma"],
                                                                         w[prefix + "beta"])

    def feed_forward(torch_prefix, prefix):
        state[torch_prefix + "linear1.weight"] = w[prefix + "W1"].T
        state[torch_prefix + "linear1.bias"] = w[prefix + "b1"]
        state[torch_prefix + "linear2.weight"] = w[prefix + "W2"].T
        state[torch_prefix + "linear2.bias"] = w[prefix + "b2"]

    for i in range(model.config.num_encoder_layers):
        layer = f"encoder.layers.{i}."
        attention(layer + "self_attn.", layer + "self_attn.")
        norm(layer + "norm1.", layer + "norm1.")
        norm(layer + "norm2.", layer + "norm2.")
        feed_forward(layer, layer + "ffn.")
    for i in range(model.config.num_decoder_layers):
        layer = f"decoder.layers.{i}."
        attention(layer + "self_attn.", layer + "self_attn.")
        attention(layer + "multihead_attn.", layer + "cross_attn.")
        for k in "123":
            norm(f"{layer}norm{k}.", f"{layer}norm{k}.")
        feed_forward(layer, layer + "ffn.")
    return state


@contextmanager
def one_torch_thread():
    """torch.set_num_threads(1) inside the block (restored after)."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _time(fn, faults: list | None = None) -> float:
    """Seconds fn() took; appends the minor page faults it caused to ``faults``, if given
    (fresh memory pages for temporaries: a few µs each on these machines)."""
    before = _minor_faults()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    if faults is not None:
        faults.append(_minor_faults() - before)
    return elapsed


def _minor_faults() -> int:
    try:
        import resource
    except ImportError:  # not on this platform: report none
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def run(repeats: int, vocab: int, compare_torch: bool | None = None) -> dict:
    """Time the forward pass, the floor, the same-shape matmuls and (``compare_torch``: True,
    False, or None = when torch is installed) torch's ``nn.Transformer``, interleaved."""
    with one_blas_thread() as blas_threads:
        return _run(repeats, vocab, compare_torch, blas_threads)


def _interleaved(forward, baselines: dict, factors: dict, repeats: int) -> tuple[dict, dict]:
    """(seconds per call, page faults per call) of the forward pass and each baseline, after a
    warm-up, timed in turn ``repeats`` times so drift on a shared machine hits all alike."""
    for _ in range(3):  # warm up caches, BLAS threads and the allocator
        forward()
        for baseline in baselines.values():
            baseline()
    times = {"forward": [], **{name: [] for name in baselines}}
    faults = {"forward": [], "torch": []}
    for _ in range(repeats):
        times["forward"].append(_time(forward, faults["forward"]))
        for name, baseline in baselines.items():
            times[name].append(_time(baseline, faults.get(name)) * factors.get(name, 1.0))
    return times, faults


def _run(repeats: int, vocab: int, compare_torch: bool | None, blas_threads: str) -> dict:
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
    baselines = {"floor": square, "same_shape": same_shape_matmuls}
    factors = {"floor": square_factor}
    made = torch_forward(model) if compare_torch is not False else None
    torch_info = {"torch": "not installed (pip install attention-kit[torch])"
                  if compare_torch is not False else "left out (--no-torch)"}
    if compare_torch and made is None:
        raise RuntimeError("compare_torch=True but torch is not installed")
    with one_torch_thread() if made is not None else nullcontext():
        if made is not None:
            import torch
            torch_log_probs, _ = made
            src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(tgt)
            ours, theirs = forward(), torch_log_probs(src_t, tgt_t).numpy()
            difference = float(np.max(np.abs(ours - theirs)))
            if not np.allclose(ours, theirs, rtol=1e-10, atol=1e-12):
                raise AssertionError(f"torch and the reference disagree "
                                     f"(max |Δ| {difference:.3g})")
            baselines["torch"] = lambda: torch_log_probs(src_t, tgt_t)
            torch_info = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                          "torch_max_abs_difference": difference}
        times, faults = _interleaved(forward, baselines, factors, repeats)
    best = {k: min(v) * 1e3 for k, v in times.items()}
    median = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    result = {
        "batch": BATCH, "length": LENGTH, "vocab": vocab, "d_model": config.d_model,
        "heads": config.num_heads, "d_ff": config.d_ff,
        "layers_per_side": config.num_encoder_layers, "matmul_flops": flops,
        "repeats": repeats, "blas_threads": blas_threads, "best_ms": best, "median_ms": median,
        "ratio_to_floor": best["forward"] / best["floor"],
        "ratio_to_floor_median": median["forward"] / median["floor"],
        "ratio_to_same_shape_matmuls": best["forward"] / best["same_shape"],
        "goal_ratio_to_floor": GOAL, **torch_info,
        "page_faults_per_call": {k: float(np.median(v)) for k, v in faults.items() if v},
    }
    if "torch" in best:
        result.update(ratio_to_torch=best["forward"] / best["torch"],
                      ratio_to_torch_median=median["forward"] / median["torch"],
                      goal_ratio_to_torch=TORCH_GOAL)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--vocab", type=int, nargs="+", default=[100, 1000],
                        help="vocabulary sizes to run (default: 100 1000)")
    parser.add_argument("--no-torch", action="store_true",
                        help="leave out the comparison with torch even when it is installed")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = [run(args.repeats, vocab, compare_torch=False if args.no_torch else None)
               for vocab in args.vocab]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    r = results[0]
    print(f"mini encoder-decoder forward: batch {r['batch']}, L = {r['length']}, "
          f"d_model = {r['d_model']}, {r['heads']} heads, d_ff = {r['d_ff']}, "
          f"{r['layers_per_side']} layers per side, float64, 1 thread; best of {r['repeats']} "
          f"(median in brackets)")
    with_torch = all("ratio_to_torch" in r for r in results)
    print(f"{'vocab':>6} {'MFLOP':>7} {'forward ms':>16} {'floor ms':>14} {'ratio':>12}"
          f" {'same-shape ms':>16} {'ratio':>6}"
          + (f" {'torch ms':>16} {'ratio':>12}" if with_torch else ""))
    for r in results:
        b, m = r["best_ms"], r["median_ms"]
        print(f"{r['vocab']:>6} {r['matmul_flops'] / 1e6:>7.1f} "
              f"{b['forward']:>7.2f} ({m['forward']:>6.2f}) {b['floor']:>5.2f} ({m['floor']:>5.2f}) "
              f"{r['ratio_to_floor']:>5.2f} ({r['ratio_to_floor_median']:>4.2f}) "
              f"{b['same_shape']:>7.2f} ({m['same_shape']:>6.2f}) {r['ratio_to_same_shape_matmuls']:>6.2f}"
              + (f" {b['torch']:>7.2f} ({m['torch']:>6.2f}) {r['ratio_to_torch']:>5.2f} "
                 f"({r['ratio_to_torch_median']:>4.2f})" if with_torch else ""))
    print(f"floor = the same FLOPs as one square matmul; goal: forward ≤ {GOAL:g}× floor")
    if with_torch:
        worst = max(r["torch_max_abs_difference"] for r in results)
        print(f"torch = nn.Transformer {r['torch']} on the same weights (outputs agree to "
              f"max |Δ| {worst:.1e}); goal: forward ≤ {TORCH_GOAL:g}× torch")
    else:
        print(f"torch: {r['torch']}; ratio to torch not measured")
    faults = [f"vocab {r['vocab']}: " + ", ".join(
        f"{name} {count:g}" for name, count in r["page_faults_per_call"].items()) for r in results]
    print("page faults per call (median): " + "; ".join(faults))
    print(f"NumPy BLAS threads: {r['blas_threads']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
