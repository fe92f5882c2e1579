"""The fused row ops over [rows, features], forward and backward: bias + activation, LayerNorm, RMSNorm,
their residual-add forms and softmax, each against eager PyTorch and torch.compile of it."""

import dataclasses
from typing import Callable

import torch
import torch.nn.functional as F

from ... import ops
from .common import REL_L2, Case, backward, forward, normal, reference_backward, reference_forward, three_ways

ACTIVATIONS = {  # activation parameter -> (name, eager function of z, cudalab wrapper)
    0: ("bias+ReLU", F.relu, lambda x, bias: ops.bias_relu(x, bias)),
    1: ("bias+GELU (tanh)", lambda z: F.gelu(z, approximate="tanh"), lambda x, bias: ops.bias_gelu(x, bias, "tanh")),
    2: ("bias+GELU (erf)", F.gelu, lambda x, bias: ops.bias_gelu(x, bias)),
}
LAYER_NORM_EPS, RMS_NORM_EPS = 1e-5, 1e-6


@dataclasses.dataclass
class RowOp:
    """One of the fused ops, its C++ forward op (the backward is "<op>_backward") and the parameters of
    each."""

    op: str
    params: list
    backward_params: list
    eager: Callable
    cudalab: Callable
    leaves: list
    eager_technique: str
    eager_backward: str


def _add_then(norm, x, residual):
    """A pre-norm block's step as eager code writes it: (norm(x + residual), x + residual)."""
    h = x + residual
    return norm(h), h


def row_ops():
    ops_ = []
    for activation, (label, act, cudalab_act) in ACTIVATIONS.items():
        ops_.append(
            RowOp(
                "bias_act",
                [("activation", activation)],
                [("activation", activation)],
                lambda x, bias, weight=None, act=act: act(x + bias),
                lambda x, bias, weight=None, cudalab_act=cudalab_act: cudalab_act(x, bias),
                ["x", "bias"],
                f"x + bias, then the activation: two elementwise kernels ({label})",
                "the activation's backward, then a column sum for dbias",
            )
        )
    ops_ += [
        RowOp(
            "layer_norm",
            [("eps", LAYER_NORM_EPS)],
            [],
            lambda x, weight, bias: F.layer_norm(x, x.shape[-1:], weight, bias, LAYER_NORM_EPS),
            lambda x, weight, bias: ops.layer_norm(x, weight, bias, LAYER_NORM_EPS),
            ["x", "weight", "bias"],
            "F.layer_norm (ATen's fused kernel)",
            "native_layer_norm_backward",
        ),
        RowOp(
            "rms_norm",
            [("eps", RMS_NORM_EPS)],
            [],
            lambda x, weight, bias=None: F.rms_norm(x, x.shape[-1:], weight, RMS_NORM_EPS),
            lambda x, weight, bias=None: ops.rms_norm(x, weight, RMS_NORM_EPS),
            ["x", "weight"],
            "F.rms_norm",
            "F.rms_norm's backward",
        ),
        RowOp(
            "add_layer_norm",
            [("eps", LAYER_NORM_EPS)],
            [],
            lambda x, residual, weight, bias: _add_then(
                lambda h: F.layer_norm(h, h.shape[-1:], weight, bias, LAYER_NORM_EPS), x, residual
            ),
            lambda x, residual, weight, bias: ops.add_layer_norm(x, residual, weight, bias, LAYER_NORM_EPS),
            ["x", "residual", "weight", "bias"],
            "x + residual, then F.layer_norm: two kernels, the sum written and read back",
            "native_layer_norm_backward, then the residual's gradient added",
        ),
        RowOp(
            "add_rms_norm",
            [("eps", RMS_NORM_EPS)],
            [],
            lambda x, residual, weight, bias=None: _add_then(
                lambda h: F.rms_norm(h, h.shape[-1:], weight, RMS_NORM_EPS), x, residual
            ),
            lambda x, residual, weight, bias=None: ops.add_rms_norm(x, residual, weight, RMS_NORM_EPS),
            ["x", "residual", "weight"],
            "x + residual, then F.rms_norm",
            "F.rms_norm's backward, then the residual's gradient added",
        ),
        RowOp(
            "softmax",
            [],
            [],
            lambda x, weight=None, bias=None: torch.softmax(x, -1),
            lambda x, weight=None, bias=None: ops.softmax(x),
            ["x"],
            "torch.softmax (ATen's fused kernel)",
            "_softmax_backward_data",
        ),
    ]
    return ops_


def row_op_cases(rows, features, dtypes):
    """Every row op over [rows, features], forward and backward: x normal (mean 0.5, deviation 2),
    weight uniform in [0.5, 1.5), bias and dy standard normal."""
    cases = []
    dims = [("rows", rows), ("features", features)]
    for dtype in dtypes:

        def make_inputs(g, dtype=dtype, residual=False):
            inputs = {
                "x": normal(g, (rows, features), dtype),
                "weight": (torch.rand(features, device="cuda", generator=g) + 0.5).to(dtype),
                "bias": normal(g, (features,), dtype, 1.0, 0.0),
                "dy": normal(g, (rows, features), dtype, 1.0, 0.0),
            }
            if residual:  # the add_ forms' second stream, and the gradient of their second output h
                inputs["residual"] = normal(g, (rows, features), dtype)
                inputs["dh"] = normal(g, (rows, features), dtype, 1.0, 0.0)
            return inputs

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
            inputs = (lambda g, dtype=dtype: make_inputs(g, dtype, True)) if "residual" in r.leaves else make_inputs
            common = dict(dims=dims, dtype=dtype, make_inputs=inputs)
            cases.append(
                Case(
                    r.op,
                    params=r.params,
                    reference=reference_forward(r.eager),
                    variants=forward_variants,
                    tolerance=REL_L2[dtype],
                    **common,
                )
            )
            cases.append(
                Case(
                    r.op + "_backward",
                    params=r.backward_params,
                    reference=reference_backward(r.eager, r.leaves),
                    variants=backward_variants,
                    tolerance=2 * REL_L2[dtype],
                    **common,
                )
            )
    return cases
