"""A GPT-2-style decoder (pre-norm blocks of causal self-attention and a GELU MLP, tied LM head)
built two ways from one parameter layout: ``ops="torch"`` with torch.nn and SDPA, ``ops="cudalab"``
with cudalab.nn.Linear and LayerNorm, cudalab.ops.attention and the fused bias + GELU.

``python -m cudalab.models.gpt`` times a bf16 AdamW training step of both on the current GPU (same
weights, same batch) and profiles the cudalab one: its top kernels and the time spent in copy
kernels, written as JSON with ``--json``."""

import argparse
import json
import sys
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from .. import nn as cnn
from .. import ops


@dataclass
class GptConfig:
    layers: int = 8
    d_model: int = 1024
    head_dim: int = 128
    vocab: int = 50304
    seq: int = 1024

    @property
    def heads(self):
        return self.d_model // self.head_dim


class Block(torch.nn.Module):
    def __init__(self, config, use_cudalab):
        super().__init__()
        d, self.heads, self.use_cudalab = config.d_model, config.heads, use_cudalab
        linear = cnn.Linear if use_cudalab else torch.nn.Linear
        norm = cnn.LayerNorm if use_cudalab else torch.nn.LayerNorm
        self.ln1, self.ln2 = norm(d), norm(d)
        self.qkv, self.proj = linear(d, 3 * d), linear(d, d)
        # The MLP's first bias is applied with the GELU (cudalab's fused bias + GELU).
        self.fc, self.fc_bias = linear(d, 4 * d, bias=False), torch.nn.Parameter(torch.zeros(4 * d))
        self.out = linear(4 * d, d)

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.use_cudalab:
            # cudalab's attention takes contiguous [batch, heads, seq, head_dim]: the head split is a copy.
            o = ops.attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True)[0]
        else:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(o.transpose(1, 2).reshape(b, s, d))

    def mlp(self, x):
        h = self.fc(x)
        h = ops.bias_gelu(h, self.fc_bias, "tanh") if self.use_cudalab else F.gelu(h + self.fc_bias, approximate="tanh")
        return self.out(h)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(torch.nn.Module):
    def __init__(self, config, ops="cudalab"):
        super().__init__()
        if ops not in ("cudalab", "torch"):
            raise ValueError(f"cudalab.models.Gpt: ops must be 'cudalab' or 'torch', got {ops!r}")
        use_cudalab = ops == "cudalab"
        self.config = config
        self.embed = torch.nn.Embedding(config.vocab, config.d_model)
        self.position = torch.nn.Embedding(config.seq, config.d_model)
        self.blocks = torch.nn.ModuleList(Block(config, use_cudalab) for _ in range(config.layers))
        self.ln_f = (cnn.LayerNorm if use_cudalab else torch.nn.LayerNorm)(config.d_model)
        self.head = (cnn.Linear if use_cudalab else torch.nn.Linear)(config.d_model, config.vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        generator = torch.Generator().manual_seed(0)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, 0.0, 0.02, generator=generator)
            elif "ln" not in name:
                torch.nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _train_step(model, optimizer, tokens, targets):
    loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def _time_steps(model, optimizer, tokens, targets, steps):
    for _ in range(3):  # warm-up: allocator, kernel caches, optimizer state
        _train_step(model, optimizer, tokens, targets)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        loss = _train_step(model, optimizer, tokens, targets)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps, loss.item()


def _is_copy(name):
    return "copy" in name.lower() and "memcpy" not in name.lower()


def _profile(model, optimizer, tokens, targets, top):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _train_step(model, optimizer, tokens, targets)
        torch.cuda.synchronize()
    kernels = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total, count = kernels.get(event.name, (0.0, 0))
            kernels[event.name] = (total + event.device_time / 1000.0, count + 1)
    rows = sorted(kernels.items(), key=lambda item: -item[1][0])
    copy_ms = sum(ms for name, (ms, _) in rows if _is_copy(name))
    table = [{"kernel": name[:160], "ms": round(ms, 3), "launches": n} for name, (ms, n) in rows[:top]]
    copies = [{"kernel": name[:160], "ms": round(ms, 3), "launches": n} for name, (ms, n) in rows if _is_copy(name)]
    return {"kernel_ms": round(sum(ms for _, (ms, _) in rows), 3), "copy_ms": round(copy_ms, 3), "top": table,
            "copies": copies}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cudalab.models.gpt", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, default=GptConfig.layers)
    parser.add_argument("--d-model", type=int, default=GptConfig.d_model)
    parser.add_argument("--seq", type=int, default=GptConfig.seq)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model (default 20)")
    parser.add_argument("--top", type=int, default=15, help="kernels listed in the profile (default 15)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("cudalab.models.gpt: needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 3
    if min(args.batch, args.layers, args.d_model, args.seq, args.steps) <= 0 or args.d_model % 128 != 0:
        print("cudalab.models.gpt: sizes must be positive and d_model a multiple of 128 (head_dim)", file=sys.stderr)
        return 2
    config = GptConfig(layers=args.layers, d_model=args.d_model, seq=args.seq)
    generator = torch.Generator(device="cuda").manual_seed(1)
    tokens = torch.randint(0, config.vocab, (args.batch, config.seq + 1), device="cuda", generator=generator)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    result = {"config": asdict(config), "batch": args.batch, "gpu": torch.cuda.get_device_name(),
              "torch": torch.__version__, "steps": args.steps}
    models = {}
    for name in ("torch", "cudalab"):
        model = Gpt(config, name).cuda().to(torch.bfloat16)
        if models:
            model.load_state_dict(models["torch"][0].state_dict())
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        models[name] = (model, optimizer)
        ms, loss = _time_steps(model, optimizer, inputs, targets, args.steps)
        tokens_per_s = args.batch * config.seq / (ms / 1000.0)
        result[name] = {"step_ms": round(ms, 3), "tokens_per_s": round(tokens_per_s), "last_loss": round(loss, 4)}
        print(f"{name:8s} {ms:8.2f} ms/step  {tokens_per_s:10.0f} tokens/s  loss {loss:.4f}", flush=True)
    result["cudalab_over_torch"] = round(result["torch"]["step_ms"] / result["cudalab"]["step_ms"], 3)
    for name, (model, optimizer) in models.items():
        result[name]["profile"] = _profile(model, optimizer, inputs, targets, args.top)
        p = result[name]["profile"]
        print(f"{name:8s} profile: {p['kernel_ms']:.2f} ms of kernels, {p['copy_ms']:.2f} ms in copy kernels")
    print(f"cudalab / torch eager speed: {result['cudalab_over_torch']:.3f}x")
    for row in result["cudalab"]["profile"]["top"]:
        print(f"  {row['ms']:8.3f} ms  {row['launches']:4d}x  {row['kernel'][:110]}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
