"""cudalab.optim.AdamW's bookkeeping on any machine: inside a scoped library a CPU stand-in for
torch.ops.cudalab.adamw_ (torch's AdamW update, in place) takes the kernels' place, and the optimizer
must then match torch.optim.AdamW step for step: state made at the first step, step counts kept per
parameter (a parameter without a gradient skips a step and then steps with its own count, in a
separate call), and a state_dict that loads into torch's optimizer."""

import contextlib
import copy

import torch

import cudalab  # noqa: F401  (registers the ops)
from cudalab.optim import AdamW


def _adamw_(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, step):
    for p, g, m, v in zip(params, grads, exp_avgs, exp_avg_sqs):
        p.mul_(1 - lr * weight_decay)
        m.lerp_(g, 1 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
        denominator = (v / (1 - beta2**step)).sqrt_().add_(eps)
        p.addcdiv_(m, denominator, value=-lr / (1 - beta1**step))


@contextlib.contextmanager
def _cpu_adamw():
    """The CPU stand-in in place of the kernels, for the block; yields the list of each call's step count."""
    calls = []

    def counted(*args):
        calls.append(args[-1])
        _adamw_(*args)

    with torch.library._scoped_library("cudalab", "IMPL") as lib:
        lib.impl("adamw_", counted, "CPU")
        yield calls


def test_adamw_matches_torch_step_for_step():
    with _cpu_adamw() as calls:
        g = torch.Generator().manual_seed(0)
        ours = [torch.nn.Parameter(torch.randn(3, 4, dtype=torch.float64, generator=g)) for _ in range(3)]
        theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
        opt = AdamW(ours, lr=0.1, weight_decay=0.05)
        reference = torch.optim.AdamW(theirs, lr=0.1, weight_decay=0.05)
        for step in range(5):
            for i, (p, q) in enumerate(zip(ours, theirs)):
                grad = None if (i == 2 and step == 1) else torch.randn(3, 4, dtype=torch.float64, generator=g)
                p.grad, q.grad = grad, None if grad is None else grad.clone()
            opt.step()
            reference.step()
            for p, q in zip(ours, theirs):
                torch.testing.assert_close(p, q)
        assert [int(opt.state[p]["step"]) for p in ours] == [5, 5, 4]
        assert calls.count(2) == 2  # after the skipped step: counts 3 and 2 went to separate calls
        loaded = torch.optim.AdamW([torch.nn.Parameter(p.detach().clone()) for p in ours], lr=0.1)
        loaded.load_state_dict(opt.state_dict())
        assert int(loaded.state_dict()["state"][2]["step"]) == 4


def test_step_counts_follow_replaced_states_and_copies():
    # The counts are kept as one tensor a group between steps; a state replaced from outside (a
    # loaded state dict, a step tensor assigned) or a copied optimizer must still count from its own.
    with _cpu_adamw() as calls:
        params = [torch.nn.Parameter(torch.ones(2, dtype=torch.float64)) for _ in range(2)]
        opt = AdamW(params, lr=0.1, master_weights=True)  # float64: stepped without a master copy

        def step():
            for p in params:
                p.grad = torch.ones_like(p)
            opt.step()

        step()
        step()
        assert [int(opt.state[p]["step"]) for p in params] == [2, 2]
        saved = copy.deepcopy(opt.state_dict())
        opt.state[params[1]]["step"] = torch.tensor(10.0)
        step()
        assert [int(opt.state[p]["step"]) for p in params] == [3, 11] and calls[-2:] in ([3, 11], [11, 3])
        opt.load_state_dict(saved)
        step()
        assert [int(opt.state[p]["step"]) for p in params] == [3, 3] and calls[-1] == 3
        twin = copy.deepcopy(opt)
        assert twin.master_weights
        for p in twin.param_groups[0]["params"]:
            p.grad = torch.ones_like(p)
        twin.step()
        assert [int(twin.state[p]["step"]) for p in twin.param_groups[0]["params"]] == [4, 4]
        assert [int(opt.state[p]["step"]) for p in params] == [3, 3]
        assert int(saved["state"][0]["step"]) == 2  # the saved dict is not a view of the live counts
