"""What holds on every machine: the ops are registered with their schemas, their fake kernels give
the right shapes (FakeTensorMode, meta tensors, torch.export), opcheck passes on meta inputs, and
CPU tensors are refused with the op's name."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import cudalab
from cudalab import ops

FORWARD = {
    "bias_act": "cudalab::bias_act(Tensor x, Tensor bias, int activation) -> Tensor",
    "layer_norm": "cudalab::layer_norm(Tensor x, Tensor weight, Tensor bias, float eps) -> (Tensor, Tensor, Tensor)",
    "rms_norm": "cudalab::rms_norm(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)",
    "softmax": "cudalab::softmax(Tensor x) -> Tensor",
    "gemm": "cudalab::gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., "
    "bool b_transposed=False) -> Tensor",
}
BACKWARD = ["bias_act_backward", "layer_norm_backward", "rms_norm_backward", "softmax_backward"]


def arguments(name, device, dtype=torch.float32, shape=(3, 5, 16), requires_grad=False):
    """Arguments for op `name` on `device`: x of `shape`, vectors of its last dimension."""
    features = shape[-1]
    rows = 1
    for s in shape[:-1]:
        rows *= s

    def tensor(*size, dt=dtype, grad=requires_grad):
        return torch.randn(*size, device=device, dtype=dt, requires_grad=grad)

    x = tensor(*shape)
    vector = tensor(features)
    if name == "bias_act":
        return (x, vector, 1)
    if name == "layer_norm":
        return (x, vector, tensor(features), 1e-5)
    if name == "rms_norm":
        return (x, vector, 1e-6)
    if name == "softmax":
        return (x,)
    if name == "gemm":  # x as a batch [..., m, k] of matrices, times [..., k, 8], plus beta * c
        b = tensor(*shape[:-2], features, 8)
        return (x, b, tensor(*shape[:-1], 8), 1.5, -0.5, False)
    dy = tensor(*shape, grad=False)
    statistics = torch.rand(shape[:-1], device=device, dtype=torch.float32) + 0.5
    if name == "bias_act_backward":
        return (x.detach(), vector.detach(), dy, 1)
    if name == "layer_norm_backward":
        return (x.detach(), dy, vector.detach(), statistics, statistics)
    if name == "rms_norm_backward":
        return (x.detach(), dy, vector.detach(), statistics)
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
        y = torch.ops.cudalab.bias_act(x, w, 0)
        assert y.shape == x.shape and y.dtype == dtype and y.device.type == "cuda"
        y, mean, rstd = torch.ops.cudalab.layer_norm(x, w, w, 1e-5)
        assert y.shape == x.shape and mean.shape == (4, 8) and rstd.dtype == torch.float32
        y, rstd = torch.ops.cudalab.rms_norm(x, w, 1e-6)
        assert rstd.shape == (4, 8)
        assert torch.ops.cudalab.softmax(x).shape == x.shape
        dx, dw, db = torch.ops.cudalab.layer_norm_backward(x, x, w, mean, rstd)
        assert dx.shape == x.shape and dw.shape == (16,) and db.dtype == dtype


@pytest.mark.parametrize("name", list(FORWARD) + BACKWARD)
def test_opcheck_on_meta(name):
    torch.library.opcheck(getattr(torch.ops.cudalab, name).default, arguments(name, "meta"))


@pytest.mark.parametrize("name", list(FORWARD))
def test_opcheck_on_meta_with_autograd(name):
    torch.library.opcheck(getattr(torch.ops.cudalab, name).default, arguments(name, "meta", requires_grad=True))


@pytest.mark.parametrize("name", list(FORWARD) + BACKWARD)
def test_cpu_tensors_are_refused_with_the_op_name(name):
    with pytest.raises(RuntimeError, match=f"cudalab.{name}: CUDA tensors only, got cpu"):
        getattr(torch.ops.cudalab, name)(*arguments(name, "cpu"))


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


@pytest.mark.parametrize("b_transposed", [False, True])
def test_gemm_fake_shapes(b_transposed):
    with FakeTensorMode():
        a = torch.empty(4, 32, 64, dtype=torch.bfloat16, device="cuda")
        b = torch.empty(4, *((48, 64) if b_transposed else (64, 48)), dtype=torch.bfloat16, device="cuda")
        assert ops.gemm(a, b, b_transposed=b_transposed).shape == (4, 32, 48)
        assert ops.gemm(a[0], b[0], b_transposed=b_transposed).shape == (32, 48)


def test_bias_gelu_refuses_an_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        ops.bias_gelu(torch.empty(2, 4), torch.empty(4), approximate="sigmoid")


@pytest.mark.parametrize("ours, theirs", [(cudalab.nn.LayerNorm, torch.nn.LayerNorm), (cudalab.nn.RMSNorm, torch.nn.RMSNorm)])
def test_nn_modules_share_torch_state_dicts(ours, theirs):
    mine, reference = ours(64), theirs(64)
    assert mine.state_dict().keys() == reference.state_dict().keys()
    reference.weight.data.uniform_()
    mine.load_state_dict(reference.state_dict())
    assert torch.equal(mine.weight, reference.weight)
    with FakeTensorMode():
        fake = ours(64, device="cuda", dtype=torch.bfloat16)
        x = torch.empty(8, 64, device="cuda", dtype=torch.bfloat16)
        assert fake(x).shape == x.shape


def test_nn_modules_refuse_what_the_kernels_do_not_do():
    with pytest.raises(ValueError, match="normalizes the last dimension only"):
        cudalab.nn.LayerNorm((4, 64))
    with pytest.raises(ValueError, match="needs elementwise_affine=True and bias=True"):
        cudalab.nn.LayerNorm(64, bias=False)
    with pytest.raises(ValueError, match="needs elementwise_affine=True"):
        cudalab.nn.RMSNorm(64, elementwise_affine=False)


def test_version():
    assert cudalab.__version__ == "0.1.0"
