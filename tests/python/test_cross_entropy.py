"""cudalab.ops.cross_entropy and cudalab.nn.CrossEntropyLoss: the op's registration, fake kernel and
CPU refusal everywhere; on a GPU the loss and its gradient against float64 PyTorch for every
reduction, with ignored rows and label smoothing, the fused gradient beside the one from lse, and
opcheck. cudalab.ops.linear_cross_entropy (the LM head and its loss in chunks): its argument checks
everywhere; on a GPU its loss and gradients against float64, its peak memory against eager's, and
the in-place GEMM it accumulates the weight's gradient with."""

import zlib

import pytest
import torch
import torch.nn.functional as F

import cudalab.nn
from cudalab import ops
from conftest import requires_cuda

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# Relative L2 of the loss and of the gradient against float64: fp32 inside, each result rounded once
# to the dtype (the same targets as the fused ops').
REL_L2 = {torch.float32: 1e-5, torch.bfloat16: 4e-3, torch.float16: 1e-3}
SCHEMAS = {
    "cross_entropy": "cudalab::cross_entropy(Tensor logits, Tensor target, int ignore_index, float label_smoothing, "
    "bool with_gradient, Tensor? grad_scale, float z_loss=0., float softcap=0.) -> (Tensor, Tensor, Tensor)",
    "cross_entropy_": "cudalab::cross_entropy_(Tensor(a!) logits, Tensor target, int ignore_index, "
    "float label_smoothing, Tensor? grad_scale, float z_loss=0., float softcap=0.) -> (Tensor, Tensor)",
    "cross_entropy_backward": "cudalab::cross_entropy_backward(Tensor logits, Tensor target, Tensor lse, "
    "Tensor dloss, int ignore_index, float label_smoothing, float z_loss=0., float softcap=0.) -> Tensor",
    "cross_entropy_scale_gradient_": "cudalab::cross_entropy_scale_gradient_(Tensor(a!) dlogits, Tensor dloss) -> ()",
}


def rel_l2(out, ref, floor=1e-300):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(floor)).item()


def inputs(rows, vocab, dtype, device="cuda", ignored_every=5):
    """Logits of a spread a trained model's have (standard deviation 3, offset per row), targets with
    every `ignored_every`-th row ignored (-100), the first of them row ignored_every - 1."""
    torch.manual_seed(zlib.crc32(repr((rows, vocab, dtype)).encode()))
    logits = (torch.randn(rows, vocab, device=device) * 3 + torch.randn(rows, 1, device=device) * 10).to(dtype)
    target = torch.randint(0, vocab, (rows,), device=device)
    target[ignored_every - 1 :: ignored_every] = -100
    return logits, target


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_registered_with_its_schema(name):
    op = getattr(torch.ops.cudalab, name).default
    assert str(op._schema) == SCHEMAS[name]
    assert list(cudalab._C.element_types[name]) == ["float32", "bfloat16", "float16"]


def test_fake_shapes():
    with torch.device("meta"):
        logits, target = torch.empty(6, 11, dtype=torch.bfloat16), torch.empty(6, dtype=torch.long)
        loss, lse, dlogits = torch.ops.cudalab.cross_entropy(logits, target, -100, 0.0, True, None)
        assert loss.shape == lse.shape == (6,) and loss.dtype == torch.float32
        assert dlogits.shape == logits.shape and dlogits.dtype == logits.dtype
        assert torch.ops.cudalab.cross_entropy(logits, target, -100, 0.0, False, None)[2].shape == (0,)
        assert ops.cross_entropy(logits.view(2, 3, 11), target.view(2, 3), "none").shape == (2, 3)


def test_cpu_tensors_are_refused_with_the_op_name():
    with pytest.raises(RuntimeError, match="cudalab.cross_entropy: CUDA tensors only"):
        ops.cross_entropy(torch.randn(3, 5), torch.zeros(3, dtype=torch.long))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none'"):
        ops.cross_entropy(torch.randn(3, 5), torch.zeros(3, dtype=torch.long), "average")
    with pytest.raises(ValueError, match="target must have logits' shape"):
        ops.cross_entropy(torch.randn(3, 5), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="class weights"):
        cudalab.nn.CrossEntropyLoss(weight=torch.ones(5))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
# 320 rows: at least two per SM on today's GPUs, where the library takes a block per row: the rung
# keeping rows in shared memory where two blocks fit an SM (4097; 50257 in 16-bit types), else not.
# A few rows of 65537 and 128256: a cluster a row on Hopper.
@pytest.mark.parametrize(
    "rows, vocab", [(1, 1), (9, 7), (16, 1000), (8, 4097), (6, 65537), (4, 128256), (320, 4097), (320, 50257)]
)
def test_loss_and_gradient_match_float64(dtype, reduction, smoothing, rows, vocab):
    logits, target = inputs(rows, vocab, dtype)
    logits.requires_grad_()
    loss = ops.cross_entropy(logits, target, reduction, label_smoothing=smoothing)
    x64 = logits.detach().double().requires_grad_()
    ref = F.cross_entropy(x64, target, reduction=reduction, label_smoothing=smoothing)
    assert loss.dtype == dtype and loss.shape == ref.shape
    # lse - x rounds relative to the logits' magnitude, not to the loss (0 at one class): the loss is
    # held relative to the larger of the two.
    magnitude = x64.detach().abs().amax(-1)
    magnitude = {"none": magnitude, "sum": magnitude.sum(), "mean": magnitude.mean()}[reduction]
    if ref.isfinite().all():
        error = rel_l2(loss, ref, magnitude.norm().item())
        assert error <= REL_L2[dtype], f"loss rel L2 {error:.3g}"
    # An incoming gradient other than 1 (the fused gradient is then scaled in the backward).
    upstream = torch.rand_like(ref) + 0.5
    (grad,) = torch.autograd.grad(loss, logits, upstream.to(loss.dtype))
    (grad_ref,) = torch.autograd.grad(ref, x64, upstream.to(loss.dtype).double())
    assert rel_l2(grad, grad_ref) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(grad, grad_ref):.3g}"
    assert (grad[target == -100] == 0).all()


def softcapped_z_loss_reference(x64, target, reduction, smoothing, z_loss, softcap):
    """The loss in float64 autograd: logits capped as softcap * tanh(x / softcap), each counted
    row's loss plus z_loss * lse^2, reduced over the rows counted."""
    c = softcap * torch.tanh(x64 / softcap) if softcap > 0 else x64
    kept = target != -100
    per_row = F.cross_entropy(c, target, reduction="none", label_smoothing=smoothing)
    per_row = per_row + z_loss * torch.logsumexp(c, -1) ** 2 * kept
    if reduction == "none":
        return per_row
    return per_row.sum() / kept.sum() if reduction == "mean" else per_row.sum()


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("z_loss, softcap, smoothing", [(0.01, 0.0, 0.1), (0.0, 30.0, 0.0), (1e-3, 5.0, 0.1)])
@pytest.mark.parametrize("rows, vocab", [(9, 7), (16, 1000), (8, 4097), (320, 50257), (5, 128257)])
def test_z_loss_and_softcap_match_float64(dtype, reduction, z_loss, softcap, smoothing, rows, vocab):
    logits, target = inputs(rows, vocab, dtype)
    logits.requires_grad_()
    loss = ops.cross_entropy(logits, target, reduction, label_smoothing=smoothing, z_loss=z_loss, softcap=softcap)
    x64 = logits.detach().double().requires_grad_()
    ref = softcapped_z_loss_reference(x64, target, reduction, smoothing, z_loss, softcap)
    assert loss.dtype == dtype and loss.shape == ref.shape
    magnitude = x64.detach().abs().amax(-1)
    if softcap > 0:
        magnitude = magnitude.clamp_max(softcap)
    magnitude = {"none": magnitude, "sum": magnitude.sum(), "mean": magnitude.mean()}[reduction]
    error = rel_l2(loss, ref, magnitude.norm().item())
    assert error <= REL_L2[dtype], f"loss rel L2 {error:.3g}"
    upstream = torch.rand_like(ref) + 0.5
    (grad,) = torch.autograd.grad(loss, logits, upstream.to(loss.dtype))
    (grad_ref,) = torch.autograd.grad(ref, x64, upstream.to(loss.dtype).double())
    assert rel_l2(grad, grad_ref) <= 2 * REL_L2[dtype], f"gradient rel L2 {rel_l2(grad, grad_ref):.3g}"


@requires_cuda
def test_z_loss_and_softcap_must_be_finite_and_not_negative():
    logits, target = torch.randn(2, 3, device="cuda"), torch.zeros(2, dtype=torch.long, device="cuda")
    with pytest.raises(RuntimeError, match="z_loss must be >= 0 and finite"):
        ops.cross_entropy(logits, target, z_loss=-1.0)
    with pytest.raises(RuntimeError, match="softcap must be >= 0 and finite"):
        ops.cross_entropy(logits, target, softcap=float("inf"))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_gradient_equals_the_gradient_from_lse(dtype):
    logits, target = inputs(64, 32000, dtype)
    loss, lse, fused = torch.ops.cudalab.cross_entropy(logits, target, -100, 0.1, True, None)
    from_lse = torch.ops.cudalab.cross_entropy_backward(logits, target, lse, torch.ones(1, device="cuda"), -100, 0.1)
    assert rel_l2(fused, from_lse) <= REL_L2[dtype]
    alone, lse_alone, _ = torch.ops.cudalab.cross_entropy(logits, target, -100, 0.1, False, None)
    assert torch.equal(alone, loss) and torch.equal(lse_alone, lse)


# Rows the library sends to each rung on GPUs of 108-132 SMs: resident (two blocks fit an SM),
# online_vectorized (a row too wide for resident, two rows an SM), persistent (fewer than two rows an
# SM), cluster on Hopper (a wide row, three rows an SM or half of one or less); an unaligned vocab in
# each.
@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "rows, vocab", [(640, 4097), (640, 50257), (320, 128256), (40, 32000), (7, 1), (400, 65537), (4, 128256)]
)
def test_gradient_over_the_logits_equals_the_gradient_beside_them(dtype, rows, vocab):
    logits, target = inputs(rows, vocab, dtype)
    scale = torch.full((1,), 0.5, device="cuda")
    loss, lse, dlogits = torch.ops.cudalab.cross_entropy(logits, target, -100, 0.1, True, scale, 1e-4)
    in_place = logits.clone()
    loss_, lse_ = torch.ops.cudalab.cross_entropy_(in_place, target, -100, 0.1, scale, 1e-4)
    assert torch.equal(loss_, loss) and torch.equal(lse_, lse)
    assert torch.equal(in_place, dlogits)


@requires_cuda
def test_every_row_ignored_gives_nan_mean_and_zero_gradient():
    logits, target = inputs(4, 100, torch.float32)
    target[:] = -100
    logits.requires_grad_()
    loss = ops.cross_entropy(logits, target)
    ref = F.cross_entropy(logits.detach(), target)
    assert loss.isnan().item() and ref.isnan().item()
    loss.backward()
    assert (logits.grad == 0).all()


@requires_cuda
def test_a_target_out_of_range_gives_nan_for_its_row():
    logits, target = inputs(3, 10, torch.float32, ignored_every=100)
    target[1] = 10
    loss = ops.cross_entropy(logits, target, "none")
    assert loss[1].isnan().item() and loss[[0, 2]].isfinite().all()


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_gradient_is_in_place_and_skipped_at_one(dtype):
    x = (torch.randn(5, 1001, device="cuda") * 3).to(dtype)
    original = x.clone()
    torch.ops.cudalab.cross_entropy_scale_gradient_(x, torch.ones(1, device="cuda"))
    assert torch.equal(x, original)
    torch.ops.cudalab.cross_entropy_scale_gradient_(x, torch.full((1,), 0.25, device="cuda"))
    assert torch.equal(x, (original.float() * 0.25).to(dtype))


@requires_cuda
def test_a_second_backward_is_refused():
    logits, target = inputs(4, 33, torch.float32)
    logits.requires_grad_()
    loss = ops.cross_entropy(logits, target)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="a second backward through the same graph"):
        loss.backward()


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(dtype):
    logits, target = inputs(8, 300, dtype)
    torch.library.opcheck(torch.ops.cudalab.cross_entropy.default, (logits, target, -100, 0.1, True, None))
    lse = torch.ops.cudalab.cross_entropy(logits, target, -100, 0.1, False, None)[1]
    dloss = torch.rand(8, device="cuda")
    torch.library.opcheck(torch.ops.cudalab.cross_entropy_backward.default, (logits, target, lse, dloss, -100, 0.1))
    scale = torch.full((1,), 0.5, device="cuda")
    torch.library.opcheck(torch.ops.cudalab.cross_entropy_scale_gradient_.default, (logits.clone(), scale))
    torch.library.opcheck(torch.ops.cudalab.cross_entropy_.default, (logits.clone(), target, -100, 0.1, scale))


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_module_matches_torch_nn(dtype):
    logits, target = inputs(12, 501, dtype)
    ours = cudalab.nn.CrossEntropyLoss(label_smoothing=0.05)
    theirs = torch.nn.CrossEntropyLoss(label_smoothing=0.05)
    batched = logits.view(3, 4, 501).movedim(-1, 1)  # torch's [batch, classes, positions]
    assert rel_l2(ours(batched, target.view(3, 4)), theirs(batched.double(), target.view(3, 4))) <= REL_L2[dtype]


def test_linear_cross_entropy_refuses_what_it_does_not_take():
    x, w, t = torch.randn(6, 8), torch.randn(10, 8), torch.zeros(6, dtype=torch.long)
    with pytest.raises(ValueError, match="reduction must be 'mean' or 'sum'"):
        ops.linear_cross_entropy(x, w, t, reduction="none")
    with pytest.raises(ValueError, match=r"weight must be \[vocab, hidden\]"):
        ops.linear_cross_entropy(x, torch.randn(10, 7), t)
    with pytest.raises(ValueError, match="target must have x's shape"):
        ops.linear_cross_entropy(x, w, torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"bias must be \[vocab\]"):
        ops.linear_cross_entropy(x, w, t, bias=torch.zeros(9))
    with pytest.raises(ValueError, match="chunk_rows must be positive"):
        ops.linear_cross_entropy(x, w, t, chunk_rows=0)


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("reduction, smoothing", [("mean", 0.0), ("sum", 0.1)])
@pytest.mark.parametrize("tokens, hidden, vocab, chunk", [(37, 64, 1000, 16), (300, 128, 4097, 128), (5, 24, 7, 8)])
def test_linear_cross_entropy_matches_float64(dtype, with_bias, reduction, smoothing, tokens, hidden, vocab, chunk):
    torch.manual_seed(zlib.crc32(repr((tokens, hidden, vocab, dtype, with_bias)).encode()))
    x = (torch.randn(tokens, hidden, device="cuda") / 2).to(dtype).requires_grad_()
    w = (torch.randn(vocab, hidden, device="cuda") / 4).to(dtype).requires_grad_()
    b = (torch.randn(vocab, device="cuda") / 4).to(dtype).requires_grad_() if with_bias else None
    target = torch.randint(0, vocab, (tokens,), device="cuda")
    target[3::5] = -100
    loss = ops.linear_cross_entropy(x, w, target, b, reduction, label_smoothing=smoothing, chunk_rows=chunk)
    leaves = [x, w] + ([b] if with_bias else [])
    refs = [t.detach().double().requires_grad_() for t in leaves]
    logits = F.linear(refs[0], refs[1], refs[2] if with_bias else None)
    ref = F.cross_entropy(logits, target, reduction=reduction, label_smoothing=smoothing)
    assert loss.dtype == dtype
    assert rel_l2(loss, ref) <= 2 * REL_L2[dtype], f"loss rel L2 {rel_l2(loss, ref):.3g}"
    upstream = 0.75  # scaled in place by the backward
    grads = torch.autograd.grad(loss * upstream, leaves)
    grads_ref = torch.autograd.grad(ref * upstream, refs)
    for name, g, r in zip(["x", "weight", "bias"], grads, grads_ref):
        assert g.dtype == dtype and g.shape == r.shape
        # bf16/fp16 products and chunked sums of the weight's gradient: a few units of the dtype.
        assert rel_l2(g, r) <= 4 * REL_L2[dtype], f"{name} gradient rel L2 {rel_l2(g, r):.3g}"


@requires_cuda
def test_linear_cross_entropy_without_a_gradient_gives_the_loss_alone():
    # Parameters that require a gradient, under no_grad: the loss alone (and fp32's row-major GEMMs).
    x = torch.randn(40, 32, device="cuda", requires_grad=True)
    w = torch.randn(50, 32, device="cuda", requires_grad=True)
    target = torch.randint(0, 50, (40,), device="cuda")
    with torch.no_grad():
        loss = ops.linear_cross_entropy(x, w, target, chunk_rows=16)
    ref = F.cross_entropy(x.detach().double() @ w.detach().double().T, target)
    assert not loss.requires_grad and rel_l2(loss, ref) <= REL_L2[torch.float32]


@requires_cuda
def test_linear_cross_entropy_holds_a_chunk_of_the_logits_not_all():
    tokens, hidden, vocab = 4096, 256, 32000
    x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(vocab, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, vocab, (tokens,), device="cuda")

    def peak(step):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        step().backward()
        torch.cuda.synchronize()
        x.grad = w.grad = None
        return torch.cuda.max_memory_allocated() - base

    eager = peak(lambda: F.cross_entropy(F.linear(x, w).float(), target))
    fused = peak(lambda: ops.linear_cross_entropy(x, w, target, chunk_rows=512))
    # Eager holds the bf16 logits, their fp32 copy and its gradients (over 1 GB here); the fused
    # op two 512-row chunks of bf16 logits (66 MB) beside the gradients of x and w (18 MB).
    assert fused <= eager / 4, f"fused peak {fused / 2**20:.0f} MiB against eager's {eager / 2**20:.0f} MiB"


@requires_cuda
def test_gemm_in_place_accumulates_and_refuses_aliases():
    a = torch.randn(33, 40, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(24, 40, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(33, 24, device="cuda", dtype=torch.bfloat16)
    expected = (a.double() @ b.double().T * 0.5 + c.double() * 2).to(torch.bfloat16)
    torch.ops.cudalab.gemm_(c, a, b, 0.5, 2.0, True)
    assert rel_l2(c, expected) <= REL_L2[torch.bfloat16]
    square = torch.randn(24, 24, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="must not share memory with a or b"):
        torch.ops.cudalab.gemm_(square, square, square, 1.0, 0.0, True)
    with pytest.raises(ValueError, match="c must be contiguous"):
        torch.ops.cudalab.gemm_(c.mT.contiguous().mT, a, b, 1.0, 0.0, True)
