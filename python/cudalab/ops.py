"""Typed wrappers over ``torch.ops.cudalab``, and what torch.compile and autograd need of each op:
a fake kernel (shapes and dtypes only) and a backward where one exists.

Inputs must be contiguous CUDA tensors of float32, float16 or bfloat16 (the ops check and name the
argument; nothing is copied behind your back). The normalized or activated dimension is the last.
"""

import torch
from torch import Tensor

_ACTIVATIONS = {"relu": 0, "gelu_tanh": 1, "gelu": 2}


def bias_relu(x: Tensor, bias: Tensor) -> Tensor:
    """relu(x + bias), bias of shape [x.shape[-1]]."""
    return torch.ops.cudalab.bias_act(x, bias, _ACTIVATIONS["relu"])


def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias) as ``torch.nn.functional.gelu(x + bias, approximate=approximate)``:
    ``"none"`` (erf) or ``"tanh"``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"cudalab.bias_gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return torch.ops.cudalab.bias_act(x, bias, _ACTIVATIONS["gelu" if approximate == "none" else "gelu_tanh"])


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)``."""
    return torch.ops.cudalab.layer_norm(x, weight, bias, eps)[0]


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """``torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps)``."""
    return torch.ops.cudalab.rms_norm(x, weight, eps)[0]


def softmax(x: Tensor) -> Tensor:
    """``torch.softmax(x, dim=-1)``."""
    return torch.ops.cudalab.softmax(x)


def gemm(
    a: Tensor, b: Tensor, c: Tensor | None = None, alpha: float = 1.0, beta: float = 0.0, b_transposed: bool = False
) -> Tensor:
    """``alpha * a @ op(b) + beta * c`` for matrices ``a`` [m, k] or batches [batch, m, k]; ``op(b)``
    is ``b`` ([k, n]) or, with ``b_transposed``, ``b.mT`` for ``b`` stored [n, k] (``nn.Linear``'s
    weight; bfloat16 and float16 only). FP32 runs on CUDA cores (no TF32), 16-bit types on tensor
    cores with FP32 accumulation."""
    return torch.ops.cudalab.gemm(a, b, c, alpha, beta, b_transposed)


# ---- fake kernels: outputs' shapes, dtypes and devices, for FakeTensor, torch.compile and export


def _statistics(x):
    return x.new_empty(x.shape[:-1], dtype=torch.float32)


@torch.library.register_fake("cudalab::bias_act")
def _(x, bias, activation):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::bias_act_backward")
def _(x, bias, dy, activation):
    return torch.empty_like(x), torch.empty_like(bias)


@torch.library.register_fake("cudalab::layer_norm")
def _(x, weight, bias, eps):
    return torch.empty_like(x), _statistics(x), _statistics(x)


@torch.library.register_fake("cudalab::layer_norm_backward")
def _(x, dy, weight, mean, rstd):
    return torch.empty_like(x), torch.empty_like(weight), torch.empty_like(weight)


@torch.library.register_fake("cudalab::rms_norm")
def _(x, weight, eps):
    return torch.empty_like(x), _statistics(x)


@torch.library.register_fake("cudalab::rms_norm_backward")
def _(x, dy, weight, rstd):
    return torch.empty_like(x), torch.empty_like(weight)


@torch.library.register_fake("cudalab::softmax")
def _(x):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::softmax_backward")
def _(y, dy):
    return torch.empty_like(y)


@torch.library.register_fake("cudalab::gemm")
def _(a, b, c=None, alpha=1.0, beta=0.0, b_transposed=False):
    n = b.shape[-2] if b_transposed else b.shape[-1]
    return a.new_empty((*a.shape[:-1], n))


# ---- autograd: each forward's gradient through its backward op


def _bias_act_setup(ctx, inputs, output):
    x, bias, activation = inputs
    ctx.save_for_backward(x, bias)
    ctx.activation = activation


def _bias_act_backward(ctx, dy):
    x, bias = ctx.saved_tensors
    dx, dbias = torch.ops.cudalab.bias_act_backward(x, bias, dy.contiguous(), ctx.activation)
    return dx, dbias, None


torch.library.register_autograd("cudalab::bias_act", _bias_act_backward, setup_context=_bias_act_setup)


def _layer_norm_setup(ctx, inputs, output):
    x, weight, bias, eps = inputs
    y, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.mark_non_differentiable(mean, rstd)


def _layer_norm_backward(ctx, dy, dmean, drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dweight, dbias = torch.ops.cudalab.layer_norm_backward(x, dy.contiguous(), weight, mean, rstd)
    return dx, dweight, dbias, None


torch.library.register_autograd("cudalab::layer_norm", _layer_norm_backward, setup_context=_layer_norm_setup)


def _rms_norm_setup(ctx, inputs, output):
    x, weight, eps = inputs
    y, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.mark_non_differentiable(rstd)


def _rms_norm_backward(ctx, dy, drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dweight = torch.ops.cudalab.rms_norm_backward(x, dy.contiguous(), weight, rstd)
    return dx, dweight, None


torch.library.register_autograd("cudalab::rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return torch.ops.cudalab.softmax_backward(y, dy.contiguous())


torch.library.register_autograd("cudalab::softmax", _softmax_backward, setup_context=_softmax_setup)


def _gemm_setup(ctx, inputs, output):
    a, b, c, alpha, beta, b_transposed = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.b_transposed, ctx.has_c = alpha, beta, b_transposed, c is not None


def _gemm_backward(ctx, dc):
    # dA = alpha dC op(B)^T and dB = alpha A^T dC (or its transpose for B stored [n, k]), by cudalab's
    # own gemm: the library has no transposed A, so A^T (and dC^T) are materialized.
    a, b = ctx.saved_tensors
    dc = dc.contiguous()
    da = db = None
    if ctx.needs_input_grad[0]:
        if ctx.b_transposed:
            da = torch.ops.cudalab.gemm(dc, b, None, ctx.alpha, 0.0, False)
        elif dc.dtype == torch.float32:
            da = torch.ops.cudalab.gemm(dc, b.mT.contiguous(), None, ctx.alpha, 0.0, False)
        else:
            da = torch.ops.cudalab.gemm(dc, b, None, ctx.alpha, 0.0, True)
    if ctx.needs_input_grad[1]:
        if ctx.b_transposed:
            db = torch.ops.cudalab.gemm(dc.mT.contiguous(), a, None, ctx.alpha, 0.0, False)
        else:
            db = torch.ops.cudalab.gemm(a.mT.contiguous(), dc, None, ctx.alpha, 0.0, False)
    dcin = dc * ctx.beta if ctx.has_c and ctx.needs_input_grad[2] else None
    return da, db, dcin, None, None, None


torch.library.register_autograd("cudalab::gemm", _gemm_backward, setup_context=_gemm_setup)
