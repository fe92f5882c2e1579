"""The benchmark's cases by family (``--only``): each a function of --quick giving its cases."""

import torch

from .attention import attention_cases, attention_decode_cases, varlen_cases, window_cases
from .fp8 import quantize_cases
from .gemm import gemm_cases
from .losses import cross_entropy_cases
from .primitives import primitive_cases
from .rows import row_op_cases
from .training import adamw_cases, rope_cases

FAMILIES = {
    "attention": attention_cases,
    "decode": attention_decode_cases,
    "fp8": lambda quick: quantize_cases(1 << (16 if quick else 25), [torch.bfloat16, torch.float32]),
    "fused": lambda quick: row_op_cases(
        *((256, 1024) if quick else (16384, 8192)), [torch.float32, torch.bfloat16, torch.float16]
    ),
    "gemm": lambda quick: gemm_cases([256] if quick else [4096, 8192], [torch.bfloat16, torch.float16, torch.float32]),
    "losses": lambda quick: cross_entropy_cases(
        256 if quick else 4096, [32000] if quick else [32000, 50257, 128256, 256000], [torch.bfloat16, torch.float32]
    ),
    "primitives": lambda quick: primitive_cases(1 << (16 if quick else 28)),
    "varlen": varlen_cases,
    "window": window_cases,
    "training": lambda quick: rope_cases(*((1, 256, 4, 64) if quick else (8, 4096, 32, 128)), [torch.bfloat16])
    + adamw_cases(*((4, 1000) if quick else (112, 4194304)), [torch.bfloat16, torch.float32]),
}
