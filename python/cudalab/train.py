"""``python -m cudalab.train``: trains a cudalab.models GPT or Llama on a generated language and
reports, as it goes, the loss, the held-out loss against the lowest loss the language allows,
tokens per second and peak memory.

The language is a random Markov chain over the model's vocabulary: each token is followed by one
of four tokens drawn for it once, with probabilities 0.5, 0.25, 0.15 and 0.1. A model that has
learned it reaches the chain's entropy per token, about 1.21 nats (printed as the floor), where
an untrained one sits at log(vocab); nothing is downloaded. ``--ops torch`` trains the same model
built from torch.nn (which also runs on the CPU, ``--device cpu``), for comparison.

Under ``torchrun --nproc_per_node N`` it trains data-parallel: one process per GPU (NCCL; gloo on
the CPU), the model wrapped in DistributedDataParallel, each process on its own batches, the
progress from the first process with tokens/s over all of them; at the end every replica's
parameters are compared with the first's (they must be identical). ``--all-reduce cudalab``
averages the gradients with cudalab.distributed's kernel instead of NCCL."""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist

from . import _C
from .models import MODELS

SUCCESSOR_PROBABILITIES = (0.5, 0.25, 0.15, 0.1)
# Batches sampled at a time: a chain's tokens follow one another, so sampling walks the sequence
# one position a launch; doing it for this many batches at once keeps it a small part of a step.
POOL_BATCHES = 64


class MarkovLanguage:
    """Token t is followed by successors[t, i] with probability SUCCESSOR_PROBABILITIES[i]."""

    def __init__(self, vocab, seed, device):
        generator = torch.Generator(device="cpu").manual_seed(seed)
        self.successors = torch.randint(0, vocab, (vocab, len(SUCCESSOR_PROBABILITIES)), generator=generator).to(device)
        self.probabilities = torch.tensor(SUCCESSOR_PROBABILITIES, device=device)
        self.vocab, self.device = vocab, device

    def entropy(self):
        """Nats per token of a chain's continuation: the loss a perfect model reaches (successors
        drawn twice for one token merge, lowering it slightly; this is the bound without that)."""
        return -sum(p * math.log(p) for p in SUCCESSOR_PROBABILITIES)

    def sample(self, sequences, length, generator):
        """`sequences` chains of `length` tokens, each from a uniformly drawn first token."""
        tokens = torch.empty(sequences, length, dtype=torch.long, device=self.device)
        tokens[:, 0] = torch.randint(0, self.vocab, (sequences,), device=self.device, generator=generator)
        choices = torch.multinomial(self.probabilities, sequences * length, replacement=True, generator=generator)
        choices = choices.view(sequences, length)
        for t in range(1, length):
            tokens[:, t] = self.successors[tokens[:, t - 1], choices[:, t]]
        return tokens


def _build(model_name, ops, args, device):
    model_class, config_class = MODELS[model_name]
    config = config_class()
    for field in ("layers", "seq", "vocab", "d_model"):
        value = getattr(args, field)
        if value is not None:
            setattr(config, field, value)
    config.fused_head = args.fused_head
    model = model_class(config, ops).to(device)
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    if ops == "cudalab":
        from .optim import AdamW

        optimizer = AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0, fused=device != "cpu")
    return model, config, optimizer


def _process_group(args):
    """(rank, world size, device) under torchrun, the process group made; (0, 1, args.device)
    otherwise."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1, args.device
    local = int(os.environ["LOCAL_RANK"])
    device = "cpu" if args.device == "cpu" else f"cuda:{local}"
    if device != "cpu":
        torch.cuda.set_device(local)
    dist.init_process_group("gloo" if device == "cpu" else "nccl")
    return dist.get_rank(), world, device


def _replica_difference(model, device):
    """The largest |difference| between any process's parameters and the first process's."""
    mine = torch.cat([p.detach().double().flatten() for p in model.parameters()])
    first = mine.clone()
    dist.broadcast(first, 0)
    worst = (mine - first).abs().max().reshape(1).to(device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return worst.item()


def _held_out_loss(model, batches):
    with torch.no_grad():
        return sum(model(x, y).float().item() for x, y in batches) / len(batches)


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="python -m cudalab.train",
        description=__doc__.splitlines()[0],
        epilog="Data-parallel on N GPUs: torchrun --standalone --nproc_per_node N -m cudalab.train [options]",
    )
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt")
    parser.add_argument("--ops", choices=["cudalab", "torch"], default="cudalab", help="what the model is built from")
    parser.add_argument("--layers", type=int, help="decoder layers (default: the model's)")
    parser.add_argument("--d-model", dest="d_model", type=int, help="model width (default: the model's)")
    parser.add_argument("--vocab", type=int, help="vocabulary (default: the model's)")
    parser.add_argument("--seq", type=int, help="tokens per sequence (default: the model's)")
    parser.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--lr", type=float, default=1e-3, help="AdamW's learning rate (default 1e-3)")
    parser.add_argument("--dtype", choices=["bf16", "f32"], default="bf16", help="parameters and activations")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu (with --ops torch)")
    parser.add_argument("--log-every", type=int, default=25, help="steps between progress lines (default 25)")
    parser.add_argument("--seed", type=int, default=0, help="the language's and the batches' seed (default 0)")
    parser.add_argument(
        "--fused-head", action="store_true", help="the LM head and loss as ops.linear_cross_entropy (--ops cudalab)"
    )
    parser.add_argument(
        "--all-reduce",
        dest="all_reduce",
        choices=["nccl", "cudalab"],
        default="nccl",
        help="data-parallel gradients by NCCL (DDP's own) or cudalab.distributed's kernel (default nccl)",
    )
    parser.add_argument("--json", help="write the progress records and the summary here")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    given = (args.layers, args.d_model, args.vocab, args.seq)
    sizes = [args.batch, args.steps, args.log_every] + [v for v in given if v is not None]
    if min(sizes) <= 0 or not args.lr > 0:  # not > 0: NaN too
        print("cudalab.train: sizes, --steps, --log-every and --lr must be positive", file=sys.stderr)
        return 2
    if args.device != "cpu" and not torch.cuda.is_available():
        print("cudalab.train: needs a CUDA GPU (torch sees none); --ops torch --device cpu runs on the CPU",
              file=sys.stderr)
        return 3
    if args.device == "cpu" and (args.ops == "cudalab" or args.all_reduce == "cudalab"):
        print("cudalab.train: cudalab's ops run on CUDA GPUs only; use --ops torch --all-reduce nccl for --device cpu",
              file=sys.stderr)
        return 2
    try:
        return _train(args)
    except torch.cuda.OutOfMemoryError as error:
        print(f"cudalab.train: out of GPU memory ({str(error).splitlines()[0]}); lower --batch or --seq",
              file=sys.stderr)
        return 4


def _train(args):
    """Trains as main's arguments say; the exit status."""
    rank, world, device = _process_group(args)
    model, config, optimizer = _build(args.model, args.ops, args, device)
    # DDP starts every process from the first's weights and averages the gradients in the backward.
    trained = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    reducer = None
    if world > 1 and args.all_reduce == "cudalab":
        from .distributed import AllReduce, ddp_comm_hook

        reducer = AllReduce()
        trained.register_comm_hook(reducer, ddp_comm_hook)
    language = MarkovLanguage(config.vocab, args.seed, device)
    generator = torch.Generator(device=device).manual_seed(args.seed + 1)
    held_out = [language.sample(args.batch, config.seq + 1, generator) for _ in range(2)]
    held_out = [(t[:, :-1].contiguous(), t[:, 1:].contiguous()) for t in held_out]
    if world > 1:  # the held-out batches are everyone's; the training batches each process's own
        generator.manual_seed(args.seed + 2 + rank)
    floor = language.entropy()
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"{args.model} ({args.ops}) {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
        f"{args.batch} x {config.seq} tokens a step" + (f" in each of {world} processes" if world > 1 else "") +
        f"; the language's floor {floor:.3f} nats, log(vocab) {math.log(config.vocab):.3f}", flush=True)
    cuda = device != "cpu"
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    records, tokens_done, began = [], 0, time.perf_counter()
    window_start, window_tokens = began, 0
    for step in range(1, args.steps + 1):
        if (step - 1) % POOL_BATCHES == 0:  # fresh chains: no sequence is seen twice
            pool = language.sample(POOL_BATCHES * args.batch, config.seq + 1, generator)
        first = (step - 1) % POOL_BATCHES * args.batch
        tokens = pool[first : first + args.batch]
        loss = trained(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        tokens_done += world * args.batch * config.seq
        window_tokens += world * args.batch * config.seq
        if step == 1:  # the first window starts after the first step's warm-up (lazy loading, allocation)
            loss.item()
            window_start, window_tokens = time.perf_counter(), 0
        if step % args.log_every == 0 or step == args.steps:
            train_loss = loss.float().item()  # synchronizes: the window's time is the steps' own
            now = time.perf_counter()
            rate = window_tokens / (now - window_start)
            eval_loss = _held_out_loss(model, held_out)
            peak = torch.cuda.max_memory_allocated(device) / 2**30 if cuda else 0.0
            eta = (args.steps - step) * world * args.batch * config.seq / rate
            record = {"step": step, "loss": round(train_loss, 4), "held_out_loss": round(eval_loss, 4),
                      "tokens_per_s": round(rate), "peak_gib": round(peak, 3)}
            records.append(record)
            memory = f"  peak {peak:.2f} GiB" if cuda else ""
            say(f"step {step:6d}/{args.steps}  loss {train_loss:.4f}  held-out {eval_loss:.4f}  "
                f"{rate:10.0f} tokens/s{memory}  eta {eta:5.0f} s", flush=True)
            window_start, window_tokens = time.perf_counter(), 0
    summary = {"model": args.model, "ops": args.ops, "dtype": args.dtype, "device": args.device,
               "batch": args.batch, "seq": config.seq, "vocab": config.vocab, "steps": args.steps,
               "floor_nats": round(floor, 4), "seconds": round(time.perf_counter() - began, 2),
               "tokens": tokens_done, "processes": world, "records": records, "commit": _C.commit}
    if world > 1:
        difference = _replica_difference(model, device)
        summary["replicas_max_difference"] = difference
        say(f"replicas after {args.steps} steps: largest difference from the first process's parameters "
            f"{difference:g}", flush=True)
        if reducer is not None:
            reducer.close()
        dist.barrier()
        if cuda:  # NCCL's resources; a gloo group is never torn down (see the end of this file)
            dist.destroy_process_group()
        if difference != 0.0:
            print("cudalab.train: the processes' parameters differ", file=sys.stderr)
            return 1
    if args.json and rank == 0:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=1)
    return 0


if __name__ == "__main__":
    status = main()
    if dist.is_initialized():
        # gloo's teardown aborted a process now and then, after the last barrier: destroying the group
        # in 3 of 25 two-process CPU runs, the interpreter's exit in 1 CI run. Nothing is left to send,
        # so the process ends without running it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)
