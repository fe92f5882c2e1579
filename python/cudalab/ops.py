"""Typed wrappers over ``torch.ops.cudalab``, and what torch.compile and autograd need of each op:
a fake kernel (shapes and dtypes only) and a backward where one exists.

Inputs must be contiguous CUDA tensors (the ops check and name the argument; nothing is copied
behind your back), except gemm's, which are read as strided matrices (see :func:`gemm`). The fused
ops and gemm take float32, float16 or bfloat16 and work on the last dimension; attention takes the
same dtypes as [batch, heads, seq, head_dim]; the library's primitives (reduce_sum, the scans,
select_at_least, histogram, transpose, conv2d) take the dtypes their docstrings name and read their
input as one flat array, matrix or image.
"""

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

def autocast_inputs(*tensors):
    """The tensors cast to the autocast dtype where ``torch.autocast`` is on for CUDA (the ops that
    torch runs in lower precision there: matrix products and attention), else as given; None stays
    None."""
    if not torch.is_autocast_enabled("cuda") or not any(t is not None and t.is_cuda for t in tensors):
        return tensors
    dtype = torch.get_autocast_dtype("cuda")
    return tuple(t.to(dtype) if t is not None and t.is_floating_point() else t for t in tensors)


def bias_relu(x: Tensor, bias: Tensor) -> Tensor:
    """relu(x + bias), bias of shape [x.shape[-1]]."""
    return torch.ops.cudalab.bias_act(x, bias, "relu")


def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias) as ``torch.nn.functional.gelu(x + bias, approximate=approximate)``:
    ``"none"`` (erf) or ``"tanh"``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"cudalab.bias_gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return torch.ops.cudalab.bias_act(x, bias, "gelu_erf" if approximate == "none" else "gelu_tanh")


def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)``."""
    return torch.ops.cudalab.layer_norm(x, weight, bias, eps)[0]


def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """``torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps)``."""
    return torch.ops.cudalab.rms_norm(x, weight, eps)[0]


def add_layer_norm(x: Tensor, residual: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> tuple[Tensor, Tensor]:
    """``h = x + residual`` and ``layer_norm(h)`` in one pass, returned as ``(layer_norm(h), h)``:
    a pre-norm block's residual add and the next norm. h is summed in fp32 and rounded to x's dtype,
    as ``x + residual`` is; gradients flow into both outputs."""
    y, h, _, _ = torch.ops.cudalab.add_layer_norm(x, residual, weight, bias, eps)
    return y, h


def add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """``h = x + residual`` and ``rms_norm(h)`` in one pass, returned as ``(rms_norm(h), h)``."""
    y, h, _ = torch.ops.cudalab.add_rms_norm(x, residual, weight, eps)
    return y, h


def softmax(x: Tensor) -> Tensor:
    """``torch.softmax(x, dim=-1)``."""
    return torch.ops.cudalab.softmax(x)


def swiglu(gate: Tensor, up: Tensor) -> Tensor:
    """``torch.nn.functional.silu(gate) * up``, element-wise over two tensors of one shape (a Llama
    MLP's gate and up projections)."""
    return torch.ops.cudalab.swiglu(gate, up)


def geglu(gate: Tensor, up: Tensor) -> Tensor:
    """``torch.nn.functional.gelu(gate, approximate="tanh") * up``, element-wise over two tensors of
    one shape (a Gemma MLP's gate and up projections)."""
    return torch.ops.cudalab.geglu(gate, up)


def swiglu_packed(x: Tensor) -> Tensor:
    """:func:`swiglu` on one tensor ``x`` [..., 2F] whose last dimension holds the gate's F
    columns, then up's (one Linear of 2F outputs, the gate and up projections fused): y [..., F].
    Nothing is split or copied: the kernels read the two halves where they lie, and the backward
    writes dx in x's layout, the fused projection's gradient as it is. Differentiable in x."""
    return torch.ops.cudalab.swiglu_packed(x)


def geglu_packed(x: Tensor) -> Tensor:
    """:func:`geglu` on one tensor ``x`` [..., 2F], the gate's F columns, then up's, as
    :func:`swiglu_packed` takes them."""
    return torch.ops.cudalab.geglu_packed(x)


def rope(
    x: Tensor, cos: Tensor, sin: Tensor, seq_dim: int = 1, interleaved: bool = False, position_offset: int = 0
) -> Tensor:
    """Rotary position embedding of q or k: ``x`` [batch, seq, heads, head_dim] (``seq_dim=1``) or
    [batch, heads, seq, head_dim] (``seq_dim=2``, Hugging Face's layout), dense (contiguous, or a
    transpose of a contiguous tensor: read and written as it lies), float32, float16 or bfloat16;
    ``cos`` and ``sin`` float32 [positions, head_dim // 2], row p the angles of position p. Pairs are
    (i, i + head_dim / 2) as Llama's ``rotate_half``, or (2i, 2i + 1) with ``interleaved`` (GPT-J).
    Token t of the sequence takes position ``position_offset + t`` (decode). Equals Hugging Face's
    ``apply_rotary_pos_emb`` with cos and sin of [seq, head_dim] made by repeating these halves;
    differentiable in x."""
    return torch.ops.cudalab.rope(x, cos, sin, seq_dim, interleaved, position_offset)


def rope_packed(
    qkv: Tensor, cos: Tensor, sin: Tensor, heads: int, kv_heads: int | None = None, position_offset: int = 0
) -> Tensor:
    """:func:`rope` on a fused q-k-v projection's output, in :func:`attention_packed`'s layout:
    ``qkv`` [batch, seq, (heads + 2 * kv_heads) * head_dim] (contiguous) holds each position's q
    heads, then k's, then v's. Returns a tensor of qkv's shape with the q and k heads rotated
    (half-split pairs, Llama's) and the v heads copied, ready for :func:`attention_packed`: the
    projection's output is never split. Differentiable in qkv."""
    return torch.ops.cudalab.rope_packed(qkv, cos, sin, heads, heads if kv_heads is None else kv_heads, position_offset)


def cross_entropy(
    logits: Tensor,
    target: Tensor,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    *,
    z_loss: float = 0.0,
    softcap: float = 0.0,
) -> Tensor:
    """``torch.nn.functional.cross_entropy(logits, target, reduction=reduction,
    ignore_index=ignore_index, label_smoothing=label_smoothing)`` for logits [..., vocab] (float32,
    float16, bfloat16; contiguous) and int64 class indices [...]: the loss in the logits' dtype,
    computed in fp32. No class weights. A row whose target is ``ignore_index`` adds nothing; the
    mean divides by the rows not ignored. ``softcap`` > 0 takes the logits as ``softcap *
    tanh(logits / softcap)`` first (Gemma 2's final softcapping); ``z_loss`` adds ``z_loss * lse^2``
    to each row's loss (PaLM's auxiliary loss), lse being the row's log-sum-exp.

    With a gradient to compute and a mean or sum, the forward writes the logits' gradient in the
    same pass (one read of the logits for the loss and its gradient); the backward scales it in
    place by the incoming gradient, read on the device (no pass when it is 1, no synchronization),
    so the graph takes one backward. That gradient is held from the forward to the backward,
    [..., vocab] in the logits' dtype, as Liger-Kernel's is. ``reduction="none"`` runs the backward
    from the saved log-sum-exp instead."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cudalab.cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if logits.dim() < 1 or target.shape != logits.shape[:-1]:
        raise ValueError(
            f"cudalab.cross_entropy: target must have logits' shape without its last dimension, got logits "
            f"{tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    rows = logits.reshape(-1, logits.shape[-1])
    flat_target = target.reshape(-1)
    options = (z_loss, softcap)
    if reduction != "none" and torch.is_grad_enabled() and logits.requires_grad:
        loss = _FusedCrossEntropy.apply(rows, flat_target, reduction == "mean", ignore_index, label_smoothing, options)
        return loss.to(logits.dtype)
    loss = torch.ops.cudalab.cross_entropy(rows, flat_target, ignore_index, label_smoothing, False, None, *options)[0]
    if reduction == "none":
        return loss.reshape(target.shape).to(logits.dtype)
    total = loss.sum()
    if reduction == "mean":
        total = total / (flat_target != ignore_index).sum()
    return total.to(logits.dtype)


def linear_cross_entropy(
    x: Tensor,
    weight: Tensor,
    target: Tensor,
    bias: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    chunk_rows: int | None = None,
    *,
    z_loss: float = 0.0,
    softcap: float = 0.0,
) -> Tensor:
    """``F.cross_entropy(F.linear(x, weight, bias), target, ...)``, a language model's head and its
    loss, without the [tokens, vocab] logits: the tokens go in chunks of ``chunk_rows``, each
    chunk's logits (cudalab's GEMM), loss and gradient (:func:`cross_entropy`'s fused pass) and its
    shares of the gradients of x, weight and bias (cudalab's GEMM, the weight's accumulated in place)
    computed in the forward and scaled by the incoming gradient in the backward, as Liger-Kernel's
    fused linear cross-entropy does. x [..., hidden], weight [vocab, hidden], bias [vocab] or None,
    target [...] int64; float32, float16 or bfloat16 (the autocast dtype under ``torch.autocast``);
    reduction ``"mean"`` or ``"sum"``; ``z_loss`` and ``softcap`` as :func:`cross_entropy`'s.
    Memory beyond the gradients: one chunk's logits, their gradient written over them.
    ``chunk_rows`` defaults to an eighth of the tokens, at least 1024 rows, in chunks long enough for
    the weight's gradient (read and written once a chunk) to stay a small part of the time: an
    eighth of the logits' memory from 8192 tokens up. The graph takes one backward."""
    if reduction not in ("mean", "sum"):
        raise ValueError(f"cudalab.linear_cross_entropy: reduction must be 'mean' or 'sum', got {reduction!r}")
    if weight.dim() != 2 or x.dim() < 1 or x.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"cudalab.linear_cross_entropy: weight must be [vocab, hidden] with hidden = x's last dimension, got x "
            f"{tuple(x.shape)} and weight {tuple(weight.shape)}"
        )
    if target.shape != x.shape[:-1]:
        raise ValueError(
            f"cudalab.linear_cross_entropy: target must have x's shape without its last dimension, got x "
            f"{tuple(x.shape)} and target {tuple(target.shape)}"
        )
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ValueError(
            f"cudalab.linear_cross_entropy: bias must be [vocab] = [{weight.shape[0]}], got {tuple(bias.shape)}"
        )
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"cudalab.linear_cross_entropy: chunk_rows must be positive, got {chunk_rows}")
    x, weight, bias = autocast_inputs(x, weight, bias)
    if not torch.is_grad_enabled():  # autograd.Function's needs_input_grad would still ask for gradients
        x, weight, bias = (t.detach() if t is not None else None for t in (x, weight, bias))
    rows = x.reshape(-1, x.shape[-1]).contiguous()
    tokens = rows.shape[0]
    if chunk_rows is None:
        chunk_rows = max(1024, -(-tokens // 8))
    options = (ignore_index, label_smoothing, z_loss, softcap)
    flat_target, mean = target.reshape(-1).contiguous(), reduction == "mean"
    return _LinearCrossEntropy.apply(rows, weight, bias, flat_target, mean, options, chunk_rows).to(x.dtype)


class _LinearCrossEntropy(torch.autograd.Function):
    """linear_cross_entropy's chunks: the loss, and the gradients of x, weight and bias for an
    incoming gradient of 1 (each chunk's logits' gradient scaled by 1 / the rows counted for a
    mean, on the device), scaled in place by the real one in the backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, target, mean, options, chunk_rows):
        ignore_index, label_smoothing, z_loss, softcap = options
        tokens, vocab = x.shape[0], weight.shape[0]
        counted = (target != ignore_index).sum()
        scale = (1.0 / counted.clamp_min(1).float()).reshape(1) if mean else x.new_ones(1, dtype=torch.float32)
        need_x, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        need_b = bias is not None and ctx.needs_input_grad[2]
        with_gradient = need_x or need_w or need_b
        losses = x.new_empty(tokens, dtype=torch.float32)
        dx = torch.empty_like(x) if need_x else None
        dw = torch.zeros_like(weight, memory_format=torch.contiguous_format) if need_w else None
        db = x.new_zeros(vocab, dtype=torch.float32) if need_b else None
        # The fp32 GEMM takes row-major operands only: the weight as [hidden, vocab] once.
        fp32 = x.dtype == torch.float32
        head = weight.t().contiguous() if fp32 else weight
        for start in range(0, tokens, chunk_rows):
            end = min(start + chunk_rows, tokens)
            chunk = x[start:end]
            with_bias = bias.expand(end - start, vocab) if bias is not None else None
            logits = torch.ops.cudalab.gemm(chunk, head, with_bias, 1.0, 1.0 if bias is not None else 0.0, not fp32)
            if with_gradient:  # the gradient written over the logits: one chunk-sized buffer
                loss, _ = torch.ops.cudalab.cross_entropy_(
                    logits, target[start:end], ignore_index, label_smoothing, scale, z_loss, softcap
                )
                dlogits = logits
            else:
                loss, _, dlogits = torch.ops.cudalab.cross_entropy(
                    logits, target[start:end], ignore_index, label_smoothing, False, scale, z_loss, softcap
                )
            losses[start:end] = loss
            del logits
            if need_x:  # dx = dlogits W: [rows, vocab] @ [vocab, hidden]
                torch.ops.cudalab.gemm_(dx[start:end], dlogits, weight, 1.0, 0.0, False)
            if need_w:  # dW += dlogits^T x; the fp32 kernels take row-major operands only. No name
                # holds the transposed view: it would keep this chunk's buffer alive into the next.
                torch.ops.cudalab.gemm_(dw, dlogits.mT.contiguous() if fp32 else dlogits.mT, chunk, 1.0, 1.0, False)
            if need_b:
                db += dlogits.sum(0, dtype=torch.float32)
            del dlogits  # before the next chunk's logits are made
        total = losses.sum()
        ctx.save_for_backward(dx, dw, db)
        ctx.bias_dtype = bias.dtype if bias is not None else None
        ctx.consumed = False
        return total / counted if mean else total

    @staticmethod
    @once_differentiable  # scaled in place: no graph to differentiate again
    def backward(ctx, grad):
        dx, dw, db = _scaled_in_place(ctx, grad, "linear_cross_entropy")
        return dx, dw, db.to(ctx.bias_dtype) if db is not None else None, None, None, None, None


def _scaled_in_place(ctx, grad, op):
    """The gradients a fused loss saved in its forward (for an incoming gradient of 1), scaled in
    place by `grad` (read on the device: no synchronization); a second backward is refused."""
    if ctx.consumed:
        raise RuntimeError(
            f"cudalab.{op}: its gradient was computed in the forward and scaled in place by the first backward; "
            "a second backward through the same graph (retain_graph=True) cannot reuse it"
        )
    ctx.consumed = True
    scale = grad.float().reshape(1)
    saved = ctx.saved_tensors
    for g in saved:
        if g is not None:
            torch.ops.cudalab.cross_entropy_scale_gradient_(g, scale)
    return saved


class _FusedCrossEntropy(torch.autograd.Function):
    """The mean or sum of the per-row losses, with their gradient computed in the forward pass for an
    incoming gradient of 1 (scaled by 1 / the rows not ignored for a mean, on the device). The
    backward scales it in place by the incoming gradient, read on the device (no pass at 1, no host
    synchronization), so it runs once: a second backward through the same graph is refused."""

    @staticmethod
    def forward(ctx, rows, target, mean, ignore_index, label_smoothing, options):
        counted = (target != ignore_index).sum()
        scale = (1.0 / counted.clamp_min(1).float()).reshape(1) if mean else None
        loss, _, dlogits = torch.ops.cudalab.cross_entropy(
            rows, target, ignore_index, label_smoothing, True, scale, *options
        )
        ctx.save_for_backward(dlogits)
        ctx.consumed = False
        return loss.sum() / counted if mean else loss.sum()

    @staticmethod
    @once_differentiable  # scaled in place: no graph to differentiate again
    def backward(ctx, grad):
        (dlogits,) = _scaled_in_place(ctx, grad, "cross_entropy")
        return dlogits, None, None, None, None, None


def gemm(
    a: Tensor, b: Tensor, c: Tensor | None = None, alpha: float = 1.0, beta: float = 0.0, b_transposed: bool = False
) -> Tensor:
    """``alpha * a @ op(b) + beta * c`` for matrices ``a`` [m, k] or batches [batch, m, k]; ``op(b)``
    is ``b`` ([k, n]) or, with ``b_transposed``, ``b.mT`` for ``b`` given as [n, k] (``nn.Linear``'s
    weight). FP32 runs on CUDA cores (no TF32), 16-bit types on tensor cores with FP32 accumulation.

    ``a`` and ``b`` are read where they lie, as matrices whose rows or whose columns are contiguous
    (rows or columns at least their length apart, so slices of wider matrices too), with any batch
    stride (0: one matrix for the whole batch). In bfloat16 and float16 either layout of each runs
    without a copy: ``a`` or ``a.mT`` of a contiguous [k, m], ``b`` [k, n] or a ``.mT`` view of a
    contiguous [n, k], and the same with ``b_transposed``. The fp32 kernels take ``a`` [m, k] and
    ``op(b)`` [k, n] with contiguous rows only, and refuse other layouts (call ``.contiguous()``).
    Matrices with neither rows nor columns contiguous are refused (ValueError) by name. ``c`` has
    the output's shape, or is a row of n values broadcast over every row (a bias: its gradient is
    then the column sums of the output's, one cudalab kernel); it may have any strides: in bf16 and
    float16 a single product reads it where it lies when its columns are contiguous (a broadcast
    row included), otherwise it is copied into the new contiguous output first. Sizes may be 0: k = 0 gives
    ``beta * c``, m = 0 or n = 0 an empty output. Under ``torch.autocast`` on CUDA, a, b and c are
    cast to the autocast dtype first, as ``torch.matmul``'s are."""
    a, b, c = autocast_inputs(a, b, c)
    return torch.ops.cudalab.gemm(a, b, c, alpha, beta, b_transposed)


def gemm_fp8(
    a: Tensor, b: Tensor, scale_a: Tensor | None = None, scale_b: Tensor | None = None, alpha: float = 1.0
) -> Tensor:
    """``alpha * scale_a * scale_b * a @ b.T`` in bfloat16 for ``torch.float8_e4m3fn`` a [m, k] and b
    [n, k] (a Linear's activations and its weight as stored), both contiguous: ``torch._scaled_mm(a,
    b.T, scale_a, scale_b, out_dtype=torch.bfloat16)``. The scales are float32 tensors of one element
    on the GPU (the inputs' dequantization factors), or None for 1. FP32 accumulation, promoted out
    of the tensor cores every 128 of k. Hopper (compute capability 9.0) only; not differentiable."""
    return torch.ops.cudalab.gemm_fp8(a, b, scale_a, scale_b, alpha)


def quantize_fp8(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """x (float32, float16 or bfloat16, contiguous) as ``torch.float8_e4m3fn`` with one scale from its
    own largest magnitude: returns ``(q, scale, amax)`` with amax the largest finite ``|x|`` (NaN
    and inf left out), ``scale = amax / 448`` (1 where amax is 0) and ``q = x * (448 / amax)``
    rounded to e4m3, saturating at +-448 (inf included; NaN stays NaN); scale and amax are float32
    tensors of one element. ``q`` and ``scale`` are what :func:`gemm_fp8` takes as an input and its
    scale. Not differentiable."""
    return torch.ops.cudalab.quantize_fp8(x)


def quantize_fp8_scaled(x: Tensor, scale: Tensor) -> tuple[Tensor, Tensor]:
    """Delayed scaling: x (float32, float16 or bfloat16, contiguous) as ``torch.float8_e4m3fn`` with
    a scale given (a float32 tensor of one element on x's GPU, chosen from earlier amaxes), and x's
    own amax for the next scale, in one read of x: returns ``(q, amax)`` with ``q = x * (1 / scale)``
    rounded to e4m3, saturating at +-448 (the multiplier 1 where scale is not a positive finite
    float), and amax the largest finite ``|x|``. ``q`` and ``scale`` go to :func:`gemm_fp8` as an
    input and its scale. Not differentiable."""
    return torch.ops.cudalab.quantize_fp8_scaled(x, scale)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``torch.nn.functional.linear(x, weight, bias)``: ``x @ weight.mT + bias`` over x's last
    dimension (weight [out_features, in_features], bias [out_features] or None) by cudalab's GEMM,
    the weight read as stored and the bias added as the GEMM's C; under ``torch.autocast`` on CUDA
    all three are cast to the autocast dtype first. One C++ call (composite over ``cudalab::gemm``,
    whose autograd it uses)."""
    x, weight, bias = autocast_inputs(x, weight, bias)
    return torch.ops.cudalab.linear(x, weight, bias)


_ACTIVATIONS = ("relu", "gelu_tanh", "gelu_erf", "silu")


def _check_activation(op, activation):
    if activation not in _ACTIVATIONS:
        raise ValueError(f"cudalab.{op}: activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")


def linear_activation(x: Tensor, weight: Tensor, bias: Tensor | None, activation: str) -> Tensor:
    """``act(F.linear(x, weight, bias))``, act ``"relu"``, ``"gelu_tanh"`` (``F.gelu(...,
    approximate="tanh")``), ``"gelu_erf"`` (``F.gelu``) or ``"silu"`` (``F.silu``). In bfloat16 and float16 the activation
    runs in the GEMM's epilogue (:func:`gemm`'s kernels on Hopper; a second pass elsewhere), which
    also keeps its derivative for the backward (not when nothing needs a gradient); the backward
    multiplies by it, sums the bias's gradient, then runs the two products. float32 runs :func:`linear` and
    the bias + activation kernel of :func:`bias_relu` and :func:`bias_gelu`. Under ``torch.autocast`` the inputs are cast to
    the autocast dtype first."""
    _check_activation("linear_activation", activation)
    x, weight, bias = autocast_inputs(x, weight, bias)
    if x.dtype == torch.float32:
        zero = torch.zeros(weight.shape[0], dtype=x.dtype, device=x.device)
        return torch.ops.cudalab.bias_act(linear(x, weight, bias).contiguous(), zero, activation)
    rows = x.reshape(-1, x.shape[-1])
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias)):
        y = _LinearActivation.apply(rows, weight, bias, activation)
    else:  # nothing to differentiate: the derivative is not stored
        y = torch.ops.cudalab.gemm_activation(rows, weight, bias, activation, True, False)[0]
    return y.reshape(*x.shape[:-1], weight.shape[0])


def mlp(
    x: Tensor, fc_weight: Tensor, fc_bias: Tensor | None, out_weight: Tensor, out_bias: Tensor | None, activation: str
) -> Tensor:
    """A transformer's MLP, ``F.linear(act(F.linear(x, fc_weight, fc_bias)), out_weight, out_bias)``,
    with the activation fused into both passes' GEMMs: the forward's first product applies it in
    its epilogue (keeping its derivative), and the backward's first product, ``dy @
    out_weight``, multiplies by that derivative and sums fc_bias's gradient in its epilogue, so no
    pass of the activation's own runs either way. Activations as :func:`linear_activation`'s;
    bfloat16 and float16 (float32 runs the unfused ops). Under ``torch.autocast`` the inputs are
    cast to the autocast dtype first. Measured on an H200 a training step takes 0.91-1.00x the time
    of :func:`linear`, :func:`bias_gelu` and :func:`linear` (docs/gemm-tensor-cores.md)."""
    _check_activation("mlp", activation)
    x, fc_weight, fc_bias, out_weight, out_bias = autocast_inputs(x, fc_weight, fc_bias, out_weight, out_bias)
    if x.dtype == torch.float32:
        return linear(linear_activation(x, fc_weight, fc_bias, activation), out_weight, out_bias)
    rows = x.reshape(-1, x.shape[-1])
    y = _Mlp.apply(rows, fc_weight, fc_bias, out_weight, out_bias, activation)
    return y.reshape(*x.shape[:-1], out_weight.shape[0])


class _LinearActivation(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, activation):
        y, g = torch.ops.cudalab.gemm_activation(x, weight, bias, activation, True)
        ctx.save_for_backward(x, weight, g)
        ctx.with_bias = bias is not None
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, weight, g = ctx.saved_tensors
        dz = dy * g  # the activation's gradient: its derivative, kept by the forward
        db = torch.ops.cudalab.bias_gradient(dz) if ctx.with_bias and ctx.needs_input_grad[2] else None
        dx = torch.ops.cudalab.gemm(dz, weight) if ctx.needs_input_grad[0] else None
        dw = torch.ops.cudalab.gemm(dz.mT, x) if ctx.needs_input_grad[1] else None
        return dx, dw, db, None


class _Mlp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fc_weight, fc_bias, out_weight, out_bias, activation):
        h, g = torch.ops.cudalab.gemm_activation(x, fc_weight, fc_bias, activation, True)
        with_out_bias = out_bias is not None
        y = torch.ops.cudalab.gemm(h, out_weight, out_bias, 1.0, 1.0 if with_out_bias else 0.0, True)
        ctx.save_for_backward(x, fc_weight, out_weight, h, g)
        ctx.with_biases = (fc_bias is not None, with_out_bias)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        x, fc_weight, out_weight, h, g = ctx.saved_tensors
        need = ctx.needs_input_grad
        with_fc_bias, with_out_bias = ctx.with_biases
        dy = dy.contiguous()
        # dz = (dy @ out_weight) * act'(v), with act'(v) kept by the forward, and fc_bias's
        # gradient, in one product.
        dz, dfc_bias = torch.ops.cudalab.gemm_activation_backward(dy, out_weight, g, False, with_fc_bias and need[2])
        if need[3] and with_out_bias and need[4]:  # out_weight's gradient and out_bias's in one product
            dout_weight, dout_bias = torch.ops.cudalab.gemm_weight_gradient(dy, h)
        else:
            dout_weight = torch.ops.cudalab.gemm(dy.mT, h) if need[3] else None
            dout_bias = torch.ops.cudalab.bias_gradient(dy) if with_out_bias and need[4] else None
        dfc_weight = torch.ops.cudalab.gemm(dz.mT, x) if need[1] else None
        dx = torch.ops.cudalab.gemm(dz, fc_weight) if need[0] else None
        return dx, dfc_weight, dfc_bias if with_fc_bias and need[2] else None, dout_weight, dout_bias, None


def reduce_sum(x: Tensor) -> Tensor:
    """The sum of all of x's elements, a 0-dim tensor of x's dtype (float32 or int32):
    ``torch.sum(x, dtype=x.dtype)``. float32 sums in fp32 by a deterministic tree, within about
    ``2 log2(n) eps sum|x|``; int32 wraps around on overflow (``torch.sum`` would give int64).
    An empty x sums to 0."""
    return torch.ops.cudalab.reduce_sum(x)


def inclusive_scan(x: Tensor) -> Tensor:
    """Prefix sums over x as one flat array, in x's shape and dtype (float32 or int32):
    ``torch.cumsum(x.flatten(), 0, dtype=x.dtype).view_as(x)``. float32 adds in an order that
    changes from run to run (not bitwise reproducible; within about ``log2(n) eps`` times the
    prefix's sum of magnitudes); int32 wraps around on overflow."""
    return torch.ops.cudalab.inclusive_scan(x)


def exclusive_scan(x: Tensor) -> Tensor:
    """As :func:`inclusive_scan`, each element's sum leaving the element itself out (the first is
    0): the inclusive scan shifted one place along the flat array."""
    return torch.ops.cudalab.exclusive_scan(x)


def select_at_least(x: Tensor, threshold: int) -> Tensor:
    """The int32 elements of x that are ``>= threshold``, in their order, as a 1-D tensor:
    ``torch.masked_select(x, x >= threshold)``. The output's size is counted on the GPU and read
    back, so the call waits for the current stream (synchronizes), as masked_select does; under
    torch.compile that size is data-dependent. threshold must fit in int32."""
    return torch.ops.cudalab.select_at_least(x, threshold)


def histogram(samples: Tensor, bins: int) -> Tensor:
    """int32 counts [bins] of the values 0 to bins - 1 among ``samples`` (read flat):
    ``torch.bincount(samples.long(), minlength=bins)[:bins].int()``. uint8 samples take
    ``bins=256``; uint16 samples 1 to 65536 bins, samples ``>= bins`` not counted (where bincount
    would grow its output). Fewer than 2^31 samples, so that no count overflows int32."""
    return torch.ops.cudalab.histogram(samples, bins)


def transpose(x: Tensor) -> Tensor:
    """The float32 matrix x [rows, cols] transposed into a new contiguous [cols, rows]:
    ``x.t().contiguous()``."""
    return torch.ops.cudalab.transpose(x)


def conv2d(image: Tensor, filter: Tensor) -> Tensor:
    """One float32 channel ``image`` [H, W] filtered by a square ``filter`` [R, R], R odd, 1 to 7,
    into [H, W]: ``F.conv2d(image[None, None], filter[None, None], padding=R // 2)[0, 0]``, a
    cross-correlation (the filter is not flipped) with pixels outside the image read as 0. At most
    2,097,120 rows. No autograd: the library has no backward, so a backward through it raises."""
    return torch.ops.cudalab.conv2d(image, filter)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention's forward: ``(o, lse)`` with ``o = softmax(scale * q @ k.mT) @ v``
    (``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
    enable_gqa=True)``) and ``lse`` each query row's natural log-sum-exp of its scaled, masked scores,
    float32 [batch, heads, seq].

    q is [batch, heads, seq, head_dim]; k and v [batch, kv_heads, seq, head_dim] with heads a
    multiple of kv_heads (grouped-query attention: query head h reads kv head h // (heads //
    kv_heads)); one dtype, bfloat16, float16 or float32; head_dim contiguous, any other strides:
    the ``.transpose(1, 2)`` of a [batch, seq, heads, head_dim] tensor is read where it lies (on
    Hopper's kernels; other paths copy it to a dense array first). o comes back laid out as q: as
    [batch, seq, heads, head_dim] transposed where q's heads lie closer than its positions, else
    dense; the backward's dq, dk and dv likewise. The library takes one sequence length for queries
    and keys, so q, k and v share seq. ``scale``
    defaults to ``1 / sqrt(head_dim)``; ``causal`` lets query i attend to keys j <= i;
    ``window_size=(left, right)``, as FlashAttention's, lets it attend to keys i - left .. i + right
    only (-1: that side unbounded; a Mistral-style window of W keys is ``causal=True,
    window_size=(W - 1, 0)``), and the kernels skip the key tiles outside it. Arithmetic is
    fp32; the 16-bit inputs' probabilities are rounded to the input type before ``@ v``, as
    FlashAttention does. bf16/f16 with head_dim 64 or 128 run on tensor cores (compute capability
    8.0+), and on Hopper any head_dim that is a multiple of 8 up to 256; the rest on CUDA cores.

    Differentiable in q, k and v (``lse`` is not): the backward (``cudalab::attention_backward``)
    takes the saved q, k, v, o and lse and runs FlashAttention-2's backward on tensor cores for
    bf16/f16 at head_dim 64 or 128, and on Hopper at any multiple of 8 up to 128 (scratch O(seq),
    dq summed by fp32 atomics, so
    its last bits may vary from run to run), and a CUDA-core fallback everywhere else, which
    materializes the probabilities and their gradients in fp32: 8 * batch * heads * seq^2 bytes of
    scratch (8 GiB at 4 x 16 x 4096)."""
    q, k, v = autocast_inputs(q, k, v)
    left, right = window_size
    return torch.ops.cudalab.attention(q, k, v, scale, causal, left, right)


def sdpa(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``torch.nn.functional.scaled_dot_product_attention``'s call, on :func:`attention` where it
    can: the same arguments, O only, differentiable. cudalab runs 4-d CUDA q, k and v of one
    sequence length and head_dim (k and v with fewer heads than q under ``enable_gqa``, as torch
    requires), with no ``attn_mask`` and no dropout; every other call goes to
    ``F.scaled_dot_product_attention`` itself, so a call means what torch's does (its causal mask
    for a query shorter than its keys is aligned top-left, which :func:`attention` never takes)."""
    takes = (
        attn_mask is None
        and dropout_p == 0.0
        and query.is_cuda
        and query.dim() == key.dim() == value.dim() == 4
        and query.shape[2] == key.shape[2] == value.shape[2]
        and query.shape[3] == key.shape[3] == value.shape[3]
        and key.shape[1] == value.shape[1]
        and (key.shape[1] == query.shape[1] or enable_gqa)
    )
    if not takes:
        return torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa
        )
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (query, key, value))
    return attention(q, k, v, scale, is_causal)[0]


def attention_decode(
    q: Tensor,
    k_cache: Tensor,
    v_cache: Tensor,
    cache_seqlens: Tensor,
    scale: float | None = None,
    causal: bool = True,
    block_table: Tensor | None = None,
    window_size: tuple[int, int] = (-1, -1),
) -> tuple[Tensor, Tensor]:
    """Attention for generation with a key-value cache: the newest ``tokens`` queries of each
    sequence against its cache. Returns ``(o, lse)``: o like q, lse float32 [batch, heads, tokens].

    q is [batch, heads, tokens, head_dim]; k_cache and v_cache [batch, kv_heads, cache, head_dim]
    (heads a multiple of kv_heads), all contiguous and of one dtype (bfloat16, float16 or float32):
    a preallocated cache is passed whole. cache_seqlens (int32 [batch], on q's device) says how many
    rows of each sequence's cache hold its keys, the new tokens' included; query t of sequence b
    sits at position ``cache_seqlens[b] - tokens + t`` and, when ``causal``, sees the keys up to it.
    The same as ``F.scaled_dot_product_attention(q, k, v, enable_gqa=True)`` over each sequence's
    first ``cache_seqlens[b]`` keys with the causal mask aligned to the bottom right. bf16/f16 with
    head_dim 64 or 128 and (heads // kv_heads) * tokens <= 16 run the split-KV tensor-core kernel,
    which reads each kv head's cache once; the rest a CUDA-core kernel (head_dim up to 256). No
    autograd: this is the inference path.

    With ``block_table`` (int32 [batch, pages a sequence]) the caches are paged, as vLLM keeps
    them: k_cache and v_cache are [pages, kv_heads, page_size, head_dim], and key j of sequence b
    lies in page ``block_table[b, j // page_size]``. Pages of a multiple of 64 keys run the
    tensor-core kernel.

    ``window_size=(left, right)``, as :func:`attention`'s, keeps only the keys within it of each
    query's position (Mistral's window of W keys: ``(W - 1, 0)``); the tiles before the earliest
    query's window are not read."""
    left, right = window_size
    return torch.ops.cudalab.attention_decode(
        q, k_cache, v_cache, cache_seqlens, scale, causal, block_table, left, right
    )


def attention_packed(
    qkv: Tensor,
    heads: int,
    kv_heads: int | None = None,
    scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
) -> tuple[Tensor, Tensor]:
    """:func:`attention` on q, k and v packed in one tensor, as a fused projection gives them: qkv
    [batch, seq, (heads + 2 * kv_heads) * head_dim] (last dimension contiguous) holds at each
    position q's heads, then k's, then v's; ``kv_heads`` defaults to ``heads``. Returns ``(o,
    lse)`` with o [batch, seq, heads * head_dim], ready for the output projection, and lse [batch,
    heads, seq] float32. Nothing is copied around the kernels: the heads are read where they lie,
    and the backward writes dq, dk and dv into one gradient of qkv's shape (no split, no stack).
    Differentiable in qkv."""
    (qkv,) = autocast_inputs(qkv)
    left, right = window_size
    kv_heads = heads if kv_heads is None else kv_heads
    return torch.ops.cudalab.attention_packed(qkv, heads, kv_heads, scale, causal, left, right)


def attention_varlen(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    cu_seqlens_q: Tensor,
    cu_seqlens_k: Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    scale: float | None = None,
    causal: bool = False,
    window_size: tuple[int, int] = (-1, -1),
) -> tuple[Tensor, Tensor]:
    """:func:`attention` over a batch of sequences of different lengths packed along the rows with no
    padding, as FlashAttention's ``flash_attn_varlen_func`` takes them: ``(o, lse)`` for q
    [total_q, heads, head_dim] and k, v [total_k, kv_heads, head_dim] (head_dim contiguous, any
    other strides), o like q and lse [heads, total_q] float32. Sequence b's queries are rows
    ``cu_seqlens_q[b]:cu_seqlens_q[b + 1]`` and its keys rows ``cu_seqlens_k[b]:cu_seqlens_k[b +
    1]`` (int32 cumulative lengths on q's device, starting at 0); no sequence may be longer than
    max_seqlen_q queries or max_seqlen_k keys. Where a sequence has more keys than queries, its
    queries are its last positions (the causal mask aligned bottom-right, as FlashAttention's), and
    a query that sees no key gets o = 0 and lse = -inf. bfloat16 or float16, head_dim a multiple of
    8 up to 256 (the backward: up to 128), on Hopper (compute capability 9.0). Differentiable in q, k and v (lse is not)."""
    q, k, v = autocast_inputs(q, k, v)
    left, right = window_size
    return torch.ops.cudalab.attention_varlen(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal, left, right
    )


# ---- fake kernels: outputs' shapes, dtypes and devices, for FakeTensor, torch.compile and export


def _statistics(x):
    return x.new_empty(x.shape[:-1], dtype=torch.float32)


@torch.library.register_fake("cudalab::bias_act")
def _(x, bias, activation):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::bias_act_backward")
def _(x, bias, dy, activation):
    return torch.empty_like(x), torch.empty_like(bias)


@torch.library.register_fake("cudalab::bias_gradient")
def _(dy):
    return dy.new_empty(dy.shape[-1:])


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


@torch.library.register_fake("cudalab::add_layer_norm")
def _(x, residual, weight, bias, eps):
    return torch.empty_like(x), torch.empty_like(x), _statistics(x), _statistics(x)


@torch.library.register_fake("cudalab::add_layer_norm_backward")
def _(h, dy, dh, weight, mean, rstd):
    return torch.empty_like(h), torch.empty_like(weight), torch.empty_like(weight)


@torch.library.register_fake("cudalab::add_rms_norm")
def _(x, residual, weight, eps):
    return torch.empty_like(x), torch.empty_like(x), _statistics(x)


@torch.library.register_fake("cudalab::add_rms_norm_backward")
def _(h, dy, dh, weight, rstd):
    return torch.empty_like(h), torch.empty_like(weight)


@torch.library.register_fake("cudalab::softmax")
def _(x):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::softmax_backward")
def _(y, dy):
    return torch.empty_like(y)


def _gated_unit_fake(gate, up):
    return torch.empty_like(gate)


def _gated_unit_backward_fake(gate, up, dy):
    return torch.empty_like(gate), torch.empty_like(up)


def _packed_gated_unit_fake(x):
    return x.new_empty(*x.shape[:-1], x.shape[-1] // 2)


def _packed_gated_unit_backward_fake(x, dy):
    return torch.empty_like(x)


for _unit in ("swiglu", "geglu"):
    torch.library.register_fake(f"cudalab::{_unit}")(_gated_unit_fake)
    torch.library.register_fake(f"cudalab::{_unit}_backward")(_gated_unit_backward_fake)
    torch.library.register_fake(f"cudalab::{_unit}_packed")(_packed_gated_unit_fake)
    torch.library.register_fake(f"cudalab::{_unit}_packed_backward")(_packed_gated_unit_backward_fake)


@torch.library.register_fake("cudalab::adamw_")
def _(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, step):
    return None


@torch.library.register_fake("cudalab::adamw_master_")
def _(params, grads, masters, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, step):
    return None


@torch.library.register_fake("cudalab::rope")
def _(x, cos, sin, seq_dim=1, interleaved=False, position_offset=0):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::gemm_activation")
def _(a, b, bias, activation, b_transposed=False, derivative=True):
    shape = (a.shape[0], b.shape[0] if b_transposed else b.shape[1])
    return a.new_empty(shape), a.new_empty(shape if derivative else (0,))


@torch.library.register_fake("cudalab::gemm_activation_backward")
def _(a, b, derivative, b_transposed=False, bias_gradient=True):
    return torch.empty_like(derivative), derivative.new_empty(derivative.shape[1] if bias_gradient else 0)


@torch.library.register_fake("cudalab::gemm_weight_gradient")
def _(dy, x, alpha=1.0):
    return dy.new_empty(dy.shape[1], x.shape[1]), dy.new_empty(dy.shape[1])


@torch.library.register_fake("cudalab::gemm_fp8")
def _(a, b, scale_a=None, scale_b=None, alpha=1.0):
    return a.new_empty(a.shape[0], b.shape[0], dtype=torch.bfloat16)


@torch.library.register_fake("cudalab::_all_reduce_ipc_")
def _(x, handle):
    return None


@torch.library.register_fake("cudalab::quantize_fp8")
def _(x):
    return torch.empty_like(x, dtype=torch.float8_e4m3fn), x.new_empty(1, dtype=torch.float32), x.new_empty(
        1, dtype=torch.float32
    )


@torch.library.register_fake("cudalab::quantize_fp8_scaled")
def _(x, scale):
    return torch.empty_like(x, dtype=torch.float8_e4m3fn), x.new_empty(1, dtype=torch.float32)


@torch.library.register_fake("cudalab::rope_packed")
def _(qkv, cos, sin, heads, kv_heads, position_offset=0):
    return torch.empty_like(qkv)


@torch.library.register_fake("cudalab::rope_packed_backward")
def _(dy, cos, sin, heads, kv_heads, position_offset=0):
    return torch.empty_like(dy)


@torch.library.register_fake("cudalab::rope_backward")
def _(dy, cos, sin, seq_dim=1, interleaved=False, position_offset=0):
    return torch.empty_like(dy)


@torch.library.register_fake("cudalab::cross_entropy")
def _(logits, target, ignore_index, label_smoothing, with_gradient, grad_scale, z_loss=0.0, softcap=0.0):
    rows = logits.new_empty(logits.shape[:1], dtype=torch.float32)
    dlogits = torch.empty_like(logits) if with_gradient else logits.new_empty((0,))
    return rows, torch.empty_like(rows), dlogits


@torch.library.register_fake("cudalab::cross_entropy_")
def _(logits, target, ignore_index, label_smoothing, grad_scale, z_loss=0.0, softcap=0.0):
    rows = logits.new_empty(logits.shape[:1], dtype=torch.float32)
    return rows, torch.empty_like(rows)


@torch.library.register_fake("cudalab::cross_entropy_backward")
def _(logits, target, lse, dloss, ignore_index, label_smoothing, z_loss=0.0, softcap=0.0):
    return torch.empty_like(logits)


@torch.library.register_fake("cudalab::gemm_")
def _(c, a, b, alpha=1.0, beta=0.0, b_transposed=False):
    return None


@torch.library.register_fake("cudalab::cross_entropy_scale_gradient_")
def _(dlogits, dloss):
    return None


@torch.library.register_fake("cudalab::gemm")
def _(a, b, c=None, alpha=1.0, beta=0.0, b_transposed=False):
    n = b.shape[-2] if b_transposed else b.shape[-1]
    return a.new_empty((*a.shape[:-1], n))


@torch.library.register_fake("cudalab::reduce_sum")
def _(x):
    return x.new_empty(())


@torch.library.register_fake("cudalab::inclusive_scan")
def _(x):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::exclusive_scan")
def _(x):
    return torch.empty_like(x)


@torch.library.register_fake("cudalab::select_at_least")
def _(x, threshold):
    # As many elements as pass, which only running the op tells.
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())


@torch.library.register_fake("cudalab::histogram")
def _(samples, bins):
    return samples.new_empty(bins, dtype=torch.int32)


@torch.library.register_fake("cudalab::transpose")
def _(x):
    return x.new_empty((x.shape[1], x.shape[0]))


@torch.library.register_fake("cudalab::conv2d")
def _(image, filter):
    return torch.empty_like(image)


def _laid_out_like(t):
    # As csrc/attention.cpp allocates an output like t ([batch, heads, seq, head_dim]): [batch, seq,
    # heads, head_dim] transposed where t's heads lie closer than its positions, else dense.
    if t.stride(1) < t.stride(2):
        return t.new_empty((t.shape[0], t.shape[2], t.shape[1], t.shape[3])).transpose(1, 2)
    return t.new_empty(t.shape)


@torch.library.register_fake("cudalab::attention")
def _(q, k, v, scale=None, causal=False, window_left=-1, window_right=-1):
    return _laid_out_like(q), q.new_empty(q.shape[:-1], dtype=torch.float32)


@torch.library.register_fake("cudalab::attention_backward")
def _(q, k, v, o, lse, do, scale=None, causal=False, window_left=-1, window_right=-1):
    return _laid_out_like(q), _laid_out_like(k), _laid_out_like(v)


@torch.library.register_fake("cudalab::attention_decode")
def _(q, k_cache, v_cache, cache_seqlens, scale=None, causal=True, block_table=None, window_left=-1, window_right=-1):
    return q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32)


@torch.library.register_fake("cudalab::attention_packed")
def _(qkv, heads, kv_heads, scale=None, causal=False, window_left=-1, window_right=-1):
    batch, seq, width = qkv.shape
    head_dim = width // (heads + 2 * kv_heads)
    return qkv.new_empty((batch, seq, heads * head_dim)), qkv.new_empty((batch, heads, seq), dtype=torch.float32)


@torch.library.register_fake("cudalab::attention_packed_backward")
def _(qkv, o, lse, do, heads, kv_heads, scale=None, causal=False, window_left=-1, window_right=-1):
    return qkv.new_empty(qkv.shape)


@torch.library.register_fake("cudalab::attention_varlen")
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale=None, causal=False, window_left=-1,
      window_right=-1):
    return q.new_empty(q.shape), q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


@torch.library.register_fake("cudalab::attention_varlen_backward")
def _(q, k, v, o, lse, do, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale=None, causal=False,
      window_left=-1, window_right=-1):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


# ---- autograd: each forward's gradient through its backward op. gemm, layer_norm, rms_norm, their add_ forms,
# bias_act, swiglu, geglu, rope, attention and attention_packed have theirs in C++
# (csrc/autograd.cpp): a model calls them hundreds of times a step, and this path costs more host
# time.


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _softmax_backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return torch.ops.cudalab.softmax_backward(y, dy.contiguous())


torch.library.register_autograd("cudalab::softmax", _softmax_backward, setup_context=_softmax_setup)


def _attention_varlen_setup(ctx, inputs, output):
    q, k, v, cu_seqlens_q, cu_seqlens_k = inputs[:5]
    ctx.save_for_backward(q, k, v, output[0], output[1], cu_seqlens_q, cu_seqlens_k)
    # The schema's defaults where a call left them out.
    ctx.options = tuple(inputs[5:]) + (None, False, -1, -1)[len(inputs) - 7 :]
    ctx.mark_non_differentiable(output[1])


def _attention_varlen_backward(ctx, do, dlse):
    # o's gradient only: lse is not differentiable (as FlashAttention's).
    q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k = ctx.saved_tensors
    if do.stride(-1) != 1:
        do = do.contiguous()
    dq, dk, dv = torch.ops.cudalab.attention_varlen_backward(
        q, k, v, o, lse, do, cu_seqlens_q, cu_seqlens_k, *ctx.options
    )
    return dq, dk, dv, None, None, None, None, None, None, None, None


torch.library.register_autograd(
    "cudalab::attention_varlen", _attention_varlen_backward, setup_context=_attention_varlen_setup
)


def _cross_entropy_setup(ctx, inputs, output):
    logits, target, ignore_index, label_smoothing = inputs[:4]
    z_loss, softcap = (tuple(inputs[6:]) + (0.0, 0.0))[:2]  # the schema's defaults where not given
    ctx.save_for_backward(logits, target, output[1])
    ctx.options = (ignore_index, label_smoothing, z_loss, softcap)


def _cross_entropy_backward(ctx, dloss, dlse, ddlogits):
    # The per-row loss's gradient; lse and the gradient output are not differentiable.
    logits, target, lse = ctx.saved_tensors
    dlogits = torch.ops.cudalab.cross_entropy_backward(logits, target, lse, dloss.float().contiguous(), *ctx.options)
    return dlogits, None, None, None, None, None, None, None


torch.library.register_autograd(
    "cudalab::cross_entropy", _cross_entropy_backward, setup_context=_cross_entropy_setup
)


def _reduce_sum_setup(ctx, inputs, output):
    (x,) = inputs
    ctx.shape = x.shape


def _reduce_sum_backward(ctx, dsum):
    return dsum.expand(ctx.shape)


torch.library.register_autograd("cudalab::reduce_sum", _reduce_sum_backward, setup_context=_reduce_sum_setup)


def _reversed_scan(scan, dy):
    # Each input reaches the outputs from its own place onwards (inclusive) or after it (exclusive):
    # its gradient is the same scan of dy run from the last element back.
    return scan(dy.flatten().flip(0)).flip(0).view(dy.shape)


def _inclusive_scan_backward(ctx, dy):
    return _reversed_scan(torch.ops.cudalab.inclusive_scan, dy)


def _exclusive_scan_backward(ctx, dy):
    return _reversed_scan(torch.ops.cudalab.exclusive_scan, dy)


torch.library.register_autograd("cudalab::inclusive_scan", _inclusive_scan_backward)
torch.library.register_autograd("cudalab::exclusive_scan", _exclusive_scan_backward)


def _transpose_backward(ctx, dy):
    return torch.ops.cudalab.transpose(dy.contiguous())


torch.library.register_autograd("cudalab::transpose", _transpose_backward)


def _conv2d_backward(ctx, dy):
    # Registered so that a backward fails here: torch's fallback would only warn and give no gradient.
    raise NotImplementedError("cudalab.conv2d has no backward (the library has none): use torch.nn.functional.conv2d")


torch.library.register_autograd("cudalab::conv2d", _conv2d_backward)


