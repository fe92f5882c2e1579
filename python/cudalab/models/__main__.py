"""``python -m cudalab.models``: a bf16 AdamW training step of a model built from torch.nn (with
torch.optim.AdamW, fused) and from cudalab's ops (with cudalab.optim.AdamW), same weights, same
batch, timed on the current GPU in rounds of ``--steps`` steps of each in turn, with its peak memory
(``--compile``: each under torch.compile too); then one eager step of each under torch.profiler:
their top kernels and the time in copy kernels.
``--parity STEPS`` trains both instead and compares their losses step by step and their gradients
at step 0; ``--generate TOKENS`` times greedy decoding with a key-value cache (the Llama). ``--hf`` times
Hugging Face's LlamaForCausalLM of the same configuration instead: its training step unpatched,
after ``cudalab.patch`` and after Liger-Kernel's patch, beside the cudalab-built Llama; with
``--generate``, its decoding before and after ``cudalab.patch``. ``--gemms`` times each matrix
product of the step alone instead, as PyTorch calls it against cudalab's op. ``--json`` writes it
all."""

import argparse
import contextlib
import gc
import json
import math
import statistics
import sys
from dataclasses import asdict

import torch

from ..optim import AdamW
from . import MODELS
from .llama import Llama


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


def _cuda_kernels(fn, calls=1):
    """fn() run `calls` times under torch.profiler: {kernel name: (milliseconds, launches)}, summed."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    kernels = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            total, count = kernels.get(event.name, (0.0, 0))
            kernels[event.name] = (total + event.device_time / 1000.0, count + 1)
    return kernels


def _profile(model, optimizer, tokens, targets, top):
    kernels = _cuda_kernels(lambda: _train_step(model, optimizer, tokens, targets))
    rows = sorted(kernels.items(), key=lambda item: -item[1][0])

    def row(name, ms, launches):
        return {"kernel": name[:160], "ms": round(ms, 3), "launches": launches}

    return {
        "kernel_ms": round(sum(ms for _, (ms, _) in rows), 3),
        "copy_ms": round(sum(ms for name, (ms, _) in rows if _is_copy(name)), 3),
        "top": [row(name, ms, n) for name, (ms, n) in rows[:top]],
        "copies": [row(name, ms, n) for name, (ms, n) in rows if _is_copy(name)],
    }


def _build(model_class, config, ops, initial):
    """The model of `ops` ("torch" or "cudalab") in bf16 on the GPU with `initial`'s weights (None:
    its own, returned for the next), and its AdamW (torch's fused one, or cudalab.optim.AdamW)."""
    model = model_class(config, ops).cuda().to(torch.bfloat16)
    if initial is None:  # kept on the host, out of the timed variants' peak memory
        initial = {key: value.detach().cpu().clone() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict(initial)
    if ops == "cudalab":
        optimizer = AdamW(model.parameters(), lr=1e-4)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    return model, optimizer, initial


def _speed(model_class, config, args, inputs, targets, result):
    """Each variant's step time, tokens/s and peak memory from the same initial weights; the eager
    ones' profiles. The variants are built and warmed up one after another, each keeping its
    weights and optimizer state; its peak memory is what its steps add to what was resident before
    it was built. Then `args.rounds` rounds time `args.steps` steps of each variant in turn: the
    GPU's clocks fall as it heats under its power cap, and timed in turn every variant meets the
    same clocks. A variant's time is its median round, a ratio the median of the rounds' ratios."""
    names = ["torch", "cudalab"] + (["torch+compile", "cudalab+compile"] if args.compile else [])
    variants, initial = {}, None
    for name in names:
        print(f"{name}: building and warming up", file=sys.stderr, flush=True)
        torch.cuda.synchronize()
        resident = torch.cuda.memory_allocated()
        model, optimizer, initial = _build(model_class, config, name.split("+")[0], initial)
        runner = torch.compile(model) if name.endswith("+compile") else model
        torch.cuda.reset_peak_memory_stats()
        for _ in range(3):  # warm-up: allocator, kernel caches, optimizer state, compilation
            _train_step(runner, optimizer, inputs, targets)
        torch.cuda.synchronize()
        peak = (torch.cuda.max_memory_allocated() - resident) / 2**30
        variants[name] = (model, optimizer, runner)
        result[name] = {"peak_gib": round(peak, 3)}
    rounds = {name: [] for name in names}
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}: {args.steps} steps of each", file=sys.stderr, flush=True)
        for name in names:
            _, optimizer, runner = variants[name]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.steps):
                loss = _train_step(runner, optimizer, inputs, targets)
            end.record()
            torch.cuda.synchronize()
            rounds[name].append(start.elapsed_time(end) / args.steps)
            result[name]["last_loss"] = round(loss.item(), 4)
    for name in names:
        ms = statistics.median(rounds[name])
        tokens_per_s = args.batch * config.seq / (ms / 1000.0)
        result[name].update(step_ms=round(ms, 3), step_ms_rounds=[round(t, 3) for t in rounds[name]],
                            tokens_per_s=round(tokens_per_s))
        print(f"{name:16s} {ms:8.2f} ms/step  {tokens_per_s:10.0f} tokens/s  peak {result[name]['peak_gib']:6.2f} GiB"
              f"  loss {result[name]['last_loss']:.4f}  (rounds {min(rounds[name]):.2f}-{max(rounds[name]):.2f})")

    def ratio(over, under):
        return round(statistics.median(a / b for a, b in zip(rounds[over], rounds[under])), 3)

    result["cudalab_over_torch"] = ratio("torch", "cudalab")
    print(f"cudalab / torch eager speed: {result['cudalab_over_torch']:.3f}x (median of {args.rounds} rounds)")
    if args.compile:
        result["cudalab_over_torch_compile"] = ratio("torch+compile", "cudalab")
        print(f"cudalab / torch.compile speed: {result['cudalab_over_torch_compile']:.3f}x")
    for name in ("torch", "cudalab"):
        model, optimizer, _ = variants[name]
        result[name]["profile"] = p = _profile(model, optimizer, inputs, targets, args.top)
        print(f"{name:16s} profile: {p['kernel_ms']:.2f} ms of kernels, {p['copy_ms']:.2f} ms in copy kernels")
    for row in result["cudalab"]["profile"]["top"]:
        print(f"  {row['ms']:8.3f} ms  {row['launches']:4d}x  {row['kernel'][:110]}")
    return 0


def gemm_products(model_class, config):
    """The step's Linear layers as {(in_features, out_features, has_bias): count}, from the
    torch-built model on the meta device (no memory), the LM head included: its Linear, or the
    embedding's weight where the head is tied to it (a product with no module of its own)."""
    with torch.device("meta"):
        model = model_class(config, ops="torch")
    counts = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            key = (module.in_features, module.out_features, module.bias is not None)
            counts[key] = counts.get(key, 0) + 1
    if not any(out == config.vocab for _, out, _ in counts):
        counts[(config.d_model, config.vocab, False)] = 1
    return counts


def _kernel_us(fn, calls=20):
    """The mean kernel time of one call of fn in microseconds (after three warm-up calls), and the
    name of its longest kernel."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    kernels = _cuda_kernels(fn, calls)
    longest = max(kernels, key=lambda name: kernels[name][0]) if kernels else ""
    return 1000.0 * sum(ms for ms, _ in kernels.values()) / calls, longest


def _gemms(model_class, config, args, result):
    """Each Linear's three products (y = x W^T + b, dx = dy W, dW = dy^T x) over batch x seq tokens,
    as PyTorch's Linear and its autograd call them (F.linear, dy @ W, dy.t() @ x: cuBLASLt) against
    cudalab's (ops.linear, ops.gemm, ops.gemm of dy.mT), on the same tensors; and their sums over
    the step (each shape times its count)."""
    from .. import ops

    tokens = args.batch * config.seq
    generator = torch.Generator(device="cuda").manual_seed(3)

    def normal(*shape, scale=1.0):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=generator) * scale

    rows, totals = [], {"torch": 0.0, "cudalab": 0.0}
    print(f"{'in':>6s} {'out':>7s} bias {'count':>5s} product {'torch us':>9s} {'cudalab us':>10s}  cudalab/torch")
    for (d_in, d_out, bias), count in sorted(gemm_products(model_class, config).items()):
        print(f"{d_in}x{d_out}: timing", file=sys.stderr, flush=True)
        try:
            x, w, dy = normal(tokens, d_in), normal(d_out, d_in, scale=d_in**-0.5), normal(tokens, d_out)
        except torch.cuda.OutOfMemoryError:
            print(f"cudalab.models: {tokens} x {d_out} does not fit in GPU memory; lower --batch or --seq",
                  file=sys.stderr)
            return 4
        b = normal(d_out) if bias else None
        products = {
            "forward": (lambda: torch.nn.functional.linear(x, w, b), lambda: ops.linear(x, w, b)),
            "input_gradient": (lambda: dy @ w, lambda: ops.gemm(dy, w)),
            "weight_gradient": (lambda: dy.t() @ x, lambda: ops.gemm(dy.mT, x)),
        }
        for product, (theirs, ours) in products.items():
            torch_us, torch_kernel = _kernel_us(theirs)
            cudalab_us, cudalab_kernel = _kernel_us(ours)
            totals["torch"] += count * torch_us
            totals["cudalab"] += count * cudalab_us
            rows.append({"in": d_in, "out": d_out, "bias": bias, "count": count, "tokens": tokens,
                         "product": product, "torch_us": round(torch_us, 2), "cudalab_us": round(cudalab_us, 2),
                         "speed": round(torch_us / cudalab_us, 3), "torch_kernel": torch_kernel,
                         "cudalab_kernel": cudalab_kernel})
            print(f"{d_in:6d} {d_out:7d} {'yes' if bias else 'no':4s} {count:5d} {product:15s} {torch_us:9.1f} "
                  f"{cudalab_us:10.1f}  {torch_us / cudalab_us:.3f}x")
        del x, w, dy, b
        torch.cuda.empty_cache()
    result["gemms"] = rows
    result["gemm_ms"] = {name: round(us / 1000.0, 3) for name, us in totals.items()}
    speed = totals["torch"] / totals["cudalab"]
    result["gemm_speed"] = round(speed, 3)
    print(f"the step's GEMMs: torch {totals['torch'] / 1000:.3f} ms, cudalab {totals['cudalab'] / 1000:.3f} ms "
          f"({speed:.3f}x)")
    return 0


def _parity(model_class, config, args, result):
    """Both models from the same weights over the same batches (four, cycled, so the loss falls as
    they are learned): each step's losses, and each parameter's gradient at step 0 against torch's.
    Fails (1) where a loss differs by more than --tolerance of torch's."""
    generator = torch.Generator(device="cuda").manual_seed(2)
    batches = []
    for _ in range(4):
        tokens = torch.randint(0, config.vocab, (args.batch, config.seq + 1), device="cuda", generator=generator)
        batches.append((tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()))
    torch_model, torch_optimizer, initial = _build(model_class, config, "torch", None)
    model, optimizer, _ = _build(model_class, config, "cudalab", initial)
    losses, gradients = [], []
    for step in range(args.parity):
        inputs, targets = batches[step % len(batches)]
        pair = []
        for m in (torch_model, model):
            loss = m(inputs, targets)
            loss.backward()
            pair.append(loss.item())
        if step == 0:
            theirs = dict(torch_model.named_parameters())
            for key, p in model.named_parameters():
                g, r = p.grad.double(), theirs[key].grad.double()
                error = (g - r).norm().item() / max(r.norm().item(), 1e-30)
                gradients.append({"parameter": key, "relative_error": error})
        for o in (torch_optimizer, optimizer):
            o.step()
            o.zero_grad(set_to_none=True)
        losses.append({"step": step, "torch": round(pair[0], 5), "cudalab": round(pair[1], 5)})
        if step % max(1, args.parity // 10) == 0 or step == args.parity - 1:
            print(f"step {step:5d}  torch {pair[0]:.4f}  cudalab {pair[1]:.4f}", flush=True)
    # A NaN compares false with everything (max would skip it): it counts as an infinite difference.
    differences = [abs(x["cudalab"] - x["torch"]) / abs(x["torch"]) for x in losses]
    worst = max(d if math.isfinite(d) else math.inf for d in differences)
    gradients.sort(key=lambda row: -row["relative_error"])
    result["parity"] = {
        "steps": args.parity,
        "tolerance": args.tolerance,
        "largest_relative_loss_difference": round(worst, 6),
        "losses": losses,
        "gradients_at_step_0": gradients,
    }
    print(f"largest relative loss difference over {args.parity} steps: {worst:.4g} (tolerance {args.tolerance})")
    print("step 0 gradients, largest relative errors:")
    for row in gradients[: args.top]:
        print(f"  {row['relative_error']:.3e}  {row['parameter']}")
    return 0 if worst <= args.tolerance else 1


def _generation(model_class, config, args, result):
    """Greedy decoding of --generate tokens after a 128-token prompt, by each build from the same
    weights (the Llama's generate: a key-value cache, one token a step): tokens per second, and
    the share of chosen tokens the two builds agree on (bf16 sums in other orders can turn a
    near-tie)."""
    generator = torch.Generator(device="cuda").manual_seed(3)
    length = min(128, config.seq - args.generate)
    prompt = torch.randint(0, config.vocab, (args.batch, length), device="cuda", generator=generator)
    initial, outputs = None, {}
    for name in ("torch", "cudalab"):
        model, _, initial = _build(model_class, config, name, initial)
        model.eval()
        model.generate(prompt, 4)  # warm-up: kernel caches, allocator
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        outputs[name] = model.generate(prompt, args.generate)
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1000.0
        rate = args.batch * args.generate / seconds
        result[name] = {"seconds": round(seconds, 4), "tokens_per_s": round(rate, 1)}
        print(f"{name:8s} {args.generate} tokens x {args.batch} sequences in {seconds * 1000:8.1f} ms: "
              f"{rate:9.1f} tokens/s")
        del model
        torch.cuda.empty_cache()
    new = slice(length, None)
    agreement = (outputs["torch"][:, new] == outputs["cudalab"][:, new]).float().mean().item()
    result["agreement"] = round(agreement, 4)
    result["cudalab_over_torch"] = round(result["torch"]["seconds"] / result["cudalab"]["seconds"], 3)
    speed = result["cudalab_over_torch"]
    print(f"cudalab / torch speed: {speed:.3f}x; the same token chosen {agreement:.1%} of the time")
    return 0


def _hf_llama(config):
    """A builder of Hugging Face's LlamaForCausalLM of `config` in bf16 on the GPU (random weights,
    seeded; nothing is downloaded), or None where transformers is not installed."""
    try:
        import transformers
    except ImportError:
        print("cudalab.models: --hf needs transformers (pip install transformers)", file=sys.stderr)
        return None
    def build():  # a configuration of its own: cudalab.patch sets the attention on the model's
        hf_config = transformers.LlamaConfig(
            vocab_size=config.vocab, hidden_size=config.d_model, intermediate_size=config.mlp,
            num_hidden_layers=config.layers, num_attention_heads=config.heads, num_key_value_heads=config.kv_heads,
            max_position_embeddings=config.seq, rms_norm_eps=config.eps, tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": config.rope_theta},
        )
        torch.manual_seed(3)
        return transformers.LlamaForCausalLM(hf_config).cuda().to(torch.bfloat16)

    return build


def _hf_generation(config, args, result):
    """Hugging Face's LlamaForCausalLM of the same configuration, greedy ``model.generate`` with its
    own cache: as transformers runs it (SDPA, its own choice of kernel and its flash backend alone),
    then the same model after ``cudalab.patch`` (prefill on ops.attention, decoding steps on
    ops.attention_decode). Tokens per second, peak memory, and how often the first new token is the
    same."""
    build = _hf_llama(config)
    if build is None:
        return 2
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from ..hf import patch

    model = build().eval()
    generator = torch.Generator(device="cuda").manual_seed(3)
    length = min(128, config.seq - args.generate)
    prompt = torch.randint(0, config.vocab, (args.batch, length), device="cuda", generator=generator)
    settings = dict(do_sample=False, min_new_tokens=args.generate, max_new_tokens=args.generate, pad_token_id=0)
    outputs = {}
    # SDPA's own choice of kernel, then its FlashAttention-2 backend alone (cuDNN's, where SDPA picks
    # it, prepares a plan for each new key length: every decoding step's).
    for name in ("transformers", "transformers, SDPA flash", "cudalab.patch"):
        if name == "cudalab.patch":
            patch(model)
        backends = sdpa_kernel([SDPBackend.FLASH_ATTENTION]) if name.endswith("flash") else contextlib.nullcontext()
        with torch.no_grad(), backends:
            model.generate(prompt, **{**settings, "min_new_tokens": 4, "max_new_tokens": 4})  # warm-up
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            outputs[name] = model.generate(prompt, **settings)
            end.record()
            torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1000.0
        rate = args.batch * args.generate / seconds
        peak = torch.cuda.max_memory_allocated() / 2**30
        result[name] = {"seconds": round(seconds, 4), "tokens_per_s": round(rate, 1), "peak_gib": round(peak, 3)}
        print(f"{name:25s} {args.generate} tokens x {args.batch} sequences in {seconds * 1000:8.1f} ms: "
              f"{rate:9.1f} tokens/s, peak {peak:.2f} GiB")
    # Random weights give near-even logits, so bf16 sums in another order flip near-ties and the
    # sequences part after the first flip: the first new token is the comparable one.
    first = (outputs["transformers"][:, length] == outputs["cudalab.patch"][:, length]).float().mean().item()
    result["first_token_agreement"] = round(first, 4)
    for baseline in ("transformers", "transformers, SDPA flash"):
        ratio = result[baseline]["seconds"] / result["cudalab.patch"]["seconds"]
        result[f"patched_over_{baseline}"] = round(ratio, 3)
        print(f"patched / {baseline}: {ratio:.3f}x")
    print(f"the first new token the same in {first:.1%} of the sequences")
    return 0


def _liger():
    """Liger-Kernel's patch for Hugging Face's Llama, or the reason there is none."""
    try:
        from liger_kernel.transformers import apply_liger_kernel_to_llama
    except ImportError as error:
        return None, f"not installed: liger_kernel ({error})"
    return apply_liger_kernel_to_llama, ""


# What apply_liger_kernel_to_llama replaces in transformers' Llama module for the whole process.
_LIGER_PATCHED = ("apply_rotary_pos_emb", "LlamaRMSNorm", "LlamaMLP")


def _hf_step(name, build, initial, config, args, inputs, targets, apply_liger):
    """One variant of _hf_speed built from `initial`, timed and (eager ones) profiled: its record."""
    from ..hf import patch

    if name == "cudalab":
        model, optimizer, _ = _build(Llama, config, "cudalab", initial)
        runner = model
    else:
        model = build()
        model.load_state_dict(initial)
        if name == "cudalab.patch":
            patch(model)
        elif name == "liger":
            apply_liger(model=model)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        hf = torch.compile(model) if name.endswith("+compile") else model

        def runner(tokens, _targets):  # the labels are the inputs: Hugging Face shifts them
            return hf(input_ids=tokens, labels=tokens).loss

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    ms, loss = _time_steps(runner, optimizer, inputs, targets, args.steps)
    peak = torch.cuda.max_memory_allocated() / 2**30
    tokens_per_s = args.batch * config.seq / (ms / 1000.0)
    record = {"step_ms": round(ms, 3), "tokens_per_s": round(tokens_per_s), "peak_gib": round(peak, 3),
              "last_loss": round(loss, 4)}
    print(f"{name:22s} {ms:8.2f} ms/step  {tokens_per_s:10.0f} tokens/s  peak {peak:6.2f} GiB  loss {loss:.4f}")
    if not name.endswith("+compile"):
        record["profile"] = p = _profile(runner, optimizer, inputs, targets, args.top)
        print(f"{name:22s} profile: {p['kernel_ms']:.2f} ms of kernels, {p['copy_ms']:.2f} ms in copy kernels")
    return record


def _hf_speed(config, args, inputs, targets, result):
    """A bf16 training step of Hugging Face's LlamaForCausalLM (torch.optim.AdamW, fused) as
    transformers runs it, under torch.compile (--compile), after ``cudalab.patch`` and after
    Liger-Kernel's ``apply_liger_kernel_to_llama`` (its defaults: the LM head and loss fused), beside
    the cudalab-built Llama (cudalab.optim.AdamW), all from the same weights and batch. Hugging Face
    scores the inputs shifted by one (seq - 1 tokens a sequence), the cudalab-built model the
    targets (seq). Both patches replace parts of the model family for the whole process:
    ``cudalab.patch``'s rotary function stays (as it does for a user), Liger's runs last and what
    it replaces is put back after it."""
    build = _hf_llama(config)
    if build is None:
        return 2
    from transformers.models.llama import modeling_llama

    apply_liger, liger_missing = _liger()
    initial = {key: value.detach().cpu() for key, value in build().state_dict().items()}
    torch.cuda.empty_cache()
    compiled = ["transformers+compile"] if args.compile else []
    names = ["transformers"] + compiled + ["cudalab.patch", "cudalab", "liger"]
    for name in names:
        if name == "liger" and apply_liger is None:
            result[name] = {"skipped": liger_missing}
            print(f"{name:22s} skipped: {liger_missing}")
            continue
        print(f"{name}: building and timing {args.steps} steps", file=sys.stderr, flush=True)
        saved = {attribute: getattr(modeling_llama, attribute) for attribute in _LIGER_PATCHED}
        try:
            result[name] = _hf_step(name, build, initial, config, args, inputs, targets, apply_liger)
        except Exception as error:  # a Liger release that does not know this transformers
            if name != "liger":
                raise
            result[name] = {"failed": f"{type(error).__name__}: {error}".splitlines()[0]}
            print(f"{name:22s} failed: {result[name]['failed']}")
        finally:
            for attribute, value in saved.items():
                setattr(modeling_llama, attribute, value)
            if name.endswith("+compile"):
                torch._dynamo.reset()  # its graphs hold the model's tensors
            gc.collect()  # Liger binds methods to the model and its modules: reference cycles
            torch.cuda.empty_cache()
    for name in names[1:]:
        if "step_ms" in result[name]:
            ratio = result["transformers"]["step_ms"] / result[name]["step_ms"]
            result[f"{name}_over_transformers"] = round(ratio, 3)
            print(f"{name} / transformers speed: {ratio:.3f}x")
    return 0


def _run(model_class, config, args, result):
    """What the arguments ask for, its results into `result`; the exit status."""
    if args.gemms:
        return _gemms(model_class, config, args, result)
    if args.parity is not None:
        return _parity(model_class, config, args, result)
    if args.generate is not None and args.hf:
        return _hf_generation(config, args, result)
    if args.generate is not None:
        return _generation(model_class, config, args, result)
    generator = torch.Generator(device="cuda").manual_seed(1)
    tokens = torch.randint(0, config.vocab, (args.batch, config.seq + 1), device="cuda", generator=generator)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    if args.hf:
        return _hf_speed(config, args, inputs, targets, result)
    return _speed(model_class, config, args, inputs, targets, result)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cudalab.models", description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, help="decoder layers (default: the model's)")
    parser.add_argument("--seq", type=int, help="tokens per sequence (default: the model's)")
    parser.add_argument("--vocab", type=int, help="vocabulary size (default: the model's)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per model, a round's (default 20)")
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of --steps steps of each model in turn (default 5)"
    )
    parser.add_argument("--top", type=int, default=15, help="kernels (or parameters) listed (default 15)")
    parser.add_argument("--compile", action="store_true", help="also time both models under torch.compile")
    parser.add_argument(
        "--fused-head", action="store_true", help="the cudalab model's LM head and loss as ops.linear_cross_entropy"
    )
    parser.add_argument(
        "--parity", type=int, metavar="STEPS", help="instead of timing: train both models STEPS steps and compare"
    )
    parser.add_argument(
        "--tolerance", type=float, default=0.02, help="--parity's largest relative loss difference (default 0.02)"
    )
    parser.add_argument(
        "--generate", type=int, metavar="TOKENS", help="instead of timing steps: greedy decoding (llama) of TOKENS"
    )
    parser.add_argument(
        "--hf", action="store_true",
        help="Hugging Face's LlamaForCausalLM of the same configuration: its training step as transformers runs "
        "it, after cudalab.patch and after Liger-Kernel's patch (where installed), beside the cudalab-built Llama; "
        "with --generate, its decoding unpatched and after cudalab.patch (needs transformers)",
    )
    parser.add_argument(
        "--gemms", action="store_true",
        help="instead of timing steps: each Linear's forward, input- and weight-gradient products alone, "
        "PyTorch's calls against cudalab's (kernel time), and their sums over the step",
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    model_class, config_class = MODELS[args.model]
    config = config_class()
    if args.layers is not None:
        config.layers = args.layers
    if args.seq is not None:
        config.seq = args.seq
    if args.vocab is not None:
        config.vocab = args.vocab
    config.fused_head = args.fused_head
    if min(args.batch, config.layers, config.seq, config.vocab, args.steps, args.rounds, args.top) <= 0 or (
        args.parity is not None and args.parity <= 0
    ):
        print(
            "cudalab.models: --batch, --layers, --seq, --vocab, --steps, --rounds, --top and --parity must be "
            "positive",
            file=sys.stderr,
        )
        return 2
    if args.compile and args.parity is not None:
        print("cudalab.models: --compile times the models and --parity compares them: give one", file=sys.stderr)
        return 2
    if args.generate is not None and (model_class is not Llama or not 0 < args.generate < config.seq):
        print(f"cudalab.models: --generate takes a Llama (--model llama or llama-1b) and 1 to {config.seq - 1} tokens",
              file=sys.stderr)
        return 2
    if args.gemms and (args.parity is not None or args.generate is not None or args.hf or args.compile):
        print("cudalab.models: --gemms times the step's products alone: not with --parity, --generate, --hf or "
              "--compile", file=sys.stderr)
        return 2
    if args.hf and (model_class is not Llama or args.parity is not None):
        print("cudalab.models: --hf takes a Llama (--model llama or llama-1b), and times steps or generation (not "
              "--parity)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("cudalab.models: needs a CUDA GPU; torch sees none", file=sys.stderr)
        return 3
    result = {"model": args.model, "config": asdict(config), "batch": args.batch, "steps": args.steps,
              "rounds": args.rounds,
              "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        status = _run(model_class, config, args, result)
    except torch.cuda.OutOfMemoryError as error:
        # The speed runs hold every variant's model, gradients and optimizer state at once.
        result["failed"] = f"out of GPU memory: {str(error).splitlines()[0]}"
        print(f"cudalab.models: {result['failed']}; lower --batch or --seq (the timing holds every variant's "
              "model at once, four with --compile)", file=sys.stderr)
        status = 4
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
