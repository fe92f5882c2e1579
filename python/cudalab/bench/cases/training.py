"""The rest of a training step beside its PyTorch forms: RoPE on q as Hugging Face applies it
(eager, torch.compile, cudalab) and one AdamW step over a model's worth of parameters (torch's
foreach and fused optimizers, cudalab's)."""

import torch

from ... import ops
from ...optim import AdamW
from .common import REL_L2, Case, Variant, forward, normal, reference_forward, three_ways


def _hf_rope(q, cos, sin):
    """Hugging Face's apply_rotary_pos_emb on q [batch, heads, seq, head_dim], the halves' angles
    repeated and cast to q's dtype."""
    c = torch.cat((cos, cos), -1).to(q.dtype)
    s = torch.cat((sin, sin), -1).to(q.dtype)
    half = q.shape[-1] // 2
    return q * c + torch.cat((-q[..., half:], q[..., :half]), -1) * s


def rope_cases(batch, seq, heads, head_dim, dtypes):
    """q [batch, heads, seq, head_dim] as Hugging Face's attention holds it: the transpose of the
    projection's [batch, seq, heads, head_dim]; Llama's angles (theta 10000) for positions 0..seq-1."""
    cases = []
    inverse = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(seq, dtype=torch.float64)[:, None] * inverse[None, :]
    for dtype in dtypes:

        def make_inputs(g, dtype=dtype):
            q = normal(g, (batch, seq, heads, head_dim), dtype, 1.0, 0.0).transpose(1, 2)
            return {"q": q, "cos": angles.cos().float().cuda(), "sin": angles.sin().float().cuda()}

        variants = three_ways(
            "Hugging Face's apply_rotary_pos_emb: q cos + rotate_half(q) sin (a copy and three passes)",
            _hf_rope,
            "cudalab.ops.rope on the transposed view, as it lies",
            lambda q, cos, sin: ops.rope(q, cos, sin, seq_dim=2),
            forward,
        )
        cases.append(
            Case(
                "rope",
                [("batch", batch), ("seq", seq), ("heads", heads), ("head_dim", head_dim)],
                dtype,
                [("interleaved", 0), ("position_offset", 0)],
                make_inputs,
                reference_forward(_hf_rope),
                variants,
                REL_L2[dtype],
            )
        )
    return cases


def _adamw_reference(inputs):
    """One AdamW step (lr 1e-3, betas 0.9 and 0.999, eps 1e-8, weight decay 1e-2) in float64, from
    zero moments: the first step."""
    p, g = inputs["param"].double(), inputs["grad"].double()
    m, v = 0.1 * g, 0.001 * g * g
    p = p * (1 - 1e-3 * 1e-2) - (1e-3 / 0.1) * m / ((v / 0.001).sqrt() + 1e-8)
    return (p,)


def _adamw_sizes(tensors, elements):
    """The C++ op's layout: tensor i holds elements + 8 (i % 3) values, end to end."""
    return [elements + 8 * (i % 3) for i in range(tensors)]


def _adamw_step(make_optimizer, tensors, elements):
    """A variant stepping the parameters of the C++ op's layout (views of one array) with the
    optimizer make_optimizer(params) makes; returns them flattened."""

    def prepare(inputs):
        sizes = _adamw_sizes(tensors, elements)
        params = [torch.nn.Parameter(p) for p in inputs["param"].clone().split(sizes)]
        for p, g in zip(params, inputs["grad"].split(sizes)):
            p.grad = g
        optimizer = make_optimizer(params)

        def run():
            optimizer.step()
            return (torch.cat([p.detach() for p in params]),)

        return run

    return prepare


def adamw_cases(tensors, elements, dtypes):
    cases = []
    for dtype in dtypes:

        def make_inputs(g, dtype=dtype):
            n = sum(_adamw_sizes(tensors, elements))
            return {"param": normal(g, (n,), dtype, 1.0, 0.0), "grad": normal(g, (n,), dtype, 1.0, 0.0)}

        variants = [
            Variant(
                "eager",
                "torch.optim.AdamW (foreach: a pass per step over each list)",
                _adamw_step(lambda ps: torch.optim.AdamW(ps, foreach=True), tensors, elements),
            ),
            Variant(
                "fused",
                "torch.optim.AdamW(fused=True): one fused multi-tensor kernel",
                _adamw_step(lambda ps: torch.optim.AdamW(ps, fused=True), tensors, elements),
            ),
            Variant("cudalab", "cudalab.optim.AdamW: the multi-tensor rung", _adamw_step(AdamW, tensors, elements)),
        ]
        cases.append(
            Case(
                "adamw",
                [("tensors", tensors), ("elements", elements)],
                dtype,
                [("odd", 0)],
                make_inputs,
                _adamw_reference,
                variants,
                REL_L2[dtype],
            )
        )
    return cases
