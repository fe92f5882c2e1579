"""The C++ autograd of the per-layer ops (csrc/autograd.cpp) on any machine: inside a scoped
library, CPU kernels written with torch stand in for the CUDA ones (each backward op from autograd
through its forward's stand-in), and torch.autograd.gradcheck compares the wiring's gradients (what
is saved, in which order it reaches the backward op, which inputs get a gradient) with finite
differences in float64; the GEMM's second derivative too."""

import pytest
import torch
import torch.nn.functional as F

import cudalab  # noqa: F401  (registers the ops)
from cudalab import nn as cnn
from cudalab import ops
from cudalab.bench.mlp import torch_activation


def _gemm(a, b, c=None, alpha=1.0, beta=0.0, b_transposed=False):
    out = alpha * (a @ (b.mT if b_transposed else b))
    return (out + beta * c if c is not None and beta != 0.0 else out).contiguous()


def _layer_norm(x, weight, bias, eps):
    mean, var = x.mean(-1), x.var(-1, unbiased=False)
    rstd = (var + eps).rsqrt()
    return (x - mean[..., None]) * rstd[..., None] * weight + bias, mean, rstd


def _rms_norm(x, weight, eps):
    rstd = (x.pow(2).mean(-1) + eps).rsqrt()
    return x * rstd[..., None] * weight, rstd


def _eps_of(x, rstd, centred):
    """The eps a norm's forward used, per row, from the rstd it saved: the backward stand-ins
    differentiate the forward the op ran."""
    spread = x.var(-1, unbiased=False) if centred else x.pow(2).mean(-1)
    return (rstd.pow(-2) - spread).detach()


def _bias_act(x, bias, activation):
    return torch_activation(x + bias, activation)


def _activation_derivative(v, activation):
    if activation == "relu":
        return (v > 0).to(v.dtype)
    if activation == "gelu_erf":
        return 0.5 * (1 + torch.erf(v / 2**0.5)) + v * torch.exp(-0.5 * v * v) / (2 * torch.pi) ** 0.5
    if activation == "silu":
        s = torch.sigmoid(v)
        return s * (1 + v * (1 - s))
    inner = (2 / torch.pi) ** 0.5 * (v + 0.044715 * v**3)
    t = torch.tanh(inner)
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * (2 / torch.pi) ** 0.5 * (1 + 3 * 0.044715 * v * v)


def _gemm_activation(a, b, bias, activation, b_transposed=False, derivative=True):
    v = _gemm(a, b, b_transposed=b_transposed) + (bias if bias is not None else 0)
    g = _activation_derivative(v, activation) if derivative else v.new_empty(0)
    return _bias_act(v, torch.zeros_like(v[0]), activation), g


def _gemm_activation_backward(a, b, derivative, b_transposed=False, bias_gradient=True):
    dz = _gemm(a, b, b_transposed=b_transposed) * derivative
    return dz, dz.sum(0) if bias_gradient else dz.new_empty(0)


def _attention(q, k, v, scale=None, causal=False, window_left=-1, window_right=-1):
    # Grouped heads repeated; o laid out as the op lays it out (as q's heads and positions lie).
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q @ k.mT) * (q.shape[-1] ** -0.5 if scale is None else scale)
    position = torch.arange(s.shape[-1])
    offset = position[None, :] - position[:, None]  # key - query
    hidden = torch.zeros_like(offset, dtype=torch.bool)
    if causal:
        hidden |= offset > 0
    if window_left >= 0:
        hidden |= offset < -window_left
    if window_right >= 0:
        hidden |= offset > window_right
    s = s.masked_fill(hidden, float("-inf"))
    lse = torch.logsumexp(s, -1)
    return ops._laid_out_like(q).copy_(torch.exp(s - lse[..., None]) @ v), lse


def _attention_packed(qkv, heads, kv_heads, scale=None, causal=False, window_left=-1, window_right=-1):
    batch, seq, width = qkv.shape
    head_dim = width // (heads + 2 * kv_heads)
    q, k, v = qkv.view(batch, seq, heads + 2 * kv_heads, head_dim).split([heads, kv_heads, kv_heads], 2)
    o, lse = _attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale, causal, window_left,
                        window_right)
    return o.transpose(1, 2).reshape(batch, seq, heads * head_dim).contiguous(), lse


def _rope_packed(qkv, cos, sin, heads, kv_heads, position_offset=0, sign=1.0):
    # The q and k heads of qkv [batch, seq, (heads + 2 kv_heads) * head_dim] rotated, v's copied.
    batch, seq, width = qkv.shape
    head_dim = width // (heads + 2 * kv_heads)
    q_k, v = qkv.view(batch, seq, -1, head_dim).split([heads + kv_heads, kv_heads], 2)
    return torch.cat((_rope(q_k, cos, sin, 1, False, position_offset, sign), v), 2).reshape(qkv.shape)


def _rope(x, cos, sin, seq_dim=1, interleaved=False, position_offset=0, sign=1.0):
    # Rotate-half pairs (Llama's), x [batch, seq, heads, head_dim] with seq_dim 1; sign -1 rotates back.
    seq, half = x.shape[seq_dim], x.shape[-1] // 2
    c = cos[position_offset : position_offset + seq, None, :].to(x.dtype)
    s = sign * sin[position_offset : position_offset + seq, None, :].to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)


def _backward_of(forward, inputs, differentiable):
    """A backward stand-in: the forward's stand-in differentiated by torch in `inputs`' positions."""

    def backward(*args):
        *values, dy = args[: len(inputs) + 1]
        rest = args[len(inputs) + 1 :]
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_() if i in differentiable else t for i, t in enumerate(values)]
            out = forward(*leaves, *rest)
            y = out[0] if isinstance(out, tuple) else out
            return torch.autograd.grad(y, [leaves[i] for i in differentiable], dy)

    return backward


@pytest.fixture(scope="module")
def cpu_kernels():
    with torch.library._scoped_library("cudalab", "IMPL") as lib:
        lib.impl("gemm", _gemm, "CPU")
        lib.impl("layer_norm", _layer_norm, "CPU")
        lib.impl("layer_norm_backward", lambda x, dy, w, mean, rstd: _backward_of(
            lambda x, w: _layer_norm(x, w, torch.zeros_like(w), _eps_of(x, rstd, True)), [x, w], [0, 1])(x, w, dy) + (
                dy.reshape(-1, dy.shape[-1]).sum(0),), "CPU")
        lib.impl("rms_norm", _rms_norm, "CPU")
        lib.impl("rms_norm_backward", lambda x, dy, w, rstd: _backward_of(
            lambda x, w: _rms_norm(x, w, _eps_of(x, rstd, False)), [x, w], [0, 1])(x, w, dy), "CPU")
        lib.impl("add_layer_norm", lambda x, r, w, b, eps: (lambda h: (_layer_norm(h, w, b, eps)[0], h) + _layer_norm(
            h, w, b, eps)[1:])(x + r), "CPU")
        lib.impl("add_layer_norm_backward", lambda h, dy, dh, w, mean, rstd: (lambda g: (g[0] + dh, g[1], g[2]))(
            _backward_of(lambda h, w: _layer_norm(h, w, torch.zeros_like(w), _eps_of(h, rstd, True)), [h, w], [0, 1])(
                h, w, dy) + (
                dy.reshape(-1, dy.shape[-1]).sum(0),)), "CPU")
        lib.impl("add_rms_norm", lambda x, r, w, eps: (lambda h: (_rms_norm(h, w, eps)[0], h, _rms_norm(h, w, eps)[1]))(
            x + r), "CPU")
        lib.impl("add_rms_norm_backward", lambda h, dy, dh, w, rstd: (lambda g: (g[0] + dh, g[1]))(_backward_of(
            lambda h, w: _rms_norm(h, w, _eps_of(h, rstd, False)), [h, w], [0, 1])(h, w, dy)), "CPU")
        lib.impl("bias_gradient", lambda dy: dy.reshape(-1, dy.shape[-1]).sum(0), "CPU")
        lib.impl("gemm_weight_gradient", lambda dy, x, alpha=1.0: (_gemm(dy.mT, x, None, alpha, 0.0), dy.sum(0)), "CPU")
        lib.impl("bias_act", _bias_act, "CPU")
        lib.impl("gemm_activation", _gemm_activation, "CPU")
        lib.impl("gemm_activation_backward", _gemm_activation_backward, "CPU")
        lib.impl("bias_act_backward", lambda x, b, dy, act: _backward_of(
            lambda x, b: _bias_act(x, b, act), [x, b], [0, 1])(x, b, dy), "CPU")
        for name, act in (("swiglu", F.silu), ("geglu", lambda g: F.gelu(g, approximate="tanh"))):
            unit = (lambda act: lambda gate, up: (act(gate) * up).contiguous())(act)
            lib.impl(name, unit, "CPU")
            lib.impl(f"{name}_backward", (lambda unit: lambda g, u, dy: _backward_of(unit, [g, u], [0, 1])(g, u, dy))(
                unit), "CPU")
            packed = (lambda unit: lambda x: unit(*x.chunk(2, -1)))(unit)
            lib.impl(f"{name}_packed", packed, "CPU")
            lib.impl(f"{name}_packed_backward", (lambda packed: lambda x, dy: _backward_of(packed, [x], [0])(x, dy)[0])(
                packed), "CPU")
        lib.impl("rope", _rope, "CPU")
        lib.impl("rope_backward", lambda dy, cos, sin, seq_dim=1, interleaved=False, offset=0: _rope(
            dy, cos, sin, seq_dim, interleaved, offset, -1.0), "CPU")
        lib.impl("rope_packed", _rope_packed, "CPU")
        lib.impl("rope_packed_backward", lambda dy, cos, sin, heads, kv_heads, offset=0: _rope_packed(
            dy, cos, sin, heads, kv_heads, offset, -1.0), "CPU")
        lib.impl("attention", _attention, "CPU")
        lib.impl("attention_backward", lambda q, k, v, o, lse, do, scale=None, causal=False, left=-1, right=-1:
                 _backward_of(lambda q, k, v: _attention(q, k, v, scale, causal, left, right), [q, k, v], [0, 1, 2])(
                     q, k, v, do), "CPU")
        lib.impl("attention_packed", _attention_packed, "CPU")
        lib.impl("attention_packed_backward",
                 lambda qkv, o, lse, do, heads, kv_heads, scale=None, causal=False, left=-1, right=-1:
                 _backward_of(lambda qkv: _attention_packed(qkv, heads, kv_heads, scale, causal, left, right), [qkv],
                              [0])(qkv, do)[0], "CPU")
        yield


def _double(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_()


def test_linear_with_bias_and_its_second_derivative(cpu_kernels):
    layer = cnn.Linear(6, 5).double()
    x = _double(2, 3, 6)
    assert torch.autograd.gradcheck(lambda x, w, b: torch.ops.cudalab.gemm(
        x.reshape(-1, 6), w, b.expand(6, 5), 1.0, 1.0, True), (x, layer.weight, layer.bias))
    assert torch.autograd.gradgradcheck(lambda x, w: torch.ops.cudalab.gemm(x.reshape(-1, 6), w, None, 1.0, 0.0, True),
                                        (x, layer.weight))
    # c as a row broadcast over the output's rows (how linear passes its bias): its gradient is the
    # column sums (bias_gradient), and under create_graph torch's sum, which has a derivative.
    row = lambda x, w, b: torch.ops.cudalab.gemm(x.reshape(-1, 6), w, b, 1.0, 0.5, True)  # noqa: E731
    assert torch.autograd.gradcheck(row, (x, layer.weight, layer.bias))
    assert torch.autograd.gradgradcheck(row, (x, layer.weight, layer.bias))
    reference = torch.nn.Linear(6, 5).double()
    reference.load_state_dict(layer.state_dict())
    y = layer(x)
    torch.testing.assert_close(y, reference(x))
    assert "CppNode" in y.grad_fn.next_functions[0][0].name()  # the C++ node, not Python's


def test_linear_bias_gradient_comes_with_the_weight_gradient_in_16_bit(cpu_kernels):
    # In bfloat16 and float16 the backward takes the weight's gradient and the bias's from one call
    # (gemm_weight_gradient: the bias's sums run over the tokens, that product's k); float64 above
    # sums apart.
    from torch.profiler import ProfilerActivity, profile

    g = torch.Generator().manual_seed(3)
    x, w, b = (torch.randn(*shape, generator=g).bfloat16() for shape in ((2, 4, 6), (5, 6), (5,)))
    dy = torch.randn(2, 4, 5, generator=g).bfloat16()
    ours = [t.clone().requires_grad_() for t in (x, w, b)]
    theirs = [t.clone().requires_grad_() for t in (x, w, b)]
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        ops.linear(*ours).backward(dy)
    names = {e.name for e in prof.events()}
    assert "cudalab::gemm_weight_gradient" in names and "cudalab::bias_gradient" not in names
    F.linear(*theirs).backward(dy)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad)


def test_linear_is_f_linear(cpu_kernels):
    x, weight, bias = _double(2, 3, 6), _double(5, 6, seed=1), _double(5, seed=2)
    for b in (bias, None):
        torch.testing.assert_close(ops.linear(x, weight, b), F.linear(x, weight, b))
    # float32 takes the weight as a transposed copy (those kernels read B row-major)
    as_f32 = [t.detach().float() for t in (x, weight, bias)]
    torch.testing.assert_close(ops.linear(*as_f32), F.linear(*as_f32))
    assert torch.autograd.gradcheck(ops.linear, (x, weight, bias))
    with pytest.raises(ValueError, match="in_features"):
        ops.linear(x, _double(5, 7))


def test_gemm_layouts_alpha_and_beta(cpu_kernels):
    a = _double(7, 4, seed=1).detach().mT.requires_grad_()  # columns contiguous: a transposed operand
    b, c = _double(7, 3, seed=2), _double(4, 3, seed=3)
    assert torch.autograd.gradcheck(lambda a, b, c: torch.ops.cudalab.gemm(a, b, c, 0.5, 2.0, False), (a, b, c))
    batch_a, batch_b = _double(2, 4, 7, seed=4), _double(2, 3, 7, seed=5)
    assert torch.autograd.gradcheck(lambda a, b: torch.ops.cudalab.gemm(a, b, None, 1.5, 0.0, True), (batch_a, batch_b))


def test_norms(cpu_kernels):
    x, w, b = _double(3, 8), _double(8, seed=1), _double(8, seed=2)
    assert torch.autograd.gradcheck(lambda x, w, b: ops.layer_norm(x, w, b), (x, w, b))
    assert torch.autograd.gradcheck(lambda x, w: ops.rms_norm(x, w), (x, w))
    _, mean, rstd = torch.ops.cudalab.layer_norm(x, w, b, 1e-5)
    assert not mean.requires_grad and not rstd.requires_grad  # statistics: outputs without gradients


def test_add_norms_pass_both_outputs_gradients(cpu_kernels):
    # y and h both used (the next branch and the residual stream), or y alone (the last norm).
    x, r, w, b = _double(3, 8), _double(3, 8, seed=3), _double(8, seed=1), _double(8, seed=2)
    both = lambda out: out[0] * 1.5 + out[1].sin()  # noqa: E731
    assert torch.autograd.gradcheck(lambda x, r, w, b: both(ops.add_layer_norm(x, r, w, b)), (x, r, w, b))
    assert torch.autograd.gradcheck(lambda x, r, w: both(ops.add_rms_norm(x, r, w)), (x, r, w))
    assert torch.autograd.gradcheck(lambda x, r, w: ops.add_rms_norm(x, r, w)[0], (x, r, w))
    _, _, mean, rstd = torch.ops.cudalab.add_layer_norm(x, r, w, b, 1e-5)
    assert not mean.requires_grad and not rstd.requires_grad


def test_bias_act_and_gated_units(cpu_kernels):
    x, bias = _double(4, 6), _double(6, seed=1)
    for activation in ("relu", "gelu_tanh"):
        assert torch.autograd.gradcheck(lambda x, b: torch.ops.cudalab.bias_act(x, b, activation), (x, bias))
    gate, up = _double(3, 5, seed=2), _double(3, 5, seed=3)
    assert torch.autograd.gradcheck(ops.swiglu, (gate, up))
    assert torch.autograd.gradcheck(ops.geglu, (gate, up))
    x = _double(3, 10, seed=4)  # gate's 5 columns, then up's
    assert torch.autograd.gradcheck(ops.swiglu_packed, (x,))
    assert torch.autograd.gradcheck(ops.geglu_packed, (x,))
    assert torch.equal(ops.swiglu_packed(x), ops.swiglu(*x.chunk(2, -1)))


def test_rope_packed(cpu_kernels):
    qkv = _double(2, 5, 4 * 8)
    angles = torch.rand(16, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(8)) * 6
    cos, sin = angles.cos(), angles.sin()
    assert torch.autograd.gradcheck(lambda qkv: ops.rope_packed(qkv, cos, sin, 2, 1, position_offset=2), (qkv,))


@pytest.mark.parametrize("position_offset", [0, 3])
def test_rope(cpu_kernels, position_offset):
    x = _double(2, 5, 3, 8)
    angles = torch.rand(16, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * 6
    cos, sin = angles.cos(), angles.sin()
    assert torch.autograd.gradcheck(lambda x: ops.rope(x, cos, sin, position_offset=position_offset), (x,))


@pytest.mark.parametrize("causal", [False, True])
def test_attention(cpu_kernels, causal):
    q, k, v = _double(1, 2, 5, 4, seed=1), _double(1, 2, 5, 4, seed=2), _double(1, 2, 5, 4, seed=3)
    assert torch.autograd.gradcheck(lambda q, k, v: torch.ops.cudalab.attention(q, k, v, 0.3, causal)[0], (q, k, v))
    _, lse = torch.ops.cudalab.attention(q, k, v, None, causal)
    assert not lse.requires_grad


@pytest.mark.parametrize("causal", [False, True])
def test_attention_reads_transposed_heads_and_lays_o_out_alike(cpu_kernels, causal):
    # q, k and v as a projection's [batch, seq, heads, head_dim] outputs, transposed (no copy);
    # grouped heads. o comes back [batch, seq, heads, head_dim] transposed.
    q = _double(2, 5, 4, 3, seed=1).transpose(1, 2)
    k, v = _double(2, 5, 2, 3, seed=2).transpose(1, 2), _double(2, 5, 2, 3, seed=3).transpose(1, 2)
    o, _ = torch.ops.cudalab.attention(q, k, v, None, causal)
    assert o.transpose(1, 2).is_contiguous()
    assert torch.autograd.gradcheck(lambda q, k, v: torch.ops.cudalab.attention(q, k, v, 0.3, causal)[0], (q, k, v))


@pytest.mark.parametrize("kv_heads", [3, 1])
def test_attention_packed(cpu_kernels, kv_heads):
    qkv = _double(2, 5, (3 + 2 * kv_heads) * 4, seed=kv_heads)
    o, lse = ops.attention_packed(qkv, 3, kv_heads, causal=True)
    assert o.shape == (2, 5, 12) and lse.shape == (2, 3, 5) and not lse.requires_grad
    assert torch.autograd.gradcheck(lambda qkv: ops.attention_packed(qkv, 3, kv_heads, 0.3, True)[0], (qkv,))
    # The same as attention on the split heads.
    q, k, v = qkv.view(2, 5, 3 + 2 * kv_heads, 4).split([3, kv_heads, kv_heads], 2)
    split, _ = torch.ops.cudalab.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None, True)
    torch.testing.assert_close(o, split.transpose(1, 2).reshape(2, 5, 12))


@pytest.mark.parametrize("causal, window_size", [(True, (2, 0)), (False, (1, 3)), (False, (0, -1))])
def test_attention_window_reaches_forward_and_backward(cpu_kernels, causal, window_size):
    # The window travels through the C++ autograd to both ops (the stand-ins mask with it): the
    # gradients are the masked attention's, and a packed call's equal the split call's.
    q, k, v = _double(1, 2, 7, 4, seed=4), _double(1, 1, 7, 4, seed=5), _double(1, 1, 7, 4, seed=6)
    assert torch.autograd.gradcheck(
        lambda q, k, v: ops.attention(q, k, v, 0.3, causal, window_size)[0], (q, k, v))
    o, _ = ops.attention(q, k, v, causal=causal, window_size=window_size)
    unmasked, _ = ops.attention(q, k, v, causal=causal)
    assert not torch.allclose(o, unmasked)
    qkv = torch.cat([t.transpose(1, 2).reshape(1, 7, -1) for t in (q, k, v)], 2).detach().requires_grad_()
    packed, _ = ops.attention_packed(qkv, 2, 1, causal=causal, window_size=window_size)
    torch.testing.assert_close(packed, o.transpose(1, 2).reshape(1, 7, 8))
    assert torch.autograd.gradcheck(
        lambda qkv: ops.attention_packed(qkv, 2, 1, 0.3, causal, window_size)[0], (qkv,))


def test_sdpa_off_the_gpu_is_torchs_own_call(cpu_kernels):
    # CPU tensors are not cudalab's to run: ops.sdpa hands the call to torch unchanged.
    q, k, v = _double(1, 4, 6, 8, seed=7), _double(1, 2, 6, 8, seed=8), _double(1, 2, 6, 8, seed=9)
    for is_causal in (False, True):
        torch.testing.assert_close(
            ops.sdpa(q, k, v, is_causal=is_causal, enable_gqa=True),
            F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=True),
            rtol=0,
            atol=0,
        )


def test_compile_traces_the_cpp_autograd(cpu_kernels):
    # aot_eager: AOTAutograd traces the forward and backward through the C++ autograd on fake
    # tensors (the ops' fake kernels), then runs the graphs with the CPU stand-ins.
    def block(x, weight, bias, norm_weight, norm_bias):
        h = ops.layer_norm(ops.linear(x, weight, bias), norm_weight, norm_bias)
        q = h.reshape(1, 2, 6, 4)  # 48 values as [batch, heads, seq, head_dim]
        packed = ops.attention_packed(h.reshape(1, 8, 6), 1, causal=True, window_size=(3, 0))[0]  # heads of 2 dims
        return ops.attention(q, q, q, causal=True)[0].sum() + packed.sum()

    inputs = (_double(2, 3, 6), _double(8, 6, seed=1), _double(8, seed=2), _double(8, seed=3), _double(8, seed=4))
    eager = torch.autograd.grad(block(*inputs), inputs)
    compiled = torch.autograd.grad(torch.compile(block, backend="aot_eager", fullgraph=True)(*inputs), inputs)
    for got, want in zip(compiled, eager):
        torch.testing.assert_close(got, want)


def test_dynamic_shapes_compile_once(cpu_kernels):
    # Sizes and strides are read as SymInts: three row counts, one graph.
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("aot_eager")
    weight, bias = _double(5, 6, seed=1), _double(5, seed=2)
    step = torch.compile(lambda x: ops.linear(x, weight, bias).sum(), backend=counter, dynamic=True)
    for rows in (3, 7, 12):
        x = _double(rows, 6, seed=rows)
        torch.autograd.grad(step(x), (x, weight))
    assert counter.frame_count == 1


def test_second_derivative_refused_where_there_is_none(cpu_kernels):
    x, w, b = _double(3, 8), _double(8, seed=1), _double(8, seed=2)
    (dx,) = torch.autograd.grad(ops.layer_norm(x, w, b).pow(2).sum(), x, create_graph=False)
    assert dx.shape == x.shape
    with pytest.raises(RuntimeError, match="no second derivative"):
        torch.autograd.grad(ops.layer_norm(x, w, b).pow(2).sum(), x, create_graph=True)


def test_compiled_autograd_takes_the_statistics_ops(cpu_kernels):
    # The statistics leave the node detached: compiled autograd rejects nodes with outputs marked
    # non-differentiable.
    from torch._dynamo import compiled_autograd

    x, w, b = _double(3, 8), _double(8, seed=1), _double(8, seed=2)
    want = torch.autograd.grad(ops.layer_norm(x, w, b).sum(), (x, w, b))
    loss = ops.layer_norm(x, w, b).sum()
    with compiled_autograd._enable(torch.compile(backend="aot_eager")):
        loss.backward()
    for got, expected in zip((x.grad, w.grad, b.grad), want):
        torch.testing.assert_close(got, expected)


def test_cudalab_built_llama_is_the_torch_built_one(cpu_kernels):
    # The whole wiring of the cudalab-built Llama (one q-k-v projection through rope_packed and
    # attention_packed, grouped heads, gate and up through swiglu_packed, the residual-add norms)
    # on the stand-ins, in float64, against the torch-built model with the same state_dict.
    from cudalab.models.llama import Llama, LlamaConfig

    config = LlamaConfig(layers=2, d_model=32, heads=4, kv_heads=2, mlp=48, vocab=40, seq=12)
    reference = Llama(config, "torch").double()
    ours = Llama(config, "cudalab").double()
    ours.load_state_dict(reference.state_dict())
    tokens = torch.randint(0, config.vocab, (2, 9), generator=torch.Generator().manual_seed(1))
    weights = torch.randn(2, 9, config.d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    outputs = []
    for model in (ours, reference):
        h = model.hidden(tokens)
        (h * weights).sum().backward()
        outputs.append((h.detach(), {name: p.grad for name, p in model.named_parameters()}))
    torch.testing.assert_close(outputs[0][0], outputs[1][0])
    for name, grad in outputs[1][1].items():
        torch.testing.assert_close(outputs[0][1][name], grad, msg=name)


def test_inductor_lowers_every_op_through_an_explicit_fallback(cpu_kernels, monkeypatch):
    # Inductor's implicit fallback formats its arguments' IR as text even with logging off; through
    # chained add_layer_norm blocks that text doubles with each layer. Every op has an explicit
    # fallback instead: three GPT blocks compile with Inductor, and match eager.
    from torch._inductor import exc
    from cudalab.models.gpt import Block, GptConfig

    formatted = exc.OperatorIssue.operator_str

    def refuse_ours(target, args, kwargs):
        assert not str(target).startswith("cudalab."), f"implicit fallback for {target}"
        return formatted(target, args, kwargs)

    monkeypatch.setattr(exc.OperatorIssue, "operator_str", staticmethod(refuse_ours))
    torch.manual_seed(0)
    config = GptConfig(layers=3, d_model=32, head_dim=16, vocab=40, seq=12)
    blocks = torch.nn.ModuleList(Block(config, True) for _ in range(config.layers)).double()

    def stack(x):
        residual = None
        for block in blocks:
            x, residual = block(x, residual)
        return x + residual

    x = _double(2, 12, 32, seed=3)
    inputs = [x, *blocks.parameters()]
    torch._dynamo.reset()
    eager, compiled = (torch.autograd.grad(run(x).square().sum(), inputs)
                       for run in (stack, torch.compile(stack, backend="inductor", fullgraph=True)))
    for got, want in zip(compiled, eager):
        torch.testing.assert_close(got, want)
    assert all(op in torch._inductor.lowering.lowerings or op in torch._inductor.lowering.decompositions
               for op in cudalab._inductor.cudalab_ops())


@pytest.mark.parametrize("activation", ["relu", "gelu_tanh", "gelu_erf", "silu"])
def test_mlp_and_linear_activation_gradients_match_the_composition(cpu_kernels, activation):
    # The wiring of ops.mlp's and ops.linear_activation's autograd (the derivative the forward keeps,
    # the products the backward runs), in float64 on the CPU stand-ins, against the same layers
    # composed from torch's ops.
    leaves = [_double(*shape, seed=seed).requires_grad_() for seed, shape in
              enumerate([(6, 8), (12, 8), (12,), (8, 12), (8,)])]
    x, w1, b1, w2, b2 = leaves
    def act(h):
        return _bias_act(h, torch.zeros_like(h[0]), activation)

    for got, want, inputs in (
        (ops.mlp(x, w1, b1, w2, b2, activation), F.linear(act(F.linear(x, w1, b1)), w2, b2), leaves),
        (ops.linear_activation(x, w1, b1, activation), act(F.linear(x, w1, b1)), leaves[:3]),
    ):
        torch.testing.assert_close(got, want)
        dy = _double(*got.shape, seed=9)
        for g, r in zip(torch.autograd.grad(got, inputs, dy), torch.autograd.grad(want, inputs, dy)):
            torch.testing.assert_close(g, r)


def test_statistics_outputs_cost_no_zero_filled_gradients(cpu_kernels):
    # mean, rstd and lse leave the nodes without gradients: autograd must not fill zeros for them
    # (aten::zeros, an allocation and a kernel each, a layer's worth in every step).
    from torch.profiler import ProfilerActivity, profile

    x, r, w, b = _double(3, 8), _double(3, 8, seed=3), _double(8, seed=1), _double(8, seed=2)
    qkv = _double(2, 5, 3 * 2 * 4, seed=4)
    q, k, v = _double(1, 2, 5, 4, seed=1), _double(1, 2, 5, 4, seed=2), _double(1, 2, 5, 4, seed=3)
    cases = {
        "layer_norm": lambda: ops.layer_norm(x, w, b),
        "rms_norm": lambda: ops.rms_norm(x, w),
        "add_layer_norm": lambda: (lambda out: out[0] + out[1])(ops.add_layer_norm(x, r, w, b)),
        "add_rms_norm": lambda: (lambda out: out[0] + out[1])(ops.add_rms_norm(x, r, w)),
        "attention": lambda: torch.ops.cudalab.attention(q, k, v, None, True)[0],
        "attention_packed": lambda: ops.attention_packed(qkv, 2, causal=True)[0],
    }
    for name, forward in cases.items():
        y = forward()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            y.backward(torch.ones_like(y))
        assert not [e.name for e in prof.events() if e.name == "aten::zeros"], name
