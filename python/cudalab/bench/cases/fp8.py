"""FP8 inputs: per-tensor e4m3 quantization as PyTorch code writes it, eager and compiled, beside
cudalab's: the scale from the tensor's own amax (cudalab.ops.quantize_fp8), and a scale given with
the amax produced for the next step (delayed scaling, cudalab.ops.quantize_fp8_scaled)."""

import torch

from ... import ops
from .common import Case, forward, normal, three_ways

E4M3_MAX = 448.0


def _torch_quantize(x):
    """amax, the dequantization scale and q, in float32 as cudalab's op defines them."""
    amax = x.abs().amax().float()
    q = (x.float() * (E4M3_MAX / amax)).to(torch.float8_e4m3fn)
    return q, (amax / E4M3_MAX).reshape(1), amax.reshape(1)


def _torch_quantize_scaled(x, scale):
    """q with the given scale, saturating, and x's amax, as cudalab's op defines them."""
    q = (x.float() * (1.0 / scale)).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, x.abs().amax().float().reshape(1)


def quantize_cases(n, dtypes):
    """n elements of each dtype (a Llama activation of 8192 x 4096 is 2^25)."""
    cases = []
    for dtype in dtypes:
        cases.append(
            Case(
                "quantize_fp8",
                [("n", n)],
                dtype,
                [],
                lambda g, dtype=dtype: {"x": normal(g, (n,), dtype)},
                lambda inputs: _torch_quantize(**inputs),
                three_ways(
                    "x.abs().amax(), then (x.float() * (448 / amax)).to(float8_e4m3fn)",
                    _torch_quantize,
                    "cudalab.ops.quantize_fp8",
                    ops.quantize_fp8,
                    forward,
                ),
                # amax exactly; the scale and q as computed in float32 (Inductor's division may round
                # 448 / amax differently by an ulp, which moves a few q by one e4m3 step).
                (1e-2, 1e-6, 0.0),
            )
        )
        cases.append(
            Case(
                "quantize_fp8_scaled",
                [("n", n)],
                dtype,
                [],
                # A scale from earlier steps: normal values past 3 saturate.
                lambda g, dtype=dtype: {
                    "x": normal(g, (n,), dtype),
                    "scale": torch.full((1,), 3.0 / E4M3_MAX, device="cuda"),
                },
                lambda inputs: _torch_quantize_scaled(**inputs),
                three_ways(
                    "(x.float() * (1 / scale)).clamp(-448, 448).to(float8_e4m3fn), and x.abs().amax()",
                    _torch_quantize_scaled,
                    "cudalab.ops.quantize_fp8_scaled",
                    ops.quantize_fp8_scaled,
                    forward,
                ),
                (1e-2, 0.0),  # q as the quantize_fp8 case's; amax exactly
            )
        )
    return cases
