"""cudalab.distributed.AllReduce against torch.distributed.all_reduce (NCCL), one process per GPU:

    python -m torch.distributed.run --standalone --nproc_per_node 2 -m cudalab.bench.distributed --json out.json

Each size is first checked: every rank's sum must be the fp32 sum in rank order, bit for bit."""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist

from cudalab import _C
from cudalab.distributed import AllReduce

DEFAULT_BYTES = [8 << 10, 64 << 10, 256 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 256 << 20]


def _time_us(call, iterations):
    """The median of 5 runs of `iterations` back-to-back calls, in us a call, from the slowest rank
    (the sum is complete only when every rank has finished), and the host's time to issue a call
    (where it is as long, the host sets the pace)."""
    runs, issue = [], []
    for _ in range(5):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        began = time.perf_counter()
        for _ in range(iterations):
            call()
        issue.append((time.perf_counter() - began) * 1e6 / iterations)
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) * 1000 / iterations)
    slowest = torch.tensor([sorted(runs)[2], sorted(issue)[2]], device="cuda")
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest.tolist()


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m torch.distributed.run --standalone --nproc_per_node N -m cudalab.bench.distributed",
        description="Times cudalab.distributed.AllReduce against torch.distributed.all_reduce (NCCL), one process "
        "per GPU, after checking that its sum is the fp32 sum in rank order on every rank, bit for bit. "
        "Exits 1 if any sum differs.",
    )
    parser.add_argument("--bytes", type=int, nargs="+", default=DEFAULT_BYTES, help="array sizes in bytes")
    parser.add_argument("--dtype", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"])
    parser.add_argument("--json", help="write the records here (rank 0)")
    args = parser.parse_args(argv)
    if any(b <= 0 or b % 4 for b in args.bytes):
        parser.error("--bytes: positive multiples of 4")
    rank = int(os.environ.get("LOCAL_RANK", "-1"))
    if rank < 0 or not torch.cuda.is_available():
        parser.error("run it under torch.distributed.run on a host of CUDA GPUs, one process per GPU")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    try:
        # The kernel at every size: the default sends large tensors to NCCL instead.
        reduce, world, records = AllReduce(kernel_bytes=1 << 62), dist.get_world_size(), []
        for name in args.dtype:
            dtype = getattr(torch, name)
            for size in args.bytes:
                n = size // dtype.itemsize
                generator = torch.Generator("cuda").manual_seed(n + rank)
                x = torch.randn(n, device="cuda", generator=generator).to(dtype)
                every = [torch.empty_like(x) for _ in range(world)]
                dist.all_gather(every, x)
                want = torch.stack([part.float() for part in every]).sum(0).to(dtype)
                wrong = (reduce(x.clone()) != want).sum()
                dist.all_reduce(wrong)
                wrong = int(wrong)
                del every, want
                iterations = max(3, min(200, (64 << 20) // size))
                cudalab_us, cudalab_host_us = _time_us(lambda: reduce(x), iterations)
                nccl_us, nccl_host_us = _time_us(lambda: dist.all_reduce(x), iterations)
                records.append({
                    "dtype": name, "bytes": size, "gpus": world, "mismatches": wrong,
                    "cudalab_us": None if wrong else cudalab_us, "nccl_us": nccl_us,
                    "cudalab_host_us": cudalab_host_us, "nccl_host_us": nccl_host_us,
                    "speedup_vs_nccl": None if wrong else nccl_us / cudalab_us,
                })
                if rank == 0:
                    ours = f"{wrong} elements differ" if wrong else f"{cudalab_us:9.1f} us"
                    print(f"{name:9} {size:>11} B  cudalab {ours} (host {cudalab_host_us:6.1f})  "
                          f"nccl {nccl_us:9.1f} us (host {nccl_host_us:6.1f})", flush=True)
        if rank == 0 and args.json:
            with open(args.json, "w") as f:
                nccl = ".".join(map(str, torch.cuda.nccl.version()))
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "nccl": nccl,
                           "commit": _C.commit, "dirty": bool(_C.dirty), "records": records}, f, indent=1)
        return 1 if any(r["mismatches"] for r in records) else 0
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit(main())
