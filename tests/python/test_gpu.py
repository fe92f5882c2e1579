"""On a GPU: opcheck on real inputs for every op, outputs against eager PyTorch, gradients against
a float64 reference, and torch.compile(fullgraph=True) over a block that uses the ops. Skipped, with
the reason, where torch sees no CUDA device."""

import zlib

import pytest
import torch
import torch.nn.functional as F

from cudalab import ops
from conftest import requires_cuda
from test_host import BACKWARD, FORWARD, arguments

pytestmark = requires_cuda

# The accuracy targets for the outputs as a whole (relative L2 against a float64
# reference), by dtype.
REL_L2 = {torch.float32: 1e-5, torch.bfloat16: 4e-3, torch.float16: 1e-3}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def rel_l2(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


@pytest.mark.parametrize("name", list(FORWARD) + BACKWARD)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck_on_cuda(name, dtype):
    grad = name in FORWARD
    torch.library.opcheck(
        getattr(torch.ops.cudalab, name).default, arguments(name, "cuda", dtype, (7, 33, 1000), requires_grad=grad)
    )


def reference(name, x, w, b):
    """The eager PyTorch op in float64."""
    x, w, b = x.double(), w.double(), b.double()
    if name == "bias_relu":
        return F.relu(x + b)
    if name == "bias_gelu":
        return F.gelu(x + b)
    if name == "bias_gelu_tanh":
        return F.gelu(x + b, approximate="tanh")
    if name == "layer_norm":
        return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)
    if name == "rms_norm":
        return F.rms_norm(x, x.shape[-1:], w, 1e-6)
    return torch.softmax(x, -1)


def cudalab_op(name, x, w, b):
    if name == "bias_relu":
        return ops.bias_relu(x, b)
    if name == "bias_gelu":
        return ops.bias_gelu(x, b)
    if name == "bias_gelu_tanh":
        return ops.bias_gelu(x, b, approximate="tanh")
    if name == "layer_norm":
        return ops.layer_norm(x, w, b, 1e-5)
    if name == "rms_norm":
        return ops.rms_norm(x, w, 1e-6)
    return ops.softmax(x)


NAMES = ["bias_relu", "bias_gelu", "bias_gelu_tanh", "layer_norm", "rms_norm", "softmax"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7, 31), (300, 4096), (2, 65536)])
def test_forward_and_gradients_match_float64(name, dtype, shape):
    torch.manual_seed(zlib.crc32(repr((name, dtype, shape)).encode()))
    x = (torch.randn(shape, device="cuda") * 2 + 0.5).to(dtype).requires_grad_()
    w = (torch.rand(shape[-1], device="cuda") + 0.5).to(dtype).requires_grad_()
    b = torch.randn(shape[-1], device="cuda").to(dtype).requires_grad_()
    y = cudalab_op(name, x, w, b)
    ref = reference(name, x, w, b)
    assert y.dtype == dtype and y.shape == x.shape
    assert rel_l2(y, ref) <= REL_L2[dtype], f"forward rel L2 {rel_l2(y, ref):.3g}"
    dy = torch.randn_like(y)
    used = [t for t in (x, w, b) if name != "softmax" or t is x]
    used = [t for t in used if not (name.startswith("bias_") and t is w)]
    used = [t for t in used if not (name == "rms_norm" and t is b)]
    grads = torch.autograd.grad(y, used, dy)
    refs = torch.autograd.grad(ref, used, dy.double())
    for g, r in zip(grads, refs):
        # Each gradient is rounded once to the dtype, like y, after a longer fp32 chain (two row
        # sums for dx, a column sum over the rows for dgamma and dbeta): twice the output's limit.
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, r):.3g}"


def test_float64_is_refused_by_name():
    # The ops take float32/16-bit tensors only, so gradcheck's float64 path is refused by name; the
    # float64 comparison above stands in for it.
    x = torch.randn(4, 8, device="cuda", dtype=torch.float64)
    with pytest.raises(TypeError, match="cudalab.softmax: x must be float32, float16 or bfloat16"):
        ops.softmax(x)


@pytest.mark.parametrize("bad", ["noncontiguous", "device", "shape"])
def test_bad_arguments_are_named(bad):
    x = torch.randn(8, 16, device="cuda")
    w = torch.randn(16, device="cuda")
    if bad == "noncontiguous":
        with pytest.raises(RuntimeError, match="cudalab.layer_norm: x must be contiguous"):
            ops.layer_norm(x.t(), torch.randn(8, device="cuda"), torch.randn(8, device="cuda"))
    elif bad == "device":
        with pytest.raises(RuntimeError, match="cudalab.layer_norm: weight must be a CUDA tensor"):
            ops.layer_norm(x, w.cpu(), w)
    else:
        with pytest.raises(ValueError, match=r"cudalab.layer_norm: bias must have shape \[features\]"):
            ops.layer_norm(x, w, torch.randn(15, device="cuda"))


def test_compile_fullgraph_without_graph_breaks():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(256, device="cuda", dtype=torch.bfloat16))
            self.b = torch.nn.Parameter(torch.zeros(256, device="cuda", dtype=torch.bfloat16))

        def forward(self, x):
            h = ops.layer_norm(x, self.w, self.b)
            h = ops.bias_gelu(h, self.b, approximate="tanh")
            return ops.softmax(ops.rms_norm(h, self.w))

    block = Block()
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x), block(x))
    compiled(x).float().sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_transposed", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 1), (127, 129, 131), (3, 200, 264, 136), (1024, 1024, 1024)])
def test_gemm_and_its_gradients_match_float64(dtype, b_transposed, shape):
    if b_transposed and dtype == torch.float32:
        pytest.skip("the fp32 kernels take b as [k, n] (b_transposed is refused, tested below)")
    *batch, m, n, k = shape
    torch.manual_seed(zlib.crc32(repr((dtype, b_transposed, shape)).encode()))
    a = torch.randn(*batch, m, k, device="cuda").to(dtype).requires_grad_()
    b = torch.randn(*batch, *((n, k) if b_transposed else (k, n)), device="cuda").to(dtype).requires_grad_()
    c = torch.randn(*batch, m, n, device="cuda").to(dtype).requires_grad_()
    out = ops.gemm(a, b, c, alpha=1.5, beta=-0.5, b_transposed=b_transposed)
    op_b = b.double().mT if b_transposed else b.double()
    ref = 1.5 * a.double() @ op_b - 0.5 * c.double()
    assert out.shape == ref.shape and out.dtype == dtype
    assert rel_l2(out, ref) <= REL_L2[dtype], f"rel L2 {rel_l2(out, ref):.3g}"
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (a, b, c), dout)
    refs = torch.autograd.grad(ref, (a, b, c), dout.double())
    for g, r in zip(grads, refs):
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, r):.3g}"


def test_gemm_refuses_fp32_with_b_transposed():
    a = torch.randn(4, 8, device="cuda")
    with pytest.raises(TypeError, match="cudalab.gemm: b_transposed needs bfloat16 or float16"):
        ops.gemm(a, torch.randn(6, 8, device="cuda"), b_transposed=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nn_modules_match_torch_nn(dtype):
    import cudalab.nn

    torch.manual_seed(5)
    x = torch.randn(64, 1000, device="cuda", dtype=dtype)
    for ours, theirs in [(cudalab.nn.LayerNorm(1000), torch.nn.LayerNorm(1000)), (cudalab.nn.RMSNorm(1000), torch.nn.RMSNorm(1000, eps=1e-6))]:
        theirs.weight.data.uniform_(0.5, 1.5)
        ours.load_state_dict(theirs.state_dict())
        ours, theirs = ours.to("cuda", dtype), theirs.to("cuda", torch.float64)
        assert rel_l2(ours(x), theirs(x.double())) <= REL_L2[dtype]
