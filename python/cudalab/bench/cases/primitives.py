"""The CUDA-core library calls: sum, scan, select, histogram, transpose and conv2d, against their
PyTorch equivalents."""

import math

import torch
import torch.nn.functional as F

from ... import ops
from .common import Case, forward, not_compiled, reference_forward, three_ways

# The C++ select_if op's uniform inputs are the 33 whole numbers -16..16, and its selected_percent=50
# problem keeps x >= 0 (17 of them): the share its work model counts.
SELECT_LOWEST, SELECT_HIGHEST, SELECT_THRESHOLD = -16, 16, 0


def primitive_cases(n):
    """Sum, scan, select and histogram over n elements; transpose and conv2d over the square (and a
    quarter of its side) closest below n."""
    side = 1 << (int(math.log2(n)) // 2)

    def exact(inputs, fn):
        return (fn(**inputs),)

    def total(x):
        return x.sum()

    def cumsum(x):
        return torch.cumsum(x, 0, dtype=torch.int32)

    def at_least(x):
        return torch.masked_select(x, x >= SELECT_THRESHOLD)

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

    def select_ints(g):
        return {
            "x": torch.randint(SELECT_LOWEST, SELECT_HIGHEST + 1, (n,), device="cuda", generator=g, dtype=torch.int32)
        }

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
            uniform,
            reference_forward(total),
            three_ways("torch.sum", total, "cudalab.ops.reduce_sum", ops.reduce_sum, forward),
            1e-5,
            "uniform",
        ),
        Case(
            "scan",
            [("n", n)],
            torch.int32,
            [("exclusive", 0)],
            small_ints,
            lambda inputs: exact(inputs, cumsum),
            three_ways("torch.cumsum", cumsum, "cudalab.ops.inclusive_scan", ops.inclusive_scan, forward),
            0.0,
            "uniform 0..3",
        ),
        Case(
            "select_if",
            [("n", n)],
            torch.int32,
            [("selected_percent", 50)],
            select_ints,
            lambda inputs: exact(inputs, at_least),
            not_compiled(
                f"torch.masked_select(x, x >= {SELECT_THRESHOLD}): reads the count back, as cudalab's op does",
                at_least,
                "cudalab.ops.select_at_least",
                lambda x: ops.select_at_least(x, SELECT_THRESHOLD),
            ),
            0.0,
            f"uniform {SELECT_LOWEST}..{SELECT_HIGHEST}",
        ),
        Case(
            "histogram",
            [("n", n)],
            torch.uint8,
            [("bins", 256)],
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
