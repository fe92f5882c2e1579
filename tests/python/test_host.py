"""What holds on every machine: the ops are registered with their schemas, their fake kernels give
the right shapes (FakeTensorMode, meta tensors, torch.export), gradients on meta tensors have their
inputs' shapes, and
CPU tensors are refused with the op's name."""

import itertools

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import cudalab
from cudalab import ops

FORWARD = {
    "bias_act": "cudalab::bias_act(Tensor x, Tensor bias, str activation) -> Tensor",
    "layer_norm": "cudalab::layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)",
    "rms_norm": "cudalab::rms_norm(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)",
    "add_layer_norm": "cudalab::add_layer_norm(Tensor x, Tensor residual, Tensor weight, Tensor bias, float eps) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
    "add_rms_norm": "cudalab::add_rms_norm(Tensor x, Tensor residual, Tensor weight, float eps) "
    "-> (Tensor, Tensor, Tensor)",
    "softmax": "cudalab::softmax(Tensor x) -> Tensor",
    "swiglu": "cudalab::swiglu(Tensor gate, Tensor up) -> Tensor",
    "geglu": "cudalab::geglu(Tensor gate, Tensor up) -> Tensor",
    "swiglu_packed": "cudalab::swiglu_packed(Tensor x) -> Tensor",
    "geglu_packed": "cudalab::geglu_packed(Tensor x) -> Tensor",
    "gemm": "cudalab::gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., "
    "bool b_transposed=False) -> Tensor",
    "reduce_sum": "cudalab::reduce_sum(Tensor x) -> Tensor",
    "inclusive_scan": "cudalab::inclusive_scan(Tensor x) -> Tensor",
    "exclusive_scan": "cudalab::exclusive_scan(Tensor x) -> Tensor",
    "select_at_least": "cudalab::select_at_least(Tensor x, int threshold) -> Tensor",
    "histogram": "cudalab::histogram(Tensor samples, int bins) -> Tensor",
    "transpose": "cudalab::transpose(Tensor x) -> Tensor",
    "conv2d": "cudalab::conv2d(Tensor image, Tensor filter) -> Tensor",
    "attention": "cudalab::attention(Tensor q, Tensor k, Tensor v, float? scale=None, bool causal=False, "
    "int window_left=-1, int window_right=-1) -> (Tensor, Tensor)",
    "attention_packed": "cudalab::attention_packed(Tensor qkv, int heads, int kv_heads, float? scale=None, "
    "bool causal=False, int window_left=-1, int window_right=-1) -> (Tensor, Tensor)",
    "attention_varlen": "cudalab::attention_varlen(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
    "Tensor cu_seqlens_k, int max_seqlen_q, int max_seqlen_k, float? scale=None, bool causal=False, "
    "int window_left=-1, int window_right=-1) -> (Tensor, Tensor)",
    "attention_decode": "cudalab::attention_decode(Tensor q, Tensor k_cache, Tensor v_cache, Tensor cache_seqlens, "
    "float? scale=None, bool causal=True, Tensor? block_table=None, int window_left=-1, int window_right=-1) "
    "-> (Tensor, Tensor)",
    "gemm_fp8": "cudalab::gemm_fp8(Tensor a, Tensor b, Tensor? scale_a=None, Tensor? scale_b=None, "
    "float alpha=1.) -> Tensor",
    "quantize_fp8": "cudalab::quantize_fp8(Tensor x) -> (Tensor, Tensor, Tensor)",
    "quantize_fp8_scaled": "cudalab::quantize_fp8_scaled(Tensor x, Tensor scale) -> (Tensor, Tensor)",
    "gemm_activation": "cudalab::gemm_activation(Tensor a, Tensor b, Tensor? bias, str activation, "
    "bool b_transposed=False, bool derivative=True) -> (Tensor, Tensor)",
}
BACKWARD = [
    "bias_act_backward",
    "bias_gradient",
    "layer_norm_backward",
    "rms_norm_backward",
    "add_layer_norm_backward",
    "add_rms_norm_backward",
    "softmax_backward",
    "swiglu_backward",
    "geglu_backward",
    "swiglu_packed_backward",
    "geglu_packed_backward",
    "attention_backward",
    "attention_packed_backward",
    "attention_varlen_backward",
    "gemm_activation_backward",
    "gemm_weight_gradient",
]
# The forward ops with a gradient: select_at_least and histogram count integers, and conv2d's
# backward raises (the library has none); gemm_fp8 and attention_decode are inference ops, the
# quantizations gemm_fp8's input's rounding; gemm_activation's autograd is ops.mlp's and
# ops.linear_activation's, in Python.
NOT_DIFFERENTIABLE = (
    "gemm_activation",
    "select_at_least",
    "histogram",
    "conv2d",
    "gemm_fp8",
    "quantize_fp8",
    "quantize_fp8_scaled",
    "attention_decode",
)
DIFFERENTIABLE = [name for name in FORWARD if name not in NOT_DIFFERENTIABLE]
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
# The dtypes of the library's primitives' first argument; the fused ops take their element lists'
# (cudalab._C.element_types), gemm and attention FLOATS.
PRIMITIVE_DTYPES = {
    "reduce_sum": [torch.float32, torch.int32],
    "inclusive_scan": [torch.float32, torch.int32],
    "exclusive_scan": [torch.float32, torch.int32],
    "select_at_least": [torch.int32],
    "histogram": [torch.uint8, torch.uint16],
    "transpose": [torch.float32],
    "conv2d": [torch.float32],
}


def dtypes_of(name):
    if name in cudalab._C.element_types:
        return [getattr(torch, dtype) for dtype in cudalab._C.element_types[name]]
    return PRIMITIVE_DTYPES.get(name, FLOATS)


def arguments(name, device, dtype=None, shape=(3, 5, 16), requires_grad=False):
    """Arguments for op `name` on `device`: x of `shape` (the first dtype the op takes unless given),
    vectors of its last dimension; matrices [rows, features] for transpose and conv2d; for attention
    q [shape[0], 4, shape[1], 64] and k, v with 2 heads (grouped-query), causal, and for its backward
    the same with O and L from cudalab's forward on CUDA (uninitialized elsewhere, where only
    shapes and refusals are tested) and dO like q; attention_packed's the same heads packed in one
    qkv [shape[0], shape[1], 8 * 64]; attention_decode's 2 tokens of 4 heads against caches of 2
    heads and shape[1] rows, with lengths drawn from 2 to shape[1]."""
    dtype = dtype or dtypes_of(name)[0]
    features = shape[-1]
    rows = 1
    for s in shape[:-1]:
        rows *= s

    def tensor(*size, dt=dtype, grad=requires_grad):
        if not dt.is_floating_point:  # values the integer ops keep or drop; no gradient
            return torch.randint(0, 300, size, device=device).to(dt)
        return torch.randn(*size, device=device, dtype=dt, requires_grad=grad)

    if name == "select_at_least":
        return (tensor(*shape), 150)
    if name == "histogram":  # uint16 samples >= bins are not counted
        return (tensor(*shape), 256 if dtype == torch.uint8 else 200)
    if name == "transpose":
        return (tensor(rows, features),)
    if name == "conv2d":
        return (tensor(rows, features), tensor(3, 3))
    if name == "gemm_fp8":  # a [rows, k] against a weight of 32 outputs, k the features to a multiple of 16 (TMA's)
        k = 16 * max(1, features // 16)
        weight = torch.randn(32, k, device=device).to(dtype)
        return (torch.randn(rows, k, device=device).to(dtype), weight, torch.ones(1, device=device) / 4, None, 1.0)
    if name == "gemm_activation":  # x's rows against a weight of 24 outputs as stored, a bias
        return (tensor(rows, features), tensor(24, features), tensor(24), "gelu_tanh", True)
    if name == "gemm_activation_backward":  # dy [rows, 24] times a weight [24, features] as stored, and act'
        return (tensor(rows, 24), tensor(24, features), tensor(rows, features), False, True)
    if name == "gemm_weight_gradient":  # dy [rows, 24] and x [rows, features]: a Linear's dW and its bias's gradient
        return (tensor(rows, 24), tensor(rows, features), 1.0)
    if name == "quantize_fp8":
        return (tensor(*shape),)
    if name == "quantize_fp8_scaled":
        return (tensor(*shape), torch.full((1,), 1 / 448, device=device))
    if name in ("attention_packed", "attention_packed_backward"):
        qkv = tensor(shape[0], shape[1], 8 * 64)
        if name == "attention_packed":
            return (qkv, 4, 2, None, True)
        if qkv.is_cuda:
            o, lse = torch.ops.cudalab.attention_packed(qkv, 4, 2, None, True)
        else:
            o = qkv.new_empty(shape[0], shape[1], 4 * 64)
            lse = qkv.new_empty(shape[0], 4, shape[1], dtype=torch.float32)
        return (qkv, o, lse, tensor(*o.shape), 4, 2, None, True)
    if name == "attention_decode":  # 2 new tokens of 4 heads against caches of 2 heads, shape[1] rows
        batch, cache = shape[0], shape[1]
        lengths = torch.randint(2, cache + 1, (batch,), device=device, dtype=torch.int32)
        return (tensor(batch, 4, 2, 64), tensor(batch, 2, cache, 64), tensor(batch, 2, cache, 64), lengths, None, True)
    if name in ("attention_varlen", "attention_varlen_backward"):
        # shape[0] sequences, the b-th of shape[1] - b queries (at least 1) and shape[1] + b keys;
        # 4 heads over 2, causal (aligned bottom-right).
        q_lengths = [max(1, shape[1] - b) for b in range(shape[0])]
        k_lengths = [shape[1] + b for b in range(shape[0])]
        cu_q, cu_k = (
            torch.tensor([0] + list(itertools.accumulate(n)), dtype=torch.int32, device=device)
            for n in (q_lengths, k_lengths)
        )
        q = tensor(sum(q_lengths), 4, 64)
        k, v = tensor(sum(k_lengths), 2, 64), tensor(sum(k_lengths), 2, 64)
        forward = (q, k, v, cu_q, cu_k, max(q_lengths), max(k_lengths), None, True)
        if name == "attention_varlen":
            return forward
        if q.is_cuda:
            o, lse = torch.ops.cudalab.attention_varlen(*forward)
        else:
            o, lse = torch.empty_like(q), q.new_empty(4, q.shape[0], dtype=torch.float32)
        return (q, k, v, o, lse, tensor(*q.shape), *forward[3:])
    if name in ("attention", "attention_backward"):
        batch, seq = shape[0], shape[1]
        q, k, v = tensor(batch, 4, seq, 64), tensor(batch, 2, seq, 64), tensor(batch, 2, seq, 64)
        if name == "attention":
            return (q, k, v, None, True)
        if q.is_cuda:
            o, lse = torch.ops.cudalab.attention(q, k, v, None, True)
        else:
            o, lse = torch.empty_like(q), q.new_empty(q.shape[:-1], dtype=torch.float32)
        return (q, k, v, o, lse, tensor(*q.shape), None, True)
    x = tensor(*shape)
    if name in PRIMITIVE_DTYPES:
        return (x,)
    vector = tensor(features)
    if name == "bias_act":
        return (x, vector, "gelu_tanh")
    if name == "layer_norm":
        return (x, vector, tensor(features), 1e-5)
    if name == "rms_norm":
        return (x, vector, 1e-6)
    if name == "add_layer_norm":
        return (x, tensor(*shape), vector, tensor(features), 1e-5)
    if name == "add_rms_norm":
        return (x, tensor(*shape), vector, 1e-6)
    if name == "softmax":
        return (x,)
    if name in ("swiglu", "geglu"):
        return (x, tensor(*shape))
    if name in ("swiglu_packed", "geglu_packed"):
        return (tensor(*shape[:-1], 2 * features),)
    if name == "gemm":  # x as a batch [..., m, k] of matrices, times [..., k, 8], plus beta * c
        b = tensor(*shape[:-2], features, 8)
        return (x, b, tensor(*shape[:-1], 8), 1.5, -0.5, False)
    dy = tensor(*shape, grad=False)
    statistics = torch.rand(shape[:-1], device=device, dtype=torch.float32) + 0.5
    if name == "bias_act_backward":
        return (x.detach(), vector.detach(), dy, "gelu_tanh")
    if name == "bias_gradient":
        return (dy,)
    if name == "layer_norm_backward":
        return (x.detach(), dy, vector.detach(), statistics, statistics)
    if name == "rms_norm_backward":
        return (x.detach(), dy, vector.detach(), statistics)
    if name == "add_layer_norm_backward":
        return (x.detach(), dy, tensor(*shape, grad=False), vector.detach(), statistics, statistics)
    if name == "add_rms_norm_backward":
        return (x.detach(), dy, tensor(*shape, grad=False), vector.detach(), statistics)
    if name in ("swiglu_backward", "geglu_backward"):
        return (x.detach(), tensor(*shape, grad=False), dy)
    if name in ("swiglu_packed_backward", "geglu_packed_backward"):
        return (tensor(*shape[:-1], 2 * features, grad=False), dy)
    assert name == "softmax_backward"
    return (x.detach(), dy)


@pytest.mark.parametrize("name", list(FORWARD) + BACKWARD)
def test_registered_with_cuda_and_cpu_kernels(name):
    op = getattr(torch.ops.cudalab, name).default
    if name in FORWARD:
        assert str(op._schema) == FORWARD[name]
    for key in ("CUDA", "CPU"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"cudalab::{name}", key)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fake_shapes(dtype):
    with FakeTensorMode():
        x = torch.empty(4, 8, 16, dtype=dtype, device="cuda")
        w = torch.empty(16, dtype=dtype, device="cuda")
        y = torch.ops.cudalab.bias_act(x, w, "relu")
        assert y.shape == x.shape and y.dtype == dtype and y.device.type == "cuda"
        y, mean, rstd = torch.ops.cudalab.layer_norm(x, w, w, 1e-5)
        assert y.shape == x.shape and mean.shape == (4, 8) and rstd.dtype == torch.float32
        y, rstd = torch.ops.cudalab.rms_norm(x, w, 1e-6)
        assert rstd.shape == (4, 8)
        assert torch.ops.cudalab.softmax(x).shape == x.shape
        dx, dw, db = torch.ops.cudalab.layer_norm_backward(x, x, w, mean, rstd)
        assert dx.shape == x.shape and dw.shape == (16,) and db.dtype == dtype
        y, h, mean, rstd = torch.ops.cudalab.add_layer_norm(x, x, w, w, 1e-5)
        assert y.shape == h.shape == x.shape and mean.shape == (4, 8) and rstd.dtype == torch.float32
        dx, dw, db = torch.ops.cudalab.add_layer_norm_backward(h, x, x, w, mean, rstd)
        assert dx.shape == x.shape and dw.shape == (16,)
        y, h, rstd = torch.ops.cudalab.add_rms_norm(x, x, w, 1e-6)
        assert h.shape == x.shape and rstd.shape == (4, 8)
        y = torch.ops.cudalab.swiglu_packed(x)
        assert y.shape == (4, 8, 8) and y.dtype == dtype
        assert torch.ops.cudalab.geglu_packed_backward(x, y).shape == x.shape


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_on_meta_tensors_have_their_inputs_shapes(name):
    # torch 2.11's opcheck returns at once when an input is a meta tensor (it checks nothing
    # there; test_gpu.py runs it on real inputs). Differentiating on meta tensors runs each op's
    # registered autograd and its backward's fake kernel: every gradient must match its input.
    args = arguments(name, "meta", requires_grad=True)
    out = getattr(torch.ops.cudalab, name)(*args)
    out = out[0] if isinstance(out, tuple) else out
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    grads = torch.autograd.grad(out, leaves, torch.ones_like(out))
    for g, a in zip(grads, leaves):
        assert g.is_meta and g.shape == a.shape and g.dtype == a.dtype


@pytest.mark.parametrize("name", list(FORWARD) + BACKWARD)
def test_cpu_tensors_are_refused_with_the_op_name(name):
    with pytest.raises(RuntimeError, match=f"cudalab.{name}: CUDA tensors only, got cpu"):
        getattr(torch.ops.cudalab, name)(*arguments(name, "cpu"))


def test_primitives_fake_shapes():
    with FakeTensorMode():
        x = torch.empty(4, 8, 16, device="cuda")
        total = ops.reduce_sum(x.int())
        assert total.shape == () and total.dtype == torch.int32
        for scan in (ops.inclusive_scan, ops.exclusive_scan):
            assert scan(x).shape == x.shape and scan(x.int()).dtype == torch.int32
        counts = ops.histogram(torch.empty(100, dtype=torch.uint16, device="cuda"), 1000)
        assert counts.shape == (1000,) and counts.dtype == torch.int32
        assert ops.transpose(torch.empty(5, 7, device="cuda")).shape == (7, 5)
        assert ops.conv2d(torch.empty(9, 11, device="cuda"), torch.empty(3, 3, device="cuda")).shape == (9, 11)
    # select_at_least's size is data-dependent: a new symbolic size, which needs a ShapeEnv.
    with FakeTensorMode(shape_env=ShapeEnv()):
        kept = ops.select_at_least(torch.empty(4, 8, dtype=torch.int32, device="cuda"), 0)
        assert kept.dim() == 1 and kept.dtype == torch.int32 and isinstance(kept.shape[0], torch.SymInt)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kv_heads", [8, 2, 1])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_fake_shapes(dtype, kv_heads, causal):
    with FakeTensorMode():
        q = torch.empty(2, 8, 129, 64, dtype=dtype, device="cuda")
        k = torch.empty(2, kv_heads, 129, 64, dtype=dtype, device="cuda")
        o, lse = ops.attention(q, k, torch.empty_like(k), scale=0.5, causal=causal)
        assert o.shape == q.shape and o.dtype == dtype and o.device.type == "cuda"
        assert lse.shape == (2, 8, 129) and lse.dtype == torch.float32 and lse.device.type == "cuda"
        dq, dk, dv = torch.ops.cudalab.attention_backward(q, k, torch.empty_like(k), o, lse, o, 0.5, causal)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == k.shape
        assert dq.dtype == dk.dtype == dv.dtype == dtype and dk.device.type == "cuda"


def test_attention_log_sum_exp_is_not_differentiable():
    # Its gradient is not taken (O's is the whole of the backward): autograd says so by name.
    q, k, v, scale, causal = arguments("attention", "meta", requires_grad=True)
    o, lse = ops.attention(q, k, v, scale, causal)
    assert o.requires_grad and not lse.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        lse.sum().backward()


def test_export_traces_the_ops():
    class Block(torch.nn.Module):
        def forward(self, x, w, b):
            h = ops.layer_norm(x, w, b)
            return ops.softmax(ops.bias_gelu(h, b, approximate="tanh"))

    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.empty(4, 16, device="cuda")
        w = torch.empty(16, device="cuda")
        program = torch.export.export(Block(), (x, w, w))
    graph = str(program.graph)
    for name in ("cudalab.layer_norm", "cudalab.bias_act", "cudalab.softmax"):
        assert name in graph


def gemm_operands(device, dtype, batch, m, n, k, a_view, b_transposed, b_view, requires_grad=False):
    """a [*batch, m, k] and b ([*batch, k, n], or [*batch, n, k] for b_transposed), each contiguous
    or the .mT view of a contiguous tensor."""

    def matrix(rows, cols, view):
        t = torch.empty(*batch, *((cols, rows) if view else (rows, cols)), device=device, dtype=dtype)
        return (t.mT if view else t).requires_grad_(requires_grad)

    return matrix(m, k, a_view), matrix(*((n, k) if b_transposed else (k, n)), b_view)


# (a_view, b_transposed, b_view): a as is or as a .mT view, b given as [k, n] or [n, k]
# (b_transposed), as is or as a .mT view: the library's four layouts, each B layout two ways.
GEMM_LAYOUTS = list(itertools.product([False, True], repeat=3))


@pytest.mark.parametrize("a_view, b_transposed, b_view", GEMM_LAYOUTS)
def test_gemm_fake_shapes(a_view, b_transposed, b_view):
    with FakeTensorMode():
        a, b = gemm_operands("cuda", torch.bfloat16, (4,), 32, 48, 64, a_view, b_transposed, b_view)
        out = ops.gemm(a, b, b_transposed=b_transposed)
        assert out.shape == (4, 32, 48) and out.is_contiguous()
        assert ops.gemm(a[0], b[0], b_transposed=b_transposed).shape == (32, 48)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("a_view, b_transposed, b_view", GEMM_LAYOUTS)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_gemm_gradients_on_meta_tensors_keep_every_layouts_shapes(dtype, a_view, b_transposed, b_view, batch):
    a, b = gemm_operands("meta", dtype, batch, 5, 7, 9, a_view, b_transposed, b_view, requires_grad=True)
    out = ops.gemm(a, b, b_transposed=b_transposed)
    for g, t in zip(torch.autograd.grad(out, (a, b), torch.ones_like(out)), (a, b)):
        assert g.is_meta and g.shape == t.shape and g.dtype == dtype


COPIES = ("aten::copy_", "aten::clone", "aten::contiguous")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("a_view, b_transposed, b_view", GEMM_LAYOUTS)
def test_gemm_backward_copies_only_for_the_fp32_kernels(dtype, a_view, b_transposed, b_view):
    # On meta tensors the backward runs its Python and the fake kernels: in 16-bit every transpose
    # it takes is a .mT view; in fp32 (rows only) dA's op(B)^T at least is always materialized.
    if dtype == torch.float32 and (a_view or b_transposed != b_view):
        pytest.skip("the fp32 kernels refuse this layout (test_gpu.py tests the refusal)")
    a, b = gemm_operands("meta", dtype, (3,), 5, 7, 9, a_view, b_transposed, b_view, requires_grad=True)
    out = ops.gemm(a, b, b_transposed=b_transposed)
    dout = torch.empty_like(out)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        torch.autograd.grad(out, (a, b), dout)
    names = [event.name for event in profile.events()]
    assert names.count("cudalab::gemm") == 2
    copies = [name for name in names if name in COPIES]
    assert bool(copies) == (dtype == torch.float32), copies


def test_bias_gelu_refuses_an_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        ops.bias_gelu(torch.empty(2, 4), torch.empty(4), approximate="sigmoid")


@pytest.mark.parametrize(
    "ours, theirs, sizes",
    [
        (cudalab.nn.LayerNorm, torch.nn.LayerNorm, (64,)),
        (cudalab.nn.RMSNorm, torch.nn.RMSNorm, (64,)),
        (cudalab.nn.Linear, torch.nn.Linear, (64, 48)),
    ],
)
def test_nn_modules_share_torch_state_dicts(ours, theirs, sizes):
    mine, reference = ours(*sizes), theirs(*sizes)
    assert mine.state_dict().keys() == reference.state_dict().keys()
    reference.weight.data.uniform_()
    mine.load_state_dict(reference.state_dict())
    assert torch.equal(mine.weight, reference.weight)
    with FakeTensorMode():
        fake = ours(*sizes, device="cuda", dtype=torch.bfloat16)
        x = torch.empty(2, 8, 64, device="cuda", dtype=torch.bfloat16)
        assert fake(x).shape == (2, 8, sizes[-1])


def test_nn_modules_refuse_what_the_kernels_do_not_do():
    with pytest.raises(ValueError, match="normalizes the last dimension only"):
        cudalab.nn.LayerNorm((4, 64))
    with pytest.raises(ValueError, match="needs elementwise_affine=True and bias=True"):
        cudalab.nn.LayerNorm(64, bias=False)
    with pytest.raises(ValueError, match="needs elementwise_affine=True"):
        cudalab.nn.RMSNorm(64, elementwise_affine=False)


def test_version():
    assert cudalab.__version__ == "0.1.0"
