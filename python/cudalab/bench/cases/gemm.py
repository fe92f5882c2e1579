"""Square matrix products, a @ b, against cuBLAS through eager PyTorch and torch.compile."""

import torch

from ... import ops
from .common import REL_L2, Case, forward, normal, reference_forward, three_ways


def gemm_cases(sizes, dtypes):
    """n x n x n products in each dtype; a and b standard normal. The C++ op's problem at alpha 1 and
    beta 0 (its defaults, 1.5 and -0.5, read C): a @ b reads a and b, writes the product."""
    cases = []
    for n in sizes:
        for dtype in dtypes:

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
                    [("alpha", 1), ("beta", 0)],
                    make_inputs,
                    reference_forward(product),
                    variants,
                    REL_L2[dtype],
                    engine="by_dtype",
                )
            )
    return cases
