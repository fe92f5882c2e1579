"""A language model's head and loss in one training step, ``F.cross_entropy(F.linear(x, weight),
target)`` forward and backward (the gradients of x and of the weight), timed and its peak memory
measured for each way of running it:

    python -m cudalab.bench.lm_head --tokens 8192 --hidden 4096 --vocab 128256 --json lm-head.json

eager PyTorch, torch.compile of the same code, Liger-Kernel's fused linear cross-entropy (where its
package is installed) and ``cudalab.ops.linear_cross_entropy``. Each is first checked against the
same step in fp32 (relative L2 of the loss and of both gradients); one that fails reports the
failure, not a time. Peak memory is what the step allocates beyond its inputs and weight."""

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
# Relative L2 against the fp32 step: bf16 logits and gradients carry about 2^-8 each.
TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 5e-3, torch.float32: 1e-4}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def _eager(x, weight, target):
    return F.cross_entropy(F.linear(x, weight), target, ignore_index=IGNORE_INDEX)


def _ways():
    """(name, technique, loss function or None, why not) for each way of running the step."""
    from cudalab import ops

    ways = [
        ("eager", "F.linear then F.cross_entropy: the [tokens, vocab] logits, their log-softmax and gradient", _eager),
        ("compile", "torch.compile(fullgraph=True) of the eager code, forward and backward",
         torch.compile(_eager, fullgraph=True, dynamic=False)),
    ]
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

        liger = LigerFusedLinearCrossEntropyLoss(ignore_index=IGNORE_INDEX)
        ways.append(("liger", "Liger-Kernel's LigerFusedLinearCrossEntropyLoss (chunks of tokens, Triton)",
                     lambda x, weight, target: liger(weight, x, target)))
    except ImportError as error:
        ways.append(("liger", f"not installed: liger_kernel ({error})", None))
    ways.append(("cudalab", "cudalab.ops.linear_cross_entropy: chunks of tokens on cudalab's GEMM and fused loss",
                 lambda x, weight, target: ops.linear_cross_entropy(x, weight, target, ignore_index=IGNORE_INDEX)))
    return ways


def _step(loss_fn, x, weight, target):
    x.grad, weight.grad = None, None
    loss = loss_fn(x, weight, target)
    loss.backward()
    return loss.detach(), x.grad, weight.grad


def _relative_l2(got, want):
    return ((got.float() - want).norm() / want.norm().clamp_min(1e-30)).item()


def measure(tokens, hidden, vocab, dtype, steps):
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.randn(tokens, hidden, device="cuda", generator=generator)).to(dtype).requires_grad_()
    weight = (torch.randn(vocab, hidden, device="cuda", generator=generator) / hidden**0.5).to(dtype)
    weight.requires_grad_()
    target = torch.randint(0, vocab, (tokens,), device="cuda", generator=generator)
    target[7::8] = IGNORE_INDEX

    x32 = x.detach().float().requires_grad_()
    w32 = weight.detach().float().requires_grad_()
    want = _step(_eager, x32, w32, target)
    del x32, w32
    torch.cuda.empty_cache()

    rows = []
    for name, technique, loss_fn in _ways():
        row = {"variant": name, "technique": technique}
        if loss_fn is None:
            row["skipped"] = technique
            rows.append(row)
            continue
        try:
            got = _step(loss_fn, x, weight, target)
            errors = [_relative_l2(g, w) for g, w in zip(got, want)]
            row["relative_l2"] = {"loss": errors[0], "dx": errors[1], "dweight": errors[2]}
            del got
            if max(errors) > TOLERANCE[dtype]:
                row["failed"] = f"relative L2 {max(errors):.3g} over {TOLERANCE[dtype]:g}"
                rows.append(row)
                continue
            for _ in range(2):  # warm-up: compilation, allocator growth
                _step(loss_fn, x, weight, target)
            x.grad, weight.grad = None, None
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(steps):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                _step(loss_fn, x, weight, target)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            row["median_ms"] = statistics.median(times)
            row["min_ms"] = min(times)
            row["peak_beyond_inputs_gib"] = (torch.cuda.max_memory_allocated() - before) / 2**30
        except torch.cuda.OutOfMemoryError as error:
            row["failed"] = f"out of memory: {str(error).splitlines()[0]}"
        x.grad, weight.grad = None, None
        torch.cuda.empty_cache()
        rows.append(row)
    eager = next((r for r in rows if r["variant"] == "eager" and "median_ms" in r), None)
    for row in rows:
        if eager and "median_ms" in row:
            row["speed_over_eager"] = eager["median_ms"] / row["median_ms"]
            row["memory_over_eager"] = row["peak_beyond_inputs_gib"] / eager["peak_beyond_inputs_gib"]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cudalab.bench.lm_head", description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per variant (default 10)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if min(args.tokens, args.hidden, args.vocab, args.steps) <= 0:
        print("cudalab.bench.lm_head: --tokens, --hidden, --vocab and --steps must be positive", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("cudalab.bench.lm_head: needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 3
    dtype = DTYPES[args.dtype]
    rows = measure(args.tokens, args.hidden, args.vocab, dtype, args.steps)
    print(f"LM head and loss, {args.tokens} tokens x hidden {args.hidden} x vocab {args.vocab}, {args.dtype}, "
          f"{torch.cuda.get_device_name()}")
    for row in rows:
        if "median_ms" in row:
            print(f"{row['variant']:8s} {row['median_ms']:9.2f} ms  {row['speed_over_eager']:5.2f}x eager  "
                  f"peak {row['peak_beyond_inputs_gib']:6.2f} GiB ({row['memory_over_eager']:.2f}x eager)  "
                  f"rel L2 dx {row['relative_l2']['dx']:.2g} dW {row['relative_l2']['dweight']:.2g}")
        else:
            print(f"{row['variant']:8s} {row.get('skipped') or 'FAILED: ' + row['failed']}")
    if args.json:
        result = {"tokens": args.tokens, "hidden": args.hidden, "vocab": args.vocab, "dtype": args.dtype,
                  "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 1 if any("failed" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
