"""``python -m cudalab.bench``: each cudalab op against eager PyTorch and ``torch.compile`` of the
same eager code (attention: against PyTorch's SDPA with each backend forced), in one process on one
GPU, written as a cudalab results file (schema cudalab-results/2) that ``cudalab report`` renders.

Method (the C++ harness's, src/harness/timer.cu): every variant is verified against a float64
reference before it is timed, and one that fails reports the failure, not a time. Each sample is one
call between two CUDA events on the current stream, after a kernel that overwrites L2 (2x its size),
so no input is served from cache; a ~1 ms sleep kernel ahead of the start event keeps the GPU busy
while Python enqueues the call (autograd's engine included), so host overhead is charged only where it
leaves the GPU idle between the call's own kernels. Samples continue until their relative spread is
below 1% (at least 10, at most 1000, about 1 s each): the median is reported. GB/s counts each op's
minimum traffic, the same bytes as the C++ op's ``work``, and the roofline is the one ``cudalab probe``
measured (its cache must exist: run ``cudalab probe`` first).
"""

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import warnings
from typing import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import __version__, _C, ops

SCHEMA = "cudalab-results/2"
# The C++ timer's StoppingRule (src/harness/statistics.hpp).
MIN_SAMPLES, MAX_SAMPLES, TARGET_STDREL, BUDGET_SECONDS = 10, 1000, 0.01, 1.0
# Relative L2 of an output against float64, by dtype: cudalab's accuracy targets for the fused ops. A
# gradient is allowed twice that (one more fp32 reduction before the rounding to the dtype).
REL_L2 = {torch.float32: 1e-5, torch.bfloat16: 4e-3, torch.float16: 1e-3}
DTYPE_NAMES = {
    torch.float32: "f32",
    torch.bfloat16: "bf16",
    torch.float16: "f16",
    torch.int32: "i32",
    torch.uint8: "u8",
}
TENSOR_CORE_UNIT = {
    torch.float32: "fp32_cuda_cores",
    torch.bfloat16: "bf16_tensor_cores",
    torch.float16: "fp16_tensor_cores",
}
COMPILE_TECHNIQUE = "torch.compile(fullgraph=True) of the eager code (Inductor, default mode)"


class BenchError(Exception):
    """A condition the user must fix (no GPU, no probe cache): one line, exit status 2."""


# ---- the roofline and the sample statistics, as the C++ harness computes them


def write_gbps(ceilings):
    """The write rate a copy implies (src/harness/roofline.cpp: a copy of S bytes takes S/read + S/write)."""
    copy = max(ceilings["copy_kernel_gbps"], ceilings.get("memcpy_d2d_gbps", 0.0))
    read = ceilings.get("read_gbps", 0.0)
    if read <= 0 or copy <= 0:
        return copy
    seconds_per_byte = 2.0 / copy - 1.0 / read
    return 1.0 / seconds_per_byte if seconds_per_byte > 0 else copy


def compute_ceiling_tflops(ceilings, unit):
    names = {
        "fp32_cuda_cores": "fp32_tflops",
        "tf32_tensor_cores": "tf32_tensor_tflops",
        "bf16_tensor_cores": "bf16_tensor_tflops",
        "fp16_tensor_cores": "fp16_tensor_tflops",
    }
    return ceilings.get(names[unit], 0.0) if unit in names else 0.0


def roofline(ceilings, work, unit, seconds):
    """The point the C++ harness's ``roofline()`` gives: reads priced at the read rate, writes at the
    write rate, flops at the unit's measured rate; the fraction is the floor over the time."""
    read, written, flops = work["bytes_read"], work["bytes_written"], work["flops"]
    copy = max(ceilings["copy_kernel_gbps"], ceilings.get("memcpy_d2d_gbps", 0.0))
    read_rate = ceilings.get("read_gbps", 0.0) or copy
    memory_seconds = read / (read_rate * 1e9) + written / (write_gbps(ceilings) * 1e9)
    compute = compute_ceiling_tflops(ceilings, unit)
    compute_seconds = flops / (compute * 1e12) if compute > 0 else 0.0
    floor = max(memory_seconds, compute_seconds)
    return {
        "bound": "compute" if compute_seconds > memory_seconds else "memory",
        "compute_ceiling_tflops": compute,
        "floor_seconds": floor,
        "fraction": floor / seconds,
        "gbps": (read + written) / seconds / 1e9,
        "memory_ceiling_gbps": (read + written) / memory_seconds / 1e9,
        "tflops": flops / seconds / 1e12,
    }


def summarize(samples):
    mean = statistics.fmean(samples)
    spread = statistics.stdev(samples) / mean if len(samples) > 1 and mean > 0 else 0.0
    return {
        "count": len(samples),
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "mean": mean,
        "stdrel": spread,
    }


def should_stop(samples, elapsed_seconds):
    if len(samples) >= MAX_SAMPLES:
        return True
    if len(samples) < MIN_SAMPLES:
        return False
    return elapsed_seconds >= BUDGET_SECONDS or summarize(samples)["stdrel"] < TARGET_STDREL


def format_param(value):
    """src/harness/problem.cpp's format_param: whole numbers as integers, others in shortest form."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def problem_json(dims, dtype, params):
    key = f"dtype={DTYPE_NAMES[dtype]}" + "".join(f";{n}={s}" for n, s in dims)
    key += "".join(f";{n}={format_param(v)}" for n, v in params)
    return {
        "dims": [{"name": n, "size": s} for n, s in dims],
        "dtype": DTYPE_NAMES[dtype],
        "key": key,
        "params": [{"name": n, "value": float(v)} for n, v in params],
    }


# ---- cases: one problem, its reference and its variants


@dataclasses.dataclass
class Variant:
    name: str  # "eager", "compile" or "cudalab"
    technique: str
    # prepare(inputs) -> a callable that runs the variant once and returns its outputs (a tuple).
    # It runs outside the timing: it builds the forward graph a backward needs, for instance.
    prepare: Callable
    skip_reason: str = ""


@dataclasses.dataclass
class Case:
    op: str  # the cudalab op: records name it "pytorch.<op>"
    dims: list
    dtype: torch.dtype
    params: list
    work: object  # {bytes_read, bytes_written, flops}, or a function of the references giving it
    unit: str
    make_inputs: Callable  # (generator) -> dict of tensors
    reference: Callable  # (inputs) -> tuple of float64 (or exact) outputs
    variants: list
    tolerance: object  # relative L2 of each output (a float, or a tuple: one per output); 0: exact
    distribution: str = "normal"


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def number_or_name(value):
    """JSON has no NaN or infinity: results files name them, as the C++ side writes them."""
    if math.isnan(value):
        return "nan"
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def compare(outputs, references, tolerance):
    """The harness's comparison record for the outputs as a whole: with a tolerance, each output's
    relative L2 error against float64 must be within it; without one, outputs must be equal. A
    tuple gives each output its own tolerance (the record names the largest). A variant that
    returns fewer outputs than the references (SDPA: no log-sum-exp) is compared on those it has."""
    references = references[: len(outputs)]
    tolerances = tuple(tolerance) if isinstance(tolerance, (tuple, list)) else (tolerance,) * len(references)
    tolerance = max(tolerances, default=0.0)
    count = sum(r.numel() for r in references)
    non_finite = sum(int((~torch.isfinite(o.double())).sum()) for o in outputs if o.is_floating_point())
    worst = max_abs = 0.0
    mismatches = 0
    for o, r, bound in zip(outputs, references, tolerances):
        if o.shape != r.shape:
            return {
                "count": count,
                "mismatches": count,
                "unwritten": 0,
                "non_finite": non_finite,
                "first_mismatch": 0,
                "first_mismatch_out": "nan",
                "first_mismatch_ref": "nan",
                "max_abs_error": "inf",
                "rel_l2_error": "inf",
                "tolerance": {"rtol": tolerance, "atol": 0.0},
            }
        diff = (o.double() - r.double()).abs()
        largest = diff.max().item() if diff.numel() else 0.0
        error = rel_l2(o, r) if r.numel() else 0.0
        # NaN wins: max() would drop it (every comparison with NaN is false).
        max_abs = largest if math.isnan(largest) or largest > max_abs else max_abs
        worst = error if math.isnan(error) or error > worst else worst
        if bound == 0:
            mismatches += int((diff != 0).sum())
        elif not error <= bound:
            mismatches += int(o.numel())  # the whole output fails its relative L2 bound
    return {
        "count": count,
        "mismatches": mismatches,
        "unwritten": 0,
        "non_finite": non_finite,
        "first_mismatch": -1 if mismatches == 0 else 0,
        "first_mismatch_out": 0.0,
        "first_mismatch_ref": 0.0,
        "max_abs_error": number_or_name(max_abs),
        "rel_l2_error": number_or_name(worst),
        "tolerance": {"rtol": tolerance, "atol": 0.0},
    }


def forward(fn):
    """A variant that calls fn(**inputs) (its outputs a tensor or a tuple); a gradient dy among the
    inputs is for the backward cases."""

    def prepare(inputs):
        args = {k: v for k, v in inputs.items() if k != "dy"}

        def run():
            out = fn(**args)
            return out if isinstance(out, tuple) else (out,)

        return run

    return prepare


def backward(fn, leaves):
    """A variant that times only the backward of fn(**inputs): the forward runs once outside the
    timing and each sample differentiates its graph again (retain_graph), as training would."""

    def prepare(inputs):
        args = {k: (v.detach().requires_grad_() if k in leaves else v) for k, v in inputs.items() if k != "dy"}
        y = fn(**args)
        dy = inputs["dy"]
        wrt = [args[k] for k in leaves]
        return lambda: torch.autograd.grad(y, wrt, dy, retain_graph=True)

    return prepare


def reference_backward(fn, leaves):
    def reference(inputs):
        args = {k: v.double().requires_grad_(k in leaves) for k, v in inputs.items() if k != "dy"}
        y = fn(**args)
        return torch.autograd.grad(y, [args[k] for k in leaves], inputs["dy"].double())

    return reference


def reference_forward(fn):
    def reference(inputs):
        out = fn(**{k: v.double() if v.is_floating_point() else v for k, v in inputs.items() if k != "dy"})
        return out if isinstance(out, tuple) else (out,)

    return reference


def normal(generator, shape, dtype, scale=2.0, shift=0.5):
    return (torch.randn(shape, device="cuda", generator=generator) * scale + shift).to(dtype)


ACTIVATIONS = {  # activation parameter -> (name, eager function of z, cudalab wrapper)
    0: ("bias+ReLU", F.relu, lambda x, bias: ops.bias_relu(x, bias)),
    1: ("bias+GELU (tanh)", lambda z: F.gelu(z, approximate="tanh"), lambda x, bias: ops.bias_gelu(x, bias, "tanh")),
    2: ("bias+GELU (erf)", F.gelu, lambda x, bias: ops.bias_gelu(x, bias)),
}


def work(bytes_read, bytes_written, flops):
    return {"bytes_read": bytes_read, "bytes_written": bytes_written, "flops": flops}


def three_ways(eager_technique, eager, cudalab_technique, cudalab, wrap, compile_note=""):
    """A case's variants: eager PyTorch, torch.compile of that same code, and the cudalab op, each
    made runnable by wrap (forward, or backward with the leaves to differentiate)."""
    compiled = torch.compile(eager, fullgraph=True, dynamic=False)
    return [
        Variant("eager", eager_technique, wrap(eager)),
        Variant("compile", COMPILE_TECHNIQUE + compile_note, wrap(compiled)),
        Variant("cudalab", cudalab_technique, wrap(cudalab)),
    ]


def not_compiled(eager_technique, eager, cudalab_technique, cudalab):
    """The variants of an op whose output's size depends on the data, which torch.compile with
    fullgraph=True cannot trace: eager and cudalab, the compile row skipped with that reason."""
    why = "not compiled: the output's size depends on the data, which fullgraph=True cannot trace"
    return [
        Variant("eager", eager_technique, forward(eager)),
        Variant("compile", COMPILE_TECHNIQUE, None, why),
        Variant("cudalab", cudalab_technique, forward(cudalab)),
    ]


@dataclasses.dataclass
class RowOp:
    """One of the fused ops over [rows, features], with what its forward and backward move and compute
    (the C++ ops' work, src/ops/*/register.*), as functions of (element size, m = rows x features,
    features, rows)."""

    op: str
    params: list
    eager: Callable
    cudalab: Callable
    leaves: list
    forward_work: Callable
    backward_work: Callable
    eager_technique: str
    eager_backward: str


def row_ops():
    ops_ = []
    for activation, (label, act, cudalab_act) in ACTIVATIONS.items():
        flops = (2, 3) if activation == 0 else (9, 16)
        ops_.append(
            RowOp(
                "bias_act",
                [("activation", activation)],
                lambda x, bias, weight=None, act=act: act(x + bias),
                lambda x, bias, weight=None, cudalab_act=cudalab_act: cudalab_act(x, bias),
                ["x", "bias"],
                lambda e, m, f, r, k=flops[0]: work(e * (m + f), e * m, k * m),
                lambda e, m, f, r, k=flops[1]: work(e * (2 * m + f), e * (m + f), k * m),
                f"x + bias, then the activation: two elementwise kernels ({label})",
                "the activation's backward, then a column sum for dbias",
            )
        )
    ops_ += [
        RowOp(
            "layer_norm",
            [],
            lambda x, weight, bias: F.layer_norm(x, x.shape[-1:], weight, bias, 1e-5),
            lambda x, weight, bias: ops.layer_norm(x, weight, bias, 1e-5),
            ["x", "weight", "bias"],
            lambda e, m, f, r: work(e * (m + 2 * f), e * m + 8 * r, 8 * m),
            lambda e, m, f, r: work(e * (2 * m + f) + 8 * r, e * (m + 2 * f), 12 * m),
            "F.layer_norm (ATen's fused kernel)",
            "native_layer_norm_backward",
        ),
        RowOp(
            "rms_norm",
            [],
            lambda x, weight, bias=None: F.rms_norm(x, x.shape[-1:], weight, 1e-6),
            lambda x, weight, bias=None: ops.rms_norm(x, weight, 1e-6),
            ["x", "weight"],
            lambda e, m, f, r: work(e * (m + f), e * m + 4 * r, 4 * m),
            lambda e, m, f, r: work(e * (2 * m + f) + 4 * r, e * (m + f), 9 * m),
            "F.rms_norm",
            "F.rms_norm's backward",
        ),
        RowOp(
            "softmax",
            [],
            lambda x, weight=None, bias=None: torch.softmax(x, -1),
            lambda x, weight=None, bias=None: ops.softmax(x),
            ["x"],
            lambda e, m, f, r: work(e * m, e * m, 6 * m),
            lambda e, m, f, r: work(2 * e * m, e * m, 4 * m),
            "torch.softmax (ATen's fused kernel)",
            "_softmax_backward_data",
        ),
    ]
    return ops_


def row_op_cases(rows, features, dtypes):
    """bias+activation, LayerNorm, RMSNorm and softmax over [rows, features], forward and backward:
    x normal (mean 0.5, deviation 2), weight uniform in [0.5, 1.5), bias and dy standard normal."""
    cases = []
    dims = [("rows", rows), ("features", features)]
    for dtype in dtypes:
        size = (torch.tensor([], dtype=dtype).element_size(), rows * features, features, rows)

        def make_inputs(g, dtype=dtype):
            return {
                "x": normal(g, (rows, features), dtype),
                "weight": (torch.rand(features, device="cuda", generator=g) + 0.5).to(dtype),
                "bias": normal(g, (features,), dtype, 1.0, 0.0),
                "dy": normal(g, (rows, features), dtype, 1.0, 0.0),
            }

        for r in row_ops():
            forward_variants = three_ways(
                r.eager_technique, r.eager, "cudalab.ops: the library's rung for the width", r.cudalab, forward
            )
            backward_variants = three_ways(
                f"autograd of the eager forward: {r.eager_backward}",
                r.eager,
                f"autograd of cudalab.ops: {r.op}_backward",
                r.cudalab,
                lambda fn, leaves=r.leaves: backward(fn, leaves),
                ", its backward graph",
            )
            common = dict(dims=dims, dtype=dtype, params=r.params, unit="fp32_cuda_cores", make_inputs=make_inputs)
            cases.append(
                Case(
                    r.op,
                    work=r.forward_work(*size),
                    reference=reference_forward(r.eager),
                    variants=forward_variants,
                    tolerance=REL_L2[dtype],
                    **common,
                )
            )
            cases.append(
                Case(
                    r.op + "_backward",
                    work=r.backward_work(*size),
                    reference=reference_backward(r.eager, r.leaves),
                    variants=backward_variants,
                    tolerance=2 * REL_L2[dtype],
                    **common,
                )
            )
    return cases


def gemm_cases(sizes, dtypes):
    cases = []
    for n in sizes:
        for dtype in dtypes:
            e = torch.tensor([], dtype=dtype).element_size()

            def make_inputs(g, n=n, dtype=dtype):
                return {"a": normal(g, (n, n), dtype, 1.0, 0.0), "b": normal(g, (n, n), dtype, 1.0, 0.0)}

            def product(a, b):
                return a @ b

            eager = "a @ b: cuBLAS" + (" (FP32: TF32 off)" if dtype == torch.float32 else "")
            variants = three_ways(
                eager, product, "cudalab.ops.gemm", lambda a, b: ops.gemm(a, b), forward, ": an extern cuBLAS call"
            )
            cases.append(
                Case(
                    "gemm",
                    [("M", n), ("N", n), ("K", n)],
                    dtype,
                    [],
                    work(2 * e * n * n, e * n * n, 2 * n**3),
                    TENSOR_CORE_UNIT[dtype],
                    make_inputs,
                    reference_forward(product),
                    variants,
                    REL_L2[dtype],
                )
            )
    return cases


def primitive_cases(n):
    """The CUDA-core library calls over n elements: sum, scan, select, histogram; transpose and
    conv2d over the square (and a quarter of its side) closest below n."""
    side = 1 << (int(math.log2(n)) // 2)

    def exact(inputs, fn):
        return (fn(**inputs),)

    def total(x):
        return x.sum()

    def cumsum(x):
        return torch.cumsum(x, 0, dtype=torch.int32)

    def at_least_two(x):
        return torch.masked_select(x, x >= 2)

    def bincount(x):
        return torch.bincount(x, minlength=256)

    def transposed(x):
        return x.t().contiguous()

    def conv(image, filter):
        return F.conv2d(image[None, None], filter[None, None], padding=filter.shape[-1] // 2)[0, 0]

    def uniform(g):
        return {"x": torch.rand(n, device="cuda", generator=g)}

    def small_ints(g):
        return {"x": torch.randint(0, 4, (n,), device="cuda", generator=g, dtype=torch.int32)}

    def bytes_(g):
        return {"x": torch.randint(0, 256, (n,), device="cuda", generator=g, dtype=torch.uint8)}

    def square(g):
        return {"x": torch.randn(side, side, device="cuda", generator=g)}

    cases = [
        Case(
            "reduce_sum",
            [("n", n)],
            torch.float32,
            [],
            work(4 * n, 4, n),
            "fp32_cuda_cores",
            uniform,
            reference_forward(total),
            three_ways("torch.sum", total, "cudalab.ops.reduce_sum", ops.reduce_sum, forward),
            1e-5,
            "uniform",
        ),
        Case(
            "inclusive_scan",
            [("n", n)],
            torch.int32,
            [],
            work(4 * n, 4 * n, n),
            "integer",
            small_ints,
            lambda inputs: exact(inputs, cumsum),
            three_ways("torch.cumsum", cumsum, "cudalab.ops.inclusive_scan", ops.inclusive_scan, forward),
            0.0,
            "uniform 0..3",
        ),
        Case(
            "select_at_least",
            [("n", n)],
            torch.int32,
            [("threshold", 2)],
            lambda references: work(4 * n, 4 * references[0].numel(), n),
            "integer",
            small_ints,
            lambda inputs: exact(inputs, at_least_two),
            not_compiled(
                "torch.masked_select(x, x >= 2): reads the count back, as cudalab's op does",
                at_least_two,
                "cudalab.ops.select_at_least",
                lambda x: ops.select_at_least(x, 2),
            ),
            0.0,
            "uniform 0..3",
        ),
        Case(
            "histogram",
            [("n", n)],
            torch.uint8,
            [("bins", 256)],
            work(n, 4 * 256, n),
            "integer",
            bytes_,
            lambda inputs: exact(inputs, bincount),
            not_compiled(
                "torch.bincount(x, minlength=256)", bincount, "cudalab.ops.histogram", lambda x: ops.histogram(x, 256)
            ),
            0.0,
            "uniform",
        ),
        Case(
            "transpose",
            [("rows", side), ("cols", side)],
            torch.float32,
            [],
            work(4 * side * side, 4 * side * side, 0),
            "fp32_cuda_cores",
            square,
            lambda inputs: exact(inputs, transposed),
            three_ways("x.t().contiguous()", transposed, "cudalab.ops.transpose", ops.transpose, forward),
            0.0,
        ),
    ]
    h = side // 4
    for width in (3, 7):

        def image(g, width=width):
            return {
                "image": torch.randn(h, h, device="cuda", generator=g),
                "filter": torch.randn(width, width, device="cuda", generator=g),
            }

        cases.append(
            Case(
                "conv2d",
                [("H", h), ("W", h), ("R", width)],
                torch.float32,
                [],
                work(4 * (h * h + width * width), 4 * h * h, 2 * width * width * h * h),
                "fp32_cuda_cores",
                image,
                reference_forward(conv),
                three_ways(
                    "F.conv2d, one channel, zero padding (cuDNN; TF32 off)",
                    conv,
                    "cudalab.ops.conv2d",
                    ops.conv2d,
                    forward,
                    ": an extern cuDNN call",
                ),
                1e-5,
            )
        )
    return cases


# ---- attention against PyTorch's SDPA backends

# Relative L2 of attention's O against float64. The 16-bit kernels (cudalab's and SDPA's) round two
# things: the probabilities P to the input type before P V, and O at the end; each rounding is a
# relative error of at most u (2^-8 bf16, 2^-11 f16) that the weighted sum over keys does not
# amplify (error and O average over the same weights), so rel L2 stays below sqrt(2) u / sqrt(3):
# 3.2e-3 bf16, 4.0e-4 f16 (Q K^T's products are exact in fp32). Emulating the two roundings in
# float64 on normal inputs gives 1.7-2.3e-3 bf16 and 2.1-2.9e-4 f16 at seq 17 to 4096 (worst row
# 1.4x that). The bounds leave 3x (bf16) and 5x (f16) above the estimate; a wrong mask, scale or tile
# gives errors of order 1. fp32 (CUDA cores, fp32 exp and sums): 1e-5. The log-sum-exp is fp32
# arithmetic on exact products whatever the dtype: 1e-5.
ATTENTION_REL_L2 = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5}
ATTENTION_LSE_REL_L2 = 1e-5
# The largest seq the SDPA math backend runs at: it materializes batch x heads x seq^2 scores.
SDPA_MATH_MAX_SEQ = 2048
SDPA_BACKENDS = [  # (variant, backend, technique)
    (
        "sdpa_flash",
        SDPBackend.FLASH_ATTENTION,
        "F.scaled_dot_product_attention, FLASH_ATTENTION forced (FlashAttention-2)",
    ),
    ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION, "F.scaled_dot_product_attention, EFFICIENT_ATTENTION forced"),
    ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION, "F.scaled_dot_product_attention, CUDNN_ATTENTION forced (cuDNN)"),
    (
        "sdpa_math",
        SDPBackend.MATH,
        "F.scaled_dot_product_attention, MATH forced: matmul, softmax, matmul over the materialized scores, in "
        "fp32 for 16-bit inputs (torch's default; TF32 off)",
    ),
]


def attention_score_chunks(q, k, v, scale, causal, max_scores):
    """The float64 scaled, masked scores of attention over q [B, H, S, D] and k, v [B, Hkv, S, D] (query
    head h reads kv head h // (H // Hkv)), on q's device, a few (batch, head) slices and a chunk of their
    query rows at a time, so that at most max_scores float64 scores exist at once (2^27: 1 GiB; one
    slice at seq 16384 would be 2 GiB). Yields (index, kv_index, rows, queries, keys, values, scores):
    the slices' indices among the B * H query slices and the B * Hkv kv slices, the rows (a slice),
    and those rows of q, the slices' k and v, and the scores [slices, rows, S], all float64."""
    batch, heads, seq, head_dim = q.shape
    kv_heads = k.shape[1]
    group = heads // kv_heads if kv_heads else 1
    q_slices = q.reshape(batch * heads, seq, head_dim)
    k_slices, v_slices = (t.reshape(batch * kv_heads, seq, head_dim) for t in (k, v))
    slices_at_once = max(1, max_scores // max(1, seq * seq))
    rows_at_once = max(1, min(seq, max_scores // max(1, seq)))
    for first in range(0, batch * heads, slices_at_once):
        index = torch.arange(first, min(first + slices_at_once, batch * heads), device=q.device)
        kv_index = index // heads * kv_heads + index % heads // group
        keys, values = k_slices[kv_index].double(), v_slices[kv_index].double()
        for row in range(0, seq, rows_at_once):
            rows = slice(row, min(row + rows_at_once, seq))
            queries = q_slices[index, rows].double()
            scores = queries @ keys.mT * scale
            if causal:
                query = torch.arange(rows.start, rows.stop, device=q.device)[:, None]
                scores.masked_fill_(torch.arange(seq, device=q.device)[None, :] > query, -math.inf)
            yield index, kv_index, rows, queries, keys, values, scores


def attention_reference(q, k, v, scale=None, causal=False, max_scores=1 << 27):
    """float64 (O, L) of attention over q [B, H, S, D] and k, v [B, Hkv, S, D] (query head h reads kv
    head h // (H // Hkv)), on q's device: O = softmax(scale * q k^T [causal mask]) v and L each row's
    log-sum-exp, over attention_score_chunks (at most max_scores float64 scores at once)."""
    batch, heads, seq, head_dim = q.shape
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    o = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.empty(q.shape[:-1], dtype=torch.float64, device=q.device)
    o_slices, lse_slices = o.view(batch * heads, seq, head_dim), lse.view(batch * heads, seq)
    for index, _, rows, _, _, values, scores in attention_score_chunks(q, k, v, scale, causal, max_scores):
        row_lse = torch.logsumexp(scores, -1)
        o_slices[index, rows] = torch.exp(scores - row_lse[..., None]) @ values
        lse_slices[index, rows] = row_lse
    return o, lse


def attention_backward_reference(q, k, v, dy, scale=None, causal=False, max_scores=1 << 27):
    """float64 (dQ, dK, dV) of attention's O for O's gradient dy [B, H, S, D], over
    attention_score_chunks: P = softmax(scores), dP = dy V^T, D = rowsum(dy o P V), dS = P o (dP - D),
    dQ = scale dS K, dK = scale dS^T Q and dV = P^T dy, each kv head's dK and dV summed over the query
    heads that read it."""
    batch, heads, seq, head_dim = q.shape
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    dq = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    dk, dv = (torch.zeros(k.shape, dtype=torch.float64, device=q.device) for _ in range(2))
    dq_slices, dy_slices = dq.view(batch * heads, seq, head_dim), dy.reshape(batch * heads, seq, head_dim)
    dk_slices, dv_slices = (t.view(batch * k.shape[1], seq, head_dim) for t in (dk, dv))
    for index, kv_index, rows, queries, keys, values, scores in attention_score_chunks(
        q, k, v, scale, causal, max_scores
    ):
        p = torch.softmax(scores, -1)
        grad = dy_slices[index, rows].double()
        ds = p * (grad @ values.mT - (grad * (p @ values)).sum(-1, keepdim=True))
        dq_slices[index, rows] = scale * ds @ keys
        dk_slices.index_add_(0, kv_index, scale * ds.mT @ queries)
        dv_slices.index_add_(0, kv_index, p.mT @ grad)
    return dq, dk, dv


def sdpa(backend, causal, wrap=forward):
    """A variant running F.scaled_dot_product_attention with only `backend` allowed, made runnable by
    wrap (forward, or backward with the leaves to differentiate: the backend that runs the forward
    runs its backward). A backend that refuses the case raises RuntimeError ("No available kernel")
    and says why in warnings: prepare runs the variant once and raises their text in one line, which
    run_case records as the skip reason."""

    def attend(q, k, v):
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=k.shape[1] != q.shape[1])

    def prepare(inputs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run = wrap(attend)(inputs)
                run()
            except RuntimeError as error:
                why = " ".join(" ".join(str(w.message).split()) for w in caught) or " ".join(str(error).split())
                raise RuntimeError(f"SDPA's {backend.name} backend refuses this case: {why}"[:400]) from None
        return run

    return prepare


def attention_variants(batch, heads, seq, causal, wrap, cudalab_technique, cudalab):
    """SDPA's backends (math left out above SDPA_MATH_MAX_SEQ), the compile row (not timed) and
    cudalab's op, each made runnable by wrap (forward, or backward with the leaves)."""
    variants = []
    for name, backend, technique in SDPA_BACKENDS:
        if backend == SDPBackend.MATH and seq > SDPA_MATH_MAX_SEQ:
            gib = batch * heads * seq * seq * 4 / 2**30
            why = (
                f"not run above seq {SDPA_MATH_MAX_SEQ}: the math backend materializes the batch x heads x seq^2 "
                f"scores ({gib:.0f} GiB in fp32 here), so it times that matrix's traffic, not attention; it stands "
                "in the shorter sequences as the unfused composition"
            )
            variants.append(Variant(name, technique, None, why))
        else:
            variants.append(Variant(name, technique, sdpa(backend, causal, wrap)))
    variants.append(
        Variant(
            "compile",
            COMPILE_TECHNIQUE,
            None,
            "not timed: torch.compile hands F.scaled_dot_product_attention to the same SDPA kernels the sdpa_* "
            "rows time (there is nothing around it to fuse)",
        )
    )
    variants.append(Variant("cudalab", cudalab_technique, wrap(cudalab)))
    return variants


def attention_case(dtype, batch, heads, seq, head_dim, causal):
    def make_inputs(g):
        return {name: normal(g, (batch, heads, seq, head_dim), dtype, 1.0, 0.0) for name in ("q", "k", "v")}

    variants = attention_variants(
        batch,
        heads,
        seq,
        causal,
        forward,
        "cudalab.ops.attention: the library's kernel for the shape (O and the log-sum-exp; SDPA's public "
        "API returns O only, so only cudalab's L is checked)",
        lambda q, k, v: ops.attention(q, k, v, causal=causal),
    )
    e = torch.tensor([], dtype=dtype).element_size()
    elements = batch * heads * seq * head_dim
    # Two matrix products of 2 S^2 D flops per (batch, head); causal halves them (FlashAttention's
    # count: the diagonal's extra S D is left out). Bytes: q, k, v read, O and L written, once each.
    flops = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
    return Case(
        "attention",
        [("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim)],
        dtype,
        [("causal", int(causal)), ("kv_heads", 0)],
        work(3 * e * elements, e * elements + 4 * batch * heads * seq, flops),
        TENSOR_CORE_UNIT[dtype],
        make_inputs,
        lambda inputs: attention_reference(**inputs, causal=causal),
        variants,
        (ATTENTION_REL_L2[dtype], ATTENTION_LSE_REL_L2),
    )


def attention_backward_case(dtype, batch, heads, seq, head_dim, causal):
    """The backward alone: each variant's forward runs once outside the timing (backward()), then
    every sample differentiates its graph again for dy, as training would. q, k, v and dy standard
    normal."""

    def make_inputs(g):
        return {name: normal(g, (batch, heads, seq, head_dim), dtype, 1.0, 0.0) for name in ("q", "k", "v", "dy")}

    variants = attention_variants(
        batch,
        heads,
        seq,
        causal,
        lambda fn: backward(fn, ["q", "k", "v"]),
        "autograd of cudalab.ops.attention: cudalab::attention_backward, the library's kernel for the shape "
        "(from the saved q, k, v, O and L)",
        lambda q, k, v: ops.attention(q, k, v, causal=causal)[0],
    )
    e = torch.tensor([], dtype=dtype).element_size()
    elements = batch * heads * seq * head_dim
    # FlashAttention's count: 2.5 times the forward's (five S^2 D products: S again, dP, dV, dK, dQ),
    # halved when causal. Bytes: q, k, v, O, dO and L read, dQ, dK and dV written, once each (the C++
    # op's work).
    flops = 10 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
    return Case(
        "attention_backward",
        [("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", head_dim)],
        dtype,
        [("causal", int(causal)), ("kv_heads", 0)],
        work(5 * e * elements + 4 * batch * heads * seq, 3 * e * elements, flops),
        TENSOR_CORE_UNIT[dtype],
        make_inputs,
        lambda inputs: attention_backward_reference(**inputs, causal=causal),
        variants,
        # The gradients carry the forward's two roundings (P, or dS, to the dtype before the product
        # that takes it, and the output's), so the same estimate; twice the bound, as every other
        # gradient here has (one more fp32 reduction before the rounding).
        2 * ATTENTION_REL_L2[dtype],
    )


def attention_cases(quick):
    """Attention's forward against SDPA's backends, q, k and v standard normal: bf16 [4, 16, 4096,
    128] non-causal and causal, head_dim 64, f16; and bf16 head_dim 128 over seq 512 to 16384 at
    batch x seq = 16384 (16 heads), causal and not. The backward alone, against each backend's
    backward: bf16 [4, 16, 4096, 128] non-causal and causal, and head_dim 64. --quick: the same kinds
    at [2, 4, 512, D]."""
    if quick:
        shapes = [(torch.bfloat16, 2, 4, 512, 128, False), (torch.bfloat16, 2, 4, 512, 128, True)]
        backward_shapes = shapes + [(torch.bfloat16, 2, 4, 512, 64, False)]
        shapes += [(torch.bfloat16, 2, 4, 512, 64, False), (torch.float16, 2, 4, 512, 128, False)]
    else:
        shapes = [(torch.bfloat16, 4, 16, 4096, 128, causal) for causal in (False, True)]
        backward_shapes = shapes + [(torch.bfloat16, 4, 16, 4096, 64, False)]
        shapes += [(torch.bfloat16, 4, 16, 4096, 64, False), (torch.float16, 4, 16, 4096, 128, False)]
        shapes += [
            (torch.bfloat16, 16384 // seq, 16, seq, 128, causal)
            for seq in (512, 1024, 2048, 8192, 16384)  # 4096 is the first two cases
            for causal in (False, True)
        ]
    return [attention_case(*shape) for shape in shapes] + [attention_backward_case(*s) for s in backward_shapes]


# ---- running


class L2Flush:
    """Reads a buffer twice L2's size (plus 8 MiB), as the C++ timer does. Reading, not writing: a
    written buffer would leave L2 full of dirty lines whose write-back the next sample would pay
    (measured: writing made a 0.18 ms bf16 LayerNorm 2.9% slower, 0.1859 against 0.1806 ms)."""

    def __init__(self):
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        self.buffer = torch.ones((2 * l2 + (8 << 20)) // 4, dtype=torch.int32, device="cuda")

    def __call__(self):
        return self.buffer.sum()


def time_call(run, flush):
    """Median-of-samples timing of run() between CUDA events, each sample after an L2 flush."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):  # warm-up: compilation, autotuning, allocator growth
        run()
    torch.cuda.synchronize()
    samples, began = [], time.perf_counter()
    while True:
        flush()
        torch.cuda._sleep(2_000_000)  # ~1 ms at 1.98 GHz: Python enqueues the call while the GPU is busy
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
        if should_stop(samples, time.perf_counter() - began):
            return summarize(samples)


def run_case(case, seed, ceilings, flush):
    """The case's records: each variant verified, then timed if it passed."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    inputs = case.make_inputs(generator)
    references = case.reference(inputs)
    work = case.work(references) if callable(case.work) else case.work
    records, first_ms = [], None
    for variant in case.variants:
        record = {
            "op": "pytorch." + case.op,
            "variant": variant.name,
            "technique": variant.technique,
            "role": "ladder" if variant.name == "cudalab" else "baseline",
            "problem": problem_json(case.dims, case.dtype, case.params),
            "work": {k: float(v) for k, v in work.items()},
            "seed": seed,
            "distribution": case.distribution,
        }
        if variant.skip_reason:
            records.append({**record, "outcome": "skipped", "skip_reason": variant.skip_reason})
            continue
        try:
            run = variant.prepare(inputs)
            outputs = run()
        except Exception as error:  # a baseline that cannot run here is reported, not fatal
            records.append(
                {**record, "outcome": "skipped", "skip_reason": f"{type(error).__name__}: {error}".splitlines()[0]}
            )
            continue
        comparison = compare(outputs, references, case.tolerance)
        record.update(unit=case.unit, comparison=comparison)
        if comparison["mismatches"] or comparison["non_finite"]:
            records.append({**record, "outcome": "failed"})
            continue
        time_ms = time_call(run, flush)
        first_ms = first_ms or time_ms["median"]
        record.update(
            outcome="passed",
            time_ms=time_ms,
            roofline=roofline(ceilings, record["work"], case.unit, time_ms["median"] / 1e3),
            speedup_vs_first=first_ms / time_ms["median"],
        )
        records.append(record)
        del run, outputs
    return records


def cache_path(uuid):
    """Where ``cudalab probe`` caches the ceilings (src/probe/probe.cu's cache_path)."""
    if os.environ.get("CUDALAB_CACHE_DIR"):
        folder = os.environ["CUDALAB_CACHE_DIR"]
    elif os.environ.get("XDG_CACHE_HOME"):
        folder = os.path.join(os.environ["XDG_CACHE_HOME"], "cudalab")
    elif os.environ.get("HOME"):
        folder = os.path.join(os.environ["HOME"], ".cache", "cudalab")
    else:
        folder = os.path.join("/tmp", "cudalab")
    return os.path.join(folder, f"probe-{uuid}.json")


def load_ceilings(path):
    try:
        with open(path) as f:
            document = json.load(f)
    except FileNotFoundError:
        raise BenchError(f"no ceilings at {path}: run `cudalab probe` on this GPU first (or pass --ceilings FILE)")
    except (OSError, json.JSONDecodeError) as error:
        raise BenchError(f"cannot read the ceilings in {path}: {error}")
    if document.get("schema") != "cudalab-probe/1" or "copy_kernel_gbps" not in document.get("ceilings", {}):
        raise BenchError(f"{path} is not a cudalab probe file (schema cudalab-probe/1)")
    return document["ceilings"]


def nvidia_smi(index):
    """Driver version and current clocks, as the C++ side records them (NVML there)."""
    try:
        line = subprocess.run(
            [
                "nvidia-smi",
                "-i",
                str(index),
                "--query-gpu=driver_version,clocks.sm,clocks.mem,clocks.max.sm",
                "--format=csv,noheader,nounits",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        driver, sm, mem, max_sm = [s.strip() for s in line.strip().split(",")]
        return driver, int(sm), int(mem), int(max_sm)
    except (OSError, subprocess.SubprocessError, ValueError):
        return "", 0, 0, 0


def provenance(command_line):
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    driver, sm, mem, max_sm = nvidia_smi(index)
    major, minor = (int(v) for v in torch.version.cuda.split(".")[:2])
    return {
        "command_line": command_line,
        "commit": _C.commit,
        "dirty": bool(_C.dirty),
        "cudalab_version": __version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu_name": props.name,
        "gpu_uuid": f"GPU-{props.uuid}",
        "compute_capability": props.major * 10 + props.minor,
        "sm_count": props.multi_processor_count,
        "memory_gib": props.total_memory / 2**30,
        "runtime_cuda_version": major * 1000 + minor * 10,
        "driver_version": driver,
        "sm_clock_mhz_start": sm,
        "memory_clock_mhz_start": mem,
        "max_sm_clock_mhz": max_sm,
        "hostname": socket.gethostname(),
    }


FAMILIES = {
    "attention": attention_cases,
    "fused": lambda quick: row_op_cases(
        *((256, 1024) if quick else (16384, 8192)), [torch.float32, torch.bfloat16, torch.float16]
    ),
    "gemm": lambda quick: gemm_cases([256] if quick else [4096, 8192], [torch.bfloat16, torch.float16, torch.float32]),
    "primitives": lambda quick: primitive_cases(1 << (16 if quick else 28)),
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m cudalab.bench",
        description="Times each cudalab op against eager PyTorch and torch.compile (attention: against SDPA's "
        "backends) in one process, each variant verified against float64 first, and writes a cudalab results file "
        "(render it with `cudalab report FILE --update docs/pytorch.md`). Needs a CUDA GPU and `cudalab probe`'s "
        "ceilings.",
    )
    parser.add_argument("--out", default="pytorch-bench.json", help="results file to write (default: %(default)s)")
    parser.add_argument("--only", action="append", choices=sorted(FAMILIES), help="run only this family (repeatable)")
    parser.add_argument("--op", action="append", help="run only the cases of this op, e.g. layer_norm (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    parser.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED, help="input seed (default: 0x5eed)")
    parser.add_argument("--ceilings", help="a probe file (cudalab probe --json) instead of probe's cache")
    return parser.parse_args(argv)


def progress(done, total, label, began):
    width = 30
    filled = width * done // total
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {time.perf_counter() - began:5.0f} s  {label}"
    end = "\r" if sys.stderr.isatty() and done < total else "\n"
    print(line.ljust(100) if end == "\r" else line, end=end, file=sys.stderr, flush=True)


def save(document, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".partial", "w") as f:
        json.dump(document, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(path + ".partial", path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        if not torch.cuda.is_available():
            raise BenchError("no CUDA device: torch.cuda.is_available() is False")
        index = torch.cuda.current_device()
        uuid = f"GPU-{torch.cuda.get_device_properties(index).uuid}"
        ceilings = load_ceilings(args.ceilings or cache_path(uuid))
        cases = [c for family in (args.only or sorted(FAMILIES)) for c in FAMILIES[family](args.quick)]
        if args.op:
            cases = [c for c in cases if c.op in args.op]
            if not cases:
                raise BenchError(f"no case runs op {', '.join(args.op)}")
    except BenchError as error:
        print(f"cudalab.bench: {error}", file=sys.stderr)
        return 2
    torch._dynamo.config.cache_size_limit = 64
    # FP32 means FP32 on both sides: cudalab's FP32 kernels do not use TF32, and cuDNN would by default.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    document = {
        "schema": SCHEMA,
        "provenance": provenance(" ".join(["python -m cudalab.bench", *argv])),
        "ceilings": ceilings,
        "records": [],
        "experiments": [],
        "claims": [],
    }
    flush, began = L2Flush(), time.perf_counter()
    for i, case in enumerate(cases):
        label = f"{case.op} {DTYPE_NAMES[case.dtype]} " + "x".join(str(s) for _, s in case.dims)
        label += "".join(f" {n}={format_param(v)}" for n, v in case.params)
        progress(i, len(cases), label, began)
        torch._dynamo.reset()  # each case compiles afresh: no cache entries from other dtypes or shapes
        document["records"] += run_case(case, args.seed, ceilings, flush)
        torch.cuda.empty_cache()
        if i == 0:  # the clocks once the GPU has left its idle state (an idle H100 reads 345 MHz)
            _, sm, mem, _ = nvidia_smi(torch.cuda.current_device())
            document["provenance"].update(sm_clock_mhz_start=sm, memory_clock_mhz_start=mem)
        save(document, args.out)  # after every case: a run cut short keeps what it measured
    progress(len(cases), len(cases), "done", began)
    _, sm_end, mem_end, _ = nvidia_smi(torch.cuda.current_device())
    document["provenance"].update(sm_clock_mhz_end=sm_end, memory_clock_mhz_end=mem_end)
    save(document, args.out)
    failed = [r for r in document["records"] if r["outcome"] == "failed"]
    for r in failed:
        print(
            f"cudalab.bench: {r['op']} {r['variant']} {r['problem']['key']} failed verification "
            f"(rel L2 {r['comparison']['rel_l2_error']:.3g})",
            file=sys.stderr,
        )
    print(f"wrote {args.out}: {len(document['records'])} records, {len(failed)} failed verification")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
