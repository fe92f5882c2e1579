"""A transformer's MLP, ``F.linear(act(F.linear(x, W1, b1)), W2, b2)``, forward and backward, timed
for each way of running it, and its two activation products alone:

    python -m cudalab.bench.mlp --tokens 8192 --d-model 1024 --json mlp.json

The step: eager PyTorch, torch.compile of the same code, cudalab's ops one after another
(``linear``, the bias + activation op of ``bias_gelu`` and ``bias_relu``, ``linear``) and
``cudalab.ops.mlp`` (the activation in the GEMMs' epilogues). The products: the first one with its
bias and activation (cudalab's fused ``gemm_activation``, cuBLASLt's bias + GELU epilogue through
``torch._addmm_activation`` for the tanh GELU, and cudalab's product then ``bias_act``), and the
gradient product that feeds it (``gemm_activation_backward``, which multiplies by the derivative
the forward kept, against the product then ``bias_act_backward``). Each is first checked against
fp32 (relative L2 of every output); one that fails reports the failure, not a time. Times are
CUDA-event medians of the GPU's time, every way called once a round in turn; before each call a
sleep kernel twice as long as the host takes to enqueue it keeps the host's time out (that time is
reported beside the GPU's; a sample whose enqueueing outlasted its sleep is dropped and counted)."""

import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

from .timing import covered_sample, enqueue_seconds, sleep_cycles

ACTIVATIONS = ("relu", "gelu_tanh", "gelu_erf", "silu")
# Relative L2 against fp32: two roundings to the 16-bit type on the way (h, then y).
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3}
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def torch_activation(h, activation):
    """The activation cudalab names `activation`, by torch's own function (the references)."""
    if activation == "relu":
        return F.relu(h)
    if activation == "silu":
        return F.silu(h)
    return F.gelu(h, approximate="tanh" if activation == "gelu_tanh" else "none")


def _eager(activation):
    return lambda x, w1, b1, w2, b2: F.linear(torch_activation(F.linear(x, w1, b1), activation), w2, b2)


def _unfused(activation):
    from cudalab import ops

    def run(x, w1, b1, w2, b2):  # bias_act: the kernel of ops.bias_relu and ops.bias_gelu
        return ops.linear(torch.ops.cudalab.bias_act(ops.linear(x, w1), b1, activation), w2, b2)

    return run


def _steps(activation):
    """(name, technique, function of (x, w1, b1, w2, b2)) for each way of running the MLP."""
    from cudalab import ops

    return [
        ("eager", "F.linear, the activation, F.linear", _eager(activation)),
        ("compile", "torch.compile(fullgraph=True) of the eager code",
         torch.compile(_eager(activation), fullgraph=True, dynamic=False)),
        ("cudalab_unfused", "cudalab.ops.linear, bias + activation, linear: the activation a pass of its own",
         _unfused(activation)),
        ("cudalab_mlp", "cudalab.ops.mlp: the activation and its gradient in the GEMMs' epilogues",
         lambda x, w1, b1, w2, b2: ops.mlp(x, w1, b1, w2, b2, activation)),
    ]


def _relative_l2(got, want):
    return ((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-30)).item()


def _out_of_memory(row, error, when):
    row["failed"] = f"out of memory {when}: {str(error).splitlines()[0]}"


def _time_interleaved(timed, repeats):
    """Sets each (row, run)'s median_ms: `repeats` rounds, each calling every run once in turn, so
    a drift in the GPU's clocks falls on all of them alike. A run that runs out of memory is
    recorded as failed and left out of the later rounds."""
    samples = {id(row): [] for row, _ in timed}
    cycles = {id(row): sleep_cycles(0.0) for row, _ in timed}
    for round_ in range(2 + repeats):  # two warm-up rounds: compilation, allocator growth
        for row, run in timed:
            if "failed" in row:
                continue
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            try:
                if round_ == 1:  # warm: how long the host takes to enqueue it
                    row["enqueue_ms"] = 1e3 * enqueue_seconds(run)
                    cycles[id(row)] = sleep_cycles(row["enqueue_ms"] / 1e3)
                sample, host = covered_sample(run, cycles[id(row)], start, end)
            except torch.cuda.OutOfMemoryError as error:
                _out_of_memory(row, error, "while timed")
                continue
            if round_ < 2:
                continue
            if sample is None:  # the host outlasted the sleep: dropped, and a longer sleep from now on
                row["dropped_samples"] = row.get("dropped_samples", 0) + 1
                cycles[id(row)] = sleep_cycles(host)
            else:
                samples[id(row)].append(sample)
    for row, _ in timed:
        if "failed" in row:
            continue
        if samples[id(row)]:
            row["median_ms"] = statistics.median(samples[id(row)])
        else:
            row["failed"] = "no sample: the host's enqueueing outlasted every sleep"


def _checked(row, outputs, want, tolerance, run, timed):
    """Checks `outputs` against `want`: a failure is recorded in `row`, a pass queues `run` to be
    timed."""
    errors = [_relative_l2(g, w) for g, w in zip(outputs, want)]
    row["relative_l2"] = max(errors)
    if max(errors) > tolerance:
        row["failed"] = f"relative L2 {max(errors):.3g} over {tolerance:g}"
    else:
        timed.append((row, run))
    return row


def measure(tokens, d_model, hidden, activation, dtype, repeats):
    from cudalab import ops

    generator = torch.Generator(device="cuda").manual_seed(1)

    def tensor(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=generator) * scale).to(dtype).requires_grad_()

    leaves = (tensor(tokens, d_model), tensor(hidden, d_model, scale=d_model**-0.5), tensor(hidden),
              tensor(d_model, hidden, scale=hidden**-0.5), tensor(d_model))
    dy = torch.randn(tokens, d_model, device="cuda", generator=generator).to(dtype)
    exact = [t.detach().float().requires_grad_() for t in leaves]
    y32 = _eager(activation)(*exact)
    want_step = [y32.detach(), *torch.autograd.grad(y32, exact, dy.float())]
    tolerance = TOLERANCE[dtype]

    rows, timed = [], []
    for name, technique, fn in _steps(activation):
        row = {"part": "mlp_step", "variant": name, "technique": technique}

        def step(fn=fn):
            y = fn(*leaves)
            return [y.detach(), *torch.autograd.grad(y, leaves, dy)]

        try:
            rows.append(_checked(row, step(), want_step, tolerance, step, timed))
        except torch.cuda.OutOfMemoryError as error:
            _out_of_memory(row, error, "while checked")
            rows.append(row)

    x, w1, b1, w2 = (t.detach() for t in leaves[:4])
    z32 = F.linear(x.float(), w1.float(), b1.float())
    want_first = [torch_activation(z32, activation)]
    first = [
        ("cudalab_fused", "cudalab's gemm_activation (act' kept for the backward)",
         lambda: torch.ops.cudalab.gemm_activation(x, w1, b1, activation, True)[0]),
        ("cudalab_unfused", "cudalab's product, then bias_act",
         lambda: torch.ops.cudalab.bias_act(ops.gemm(x, w1, b_transposed=True), b1, activation)),
    ]
    if activation == "gelu_tanh":
        first.append(("cublaslt", "torch._addmm_activation(use_gelu=True): cuBLASLt's bias + GELU epilogue",
                      lambda: torch._addmm_activation(b1, x, w1.t(), use_gelu=True)))
    z = z32.to(dtype)
    zr = z.float().requires_grad_()
    (slope,) = torch.autograd.grad(torch_activation(zr, activation), zr, torch.ones_like(zr))
    g = slope.to(dtype)  # act'(z), as the fused forward keeps it
    da32 = dy.float() @ w2.float()
    dz32 = da32 * slope
    want_gradient = [dz32, dz32.sum(0)]
    zero = torch.zeros(hidden, device="cuda", dtype=dtype)
    gradient = [
        ("cudalab_fused", "cudalab's gemm_activation_backward: the product by act' and the bias gradient in its "
         "epilogue", lambda: torch.ops.cudalab.gemm_activation_backward(dy, w2, g)),
        ("cudalab_unfused", "cudalab's product, then bias_act_backward",
         lambda: torch.ops.cudalab.bias_act_backward(z, zero, ops.gemm(dy, w2), activation)),
    ]
    out = None
    with torch.no_grad():
        for part, ways, want in (("first_product", first, want_first), ("gradient_product", gradient, want_gradient)):
            for name, technique, run in ways:
                row = {"part": part, "variant": name, "technique": technique}
                try:
                    out = run()
                    rows.append(_checked(row, list(out) if isinstance(out, tuple) else [out], want, tolerance,
                                         run, timed))
                except torch.cuda.OutOfMemoryError as error:
                    _out_of_memory(row, error, "while checked")
                    rows.append(row)
    # The fp32 references and the last checked outputs are done with: their memory goes back
    # before the timing.
    del want_step, exact, y32, z32, want_first, zr, slope, da32, dz32, want_gradient, out
    _time_interleaved(timed, repeats)  # the steps need autograd: outside no_grad
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cudalab.bench.mlp", description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--hidden", type=int, help="the MLP's width (default 4 d_model)")
    parser.add_argument("--activation", choices=ACTIVATIONS, default="gelu_tanh")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per variant (default 20)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    hidden = args.hidden if args.hidden is not None else 4 * args.d_model
    if min(args.tokens, args.d_model, hidden, args.repeats) <= 0:
        print("cudalab.bench.mlp: --tokens, --d-model, --hidden and --repeats must be positive", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("cudalab.bench.mlp: needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 3
    try:
        rows = measure(args.tokens, args.d_model, hidden, args.activation, DTYPES[args.dtype], args.repeats)
    except torch.cuda.OutOfMemoryError as error:
        print(f"cudalab.bench.mlp: out of memory: {str(error).splitlines()[0]}", file=sys.stderr)
        return 4
    print(f"MLP {args.tokens} tokens x d_model {args.d_model} x hidden {hidden}, {args.activation}, {args.dtype}, "
          f"{torch.cuda.get_device_name()}")
    for row in rows:
        result = f"{row['median_ms'] * 1e3:9.1f} us" if "median_ms" in row else "FAILED: " + row["failed"]
        error = f"  rel L2 {row['relative_l2']:.2g}" if "relative_l2" in row else ""
        host = f"  (the host enqueues it in {row['enqueue_ms'] * 1e3:.1f} us)" if "enqueue_ms" in row else ""
        print(f"{row['part']:17s} {row['variant']:16s} {result}{error}{host}")
    if args.json:
        result = {"tokens": args.tokens, "d_model": args.d_model, "hidden": hidden, "activation": args.activation,
                  "dtype": args.dtype, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 1 if any("failed" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
