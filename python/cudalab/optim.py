"""``torch.optim.AdamW`` on cudalab's multi-tensor step (``torch.ops.cudalab.adamw_``): the same
constructor arguments, defaults and state_dict (``step``, ``exp_avg``, ``exp_avg_sq`` per
parameter), the moments in the parameters' dtype as torch keeps them. Dense CUDA parameters of
float32, float16 or bfloat16; amsgrad, maximize and capturable steps are refused when the
optimizer is built.

``master_weights=True`` keeps, for each bfloat16 or float16 parameter, an fp32 copy (state
``master``) and fp32 moments, steps the copy (``torch.ops.cudalab.adamw_master_``) and writes the
parameter as the copy rounded: updates smaller than the parameter's 16-bit spacing accumulate in
the copy instead of vanishing. float32 parameters step as without it. The copy is made from the
parameter at its first step and is the parameter's truth from then on: a change to the parameter
made outside the optimizer is overwritten at its next step. ``state_dict`` and
``load_state_dict`` carry the copy and its moments in fp32."""

import torch


class AdamW(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        master_weights=False,
    ):
        if amsgrad or maximize:
            raise ValueError("cudalab.optim.AdamW: amsgrad and maximize are not supported")
        if not 0.0 <= lr or not 0.0 <= eps or not 0.0 <= weight_decay:
            raise ValueError(
                f"cudalab.optim.AdamW: lr, eps and weight_decay must be >= 0, got {lr}, {eps}, {weight_decay}"
            )
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"cudalab.optim.AdamW: betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        self.master_weights = master_weights
        self._counts = {}  # per group: its last step's parameters, states and their step counts

    def __getstate__(self):  # torch's keeps only defaults, state and param_groups
        return {**super().__getstate__(), "master_weights": self.master_weights}

    def __setstate__(self, state):
        super().__setstate__(state)
        self._counts = {}

    def _mixed(self, p):
        return self.master_weights and p.dtype in (torch.bfloat16, torch.float16)

    def load_state_dict(self, state_dict):
        # torch's loader casts every floating state tensor to its parameter's dtype: the master
        # weights and their moments are put back from the incoming fp32 ones.
        super().load_state_dict(state_dict)
        saved = [i for group in state_dict["param_groups"] for i in group["params"]]
        params = [p for group in self.param_groups for p in group["params"]]
        for key, p in zip(saved, params):
            incoming = state_dict["state"].get(key, {})
            if "master" in incoming:
                for name in ("master", "exp_avg", "exp_avg_sq"):
                    self.state[p][name] = incoming[name].detach().to(device=p.device, dtype=torch.float32, copy=True)

    def _state_of(self, p):
        """p's state, made at its first step (and its master copy where one is due)."""
        if p.grad.is_sparse:
            raise RuntimeError("cudalab.optim.AdamW: sparse gradients are not supported")
        state = self.state[p]
        mixed = self._mixed(p)
        if "step" in state and state["step"].device.type != "cpu":  # from a fused or capturable torch AdamW
            state["step"] = state["step"].cpu()
        if not state:
            state["step"] = torch.tensor(0.0)
            moments = torch.float32 if mixed else p.dtype
            state["exp_avg"] = torch.zeros_like(p, dtype=moments, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, dtype=moments, memory_format=torch.preserve_format)
        if mixed and "master" not in state:  # the first step, or a state from a 16-bit optimizer
            state["master"] = p.detach().float()
            state["exp_avg"], state["exp_avg_sq"] = state["exp_avg"].float(), state["exp_avg_sq"].float()
        return state

    def _step_counts(self, index, params):
        """The states of group `index`'s parameters `params` and their step counts as one CPU tensor,
        each state's ``step`` (a 0-dim CPU tensor, as torch keeps it) a view of it: one add and one
        read a step for the group, where one of each per parameter took longer on the host than the
        update on the GPU. Made again when the parameters with gradients or any state's ``step``
        tensor change (a loaded state dict, a parameter without a gradient this step)."""
        kept = self._counts.get(index)
        if kept is not None:
            kept_params, states, counts, views = kept
            if (
                len(kept_params) == len(params)
                and all(a is b for a, b in zip(kept_params, params))
                and all(self.state[p] is s and s["step"] is view for p, s, view in zip(params, states, views))
                and not any(p.grad.is_sparse for p in params)
            ):
                return states, counts
        states = [self._state_of(p) for p in params]
        counts = torch.tensor([float(state["step"]) for state in states], dtype=torch.float32)
        views = list(counts.unbind())
        for state, view in zip(states, views):
            state["step"] = view
        self._counts[index] = (params, states, counts, views)
        return states, counts

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for index, group in enumerate(self.param_groups):
            # One call per (device, dtype, step count, master weights or not): the step's bias
            # corrections are the call's.
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            states, counts = self._step_counts(index, params)
            counts.add_(1)
            batches = {}
            for p, state, step in zip(params, states, counts.tolist()):
                mixed = self._mixed(p)
                key = (p.device, p.dtype, int(step), mixed)
                arrays = (p, p.grad, state["exp_avg"], state["exp_avg_sq"]) + ((state["master"],) if mixed else ())
                batch = batches.setdefault(key, tuple([] for _ in arrays))
                for items, tensor in zip(batch, arrays):
                    items.append(tensor)
            beta1, beta2 = group["betas"]
            hyper = (group["lr"], beta1, beta2, group["eps"], group["weight_decay"])
            for (_, _, step, mixed), lists in batches.items():
                if mixed:
                    params, grads, exp_avgs, exp_avg_sqs, masters = lists
                    torch.ops.cudalab.adamw_master_(params, grads, masters, exp_avgs, exp_avg_sqs, *hyper, step)
                else:
                    torch.ops.cudalab.adamw_(*lists, *hyper, step)
        return loss
