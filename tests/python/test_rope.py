"""cudalab.ops.rope: registration, fake kernel and refusals everywhere; on a GPU, against Hugging
Face's apply_rotary_pos_emb (written out here) in float64 for both pairings, both layouts, in place
of a transposed view, with a decode offset, and its gradient."""

import zlib

import pytest
import torch

import cudalab
from cudalab import ops
from conftest import requires_cuda

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# One rotation in fp32 rounded once to the dtype, relative L2 against float64: the fused ops' targets.
REL_L2 = {torch.float32: 1e-6, torch.bfloat16: 4e-3, torch.float16: 1e-3}


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def tables(positions, head_dim, device="cuda", base=10000.0):
    """Llama's angles: position p, pair i at p * base^(-2i / head_dim), in float32."""
    inverse = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    angles = torch.arange(positions, dtype=torch.float64, device=device)[:, None] * inverse[None, :]
    return angles.cos().float(), angles.sin().float()


def reference(x, cos, sin, seq_dim, interleaved, offset):
    """apply_rotary_pos_emb in float64: x cos + rotate(x) sin, the halves' angles repeated."""
    x = x.double()
    seq = x.shape[seq_dim]
    c, s = cos[offset : offset + seq].double(), sin[offset : offset + seq].double()
    if interleaved:
        c, s = c.repeat_interleave(2, -1), s.repeat_interleave(2, -1)
        rotated = torch.stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)
    else:
        c, s = torch.cat((c, c), -1), torch.cat((s, s), -1)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), -1)
    shape = [1, 1, 1, x.shape[-1]]
    shape[seq_dim] = seq
    return x * c.reshape(shape) + rotated * s.reshape(shape)


def test_registered_with_its_schema():
    op = torch.ops.cudalab.rope.default
    assert str(op._schema) == (
        "cudalab::rope(Tensor x, Tensor cos, Tensor sin, int seq_dim=1, bool interleaved=False, "
        "int position_offset=0) -> Tensor"
    )
    assert list(cudalab._C.element_types["rope"]) == ["float32", "bfloat16", "float16"]


def test_fake_shapes_keep_the_layout():
    with torch.device("meta"):
        x = torch.empty(2, 16, 4, 64, dtype=torch.bfloat16).transpose(1, 2)
        cos = torch.empty(16, 32)
        y = ops.rope(x, cos, cos, seq_dim=2)
        assert y.shape == x.shape and y.dtype == x.dtype


def test_cpu_tensors_are_refused_with_the_op_name():
    cos, sin = tables(8, 16, "cpu")
    with pytest.raises(RuntimeError, match="cudalab.rope: CUDA tensors only"):
        ops.rope(torch.randn(1, 8, 2, 16), cos, sin)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("seq_dim", [1, 2])
@pytest.mark.parametrize("batch, seq, heads, head_dim, offset", [(1, 1, 1, 2, 0), (2, 7, 3, 6, 0), (2, 129, 4, 64, 0),
                                                                 (3, 1000, 2, 128, 0), (4, 1, 8, 128, 4095)])
def test_rotation_and_gradient_match_float64(dtype, interleaved, seq_dim, batch, seq, heads, head_dim, offset):
    torch.manual_seed(zlib.crc32(repr((dtype, interleaved, seq_dim, seq, head_dim)).encode()))
    shape = (batch, seq, heads, head_dim) if seq_dim == 1 else (batch, heads, seq, head_dim)
    x = torch.randn(shape, device="cuda").to(dtype).requires_grad_()
    cos, sin = tables(offset + seq, head_dim)
    y = ops.rope(x, cos, sin, seq_dim, interleaved, offset)
    ref = reference(x.detach(), cos, sin, seq_dim, interleaved, offset)
    assert y.dtype == dtype and y.shape == x.shape and y.stride() == x.stride()
    assert rel_l2(y, ref) <= REL_L2[dtype]
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    x64 = x.detach().double().requires_grad_()
    (dx_ref,) = torch.autograd.grad(reference(x64, cos, sin, seq_dim, interleaved, offset), x64, dy.double())
    assert rel_l2(dx, dx_ref) <= REL_L2[dtype]


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_a_transposed_view_runs_as_it_lies(dtype):
    """Hugging Face's q: the projection's [batch, seq, heads, head_dim] viewed as [batch, heads,
    seq, head_dim]."""
    q = torch.randn(2, 33, 8, 128, device="cuda").to(dtype).transpose(1, 2)
    cos, sin = tables(33, 128)
    y = ops.rope(q, cos, sin, seq_dim=2)
    assert y.stride() == q.stride()
    assert rel_l2(y, reference(q, cos, sin, 2, False, 0)) <= REL_L2[dtype]


@requires_cuda
def test_bad_arguments_are_named():
    cos, sin = tables(8, 16)
    x = torch.randn(1, 8, 2, 16, device="cuda")
    with pytest.raises(ValueError, match="x's head_dim must be contiguous"):
        ops.rope(torch.randn(1, 8, 2, 32, device="cuda")[..., ::2], cos, sin)
    with pytest.raises(ValueError, match="x must be dense"):
        ops.rope(torch.randn(1, 16, 2, 16, device="cuda")[:, ::2], cos, sin)
    with pytest.raises(ValueError, match="cos must be \\[positions, head_dim / 2\\]"):
        ops.rope(x, cos[:, :4].contiguous(), sin)
    with pytest.raises(RuntimeError, match="the tables hold 8 positions"):
        ops.rope(x, cos, sin, position_offset=1)
    with pytest.raises(ValueError, match="seq_dim must be 1 or 2"):
        ops.rope(x, cos, sin, seq_dim=3)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype):
    cos, sin = tables(40, 64)
    x = torch.randn(2, 32, 4, 64, device="cuda").to(dtype)
    torch.library.opcheck(torch.ops.cudalab.rope.default, (x, cos, sin, 1, False, 8))
    torch.library.opcheck(torch.ops.cudalab.rope_backward.default, (x, cos, sin, 1, True, 0))


def test_packed_form_registered_with_its_schema_and_fake_shape():
    assert str(torch.ops.cudalab.rope_packed.default._schema) == (
        "cudalab::rope_packed(Tensor qkv, Tensor cos, Tensor sin, int heads, int kv_heads, int position_offset=0) "
        "-> Tensor"
    )
    with torch.device("meta"):
        qkv = torch.empty(2, 16, 8 * 64, dtype=torch.bfloat16)
        cos = torch.empty(16, 32)
        assert ops.rope_packed(qkv, cos, cos, 4, 2).shape == qkv.shape


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, seq, heads, kv_heads, head_dim, offset",
                         [(1, 1, 1, 1, 2, 0), (2, 7, 4, 2, 6, 0), (2, 129, 8, 2, 64, 0), (1, 300, 4, 4, 128, 5)])
def test_packed_form_rotates_q_and_k_and_copies_v(dtype, batch, seq, heads, kv_heads, head_dim, offset):
    # qkv [batch, seq, (heads + 2 kv_heads) * head_dim] as attention_packed takes it; the split
    # heads against the float64 reference, v's bits unchanged, and the gradient.
    torch.manual_seed(zlib.crc32(repr((dtype, seq, heads, kv_heads, head_dim)).encode()))
    all_heads = heads + 2 * kv_heads
    qkv = torch.randn(batch, seq, all_heads * head_dim, device="cuda").to(dtype).requires_grad_()
    cos, sin = tables(offset + seq, head_dim)
    y = ops.rope_packed(qkv, cos, sin, heads, kv_heads, offset)
    assert y.shape == qkv.shape and y.dtype == dtype and y.is_contiguous()
    split = [heads + kv_heads, kv_heads]
    rotated, v = y.view(batch, seq, all_heads, head_dim).split(split, 2)
    x_rotated, x_v = qkv.detach().view(batch, seq, all_heads, head_dim).split(split, 2)
    assert rel_l2(rotated, reference(x_rotated, cos, sin, 1, False, offset)) <= REL_L2[dtype]
    assert torch.equal(v, x_v)
    dy = torch.randn_like(y)
    (dqkv,) = torch.autograd.grad(y, qkv, dy)
    x64 = qkv.detach().double().requires_grad_()
    q_k, v64 = x64.view(batch, seq, all_heads, head_dim).split(split, 2)
    ref = torch.cat((reference(q_k, cos, sin, 1, False, offset), v64), 2).reshape(qkv.shape)
    (dqkv_ref,) = torch.autograd.grad(ref, x64, dy.double())
    assert rel_l2(dqkv, dqkv_ref) <= REL_L2[dtype]


@requires_cuda
def test_packed_form_refuses_a_width_that_is_not_whole_heads():
    cos, sin = tables(8, 16)
    with pytest.raises(ValueError, match="qkv must be \\[batch, seq, \\(heads \\+ 2 \\* kv_heads\\) \\* head_dim\\]"):
        ops.rope_packed(torch.randn(1, 8, 100, device="cuda"), cos, sin, 4, 1)
    with pytest.raises(ValueError, match="heads and kv_heads must be > 0"):
        ops.rope_packed(torch.randn(1, 8, 96, device="cuda"), cos, sin, 4, 0)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_packed_form_opcheck(dtype):
    cos, sin = tables(40, 64)
    qkv = torch.randn(2, 32, 8 * 64, device="cuda").to(dtype)
    torch.library.opcheck(torch.ops.cudalab.rope_packed.default, (qkv, cos, sin, 4, 2, 8))
    torch.library.opcheck(torch.ops.cudalab.rope_packed_backward.default, (qkv, cos, sin, 4, 2, 0))
