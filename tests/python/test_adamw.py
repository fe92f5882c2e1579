"""cudalab.optim.AdamW: registration and refusals everywhere; on a GPU, steps that match
torch.optim.AdamW's (parameters and both moments) in every dtype, over tensors of many sizes (more
than one launch's worth, sizes past the 16-byte vectors), across param groups and a state_dict
round trip."""

import pytest
import torch

import cudalab
from cudalab.optim import AdamW
from conftest import requires_cuda

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# After a few steps: fp32 agrees to rounding; 16-bit moments and parameters round once per step,
# as torch's do, in a slightly different order.
TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 4e-3}
SCHEMA = (
    "cudalab::adamw_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, Tensor(c!)[] exp_avg_sqs, "
    "float lr, float beta1, float beta2, float eps, float weight_decay, int step) -> ()"
)


def test_registered_with_its_schema():
    assert str(torch.ops.cudalab.adamw_.default._schema) == SCHEMA
    assert list(cudalab._C.element_types["adamw_"]) == ["float32", "bfloat16", "float16"]


def test_refuses_what_it_does_not_do():
    p = [torch.nn.Parameter(torch.zeros(3))]
    for kwargs, message in [({"amsgrad": True}, "amsgrad"), ({"betas": (0.9, 1.0)}, "betas"), ({"lr": -1}, "lr")]:
        with pytest.raises(ValueError, match=message):
            AdamW(p, **kwargs)


def test_cpu_parameters_are_refused_with_the_op_name():
    p = torch.nn.Parameter(torch.ones(4))
    p.grad = torch.ones(4)
    with pytest.raises(RuntimeError, match="cudalab.adamw_: CUDA tensors only"):
        AdamW([p]).step()


def sizes():
    """60 tensors (two launches of 48 at most): a model's matrices, vectors and odd sizes."""
    return [(64, 64), (4096,), (7,), (1,), (33, 17), (1000,)] * 10


@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_steps_match_torch_adamw(dtype):
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(s, device="cuda").to(dtype)) for s in sizes()]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    groups = lambda ps: [{"params": ps[:30]}, {"params": ps[30:], "lr": 3e-3, "weight_decay": 0.0}]  # noqa: E731
    ours_opt = AdamW(groups(ours), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    theirs_opt = torch.optim.AdamW(groups(theirs), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1, foreach=False)
    for _ in range(5):
        for a, b in zip(ours, theirs):
            g = torch.randn_like(a)
            a.grad, b.grad = g.clone(), g.clone()
        ours_opt.step()
        theirs_opt.step()
    for a, b in zip(ours, theirs):
        assert (a.double() - b.double()).norm() <= TOLERANCE[dtype] * b.double().norm() + 1e-6
        for key in ("exp_avg", "exp_avg_sq"):
            x, y = ours_opt.state[a][key].double(), theirs_opt.state[b][key].double()
            assert (x - y).norm() <= TOLERANCE[dtype] * y.norm() + 1e-12, key
    loaded = AdamW(groups(ours))
    loaded.load_state_dict(ours_opt.state_dict())
    assert int(loaded.state[ours[0]]["step"].item()) == 5


MASTER_SCHEMA = (
    "cudalab::adamw_master_(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] masters, Tensor(c!)[] exp_avgs, "
    "Tensor(d!)[] exp_avg_sqs, float lr, float beta1, float beta2, float eps, float weight_decay, int step) -> ()"
)


def test_master_step_registered_with_its_schema():
    assert str(torch.ops.cudalab.adamw_master_.default._schema) == MASTER_SCHEMA
    assert list(cudalab._C.element_types["adamw_master_"]) == ["bfloat16", "float16"]


@requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_master_weights_step_as_torch_adamw_on_an_fp32_copy(dtype):
    torch.manual_seed(1)
    ours = [torch.nn.Parameter(torch.randn(s, device="cuda").to(dtype)) for s in sizes()]
    copies = [torch.nn.Parameter(p.detach().float()) for p in ours]
    ours_opt = AdamW(ours, lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1, master_weights=True)
    theirs_opt = torch.optim.AdamW(copies, lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1, foreach=False)
    for _ in range(5):
        for a, b in zip(ours, copies):
            g = torch.randn_like(a)
            a.grad, b.grad = g, g.float()
        ours_opt.step()
        theirs_opt.step()
    for a, b in zip(ours, copies):
        state = ours_opt.state[a]
        assert state["master"].dtype == state["exp_avg"].dtype == torch.float32
        # The fp32 steps agree to rounding; the parameter is the master rounded once.
        torch.testing.assert_close(state["master"], b.detach(), rtol=1e-5, atol=1e-6)
        assert torch.equal(a.detach(), state["master"].to(dtype))
        torch.testing.assert_close(state["exp_avg"], theirs_opt.state[b]["exp_avg"], rtol=1e-5, atol=1e-7)


@requires_cuda
def test_master_weights_keep_updates_the_parameter_dtype_drops():
    # An update far below bf16's spacing just under 1.0 (2^-8): bf16 AdamW leaves the parameter where it
    # is, the master copy moves and, after enough steps, so does the parameter.
    p = torch.nn.Parameter(torch.ones(1024, device="cuda", dtype=torch.bfloat16))
    plain = torch.nn.Parameter(p.detach().clone())
    mixed_opt = AdamW([p], lr=1e-4, weight_decay=0.0, master_weights=True)
    plain_opt = AdamW([plain], lr=1e-4, weight_decay=0.0)
    for _ in range(100):
        p.grad, plain.grad = torch.ones_like(p), torch.ones_like(plain)
        mixed_opt.step()
        plain_opt.step()
    assert torch.equal(plain.detach(), torch.ones_like(plain))
    assert (p.detach() < 1).all() and (mixed_opt.state[p]["master"] < 1 - 5e-3).all()


def test_master_weights_survive_a_state_dict_round_trip():
    # torch's loader would cast them to the parameter's bfloat16 (1.0001 becomes 1.0).
    p = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    opt = AdamW([p], master_weights=True)
    master = torch.full((4,), 1.0001)
    opt.state[p] = {"step": torch.tensor(3.0), "master": master, "exp_avg": master / 10, "exp_avg_sq": master / 100}
    q = torch.nn.Parameter(torch.ones(4, dtype=torch.bfloat16))
    loaded = AdamW([q], master_weights=True)
    loaded.load_state_dict(opt.state_dict())
    for name in ("master", "exp_avg", "exp_avg_sq"):
        assert loaded.state[q][name].dtype == torch.float32
        assert torch.equal(loaded.state[q][name], opt.state[p][name])
