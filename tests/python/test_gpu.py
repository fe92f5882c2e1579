"""On a GPU: opcheck on real inputs for every op, outputs against eager PyTorch, gradients against
a float64 reference, and torch.compile(fullgraph=True) over a block that uses the ops. Skipped, with
the reason, where torch sees no CUDA device."""

import itertools
import math
import re
import warnings
import zlib

import pytest
import torch
import torch.nn.functional as F

import cudalab.nn
from cudalab import ops
from cudalab.bench.mlp import torch_activation
from cudalab.bench.cases.attention import (
    ATTENTION_LSE_REL_L2,
    ATTENTION_REL_L2,
    attention_reference,
    decode_reference,
    varlen_reference,
    window_mask,
)
from conftest import requires_cuda
from test_host import BACKWARD, DIFFERENTIABLE, FLOATS, FORWARD, arguments, dtypes_of

pytestmark = requires_cuda

# cudalab's accuracy targets for the outputs as a whole (relative L2 against a float64
# reference), by dtype.
REL_L2 = {torch.float32: 1e-5, torch.bfloat16: 4e-3, torch.float16: 1e-3}
EPS32 = torch.finfo(torch.float32).eps
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def rel_l2(out, ref, floor=1e-300):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(floor)).item()


def gated_floors(gate, up, dy, dtype):
    """Norms below which a gated unit's output and gradients are compared absolutely. The kernels
    (and PyTorch) compute GELU and its slope in float32 as 1 + erf(g / sqrt 2): an absolute error of
    float32's resolution at 1, where float64's value for a gate below about -5.4 is under 1e-8. A
    tensor of such gates only would fail any relative bound. Each floor is the norm at which eight
    float32 units of |up| (1 + |g|) (the output) or of |dy| (1 + |g|) (1 + |up|) (the gradients)
    meet the tolerance, or at which rounding to `dtype`'s smallest step does."""
    gate, up, dy = gate.detach().double(), up.detach().double(), dy.double()
    tolerance = REL_L2[dtype]
    step = torch.finfo(dtype).tiny * torch.finfo(dtype).eps  # the smallest subnormal
    rounding = step * math.sqrt(max(gate.numel(), up.numel())) / (2 * tolerance)
    scale = 8 * EPS32 / tolerance
    output = scale * (up.abs() * (1 + gate.abs())).norm().item()
    gradient = scale / 2 * (dy.abs() * (1 + gate.abs()) * (1 + up.abs())).norm().item()
    return max(output, rounding), max(gradient, rounding)


@pytest.mark.parametrize("name, dtype", [(n, dtype) for n in list(FORWARD) + BACKWARD for dtype in dtypes_of(n)])
def test_opcheck_on_cuda(name, dtype):
    if name in ("gemm_fp8", "attention_varlen", "attention_varlen_backward") and (
        torch.cuda.get_device_capability() != (9, 0)
    ):
        pytest.skip(f"{name} runs on Hopper (compute capability 9.0)")
    grad = name in DIFFERENTIABLE and dtype.is_floating_point
    args = arguments(name, "cuda", dtype, (7, 33, 1000), requires_grad=grad)
    options = {}
    if name.endswith("_scan") and dtype == torch.float32:
        # opcheck compares two runs, and the float scans' order of adds changes from run to run
        # (each 4096-element tile's look-back sums whichever predecessors have published): runs
        # differ by about one rounding of the running prefix per tile.
        tiles = math.ceil(args[0].numel() / 4096)
        largest = torch.cumsum(args[0].detach().flatten(), 0).abs().max().item()
        options = {"rtol": 1.3e-6, "atol": tiles * EPS32 * largest}
    if name == "gemm_fp8":
        # opcheck's schema test multiplies the inputs, which PyTorch does not do for float8.
        options["test_utils"] = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    torch.library.opcheck(getattr(torch.ops.cudalab, name).default, args, **options)


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


# The op behind each name, whose element list gives the dtypes tested.
OP_OF = {"bias_relu": "bias_act", "bias_gelu": "bias_act", "bias_gelu_tanh": "bias_act"}


@pytest.mark.parametrize("name, dtype", [(name, dtype) for name in NAMES for dtype in dtypes_of(OP_OF.get(name, name))])
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
    for t, g, r in zip(used, grads, refs):
        if name == "rms_norm" and shape[-1] == 1 and t is x:
            # One feature: dx = w dy rstd eps / (x² + eps) is the difference of two terms of size
            # |w dy rstd| that all but cancel (x rstd is ±1 to within eps), which fp32 cannot
            # resolve; its error is judged against the size of those terms instead.
            x64 = x.detach().double()
            terms = w.detach().double() * dy.double() * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6)
            error = (g.double() - r).norm().item()
            assert error <= 2 * REL_L2[dtype] * terms.norm().item(), f"dx error {error:.3g}, terms {terms.norm():.3g}"
            continue
        # Each gradient is rounded once to the dtype, like y, after a longer fp32 chain (two row
        # sums for dx, a column sum over the rows for dgamma and dbeta): twice the output's limit.
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, r):.3g}"


@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize("dtype", dtypes_of("add_layer_norm"))
@pytest.mark.parametrize("shape", [(1, 1), (3, 7, 31), (300, 4096), (5, 20000), (2, 65536)])
def test_add_norms_and_their_gradients_match_float64(norm, dtype, shape):
    # Both outputs used, as a block uses them: y by the next branch, h by the residual stream.
    torch.manual_seed(zlib.crc32(repr((norm, dtype, shape)).encode()))
    x, r = ((torch.randn(shape, device="cuda") * 2 + 0.5).to(dtype).requires_grad_() for _ in range(2))
    w = (torch.rand(shape[-1], device="cuda") + 0.5).to(dtype).requires_grad_()
    b = torch.randn(shape[-1], device="cuda").to(dtype).requires_grad_()
    leaves = (x, r, w, b) if norm == "layer" else (x, r, w)
    y, h = ops.add_layer_norm(x, r, w, b) if norm == "layer" else ops.add_rms_norm(x, r, w)
    assert torch.equal(h, x + r), "h is x + residual rounded once to the dtype"
    d64 = [t.detach().double().requires_grad_() for t in leaves]
    h64 = d64[0] + d64[1]
    y64 = (F.layer_norm(h64, shape[-1:], d64[2], d64[3], 1e-5) if norm == "layer"
           else F.rms_norm(h64, shape[-1:], d64[2], 1e-6))
    assert rel_l2(y, y64) <= REL_L2[dtype], f"forward rel L2 {rel_l2(y, y64):.3g}"
    dy, dh = torch.randn_like(y), torch.randn_like(h)
    grads = torch.autograd.grad((y, h), leaves, (dy, dh))
    refs = torch.autograd.grad((y64, h64), d64, (dy.double(), dh.double()))
    assert torch.equal(grads[0], grads[1]), "x and the residual get the same gradient"
    for g, ref in zip(grads, refs):
        assert g.dtype == dtype and rel_l2(g, ref) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, ref):.3g}"


GATED_UNITS = {
    "swiglu": (ops.swiglu, F.silu),
    "geglu": (ops.geglu, lambda g: F.gelu(g, approximate="tanh")),
}


@pytest.mark.parametrize("unit", list(GATED_UNITS))
@pytest.mark.parametrize("dtype", dtypes_of("swiglu"))
@pytest.mark.parametrize("shape", [(1,), (3, 7, 31), (4096, 1000), (2, 14336)])
@pytest.mark.parametrize("offset", [0, 1])
def test_gated_units_and_their_gradients_match_float64(unit, dtype, shape, offset):
    # offset 1 starts the tensors one element past a 16-byte boundary: the element-access path.
    torch.manual_seed(zlib.crc32(repr((unit, dtype, shape, offset)).encode()))
    op, activation = GATED_UNITS[unit]
    n = math.prod(shape)
    storage = (torch.randn(3, n + offset, device="cuda") * 3).to(dtype)
    gate, up, dy = (storage[i, offset:].view(shape) for i in range(3))
    gate.requires_grad_()
    up.requires_grad_()
    y = op(gate, up)
    ref = activation(gate.double()) * up.double()
    assert y.dtype == dtype and y.shape == gate.shape
    floor, grad_floor = gated_floors(gate, up, dy, dtype)
    assert rel_l2(y, ref, floor) <= REL_L2[dtype], f"forward rel L2 {rel_l2(y, ref, floor):.3g}"
    grads = torch.autograd.grad(y, (gate, up), dy)
    g64, u64 = gate.detach().double().requires_grad_(), up.detach().double().requires_grad_()
    refs = torch.autograd.grad(activation(g64) * u64, (g64, u64), dy.double())
    for g, r in zip(grads, refs):
        error = rel_l2(g, r, grad_floor)
        assert g.dtype == dtype and error <= 2 * REL_L2[dtype], f"gradient rel L2 {error:.3g}"


PACKED_UNITS = {"swiglu": ops.swiglu_packed, "geglu": ops.geglu_packed}


@pytest.mark.parametrize("unit", list(PACKED_UNITS))
@pytest.mark.parametrize("dtype", dtypes_of("swiglu_packed"))
@pytest.mark.parametrize("shape", [(2,), (3, 7, 62), (4096, 2000), (2, 28672), (5, 8194)])
@pytest.mark.parametrize("offset", [0, 1])
def test_packed_gated_units_and_their_gradients_match_float64(unit, dtype, shape, offset):
    # x [..., 2F]: gate's F columns, then up's. F = 1, 31, 1000, 14336, 4097: whole 16-byte vectors
    # a half or not; offset 1 starts x one element past a 16-byte boundary.
    torch.manual_seed(zlib.crc32(repr(("packed", unit, dtype, shape, offset)).encode()))
    _, activation = GATED_UNITS[unit]
    n = math.prod(shape)
    storage = (torch.randn(n + offset, device="cuda") * 3).to(dtype)
    x = storage[offset:].view(shape).requires_grad_()
    dy = (torch.randn(*shape[:-1], shape[-1] // 2, device="cuda") * 3).to(dtype)
    y = PACKED_UNITS[unit](x)
    x64 = x.detach().double().requires_grad_()
    gate, up = x64.chunk(2, -1)
    ref = activation(gate) * up
    assert y.dtype == dtype and y.shape == ref.shape
    floor, grad_floor = gated_floors(gate, up, dy, dtype)
    assert rel_l2(y, ref, floor) <= REL_L2[dtype], f"forward rel L2 {rel_l2(y, ref, floor):.3g}"
    (dx,) = torch.autograd.grad(y, (x,), dy)
    (dx_ref,) = torch.autograd.grad(ref, (x64,), dy.double())
    assert dx.dtype == dtype and dx.shape == x.shape
    error = rel_l2(dx, dx_ref, grad_floor)
    assert error <= 2 * REL_L2[dtype], f"gradient rel L2 {error:.3g}"


@pytest.mark.parametrize("m, n, k", [(1, 16, 16), (127, 129, 144), (3, 4100, 256), (1000, 1000, 1008), (4096, 4096, 4096)])
@pytest.mark.parametrize("scaled", [False, True])
def test_gemm_fp8_matches_float64_and_scaled_mm(m, n, k, scaled):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("gemm_fp8 runs on Hopper (compute capability 9.0)")
    torch.manual_seed(zlib.crc32(repr(("fp8", m, n, k, scaled)).encode()))
    a = (torch.randn(m, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    scale_a = torch.tensor([0.125], device="cuda") if scaled else None
    scale_b = torch.tensor([0.75], device="cuda") if scaled else None
    c = ops.gemm_fp8(a, b, scale_a, scale_b, alpha=1.5)
    factor = 1.5 * (0.125 * 0.75 if scaled else 1.0)
    ref = factor * (a.double() @ b.double().T)
    assert c.dtype == torch.bfloat16 and c.shape == (m, n)
    assert rel_l2(c, ref) <= REL_L2[torch.bfloat16], f"rel L2 {rel_l2(c, ref):.3g}"
    if hasattr(torch, "_scaled_mm") and m % 16 == 0 and n % 16 == 0:
        one = torch.ones(1, device="cuda")
        theirs = torch._scaled_mm(a, b.T, scale_a if scaled else one, scale_b if scaled else one,
                                  out_dtype=torch.bfloat16) * 1.5
        assert rel_l2(c, theirs.double()) <= 2 * REL_L2[torch.bfloat16]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n, offset", [(0, 0), (1, 0), (17, 0), (1000003, 0), (1000003, 1), (1 << 23, 0), ((1 << 24) + 5, 0)])
def test_quantize_fp8_is_torchs_scaled_cast_to_the_bit(dtype, n, offset):
    # The same float32 steps in PyTorch: amax, 448 / amax, the product, the cast (which rounds to
    # nearest even; x * (448 / amax) never passes 448 by half a step, so saturation never differs).
    # offset 1: x one element past a 16-byte boundary (the element-wise path); 2^23 bf16 elements
    # take the one-read path, 2^24 + 5 the two-pass one.
    torch.manual_seed(zlib.crc32(repr(("quantize", dtype, n, offset)).encode()))
    x = (torch.randn(n + offset, device="cuda") * 3).to(dtype)[offset:]
    q, scale, amax = ops.quantize_fp8(x)
    assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape and scale.shape == amax.shape == (1,)
    want_amax = x.float().abs().max() if n else torch.zeros((), device="cuda")
    assert torch.equal(amax[0], want_amax)
    if n == 0:
        assert scale.item() == 1.0
        return
    multiplier = torch.tensor(448.0, device="cuda") / want_amax
    assert torch.equal(scale[0], want_amax / torch.tensor(448.0, device="cuda"))
    want = (x.float() * multiplier).to(torch.float8_e4m3fn)
    mismatches = (q.view(torch.uint8) != want.view(torch.uint8)).sum().item()
    assert mismatches == 0, f"{mismatches} of {n} elements differ"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("values", ["special", "tiny"])
def test_quantize_fp8_special_values(dtype, values):
    # NaN and +-inf do not count toward amax; inf saturates to +-448, NaN stays NaN, -0 keeps its
    # sign. "tiny": an amax below 448 / FLT_MAX, where 448 / amax overflows and the multiplier is
    # capped at FLT_MAX (zeros stay zeros, not NaN).
    if values == "tiny" and dtype == torch.float16:
        pytest.skip("float16 holds no value below 448 / FLT_MAX")
    inf, nan = float("inf"), float("nan")
    if values == "special":
        head = [nan, -nan, inf, -inf, -0.0, 0.0, 3.0, -2.5, 1e-3, -7e-4]
    else:
        head = [1e-37, -5e-38, 0.0, -0.0, 2e-38]
    torch.manual_seed(zlib.crc32(repr(("quantize special", dtype, values)).encode()))
    tail = torch.randn(1000, device="cuda") * (1e-38 if values == "tiny" else 1.0)
    x = torch.cat([torch.tensor(head, device="cuda"), tail]).to(dtype)
    q, scale, amax = ops.quantize_fp8(x)
    wide = x.float()
    want_amax = wide[wide.isfinite()].abs().max()
    assert torch.equal(amax[0], want_amax)
    largest = torch.tensor(torch.finfo(torch.float32).max, device="cuda")
    multiplier = torch.minimum(torch.tensor(448.0, device="cuda") / want_amax, largest)
    want = (wide * multiplier).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    nan_at = wide.isnan()
    assert torch.equal(q.float().isnan(), nan_at)
    got, expected = q.view(torch.uint8)[~nan_at], want.view(torch.uint8)[~nan_at]
    assert torch.equal(got, expected), f"{int((got != expected).sum())} elements differ"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n, offset", [(0, 0), (17, 0), (1000003, 1), (1 << 20, 0)])
@pytest.mark.parametrize("scale_value", [1 / 448, 1 / 1000, 1e-45, 0.0, -1 / 448, float("inf"), float("nan")])
def test_quantize_fp8_scaled_is_torchs_saturating_cast_to_the_bit(dtype, n, offset, scale_value):
    # Delayed scaling: the product by min(1 / scale, FLT_MAX), clamped to +-448 and cast (1/1000
    # puts |x| > 0.448 past 448; 1e-45, a subnormal, overflows 1 / scale to the cap), and the amax
    # of x. A scale that is not a positive finite float (0, negative, inf, NaN) converts with the
    # multiplier 1. offset 1: x off its 16-byte alignment (the element-wise path). The first
    # elements are inf, NaN and -0 where x has room for them.
    torch.manual_seed(zlib.crc32(repr(("quantize scaled", dtype, n, offset, scale_value)).encode()))
    wide = torch.randn(n + offset, device="cuda")
    wide[offset : offset + 3] = torch.tensor([float("inf"), float("nan"), -0.0], device="cuda")[: max(0, min(3, n))]
    x = wide.to(dtype)[offset:]
    scale = torch.tensor([scale_value], device="cuda")
    q, amax = ops.quantize_fp8_scaled(x, scale)
    assert q.dtype == torch.float8_e4m3fn and q.shape == x.shape and amax.shape == (1,)
    values = x.float()
    finite = values[values.isfinite()]
    assert torch.equal(amax[0], finite.abs().max() if finite.numel() else torch.zeros((), device="cuda"))
    one = torch.tensor(1.0, device="cuda")
    largest = torch.tensor(torch.finfo(torch.float32).max, device="cuda")
    usable = 0 < scale_value < float("inf")
    multiplier = torch.minimum(one / scale[0], largest) if usable else one
    want = (values * multiplier).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    nan_at = values.isnan()
    assert torch.equal(q.float().isnan(), nan_at)
    got, expected = q.view(torch.uint8)[~nan_at], want.view(torch.uint8)[~nan_at]
    assert torch.equal(got, expected), f"{int((got != expected).sum())} elements differ"


def test_gemm_fp8_refuses_what_tma_cannot_read():
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("gemm_fp8 runs on Hopper (compute capability 9.0)")
    a = torch.randn(8, 40, device="cuda").to(torch.float8_e4m3fn)
    with pytest.raises(RuntimeError, match="lda and ldb multiples of 16"):
        ops.gemm_fp8(a, a)
    with pytest.raises(TypeError, match="a must be"):
        ops.gemm_fp8(a.float(), a)


def test_float64_is_refused_by_name():
    # The ops take float32/16-bit tensors only, so gradcheck's float64 path is refused by name; the
    # float64 comparison above stands in for it.
    x = torch.randn(4, 8, device="cuda", dtype=torch.float64)
    with pytest.raises(TypeError, match="cudalab.softmax: x must be float32, bfloat16 or float16"):
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

            self.linear = cudalab.nn.Linear(256, 256, device="cuda", dtype=torch.bfloat16)

        def forward(self, x):
            h = ops.layer_norm(x, self.w, self.b)
            h = ops.bias_gelu(self.linear(h), self.b, approximate="tanh")
            return ops.softmax(ops.rms_norm(h, self.w))

    block = Block()
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    compiled = torch.compile(block, fullgraph=True)
    torch.testing.assert_close(compiled(x), block(x))
    compiled(x).float().sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


def matrix(shape, dtype, transposed=False):
    """A random matrix (or batch) of `shape`: contiguous, or the .mT view of a contiguous one."""
    if transposed:
        return torch.randn(*shape[:-2], shape[-1], shape[-2], device="cuda").to(dtype).mT
    return torch.randn(*shape, device="cuda").to(dtype)


# The four layouts of a and b: a [m, k] as is or as the .mT view of a contiguous [k, m]; b given
# as [k, n] or, with b_transposed, as [n, k], each as is or as the .mT view of a contiguous tensor
# (b_transposed of a .mT view is b [k, n] with contiguous rows again).
GEMM_B = [(False, False), (False, True), (True, False), (True, True)]
GEMM_SHAPES = [
    (1, 1, 1),
    (17, 33, 65),
    (127, 129, 131),
    (64, 128, 256),
    (2048, 2048, 512),  # enough tiles for the large-output rungs
    (3, 17, 33, 65),
    (4, 64, 128, 256),
    (5, 7, 0),  # k = 0: beta * c
    (2, 5, 7, 0),
    (0, 7, 5),
    (5, 0, 7),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_view", [False, True])
@pytest.mark.parametrize("b_transposed, b_view", GEMM_B)
@pytest.mark.parametrize("shape", GEMM_SHAPES)
def test_gemm_and_its_gradients_match_float64(dtype, a_view, b_transposed, b_view, shape):
    if dtype == torch.float32 and (a_view or b_transposed != b_view):
        pytest.skip("the fp32 kernels take a and op(b) with contiguous rows only (refusal tested below)")
    *batch, m, n, k = shape
    torch.manual_seed(zlib.crc32(repr((dtype, a_view, b_transposed, b_view, shape)).encode()))
    a = matrix((*batch, m, k), dtype, a_view).requires_grad_()
    b = matrix((*batch, *((n, k) if b_transposed else (k, n))), dtype, b_view).requires_grad_()
    c = matrix((*batch, m, n), dtype, a_view).requires_grad_()  # any strides: copied into the output
    out = ops.gemm(a, b, c, alpha=1.5, beta=-0.5, b_transposed=b_transposed)
    op_b = b.double().mT if b_transposed else b.double()
    ref = 1.5 * a.double() @ op_b - 0.5 * c.double()
    assert out.shape == ref.shape and out.dtype == dtype and out.is_contiguous()
    assert rel_l2(out, ref) <= REL_L2[dtype], f"rel L2 {rel_l2(out, ref):.3g}"
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (a, b, c), dout)
    refs = torch.autograd.grad(ref, (a, b, c), dout.double())
    for t, g, r in zip((a, b, c), grads, refs):
        assert g.shape == t.shape and g.dtype == dtype
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, r):.3g}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_reads_slices_and_a_shared_batch_matrix(dtype):
    # Rows further apart than their length (a column slice of a wider matrix) and a batch stride
    # of 0 (one b for every matrix of the batch) are read where they lie.
    torch.manual_seed(17)
    a = torch.randn(3, 40, 100, device="cuda").to(dtype)[:, :, :64].requires_grad_()
    shared = torch.randn(72, 64, device="cuda").to(dtype).requires_grad_()
    b = shared.expand(3, 72, 64)
    out = ops.gemm(a, b, b_transposed=True)
    ref = a.double() @ shared.double().mT
    assert rel_l2(out, ref) <= REL_L2[dtype], f"rel L2 {rel_l2(out, ref):.3g}"
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (a, shared), dout)
    refs = torch.autograd.grad(ref, (a, shared), dout.double())
    for g, r in zip(grads, refs):
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(g, r):.3g}"


@pytest.mark.parametrize("operand", ["a", "b"])
def test_gemm_refuses_a_matrix_with_neither_rows_nor_columns_contiguous(operand):
    a = torch.randn(8, 32, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(32, 48, device="cuda", dtype=torch.bfloat16)
    if operand == "a":  # every other column: a [8, 16] with strides [32, 2]
        a, b, strides = a[:, ::2], b[:16], r"\[32, 2\]"
    else:  # b [16, 24] with strides [96, 2]
        a, b, strides = a[:, :16], b[::2, ::2], r"\[96, 2\]"
    message = (
        f"cudalab.gemm: {operand} of shape .* and strides {strides} has neither contiguous rows nor contiguous "
        r"columns; .* call \.contiguous\(\) on it first"
    )
    with pytest.raises(ValueError, match=message):
        ops.gemm(a, b)


FP32_ROWS_ONLY = (
    r"cudalab.gemm: the fp32 kernels take a as \[m, k\] and b as \[k, n\] with contiguous rows; "
    r"call \.contiguous\(\)"
)


@pytest.mark.parametrize("layout", ["a.mT", "b.mT", "b_transposed"])
def test_gemm_fp32_refuses_transposed_layouts(layout):
    a, b = torch.randn(4, 8, device="cuda"), torch.randn(8, 6, device="cuda")
    with pytest.raises(ValueError, match=FP32_ROWS_ONLY):
        if layout == "a.mT":
            ops.gemm(a.t().contiguous().mT, b)
        elif layout == "b.mT":
            ops.gemm(a, b.t().contiguous().mT)
        else:
            ops.gemm(a, b.t().contiguous(), b_transposed=True)
    # b_transposed of a .mT view is b [k, n] with contiguous rows: the fp32 kernels take it.
    torch.testing.assert_close(ops.gemm(a, b.mT, b_transposed=True), a @ b)


COPIES = ("aten::copy_", "aten::clone", "aten::contiguous")


def profiled(run):
    """The names of the ops that `run()` dispatches, and each copy among them with the ops it was
    called from, under torch.profiler."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    names, copies = [], []
    for event in profile.events():
        names.append(event.name)
        if event.name in COPIES:
            chain, parent = [event.name], event.cpu_parent
            while parent is not None:
                chain.append(parent.name)
                parent = parent.cpu_parent
            copies.append(" <- ".join(chain))
    return names, copies


def test_linear_backward_in_bfloat16_copies_nothing():
    torch.manual_seed(13)
    linear = cudalab.nn.Linear(256, 384, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(4, 16, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(4, 16, 384, device="cuda", dtype=torch.bfloat16)
    linear(x).backward(dy)  # first calls' work stays out of the profile
    x.grad = linear.weight.grad = linear.bias.grad = None
    y = linear(x)
    names, copies = profiled(lambda: y.backward(dy))
    # dx, then dW with the bias's gradient beside it
    assert names.count("cudalab::gemm") == 1 and names.count("cudalab::gemm_weight_gradient") == 1, names
    assert not copies, "the backward copied: " + "; ".join(copies)
    assert x.grad.shape == x.shape and linear.weight.grad.shape == linear.weight.shape
    # The same profile sees the copy a materialized transpose makes, so the check above can fail.
    names, copies = profiled(lambda: linear.weight.detach().mT.contiguous())
    assert copies and "aten::copy_" in names


# The MLP with its activation in the GEMMs' epilogues, against float64 on the same (rounded) inputs:
# shapes on the Hopper tile kernels (fused) and off them (8 and 100 tokens: a second pass), every
# activation, both 16-bit types; the forward and every gradient.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("activation", ["relu", "gelu_tanh", "gelu_erf", "silu"])
@pytest.mark.parametrize("tokens, d, hidden", [(2048, 512, 2048), (1000, 264, 1056), (8, 264, 1024), (100, 520, 2056)])
def test_mlp_matches_float64(dtype, activation, tokens, d, hidden):
    torch.manual_seed(tokens + d + hidden)
    x = torch.randn(tokens, d, device="cuda", dtype=dtype, requires_grad=True)
    fc_w = (torch.randn(hidden, d, device="cuda") / d**0.5).to(dtype).requires_grad_()
    fc_b = torch.randn(hidden, device="cuda", dtype=dtype, requires_grad=True)
    out_w = (torch.randn(d, hidden, device="cuda") / hidden**0.5).to(dtype).requires_grad_()
    out_b = torch.randn(d, device="cuda", dtype=dtype, requires_grad=True)
    leaves = (x, fc_w, fc_b, out_w, out_b)
    y = ops.mlp(x, fc_w, fc_b, out_w, out_b, activation)
    dy = torch.randn_like(y)
    grads = torch.autograd.grad(y, leaves, dy)
    exact = [t.detach().double().requires_grad_() for t in leaves]
    ref = F.linear(torch_activation(F.linear(exact[0], exact[1], exact[2]), activation), exact[3], exact[4])
    refs = torch.autograd.grad(ref, exact, dy.double())
    assert y.dtype == dtype and y.shape == ref.shape
    # Two roundings to the 16-bit type on the way (the hidden activations, then y): twice the limit.
    assert rel_l2(y, ref) <= 2 * REL_L2[dtype], f"y: rel L2 {rel_l2(y, ref):.3g}"
    for name, g, r in zip(("x", "fc_weight", "fc_bias", "out_weight", "out_bias"), grads, refs):
        assert g.dtype == dtype and g.shape == r.shape, name
        assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"{name}: rel L2 {rel_l2(g, r):.3g}"


@pytest.mark.parametrize("activation", ["relu", "gelu_tanh", "gelu_erf", "silu"])
def test_linear_activation_module_matches_float64(activation):
    torch.manual_seed(5)
    layer = cudalab.nn.LinearActivation(512, 1536, activation, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(4, 300, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    y = layer(x)
    dy = torch.randn_like(y)
    leaves = (x, layer.weight, layer.bias)
    grads = torch.autograd.grad(y, leaves, dy)
    exact = [t.detach().double().requires_grad_() for t in leaves]
    ref = torch_activation(F.linear(*exact), activation)
    refs = torch.autograd.grad(ref, exact, dy.double())
    assert y.shape == (4, 300, 1536) and rel_l2(y, ref) <= REL_L2[torch.bfloat16]
    for g, r in zip(grads, refs):
        assert g.shape == r.shape and rel_l2(g, r) <= 2 * REL_L2[torch.bfloat16]


def test_linear_activation_without_a_gradient_stores_no_derivative():
    torch.manual_seed(6)
    x = torch.randn(2048, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1536, 512, device="cuda", dtype=torch.bfloat16) / 512**0.5
    b = torch.randn(1536, device="cuda", dtype=torch.bfloat16)
    y, z = torch.ops.cudalab.gemm_activation(x, w, b, "gelu_tanh", True, False)
    kept, _ = torch.ops.cudalab.gemm_activation(x, w, b, "gelu_tanh", True, True)
    assert z.numel() == 0 and torch.equal(y, kept), "the same kernel, one output fewer"
    with torch.no_grad():
        assert torch.equal(ops.linear_activation(x, w, b, "gelu_tanh"), kept)


def test_mlp_backward_runs_no_pass_of_the_activation_and_no_copy():
    torch.manual_seed(17)
    x = torch.randn(2048, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    fc = cudalab.nn.Linear(512, 2048, device="cuda", dtype=torch.bfloat16)
    out = cudalab.nn.Linear(2048, 512, device="cuda", dtype=torch.bfloat16)
    y = ops.mlp(x, fc.weight, fc.bias, out.weight, out.bias, "gelu_tanh")
    dy = torch.randn_like(y)
    names, copies = profiled(lambda: y.backward(dy))
    assert names.count("cudalab::gemm_activation_backward") == 1
    assert names.count("cudalab::gemm_weight_gradient") == 1  # out's weight and bias gradients together
    assert "cudalab::bias_gradient" not in names, names
    assert not any(name.startswith("cudalab::bias_act") for name in names), names
    assert not copies, "the backward copied: " + "; ".join(copies)


# Decode steps through a Linear with a bias: one row on decode_gemv, 3 on decode_mma, 9-16 (k past
# 8192) and 17-64 on decode_wgmma, which reads the bias as C's old value from its one row.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("rows, in_features", [(1, 4104), (3, 4104), (9, 8200), (16, 8200), (17, 4104), (40, 4104),
                                               (64, 8200)])
def test_linear_at_decode_rows_matches_float64(dtype, rows, in_features):
    torch.manual_seed(rows * 7 + in_features)
    linear = cudalab.nn.Linear(in_features, 1000, device="cuda", dtype=dtype)
    with torch.no_grad():
        linear.bias.normal_()
    x = torch.randn(rows, in_features, device="cuda", dtype=dtype)
    with torch.no_grad():
        out = linear(x)
    exact = F.linear(x.double(), linear.weight.double(), linear.bias.double())
    assert out.dtype == dtype and out.shape == exact.shape
    assert rel_l2(out, exact) <= REL_L2[dtype], f"rel L2 {rel_l2(out, exact):.3g}"


def test_linear_runs_in_the_autocast_dtype():
    torch.manual_seed(11)
    linear = cudalab.nn.Linear(1000, 300, device="cuda")  # float32 parameters
    x = torch.randn(4, 16, 1000, device="cuda", requires_grad=True)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        out = linear(x)
        ref = F.linear(x, linear.weight, linear.bias)
    assert out.dtype == ref.dtype == torch.bfloat16 and out.shape == ref.shape
    # On the inputs rounded to bfloat16 (what autocast runs on), within bf16's limit of the exact
    # product, and so within twice that of F.linear's own result.
    bf16 = [t.detach().to(torch.bfloat16).double() for t in (x, linear.weight, linear.bias)]
    exact = F.linear(*bf16)
    assert rel_l2(out, exact) <= REL_L2[torch.bfloat16], f"rel L2 {rel_l2(out, exact):.3g}"
    assert rel_l2(out, ref) <= 2 * REL_L2[torch.bfloat16], f"rel L2 to F.linear {rel_l2(out, ref):.3g}"
    dy = torch.randn_like(out)
    leaves = (x, linear.weight, linear.bias)
    grads = torch.autograd.grad(out, leaves, dy)
    refs = torch.autograd.grad(ref, leaves, dy)
    for t, g, r in zip(leaves, grads, refs):
        assert g.dtype == t.dtype == torch.float32 and g.shape == t.shape
        assert rel_l2(g, r) <= 2 * REL_L2[torch.bfloat16], f"gradient rel L2 {rel_l2(g, r):.3g}"
    assert linear(x).dtype == torch.float32  # outside autocast: the parameters' dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_nn_modules_match_torch_nn(dtype):
    torch.manual_seed(5)
    x = torch.randn(64, 1000, device="cuda", dtype=dtype)
    pairs = [
        (cudalab.nn.LayerNorm(1000), torch.nn.LayerNorm(1000)),
        (cudalab.nn.RMSNorm(1000), torch.nn.RMSNorm(1000, eps=1e-6)),
        (cudalab.nn.Linear(1000, 300), torch.nn.Linear(1000, 300)),
    ]
    for ours, theirs in pairs:
        theirs.weight.data.uniform_(0.5, 1.5)
        ours.load_state_dict(theirs.state_dict())
        ours, theirs = ours.to("cuda", dtype), theirs.to("cuda", torch.float64)
        xs = x.reshape(4, 16, 1000).requires_grad_()  # leading dimensions, as torch.nn takes them
        out, ref = ours(xs), theirs(xs.double())
        assert rel_l2(out, ref) <= REL_L2[dtype], type(ours).__name__
        dy = torch.randn_like(out)
        leaves = (xs, ours.weight)
        grads = torch.autograd.grad(out, leaves, dy)
        refs = torch.autograd.grad(ref, (xs, theirs.weight), dy.double())
        for g, r in zip(grads, refs):
            assert rel_l2(g, r) <= 2 * REL_L2[dtype], f"{type(ours).__name__} gradient rel L2 {rel_l2(g, r):.3g}"


# ---- the library's primitives

# One element, less than a warp, a few tiles, one past a power of two, and a large array.
SIZES = [1, 31, 1000, 2**20 + 3, 2**26 + 5]
SCANS = {"inclusive": ops.inclusive_scan, "exclusive": ops.exclusive_scan}


def seed(*key):
    torch.manual_seed(zlib.crc32(repr(key).encode()))


def wrapped(t):
    """int64 sums as int32 arithmetic leaves them: modulo 2^32, in two's complement."""
    return ((t + 2**31) % 2**32 - 2**31).to(torch.int32)


def cumsum(kind, x):
    """The inclusive or exclusive scan of x, flat, in x's dtype (int64 or float64 references)."""
    inclusive = torch.cumsum(x.flatten(), 0)
    return inclusive if kind == "inclusive" else torch.cat((inclusive.new_zeros(1), inclusive))[:-1]


def assert_within_scan_bound(out, ref, x, kind):
    """out, a float32 scan of x, against its float64 reference: each element within twice scan.hpp's
    "about log2(n) eps (|x[0]| + ... + |x[i]|)" (the adds' order is the kernel's: tiles, then the
    chain of tile prefixes)."""
    bound = 2 * math.ceil(math.log2(x.numel())) * EPS32 * cumsum(kind, x.double().abs())
    excess = (out.double().flatten() - ref.flatten()).abs() - bound
    assert excess.max().item() <= 0, f"{kind} scan: an element {excess.max().item():.3g} past its bound"


@pytest.mark.parametrize("n", SIZES)
def test_reduce_sum_matches_torch(n):
    seed("reduce_sum", n)
    # int32 exactly, wrapping around (values up to 2^30 overflow from a few elements on).
    x = torch.randint(-(2**30), 2**30, (n,), device="cuda", dtype=torch.int32)
    assert ops.reduce_sum(x).item() == wrapped(x.long().sum()).item()
    # Whole numbers in fp32: every partial sum is a whole number far below 2^24, exact in any order,
    # so a lost or doubled element shows at any n.
    x = torch.randint(-8, 9, (n,), device="cuda").float()
    assert ops.reduce_sum(x).item() == x.double().sum().item()
    # Random fp32 against float64: within reduce.hpp's 2 log2(n) eps sum|x| for its tree sum.
    x = torch.randn(n, device="cuda")
    error = abs(ops.reduce_sum(x).item() - x.double().sum().item())
    assert error <= 2 * math.ceil(math.log2(n)) * EPS32 * x.double().abs().sum().item()


@pytest.mark.parametrize("kind", list(SCANS))
@pytest.mark.parametrize("n", SIZES)
def test_scans_and_their_gradients_match_cumsum(kind, n):
    scan = SCANS[kind]
    seed(kind, n)
    x = torch.randint(-(2**30), 2**30, (n,), device="cuda", dtype=torch.int32)
    assert torch.equal(scan(x), wrapped(cumsum(kind, x.long())))
    x = torch.randint(-8, 9, (n,), device="cuda").float()  # whole numbers: exact, as for the sum
    assert torch.equal(scan(x), cumsum(kind, x.double()).float())
    x = torch.randn(n, device="cuda", requires_grad=True)
    y = scan(x)
    assert_within_scan_bound(y, cumsum(kind, x.detach().double()), x.detach(), kind)
    # The gradient is the same scan of dy run from the last element back: the bound of a scan of
    # dy flipped.
    dy = torch.randn(n, device="cuda")
    x64 = x.detach().double().requires_grad_()
    (g,) = torch.autograd.grad(y, x, dy)
    (r,) = torch.autograd.grad(cumsum(kind, x64), x64, dy.double())
    assert_within_scan_bound(g.flip(0), r.flip(0), dy.flip(0), kind)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("shape", [(0,), (2, 0, 5), (), (3, 7, 31)])
def test_sum_and_scans_read_any_shape_flat(dtype, shape):
    x = torch.randint(-8, 9, shape, device="cuda").to(dtype)  # whole numbers: exact in both dtypes
    total = ops.reduce_sum(x)
    assert total.shape == () and total.dtype == dtype and total.item() == x.long().sum().item()
    for kind, scan in SCANS.items():
        y = scan(x)
        assert y.shape == x.shape and y.dtype == dtype
        assert torch.equal(y, cumsum(kind, x.long()).to(dtype).view_as(x))


def test_sum_and_scan_gradients_keep_the_input_shape():
    x = torch.randn(3, 7, 31, device="cuda", requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    dsum = torch.randn((), device="cuda")
    (g,) = torch.autograd.grad(ops.reduce_sum(x), x, dsum)
    (r,) = torch.autograd.grad(x64.sum(), x64, dsum.double())
    assert g.shape == x.shape and torch.equal(g.double(), r)
    dy = torch.randn_like(x)
    for kind, scan in SCANS.items():
        (g,) = torch.autograd.grad(scan(x), x, dy)
        (r,) = torch.autograd.grad(cumsum(kind, x64).view_as(x64), x64, dy.double())
        assert g.shape == x.shape
        assert_within_scan_bound(g.flatten().flip(0), r.flatten().flip(0), dy.flatten().flip(0), kind)


@pytest.mark.parametrize("n", SIZES)
def test_select_at_least_matches_masked_select(n):
    seed("select_at_least", n)
    x = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    # All kept, about half, a few (those equal to it among them), none, and int32's extremes.
    for threshold in (-1000, 0, 999, 1000, -(2**31), 2**31 - 1):
        assert torch.equal(ops.select_at_least(x, threshold), torch.masked_select(x, x >= threshold))


def test_select_at_least_returns_a_flat_tensor_of_its_own():
    x = torch.randint(-1000, 1000, (3, 7, 31), device="cuda", dtype=torch.int32)
    kept = ops.select_at_least(x, 500)
    assert torch.equal(kept, torch.masked_select(x, x >= 500))
    assert kept.untyped_storage().nbytes() == kept.numel() * 4  # a copy, not a view of room for all
    assert ops.select_at_least(x[:0], 0).shape == (0,)


@pytest.mark.parametrize("n", SIZES)
def test_histogram_matches_bincount(n):
    seed("histogram", n)
    samples = torch.randint(0, 256, (n,), device="cuda").to(torch.uint8)
    assert torch.equal(ops.histogram(samples, 256), torch.bincount(samples.long(), minlength=256).int())
    samples = torch.randint(0, 65536, (n,), device="cuda").to(torch.uint16)
    counts = torch.bincount(samples.long(), minlength=65536).int()
    # Bins in shared memory up to 4096, global atomics above; samples >= bins are not counted.
    for bins in (1, 200, 4096, 4097, 65536):
        assert torch.equal(ops.histogram(samples, bins), counts[:bins])


def test_histogram_of_one_value_and_of_nothing():
    n = 2**26 + 5
    for dtype, bins in ((torch.uint8, 256), (torch.uint16, 4096), (torch.uint16, 65536)):
        counts = ops.histogram(torch.full((n,), 7, device="cuda").to(dtype), bins)
        assert counts[7].item() == n and counts.sum().item() == n
        assert torch.equal(ops.histogram(torch.empty(0, device="cuda", dtype=dtype), bins), counts.new_zeros(bins))


@pytest.mark.parametrize(
    "shape", [(1, 1), (1, 31), (31, 1), (0, 5), (1000, 1000), (1023, 1025), (3, 2**20 + 3), (2**13 + 3, 2**13 + 5)]
)
def test_transpose_and_its_gradient(shape):
    seed("transpose", shape)
    x = torch.randn(shape, device="cuda", requires_grad=True)
    y = ops.transpose(x)
    assert y.is_contiguous() and torch.equal(y, x.detach().t())
    dy = torch.randn_like(y)
    (g,) = torch.autograd.grad(y, x, dy)
    assert torch.equal(g, dy.t())


@pytest.mark.parametrize("r", [1, 3, 5, 7])
@pytest.mark.parametrize("shape", [(1, 1), (1, 31), (31, 1), (3, 7), (1000, 1000), (2049, 4097)])
def test_conv2d_matches_torch(shape, r):
    seed("conv2d", shape, r)
    image = torch.randn(shape, device="cuda")
    filter = torch.randn(r, r, device="cuda")  # not symmetric: a flipped filter (convolution) fails

    def torch_conv2d(image, filter):
        return F.conv2d(image.double()[None, None], filter.double()[None, None], padding=r // 2)[0, 0]

    out = ops.conv2d(image, filter)
    # conv2d.hpp: each output within R*R eps of the sum of its products' magnitudes.
    bound = r * r * EPS32 * torch_conv2d(image.abs(), filter.abs())
    assert out.shape == shape and ((out.double() - torch_conv2d(image, filter)).abs() <= bound).all()


def test_conv2d_rows_up_to_the_limit_and_no_further():
    filter = torch.randn(3, 3, device="cuda")
    tall = torch.randn(2_097_120, 1, device="cuda")
    ref = F.conv2d(tall.double()[None, None], filter.double()[None, None], padding=1)[0, 0]
    torch.testing.assert_close(ops.conv2d(tall, filter).double(), ref, rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="cudalab.conv2d: image must have at most 2097120 rows"):
        ops.conv2d(torch.empty(2_097_121, 1, device="cuda"), filter)
    assert ops.conv2d(torch.empty(0, 5, device="cuda"), filter).shape == (0, 5)


def test_conv2d_has_no_backward():
    out = ops.conv2d(torch.randn(8, 8, device="cuda", requires_grad=True), torch.randn(3, 3, device="cuda"))
    with pytest.raises(NotImplementedError, match="cudalab.conv2d has no backward"):
        out.sum().backward()


def empty(*shape, dtype=torch.float32):
    return torch.empty(shape, device="cuda", dtype=dtype)


I32, U8, U16 = torch.int32, torch.uint8, torch.uint16
SQUARE = r"filter must be square \[R, R\] with R odd, 1 to 7"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ops.reduce_sum(empty(4, dtype=torch.float64)), TypeError, "reduce_sum: x must be float32 or int32"),
        (lambda: ops.inclusive_scan(empty(4, 8).t()), RuntimeError, "inclusive_scan: x must be contiguous"),
        (lambda: ops.exclusive_scan(empty(4, dtype=torch.float16)), TypeError, "exclusive_scan: x must be float32 or"),
        (lambda: ops.select_at_least(empty(4), 0), TypeError, "select_at_least: x must be int32, got float32"),
        (lambda: ops.select_at_least(empty(4, dtype=I32), 2**31), ValueError, "select_at_least: threshold must be"),
        (lambda: ops.select_at_least(empty(4, 8, dtype=I32).t(), 0), RuntimeError, "select_at_least: x must be contig"),
        (lambda: ops.histogram(empty(4, dtype=I32), 256), TypeError, "histogram: samples must be uint8 or uint16, got"),
        (lambda: ops.histogram(empty(4, dtype=U8), 255), ValueError, "histogram: bins must be 256 for uint8 samples"),
        (lambda: ops.histogram(empty(4, dtype=U16), 0), ValueError, r"histogram: bins must be in \[1, 65536\]"),
        (lambda: ops.histogram(empty(4, dtype=U16), 65537), ValueError, r"histogram: bins must be in \[1, 65536\]"),
        (lambda: ops.histogram(empty(2**31, dtype=U8), 256), ValueError, r"histogram: samples must have fewer than 2"),
        (lambda: ops.transpose(empty(2, 3, 4)), ValueError, r"transpose: x must be a matrix \[rows, cols\], got"),
        (lambda: ops.transpose(empty(4, 8).t()), RuntimeError, "transpose: x must be contiguous"),
        (lambda: ops.transpose(empty(4, 8, dtype=I32)), TypeError, "transpose: x must be float32, got int32"),
        (lambda: ops.conv2d(empty(1, 8, 8), empty(3, 3)), ValueError, r"conv2d: image must be \[height, width\]"),
        (lambda: ops.conv2d(empty(8, 8), empty(2, 2)), ValueError, f"conv2d: {SQUARE}"),
        (lambda: ops.conv2d(empty(8, 8), empty(9, 9)), ValueError, f"conv2d: {SQUARE}"),
        (lambda: ops.conv2d(empty(8, 8), empty(3, 5)), ValueError, rf"conv2d: {SQUARE}, got \[3, 5\]"),
        (lambda: ops.conv2d(empty(8, 8), empty(3, 3).cpu()), RuntimeError, "conv2d: filter must be a CUDA tensor"),
        (lambda: ops.conv2d(empty(8, 8), empty(3, 3, dtype=torch.float16)), TypeError, "conv2d: filter must be float"),
    ],
)
def test_primitives_name_what_they_refuse(call, error, message):
    with pytest.raises(error, match=f"cudalab.{message}"):
        call()


# ---- attention

# ATTENTION_REL_L2 says where these bounds come from; the log-sum-exp is fp32 arithmetic on
# exact products (a few hundred roundings at these lengths).
ATTENTION_SEQS = [1, 17, 65, 129, 200]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seq", ATTENTION_SEQS)
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (8, 2), (4, 1)])
def test_attention_matches_float64_on_every_row(dtype, seq, head_dim, causal, heads, kv_heads):
    seed("attention", dtype, seq, head_dim, causal, heads, kv_heads)
    q = torch.randn(2, heads, seq, head_dim, device="cuda").to(dtype)
    k, v = torch.randn(2, 2, kv_heads, seq, head_dim, device="cuda").to(dtype).unbind(0)
    o, lse = ops.attention(q, k, v, causal=causal)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal)
    assert o.shape == q.shape and o.dtype == dtype and lse.shape == q.shape[:-1] and lse.dtype == torch.float32
    assert torch.isfinite(o).all() and torch.isfinite(lse).all()
    bound = ATTENTION_REL_L2[dtype]
    assert rel_l2(o, ref_o) <= bound, f"O rel L2 {rel_l2(o, ref_o):.3g}"
    # Every row on its own (a wrong mask, a skipped tile or an unwritten row can hide in the total):
    # within 4x the total's bound, which leaves room for the spread of 64 or 128 elements' errors.
    row_error = (o.double() - ref_o).norm(dim=-1) / ref_o.norm(dim=-1)
    assert row_error.max().item() <= 4 * bound, f"worst row rel L2 {row_error.max().item():.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_scale_and_longer_sequences(dtype, causal):
    seed("attention scale", dtype, causal)
    q, k, v = torch.randn(3, 1, 3, 1000, 128, device="cuda").to(dtype).unbind(0)
    o, lse = ops.attention(q, k, v, scale=0.25, causal=causal)
    ref_o, ref_lse = attention_reference(q, k, v, scale=0.25, causal=causal)
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("causal, window_size", [(True, (100, 0)), (False, (37, 5)), (False, (0, 70)), (True, (0, 0))])
def test_attention_window_forward_backward_and_packed(dtype, head_dim, causal, window_size):
    # Windows whose edges cut the kernels' 64- and 128-key tiles, on either side or both, grouped
    # heads: O and L against float64, every row; the gradients within 2x SDPA's (given the window as
    # a mask); the packed op the same as the split one.
    seed("attention window", dtype, head_dim, causal, window_size)
    batch, heads, kv_heads, seq = 2, 4, 2, 385
    qkv = torch.randn(batch, seq, (heads + 2 * kv_heads) * head_dim, device="cuda").to(dtype)
    split = qkv.view(batch, seq, heads + 2 * kv_heads, head_dim).split([heads, kv_heads, kv_heads], 2)
    q, k, v = (t.transpose(1, 2) for t in split)
    o, lse = ops.attention(q, k, v, causal=causal, window_size=window_size)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal, window=window_size)
    bound = ATTENTION_REL_L2[dtype]
    row_error = (o.double() - ref_o).norm(dim=-1) / ref_o.norm(dim=-1)
    assert row_error.max().item() <= 4 * bound, f"worst row rel L2 {row_error.max().item():.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)
    packed, packed_lse = ops.attention_packed(qkv, heads, kv_heads, causal=causal, window_size=window_size)
    torch.testing.assert_close(packed, o.transpose(1, 2).reshape(batch, seq, heads * head_dim), rtol=0, atol=0)
    torch.testing.assert_close(packed_lse, lse, rtol=0, atol=0)
    do = torch.randn_like(q)
    assert_gradients_within_sdpa_bound(q, k, v, do, causal, window_size=window_size)


def test_sdpa_is_scaled_dot_product_attention():
    # The common call runs cudalab's attention (the same O to the bit); what it does not take (a mask,
    # a query shorter than its keys, grouped heads without enable_gqa) is torch's own call.
    seed("sdpa")
    q = torch.randn(2, 8, 100, 64, device="cuda").to(torch.bfloat16)
    k, v = torch.randn(2, 2, 2, 100, 64, device="cuda").to(torch.bfloat16).unbind(0)
    for is_causal in (False, True):
        o = ops.sdpa(q, k, v, is_causal=is_causal, enable_gqa=True)
        exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=is_causal, enable_gqa=True)
        assert rel_l2(o, exact) <= ATTENTION_REL_L2[torch.bfloat16]
        torch.testing.assert_close(o, ops.attention(q, k, v, causal=is_causal)[0], rtol=0, atol=0)
    mask = torch.rand(100, 100, device="cuda") > 0.5
    mask.fill_diagonal_(True)
    torch.testing.assert_close(
        ops.sdpa(q, k, v, attn_mask=mask, enable_gqa=True),
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True),
    )
    short = q[:, :, :10]
    torch.testing.assert_close(
        ops.sdpa(short, k, v, is_causal=True, enable_gqa=True),
        F.scaled_dot_product_attention(short, k, v, is_causal=True, enable_gqa=True),
    )
    with pytest.raises(RuntimeError):
        ops.sdpa(q, k, v)  # 8 heads over 2 without enable_gqa: torch refuses it


def test_attention_backward_names_the_quadratic_fallback():
    # float32 takes the CUDA-core backward and its O(seq^2) scratch: a warning says so (every time
    # under set_warn_always, once a process otherwise); bfloat16 at head_dim 64 says nothing.
    torch.set_warn_always(True)
    try:
        q, k, v = (torch.randn(1, 2, 300, 64, device="cuda", requires_grad=True) for _ in range(3))
        with pytest.warns(UserWarning, match=r"CUDA-core fallback.*O\(seq\)"):
            ops.attention(q, k, v)[0].sum().backward()
        q, k, v = (t.detach().to(torch.bfloat16).requires_grad_() for t in (q, k, v))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ops.attention(q, k, v)[0].sum().backward()
        assert not [w for w in caught if "CUDA-core fallback" in str(w.message)]
    finally:
        torch.set_warn_always(False)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["head_dim 40", "head_dim 36", "head_dim 256", "misaligned"])
def test_attention_off_the_head_dim_64_and_128_kernels(dtype, layout):
    # 16-bit head_dim 40 and 256 at 16-byte aligned addresses run on Hopper's tensor-core kernels
    # (head_dim 40 on the 64 one, zeros past its last dimension) and on the CUDA-core kernel
    # elsewhere; head_dim 36 (rows of no 16-byte multiple) and a view one element into its storage
    # (contiguous, not aligned) on the CUDA-core kernel everywhere.
    seed("attention cuda cores", dtype, layout)
    head_dim = {"head_dim 40": 40, "head_dim 36": 36, "head_dim 256": 256}.get(layout, 64)
    shape = (2, 4, 129, head_dim)
    numel = math.prod(shape)
    storage = torch.randn(3 * numel + 1, device="cuda").to(dtype)
    offset = 1 if layout == "misaligned" else 0
    q, k, v = (storage[offset + i * numel : offset + (i + 1) * numel].view(shape) for i in range(3))
    o, lse = ops.attention(q, k, v, causal=True)
    ref_o, ref_lse = attention_reference(q, k, v, causal=True)
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head_dim", [32, 96, 160, 192, 256])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_head_dims_on_hopper(dtype, head_dim, causal):
    # Hopper's forward at head_dims other than 64 and 128, against float64: 256 on its own kernel
    # (64-key tiles), the rest on the kernel above them; grouped heads, a sequence of no tile's
    # multiple, q read as a [batch, seq, heads, head_dim] view. Its backward (on the head_dim 64 and
    # 128 kernels up to 128, the CUDA-core fallback above) within SDPA's gradient bound.
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the head_dim 256 and padded kernels are Hopper's")
    seed("attention head dims", dtype, head_dim, causal)
    batch, heads, kv_heads, seq = 2, 4, 2, 333
    q = torch.randn(batch, seq, heads, head_dim, device="cuda").to(dtype).transpose(1, 2)
    k, v = (torch.randn(batch, kv_heads, seq, head_dim, device="cuda").to(dtype) for _ in range(2))
    o, lse = ops.attention(q, k, v, causal=causal)
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal)
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)
    assert_gradients_within_sdpa_bound(q, k, v, torch.randn_like(o), causal)


# (batch, heads, kv_heads, tokens, cache, head_dim): Llama-3's grouping at one token (the split
# kernel, one split and many); 4 heads a group times 4 tokens (16 packed rows); multi-head; head_dim
# 80 and 8 x 8 packed rows (the CUDA-core kernel).
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape",
    [(3, 32, 8, 1, 1000, 128), (1, 8, 2, 1, 9000, 64), (2, 8, 2, 4, 300, 128), (4, 4, 4, 3, 77, 64),
     (2, 4, 1, 2, 500, 80), (2, 16, 2, 8, 200, 128)],
)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_decode_matches_float64(dtype, shape, causal):
    assert_decode_matches_float64(dtype, shape, causal, (-1, -1))


def assert_decode_matches_float64(dtype, shape, causal, window_size):
    # Sequence 0 fills the cache, the others hold lengths drawn from [tokens, cache].
    batch, heads, kv_heads, tokens, cache, head_dim = shape
    q = torch.randn(batch, heads, tokens, head_dim, device="cuda").to(dtype)
    k_cache, v_cache = (torch.randn(batch, kv_heads, cache, head_dim, device="cuda").to(dtype) for _ in range(2))
    lengths = torch.randint(tokens, cache + 1, (batch,), device="cuda", dtype=torch.int32)
    lengths[0] = cache
    o, lse = ops.attention_decode(q, k_cache, v_cache, lengths, causal=causal, window_size=window_size)
    ref_o, ref_lse = decode_reference(q, k_cache, v_cache, lengths, causal, window_size)
    assert o.shape == q.shape and o.dtype == dtype and lse.shape == q.shape[:-1]
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


# Sliding windows about each query's position: at one token and at 4 (16 packed rows), on the
# split kernel (head_dim 128) and the CUDA-core one (80), windows that start inside a 64-key tile.
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 32, 8, 1, 2000, 128), (2, 8, 2, 4, 700, 128), (2, 4, 1, 2, 500, 80)])
@pytest.mark.parametrize("window_size", [(100, 0), (37, -1), (0, 0)])
def test_attention_decode_window(dtype, shape, window_size):
    assert_decode_matches_float64(dtype, shape, True, window_size)


# Paged caches: pages of 64 keys (the tensor-core kernel) and of 16 (the CUDA-core one), in a
# shuffled order, against the float64 reference on the same keys gathered back into dense caches.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("page_size, tokens", [(64, 1), (64, 4), (16, 2)])
def test_attention_decode_reads_paged_caches(dtype, page_size, tokens):
    batch, heads, kv_heads, head_dim, per_sequence = 3, 8, 2, 128, 8
    cache = per_sequence * page_size
    pages = batch * per_sequence + 5  # some never used
    k_pages, v_pages = (torch.randn(pages, kv_heads, page_size, head_dim, device="cuda").to(dtype) for _ in range(2))
    table = torch.randperm(pages, device="cuda")[: batch * per_sequence].view(batch, per_sequence).int()
    lengths = torch.randint(tokens, cache + 1, (batch,), device="cuda", dtype=torch.int32)
    q = torch.randn(batch, heads, tokens, head_dim, device="cuda").to(dtype)
    o, lse = ops.attention_decode(q, k_pages, v_pages, lengths, block_table=table)
    # Dense [batch, kv_heads, cache, head_dim]: each sequence's pages in table order.
    k, v = (t[table].permute(0, 2, 1, 3, 4).reshape(batch, kv_heads, cache, head_dim) for t in (k_pages, v_pages))
    ref_o, ref_lse = decode_reference(q, k, v, lengths, True)
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


def test_attention_decode_compiles_and_replays_in_a_cuda_graph():
    # A static cache: the graph captured once, then replayed after new lengths and a new query are
    # written into its inputs, as a decoding loop does; and torch.compile(fullgraph=True) of the call.
    q = torch.randn(2, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(2, 8, 4096, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    lengths = torch.tensor([100, 4096], device="cuda", dtype=torch.int32)
    compiled = torch.compile(lambda *a: ops.attention_decode(*a)[0], fullgraph=True)
    torch.testing.assert_close(compiled(q, k, v, lengths), ops.attention_decode(q, k, v, lengths)[0], rtol=0, atol=0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        ops.attention_decode(q, k, v, lengths)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, _ = ops.attention_decode(q, k, v, lengths)
    for step in range(3):
        lengths.copy_(torch.tensor([101 + step, 3000 - step]))
        q.copy_(torch.randn_like(q))
        graph.replay()
        ref_o, _ = decode_reference(q, k, v, lengths, True)
        assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[torch.bfloat16], f"step {step}: O rel L2 {rel_l2(o, ref_o):.3g}"


def test_attention_decode_agrees_with_sdpa_on_a_full_cache():
    # Every sequence's cache full and one token: SDPA's own call, no mask.
    q = torch.randn(4, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(4, 8, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    o, _ = ops.attention_decode(q, k, v, torch.full((4,), 2048, device="cuda", dtype=torch.int32))
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), enable_gqa=True)
    sdpa = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert rel_l2(o, ref) <= 2 * rel_l2(sdpa, ref) + 1e-3


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda q, k, n: ops.attention_decode(q, k, k, n.long()), TypeError, "cache_seqlens must be int32"),
        (lambda q, k, n: ops.attention_decode(q, torch.cat([k, k[:, :1]], 1), torch.cat([k, k[:, :1]], 1), n),
         ValueError, "multiple of the caches' heads"),
        (lambda q, k, n: ops.attention_decode(q, k[:, :, :10], k[:, :, :10], n), ValueError, "must be contiguous"),
        (lambda q, k, n: ops.attention_decode(q, k[..., :64], k[..., :64], n), ValueError, "head_dim"),
        (lambda q, k, n: ops.attention_decode(q, k.float(), k.float(), n), TypeError, "like q"),
        (lambda q, k, n: ops.attention_decode(q.expand(2, 4, 40, 128).contiguous(), k[:, :, :32].contiguous(),
                                              k[:, :, :32].contiguous(), n), ValueError, "at most the cache"),
    ],
)
def test_attention_decode_names_what_it_refuses(call, error, message):
    q = torch.randn(2, 4, 1, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 2, 64, 128, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(error, match=message):
        call(q, k, torch.full((2,), 64, device="cuda", dtype=torch.int32))


@pytest.mark.parametrize("shape", [(0, 4, 16, 64), (2, 4, 0, 64), (2, 0, 16, 64)])
def test_attention_of_nothing(shape):
    q = torch.empty(shape, device="cuda", dtype=torch.bfloat16)
    o, lse = ops.attention(q, q, q)
    assert o.shape == shape and lse.shape == shape[:-1]


def test_attention_compiles_without_graph_breaks():
    def block(q, k, v):
        o, lse = ops.attention(q, k, v, causal=True)
        return o.float() * 2 + 1, lse.exp()

    torch.manual_seed(3)
    q = torch.randn(2, 8, 100, 64, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn(2, 2, 2, 100, 64, device="cuda", dtype=torch.bfloat16).unbind(0)
    compiled = torch.compile(block, fullgraph=True)
    for got, expected in zip(compiled(q, k, v), block(q, k, v)):
        torch.testing.assert_close(got, expected)


# ---- attention's gradients

# FlashAttention's test of its gradients: each one's largest error against a float64 reference (the
# math attention in float64 on the same inputs) within twice that of PyTorch's SDPA (its default
# backend) in the same dtype, plus an allowance of a few units of the dtype's rounding at the
# gradients' size (about 1), for gradients SDPA happens to get exact: at seq 1, dS = P (dP - D) is
# 0 up to the rounding of two equal fp32 dot products.
GRADIENT_EPS = {torch.bfloat16: 1e-3, torch.float16: 1e-4, torch.float32: 1e-5}


def attention_gradients(attend, q, k, v, do):
    # detach() keeps the storage and so the addresses: an unaligned view stays unaligned.
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    return torch.autograd.grad(attend(q, k, v), (q, k, v), do)


def assert_gradients_within_sdpa_bound(q, k, v, do, causal, scale=None, window_size=(-1, -1)):
    # A window goes to SDPA as a boolean mask (the causal part in it too).
    seq = q.shape[2]
    mask = None if window_size == (-1, -1) else ~window_mask(range(seq), seq, causal, window_size, q.device)

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal and mask is None, scale=scale, enable_gqa=True
        )

    def cudalab_attention(q, k, v):
        return ops.attention(q, k, v, scale=scale, causal=causal, window_size=window_size)[0]

    ours = attention_gradients(cudalab_attention, q, k, v, do)
    # SDPA runs on copies: in torch 2.11 its backends fail on views off 16 bytes (the H100 run at
    # ddb2f98: cuDNN's graph refused them, then flash raised a misaligned address).
    copies = [t.clone() for t in (q, k, v, do)]
    theirs = attention_gradients(sdpa, *copies)
    exact = attention_gradients(sdpa, *(t.double() for t in copies))
    for name, g, s, r in zip(("dq", "dk", "dv"), ours, theirs, exact):
        assert g.shape == r.shape and g.dtype == q.dtype and torch.isfinite(g).all(), name
        error = (g.double() - r).abs().max().item()
        bound = 2 * (s.double() - r).abs().max().item() + GRADIENT_EPS[q.dtype]
        assert error <= bound, f"{name}: max error {error:.3g}, allowed {bound:.3g} (2x SDPA's + eps)"


requires_hopper = pytest.mark.skipif(
    not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
    reason="variable-length attention runs on Hopper (compute capability 9.0) only",
)
# Sequences of a variable-length batch as (queries, keys): self-attention of ragged lengths around
# the 128-row tiles, an empty sequence among them; and cross lengths, queries past the keys (under
# a causal mask the first rows see nothing) and keys past the queries.
VARLEN_SELF = [(1, 1), (17, 17), (128, 128), (0, 0), (300, 300), (129, 129)]
VARLEN_CROSS = [(5, 300), (129, 129), (200, 50), (1, 64), (64, 1), (0, 7), (7, 0), (260, 391)]


def varlen_batch(lengths, heads, kv_heads, head_dim, dtype, shared=False):
    """q, k, v and the int32 cumulative lengths of a variable-length batch of `lengths`; with
    `shared` (self-attention) one tensor of lengths for both, which takes the dense batch's mask."""
    cu_q, cu_k = (
        torch.tensor([0] + list(itertools.accumulate(n)), dtype=torch.int32, device="cuda") for n in zip(*lengths)
    )
    if shared:
        cu_k = cu_q
    q = torch.randn(int(cu_q[-1]), heads, head_dim, device="cuda").to(dtype)
    k, v = torch.randn(2, int(cu_k[-1]), kv_heads, head_dim, device="cuda").to(dtype).unbind(0)
    return q, k, v, cu_q, cu_k


@requires_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize(
    "lengths, shared", [(VARLEN_SELF, True), (VARLEN_SELF, False), (VARLEN_CROSS, False)], ids=["self", "apart", "cross"]
)
@pytest.mark.parametrize("causal, window_size", [(False, (-1, -1)), (True, (-1, -1)), (True, (40, 0)), (False, (3, 70))])
@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (6, 2)])
def test_attention_varlen_matches_float64(dtype, head_dim, lengths, shared, causal, window_size, heads, kv_heads):
    seed("attention varlen", dtype, head_dim, lengths, causal, window_size, heads, kv_heads)
    q, k, v, cu_q, cu_k = varlen_batch(lengths, heads, kv_heads, head_dim, dtype, shared)
    max_q, max_k = (max(n) for n in zip(*lengths))
    o, lse = ops.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal, window_size=window_size)
    ref_o, ref_lse = varlen_reference(q, k, v, cu_q, cu_k, causal, window_size)
    assert o.shape == q.shape and lse.shape == (heads, q.shape[0]) and lse.dtype == torch.float32
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype]
    # Rows that see no key: O = 0 and L = -inf exactly.
    empty = ~torch.isfinite(ref_lse)
    assert torch.equal(lse[empty], ref_lse[empty].float())
    assert (o.transpose(0, 1)[empty] == 0).all()
    torch.testing.assert_close(lse[~empty].double(), ref_lse[~empty], rtol=ATTENTION_LSE_REL_L2, atol=1e-4)


@requires_hopper
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize(
    "lengths",
    [VARLEN_SELF, [(5, 300), (129, 129), (1, 64), (260, 391), (0, 9), (77, 200)]],
    ids=["self", "cross"],
)
@pytest.mark.parametrize("causal, window_size", [(False, (-1, -1)), (True, (-1, -1)), (True, (40, 0))])
@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (6, 2)])
def test_attention_varlen_gradients_within_twice_a_16_bit_reference(
    dtype, head_dim, lengths, causal, window_size, heads, kv_heads
):
    # Every query sees a key here (the float64 reference's gradient is undefined for one that
    # does not); keys no query sees (a sequence without queries) get exact zeros.
    seed("attention varlen backward", dtype, head_dim, lengths, causal, window_size, heads, kv_heads)
    q, k, v, cu_q, cu_k = varlen_batch(lengths, heads, kv_heads, head_dim, dtype)
    max_q, max_k = (max(n) for n in zip(*lengths))
    do = torch.randn_like(q)

    def gradients(attend, *inputs):
        inputs = [t.detach().requires_grad_() for t in inputs]
        return torch.autograd.grad(attend(*inputs), inputs, do.to(inputs[0].dtype))

    ours = gradients(
        lambda q, k, v: ops.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal, window_size=window_size)[
            0
        ],
        q,
        k,
        v,
    )
    exact = gradients(lambda q, k, v: varlen_reference(q, k, v, cu_q, cu_k, causal, window_size)[0], q.double(),
                      k.double(), v.double())
    plain = gradients(
        lambda q, k, v: varlen_reference(q, k, v, cu_q, cu_k, causal, window_size, dtype=dtype)[0], q, k, v
    )
    for name, g, r, s in zip(("dq", "dk", "dv"), ours, exact, plain):
        assert g.shape == r.shape and g.dtype == dtype and torch.isfinite(g).all(), name
        error = (g.double() - r).abs().max().item()
        bound = 2 * (s.double() - r).abs().max().item() + GRADIENT_EPS[dtype]
        assert error <= bound, f"{name}: max error {error:.3g}, allowed {bound:.3g} (2x a 16-bit reference's + eps)"
    unseen = [b for b, (n, m) in enumerate(lengths) if n == 0 and m > 0]
    for b in unseen:
        rows = slice(int(cu_k[b]), int(cu_k[b + 1]))
        assert (ours[1][rows] == 0).all() and (ours[2][rows] == 0).all()


@requires_hopper
def test_attention_varlen_matches_attention_on_equal_lengths():
    # A batch of equal lengths is the dense call's problem: the same outputs and gradients to the
    # last bit but dq's (its L2 sums have no fixed order).
    seed("attention varlen dense")
    q = torch.randn(3, 8, 300, 128, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn(2, 3, 2, 300, 128, device="cuda", dtype=torch.bfloat16).unbind(0)
    do = torch.randn_like(q)
    cu = torch.arange(0, 901, 300, dtype=torch.int32, device="cuda")
    packed = [t.transpose(1, 2).reshape(-1, t.shape[1], 128).detach().requires_grad_() for t in (q, k, v)]
    dense = [t.detach().requires_grad_() for t in (q, k, v)]
    o, lse = ops.attention_varlen(*packed, cu, cu, 300, 300, causal=True)
    ref_o, ref_lse = ops.attention(*dense, causal=True)
    torch.testing.assert_close(o, ref_o.transpose(1, 2).reshape(o.shape), rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse.transpose(0, 1).reshape(lse.shape), rtol=0, atol=0)
    grads = torch.autograd.grad(o, packed, do.transpose(1, 2).reshape(o.shape))
    ref_grads = torch.autograd.grad(ref_o, dense, do)
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
        r = r.transpose(1, 2).reshape(g.shape)
        tolerance = 1e-2 if name == "dq" else 0
        torch.testing.assert_close(g, r, rtol=tolerance, atol=tolerance, msg=name)


@requires_hopper
def test_attention_varlen_reads_a_packed_projection_and_compiles():
    # q, k and v as views of one [total, (heads + 2 kv_heads) * head_dim] projection: no copy; and
    # torch.compile(fullgraph=True) of a step through the op.
    seed("attention varlen views")
    cu = torch.tensor([0, 100, 103, 353], dtype=torch.int32, device="cuda")
    qkv = torch.randn(353, (4 + 2 * 2) * 64, device="cuda", dtype=torch.float16)
    q, k, v = qkv.view(353, 8, 64).split([4, 2, 2], dim=1)
    o, lse = ops.attention_varlen(q, k, v, cu, cu, 250, 250, causal=True)
    ref_o, ref_lse = ops.attention_varlen(q.contiguous(), k.contiguous(), v.contiguous(), cu, cu, 250, 250, causal=True)
    torch.testing.assert_close(o, ref_o, rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=0)

    def step(qkv):
        q, k, v = qkv.view(353, 8, 64).split([4, 2, 2], dim=1)
        return ops.attention_varlen(q, k, v, cu, cu, 250, 250, causal=True)[0].float().square().sum()

    x = qkv.detach().requires_grad_()
    eager = torch.autograd.grad(step(x), x)[0]
    x = qkv.detach().requires_grad_()
    compiled = torch.autograd.grad(torch.compile(step, fullgraph=True)(x), x)[0]
    torch.testing.assert_close(compiled, eager, rtol=1e-2, atol=1e-2)


@requires_hopper
@pytest.mark.parametrize(
    "shape, causal, window_size",
    [((2, 8, 2, 1000, 128), True, (-1, -1)), ((1, 4, 4, 333, 64), False, (50, 20)), ((3, 6, 2, 257, 64), True, (-1, -1))],
)
def test_attention_backward_under_deterministic_algorithms_gives_the_same_bits(shape, causal, window_size):
    # torch.use_deterministic_algorithms(True) sums dq in a fixed order: three runs, one result,
    # within a few units of the last place of the default order's.
    batch, heads, kv_heads, seq, head_dim = shape
    seed("attention deterministic", shape, causal)
    q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn(2, batch, kv_heads, seq, head_dim, device="cuda", dtype=torch.bfloat16).unbind(0)
    do = torch.randn_like(q)

    def gradients():
        return attention_gradients(
            lambda q, k, v: ops.attention(q, k, v, causal=causal, window_size=window_size)[0], q, k, v, do
        )

    default = gradients()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [gradients() for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(False)
    for i, name in enumerate(("dq", "dk", "dv")):
        assert torch.equal(runs[0][i], runs[1][i]) and torch.equal(runs[0][i], runs[2][i]), name
        torch.testing.assert_close(runs[0][i], default[i], rtol=2e-2, atol=2e-2, msg=name)


@requires_hopper
def test_attention_varlen_backward_refuses_deterministic_algorithms():
    q, k, v, cu_q, cu_k = varlen_batch([(5, 5), (9, 9)], 2, 2, 64, torch.bfloat16)
    q.requires_grad_()
    o, _ = ops.attention_varlen(q, k, v, cu_q, cu_q, 9, 9)
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="cudalab.attention_varlen_backward"):
            o.sum().backward()
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize(
    "call, error, message",
    [
        ("float32", TypeError, "q must be bfloat16 or float16, got float32"),
        ("head_dim 100", RuntimeError, "head_dim 100: the kernel takes multiples of 8 up to 256"),
        ("heads", ValueError, "must be a multiple of k and v's heads"),
        ("cu_seqlens dtype", TypeError, "cu_seqlens_q must be int32"),
        ("cu_seqlens length", ValueError, "cu_seqlens_k must be contiguous [sequences + 1]"),
        ("max_seqlen", ValueError, "max_seqlen_q and max_seqlen_k must be >= 0"),
    ],
)
def test_attention_varlen_names_what_it_refuses(call, error, message):
    q = torch.randn(10, 4, 64, device="cuda", dtype=torch.bfloat16)
    k = v = torch.randn(12, 2, 64, device="cuda", dtype=torch.bfloat16)
    cu_q = torch.tensor([0, 4, 10], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, 5, 12], dtype=torch.int32, device="cuda")
    args = [q, k, v, cu_q, cu_k, 6, 7]
    if call == "float32":
        args[:3] = (t.float() for t in args[:3])
    elif call == "head_dim 100":
        if torch.cuda.get_device_capability() != (9, 0):
            pytest.skip("the refusal names the head_dim on Hopper; elsewhere the GPU")
        args[:3] = (torch.zeros(*t.shape[:2], 100, device="cuda", dtype=torch.bfloat16) for t in args[:3])
    elif call == "heads":
        args[0] = torch.randn(10, 3, 64, device="cuda", dtype=torch.bfloat16)
    elif call == "cu_seqlens dtype":
        args[3] = cu_q.long()
    elif call == "cu_seqlens length":
        args[4] = cu_k[:2]
    elif call == "max_seqlen":
        args[5] = -1
    with pytest.raises(error, match=re.escape(message)):
        ops.attention_varlen(*args)


@pytest.mark.parametrize(
    "dtype, head_dim",
    [
        (torch.bfloat16, 64),  # the tensor-core backward
        (torch.bfloat16, 128),
        (torch.float16, 64),
        (torch.float16, 128),
        (torch.float32, 64),  # the CUDA-core fallback
        (torch.bfloat16, 40),
    ],
)
@pytest.mark.parametrize("seq", [1, 17, 300])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (4, 2)])
def test_attention_gradients_within_twice_sdpas_error(dtype, head_dim, seq, causal, heads, kv_heads):
    seed("attention backward", dtype, head_dim, seq, causal, heads, kv_heads)
    q = torch.randn(2, heads, seq, head_dim, device="cuda").to(dtype)
    k, v = torch.randn(2, 2, kv_heads, seq, head_dim, device="cuda").to(dtype).unbind(0)
    assert_gradients_within_sdpa_bound(q, k, v, torch.randn_like(q), causal)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_attention_gradients_of_unaligned_views_and_an_explicit_scale(dtype):
    # Views one element into their storage are contiguous but off 16 bytes: the op must see it
    # (from the data pointers) and size the CUDA-core fallback's scratch, not the tensor cores'.
    seed("attention backward unaligned", dtype)
    shape = (1, 4, 129, 64)
    numel = math.prod(shape)
    storage = torch.randn(4 * numel + 1, device="cuda").to(dtype)
    q, k, v, do = (storage[1 + i * numel : 1 + (i + 1) * numel].view(shape) for i in range(4))
    assert q.data_ptr() % 16 != 0
    assert_gradients_within_sdpa_bound(q, k, v, do, causal=True, scale=0.3)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_gradcheck_in_float32(causal):
    # Finite differences through the CUDA-core fallback, in float32 (the ops refuse float64): the
    # tolerances cover float32's rounding of f(x +- eps) / (2 eps), about 1e-7 / 1e-3.
    seed("attention gradcheck", causal)
    q = torch.randn(1, 2, 5, 8, device="cuda", requires_grad=True)
    k, v = (torch.randn(1, 1, 5, 8, device="cuda", requires_grad=True) for _ in range(2))

    def attend(q, k, v):
        return ops.attention(q, k, v, causal=causal)[0]

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not a double precision floating point.*")
        assert torch.autograd.gradcheck(attend, (q, k, v), eps=1e-3, atol=1e-2, rtol=1e-2)


def test_attention_trains_under_compile_without_graph_breaks():
    # AOTAutograd traces the registered backward through attention_backward's fake kernel.
    def step(q, k, v):
        o, lse = ops.attention(q, k, v, causal=True)
        return (o.float() ** 2).sum()

    seed("attention compile backward")
    q = torch.randn(2, 8, 100, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(2, 2, 100, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    expected = torch.autograd.grad(step(q, k, v), (q, k, v))
    got = torch.autograd.grad(torch.compile(step, fullgraph=True)(q, k, v), (q, k, v))
    for g, e in zip(got, expected):
        # dq's fp32 atomics add in any order: a last-bit difference is allowed.
        torch.testing.assert_close(g, e, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(
    "dtype, head_dim", [(torch.bfloat16, 64), (torch.float16, 128), (torch.bfloat16, 40), (torch.float32, 64)]
)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_on_transposed_projections(dtype, head_dim, causal):
    # q, k and v as projections give them, [batch, seq, heads, head_dim] transposed (no copy; grouped
    # heads): read where they lie on Hopper's kernels (bf16/fp16, head_dim 64/128), as dense copies
    # elsewhere. o and the gradients come back laid out alike; values against the float64 reference
    # and SDPA's gradient bound.
    seed("attention transposed", dtype, head_dim, causal)
    q = torch.randn(2, 129, 4, head_dim, device="cuda").to(dtype).transpose(1, 2)
    k, v = (torch.randn(2, 129, 2, head_dim, device="cuda").to(dtype).transpose(1, 2) for _ in range(2))
    o, lse = ops.attention(q, k, v, causal=causal)
    assert o.transpose(1, 2).is_contiguous()
    ref_o, ref_lse = attention_reference(q, k, v, causal=causal)
    assert rel_l2(o, ref_o) <= ATTENTION_REL_L2[dtype], f"O rel L2 {rel_l2(o, ref_o):.3g}"
    torch.testing.assert_close(lse.double(), ref_lse, rtol=ATTENTION_LSE_REL_L2, atol=1e-4)
    do = torch.randn(2, 129, 4, head_dim, device="cuda").to(dtype).transpose(1, 2)
    assert_gradients_within_sdpa_bound(q, k, v, do, causal)


@pytest.mark.parametrize("dtype, head_dim", [(torch.bfloat16, 128), (torch.float16, 64), (torch.bfloat16, 40)])
@pytest.mark.parametrize("heads, kv_heads", [(4, 4), (4, 1)])
def test_attention_packed_matches_attention_on_the_split_heads(dtype, head_dim, heads, kv_heads):
    # One fused projection's output [batch, seq, (heads + 2 kv_heads) * head_dim]: o [batch, seq,
    # heads * head_dim] and dqkv against ops.attention on the split heads (which the test above
    # checks against the references); dk and dv to the bit where both run the same kernel.
    seed("attention packed", dtype, head_dim, heads, kv_heads)
    qkv = torch.randn(3, 200, (heads + 2 * kv_heads) * head_dim, device="cuda").to(dtype).requires_grad_()
    o, lse = ops.attention_packed(qkv, heads, kv_heads, causal=True)
    assert o.shape == (3, 200, heads * head_dim) and o.is_contiguous() and lse.shape == (3, heads, 200)
    split = qkv.detach().view(3, 200, heads + 2 * kv_heads, head_dim).split([heads, kv_heads, kv_heads], 2)
    q, k, v = (t.transpose(1, 2).requires_grad_() for t in split)
    ref, ref_lse = ops.attention(q, k, v, causal=True)
    torch.testing.assert_close(o, ref.transpose(1, 2).reshape(o.shape), rtol=0, atol=0)
    torch.testing.assert_close(lse, ref_lse, rtol=0, atol=0)
    do = torch.randn_like(o)
    (dqkv,) = torch.autograd.grad(o, qkv, do)
    dq, dk, dv = torch.autograd.grad(ref, (q, k, v), do.view(3, 200, heads, head_dim).transpose(1, 2))
    got = dqkv.view(3, 200, heads + 2 * kv_heads, head_dim).split([heads, kv_heads, kv_heads], 2)
    for name, g, e in zip(("dq", "dk", "dv"), got, (dq, dk, dv)):
        # dq's fp32 sums are added in no fixed order.
        tolerance = 2e-2 if name == "dq" else 0.0
        torch.testing.assert_close(g, e.transpose(1, 2), rtol=tolerance, atol=tolerance)


def test_attention_packed_names_what_it_refuses():
    x = torch.empty(2, 16, 13, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"cudalab.attention_packed: qkv's last dimension \(13\) must be"):
        ops.attention_packed(x, 3, 1)
    with pytest.raises(ValueError, match="cudalab.attention_packed: heads and kv_heads must be >= 1"):
        ops.attention_packed(torch.empty(2, 16, 64, device="cuda", dtype=torch.bfloat16), 3, 2)
    with pytest.raises(RuntimeError, match="cudalab.attention_packed: qkv's last dimension .head_dim. must be contig"):
        ops.attention_packed(torch.empty(2, 48, 16, device="cuda", dtype=torch.bfloat16).mT, 2)


def qkv(q=(2, 4, 16, 64), k=(2, 4, 16, 64), v=None, dtype=torch.bfloat16, k_dtype=None):
    return empty(*q, dtype=dtype), empty(*k, dtype=k_dtype or dtype), empty(*(v or k), dtype=k_dtype or dtype)


A = "cudalab.attention"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ops.attention(*qkv(k_dtype=torch.float16)), TypeError, f"{A}: k must be bfloat16 like q, got float16"),
        (lambda: ops.attention(*qkv(dtype=torch.float64)), TypeError, f"{A}: q must be float32, bfloat16 or float16"),
        (lambda: ops.attention(*qkv(q=(4, 16, 64))), ValueError, rf"{A}: q must be \[batch, heads, seq, head_dim\]"),
        (lambda: ops.attention(*qkv(k=(2, 4, 16, 64, 1))), ValueError, rf"{A}: k must be \[batch, kv_heads, seq"),
        (lambda: ops.attention(*qkv(q=(2, 6, 16, 64))), ValueError, rf"{A}: q's heads \(6\) must be a multiple of k"),
        (lambda: ops.attention(*qkv(k=(2, 0, 16, 64))), ValueError, rf"{A}: q's heads \(4\) must be a multiple of k"),
        (lambda: ops.attention(*qkv(k=(1, 4, 16, 64))), ValueError, f"{A}: k must have q's batch 2"),
        (lambda: ops.attention(*qkv(k=(2, 4, 8, 64))), ValueError, f"{A}: k must have q's seq 16 .the library takes"),
        (lambda: ops.attention(*qkv(k=(2, 4, 16, 128))), ValueError, f"{A}: k must have q's head_dim 64"),
        (lambda: ops.attention(*qkv(v=(2, 2, 16, 64))), ValueError, rf"{A}: v must have k's shape \[2, 4, 16, 64\]"),
        (lambda: ops.attention(*qkv(q=(2, 4, 16, 0), k=(2, 4, 16, 0))), ValueError, f"{A}: head_dim must be at least"),
        (lambda: ops.attention(*qkv(), scale=0.0), ValueError, f"{A}: scale must be > 0 and finite"),
        (lambda: ops.attention(*qkv(), scale=math.inf), ValueError, f"{A}: scale must be > 0 and finite"),
        (lambda: ops.attention(*qkv(), scale=1e300), ValueError, f"{A}: scale must be > 0 and finite in float32"),
    ],
)
def test_attention_names_what_it_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


AB = "cudalab.attention_backward"


def attention_backward(
    kv=(2, 4, 16, 64), o=(2, 4, 16, 64), lse=(2, 4, 16), do=(2, 4, 16, 64), lse_dtype=torch.float32, do_dtype=None
):
    """The backward op on empty bfloat16 q [2, 4, 16, 64] and the other shapes and dtypes given."""
    q, k, v = qkv(k=kv)
    o, lse = empty(*o, dtype=q.dtype), empty(*lse, dtype=lse_dtype)
    return torch.ops.cudalab.attention_backward(q, k, v, o, lse, empty(*do, dtype=do_dtype or q.dtype))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: attention_backward(o=(2, 4, 16, 32)), ValueError, rf"{AB}: o must have q's shape \[2, 4, 16, 64\]"),
        (lambda: attention_backward(do=(2, 4, 15, 64)), ValueError, f"{AB}: do must have q's shape"),
        (lambda: attention_backward(do_dtype=torch.float16), TypeError, f"{AB}: do must be bfloat16 like q, got"),
        (lambda: attention_backward(lse_dtype=torch.bfloat16), TypeError, f"{AB}: lse must be float32"),
        (lambda: attention_backward(lse=(2, 4, 17)), RuntimeError, f"{AB}: lse must be contiguous with 128 elements"),
        (lambda: attention_backward(lse=(8, 16)), ValueError, rf"{AB}: lse must be \[batch, heads, seq\] = \[2, 4"),
        (lambda: attention_backward(kv=(2, 3, 16, 64)), ValueError, rf"{AB}: q's heads \(4\) must be a multiple of k"),
    ],
)
def test_attention_backward_names_what_it_refuses(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_attention_refuses_a_strided_head_dim_and_cpu_arguments():
    # Any batch, head and position strides are read where they lie; head_dim must be contiguous.
    q, k, v = qkv()
    with pytest.raises(RuntimeError, match=f"{A}: q's last dimension .head_dim. must be contiguous"):
        ops.attention(q.transpose(2, 3).contiguous().transpose(2, 3), k, v)
    with pytest.raises(RuntimeError, match=f"{A}: v must be a CUDA tensor, got cpu"):
        ops.attention(q, k, v.cpu())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gemm_and_attention_run_in_the_autocast_dtype(dtype):
    a, b = torch.randn(64, 96, device="cuda"), torch.randn(96, 80, device="cuda")
    q = torch.randn(1, 2, 128, 64, device="cuda")
    with torch.autocast(device_type="cuda", dtype=dtype):
        y = ops.gemm(a, b)
        o, lse = ops.attention(q, q, q, causal=True)
    assert y.dtype == dtype and o.dtype == dtype and lse.dtype == torch.float32
    assert rel_l2(y, a.double() @ b.double()) <= 2 * REL_L2[dtype]
    assert ops.gemm(a, b).dtype == torch.float32  # autocast off again: as given
