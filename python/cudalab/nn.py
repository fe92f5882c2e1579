"""Drop-in modules over cudalab's ops: the constructor arguments and state_dict keys of their
torch.nn counterparts, so a model's weights load into either. The norms normalize over the last
dimension with learnable affine parameters (what the kernels implement); other configurations are
refused when the module is built. The norms take an optional residual, added before the norm in the
same pass. Linear runs its product on cudalab's GEMM."""

import torch

from . import ops


def _last_dimension(name, normalized_shape):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) != 1:
        raise ValueError(f"cudalab.nn.{name}: normalizes the last dimension only, got normalized_shape={shape}")
    return shape


def add_and_norm(norm, x, residual):
    """``(norm(x + residual), x + residual)`` for a norm module of either kind: one pass for
    cudalab's LayerNorm and RMSNorm, the add and then the norm for torch.nn's; with ``residual``
    None, ``(norm(x), x)``. A pre-norm block's step from one branch to the next."""
    if residual is None:
        return norm(x), x
    if isinstance(norm, (LayerNorm, RMSNorm)):
        return norm(x, residual)
    h = x + residual
    return norm(h), h


class LayerNorm(torch.nn.LayerNorm):
    """``torch.nn.LayerNorm`` over the last dimension, with weight and bias, by ``cudalab.ops.layer_norm``."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        shape = _last_dimension("LayerNorm", normalized_shape)
        if not (elementwise_affine and bias):
            raise ValueError("cudalab.nn.LayerNorm: needs elementwise_affine=True and bias=True (the kernel applies both)")
        super().__init__(shape, eps, elementwise_affine, bias, device, dtype)

    def forward(self, x, residual=None):
        """``norm(x)``; with ``residual``, ``(norm(x + residual), x + residual)`` in one pass (a
        pre-norm block's residual add fused with its norm, ``ops.add_layer_norm``)."""
        if residual is not None:
            return ops.add_layer_norm(x, residual, self.weight, self.bias, self.eps)
        return ops.layer_norm(x, self.weight, self.bias, self.eps)


class RMSNorm(torch.nn.RMSNorm):
    """``torch.nn.RMSNorm`` over the last dimension, with weight, by ``cudalab.ops.rms_norm``.
    ``eps=None`` means 1e-6 here (torch's None means the dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        shape = _last_dimension("RMSNorm", normalized_shape)
        if not elementwise_affine:
            raise ValueError("cudalab.nn.RMSNorm: needs elementwise_affine=True (the kernel applies the weight)")
        super().__init__(shape, 1e-6 if eps is None else eps, elementwise_affine, device, dtype)

    def forward(self, x, residual=None):
        """``norm(x)``; with ``residual``, ``(norm(x + residual), x + residual)`` in one pass
        (``ops.add_rms_norm``)."""
        if residual is not None:
            return ops.add_rms_norm(x, residual, self.weight, self.eps)
        return ops.rms_norm(x, self.weight, self.eps)


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` (``y = x W^T + b``) by ``cudalab.ops.gemm``, x's leading dimensions taken
    as rows. In bfloat16 and float16 the weight is read as stored ([out, in], ``b_transposed``), and
    the backward's products, dx = dy W and dW = dy^T x (dy^T read as a transposed A), read dy, W and
    x where they lie: neither pass copies an operand. In float32 the FP32 kernels take B as [k, n]
    with contiguous rows only, so a transposed copy of the weight is made per call (and the
    backward copies its transposed operands likewise). Under ``torch.autocast``, x, the weight and
    the bias are cast to the autocast dtype, as ``torch.nn.Linear``'s are, and the product runs in
    it on tensor cores. The bias goes in as the GEMM's C (beta 1), broadcast over the rows: in
    16-bit the GEMM's epilogue reads it where it lies and adds it, in float32 it is copied into the
    output before the product; its gradient is the sum of the output's over the rows. One call
    (:func:`cudalab.ops.linear`, composite in C++) does all of it."""

    def forward(self, x):
        return ops.linear(x, self.weight, self.bias)


class LinearActivation(torch.nn.Linear):
    """``act(torch.nn.Linear(x))`` in one module, act ``"relu"``, ``"gelu_tanh"``, ``"gelu_erf"`` or
    ``"silu"`` (``activation``, default the tanh GELU): :func:`cudalab.ops.linear_activation`, the activation
    applied in the GEMM's epilogue. Its parameters are ``torch.nn.Linear``'s, so a state dict moves
    between the two. Where the next layer is a Linear too (a transformer's MLP),
    :func:`cudalab.ops.mlp` also fuses the backward's activation gradient into that layer's product."""

    def __init__(self, in_features, out_features, activation="gelu_tanh", bias=True, device=None, dtype=None):
        ops._check_activation("LinearActivation", activation)
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.activation = activation

    def forward(self, x):
        return ops.linear_activation(x, self.weight, self.bias, self.activation)

    def extra_repr(self):
        return f"{super().extra_repr()}, activation={self.activation!r}"


class CrossEntropyLoss(torch.nn.CrossEntropyLoss):
    """``torch.nn.CrossEntropyLoss`` over class indices by ``cudalab.ops.cross_entropy`` (logits
    [..., vocab], int64 targets [...]): reduction, ignore_index and label_smoothing as torch's. Class
    weights and probability targets are refused when the module is built or called."""

    def __init__(
        self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0
    ):
        if weight is not None:
            raise ValueError("cudalab.nn.CrossEntropyLoss: class weights are not supported (weight must be None)")
        super().__init__(None, size_average, ignore_index, reduce, reduction, label_smoothing)

    def forward(self, input, target):
        if target.is_floating_point():
            raise ValueError("cudalab.nn.CrossEntropyLoss: targets must be class indices (int64), not probabilities")
        # torch's layout is [batch, classes, ...]; the kernel's is [..., classes].
        logits = input if input.dim() <= 2 else input.movedim(1, -1).contiguous()
        return ops.cross_entropy(logits, target, self.reduction, self.ignore_index, self.label_smoothing)
