"""``python -m cudalab.models``: a bf16 AdamW training step of a model built from torch.nn (with
torch.optim.AdamW, fused) and from cudalab's ops (with cudalab.optim.AdamW), same weights, same
batch, timed on the current GPU; then one step of each under torch.profiler: their top kernels and
the time in copy kernels. ``--json`` writes it all."""

import argparse
import json
import sys
from dataclasses import asdict

import torch

from ..optim import AdamW
from .gpt import Gpt, GptConfig
from .llama import Llama, LlamaConfig

MODELS = {"gpt": (Gpt, GptConfig), "llama": (Llama, LlamaConfig)}


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

    def row(name, ms, launches):
        return {"kernel": name[:160], "ms": round(ms, 3), "launches": launches}

    return {
        "kernel_ms": round(sum(ms for _, (ms, _) in rows), 3),
        "copy_ms": round(sum(ms for name, (ms, _) in rows if _is_copy(name)), 3),
        "top": [row(name, ms, n) for name, (ms, n) in rows[:top]],
        "copies": [row(name, ms, n) for name, (ms, n) in rows if _is_copy(name)],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cudalab.models", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, help="decoder layers (default: the model's)")
    parser.add_argument("--seq", type=int, help="tokens per sequence (default: the model's)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model (default 20)")
    parser.add_argument("--top", type=int, default=15, help="kernels listed in the profile (default 15)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    model_class, config_class = MODELS[args.model]
    config = config_class()
    if args.layers is not None:
        config.layers = args.layers
    if args.seq is not None:
        config.seq = args.seq
    if min(args.batch, config.layers, config.seq, args.steps, args.top) <= 0:
        print("cudalab.models: --batch, --layers, --seq, --steps and --top must be positive", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("cudalab.models: needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 3
    generator = torch.Generator(device="cuda").manual_seed(1)
    tokens = torch.randint(0, config.vocab, (args.batch, config.seq + 1), device="cuda", generator=generator)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    result = {"model": args.model, "config": asdict(config), "batch": args.batch, "steps": args.steps,
              "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    models, initial = {}, None
    for name in ("torch", "cudalab"):
        print(f"{name}: building and timing {args.steps} steps", file=sys.stderr, flush=True)
        model = model_class(config, name).cuda().to(torch.bfloat16)
        if initial is None:  # both start from these weights, so their losses after the steps compare
            initial = {key: value.clone() for key, value in model.state_dict().items()}
        else:
            model.load_state_dict(initial)
        if name == "cudalab":
            optimizer = AdamW(model.parameters(), lr=1e-4)
        else:
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        models[name] = (model, optimizer)
        ms, loss = _time_steps(model, optimizer, inputs, targets, args.steps)
        tokens_per_s = args.batch * config.seq / (ms / 1000.0)
        result[name] = {"step_ms": round(ms, 3), "tokens_per_s": round(tokens_per_s), "last_loss": round(loss, 4)}
        print(f"{name:8s} {ms:8.2f} ms/step  {tokens_per_s:10.0f} tokens/s  loss {loss:.4f}", flush=True)
    result["cudalab_over_torch"] = round(result["torch"]["step_ms"] / result["cudalab"]["step_ms"], 3)
    for name, (model, optimizer) in models.items():
        result[name]["profile"] = p = _profile(model, optimizer, inputs, targets, args.top)
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
