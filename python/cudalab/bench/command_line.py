"""``python -m cudalab.bench``'s command line: the cases chosen, the C++ model asked for their problems,
provenance and ceilings, each case run and the results file written after every one."""

import argparse
import platform
import sys
import time

import torch

from .. import __version__, _C
from .cases import FAMILIES
from .model import BenchError, Model, find_cli
from .records import SCHEMA, run_case, save
from .timing import L2Flush


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m cudalab.bench",
        description="Times each cudalab op against eager PyTorch and torch.compile (attention: against SDPA's "
        "backends) in one process, each variant verified against float64 first, and writes a cudalab results file "
        "(render it with `cudalab report FILE --update docs/pytorch.md`). Needs a CUDA GPU, `cudalab probe`'s "
        "ceilings and the cudalab command, whose model gives each record's problem, work and roofline.",
    )
    parser.add_argument("--out", default="pytorch-bench.json", help="results file to write (default: %(default)s)")
    parser.add_argument("--only", action="append", choices=sorted(FAMILIES), help="run only this family (repeatable)")
    parser.add_argument(
        "--op", action="append", help="run only the cases of this C++ op, e.g. layer_norm or scan (repeatable)"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    parser.add_argument("--seed", type=lambda s: int(s, 0), default=0x5EED, help="input seed (default: 0x5eed)")
    parser.add_argument("--ceilings", help="a probe file (cudalab probe --json) instead of probe's cache")
    parser.add_argument(
        "--cli",
        help="the cudalab command (default: $CUDALAB_CLI, else cudalab on PATH, else build/release/cudalab)",
    )
    return parser.parse_args(argv)


def progress(done, total, label, began):
    width = 30
    filled = width * done // total
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {time.perf_counter() - began:5.0f} s  {label}"
    end = "\r" if sys.stderr.isatty() and done < total else "\n"
    print(line.ljust(100) if end == "\r" else line, end=end, file=sys.stderr, flush=True)


def chosen_cases(args):
    cases = [c for family in (args.only or sorted(FAMILIES)) for c in FAMILIES[family](args.quick)]
    if args.op:
        cases = [c for c in cases if c.op in args.op]
        if not cases:
            raise BenchError(f"no case runs op {', '.join(args.op)}")
    return cases


def start(args, argv, cases):
    """The C++ side's answer for this GPU: provenance, ceilings, stopping rule and flush size; asking
    for every case's problem first refuses a case the registry does not know before anything runs."""
    model = Model(find_cli(args.cli))
    answer = model.ask([c.request() for c in cases], gpu=True, ceilings_source=args.ceilings or "cache")
    provenance = answer["provenance"]
    uuid = f"GPU-{torch.cuda.get_device_properties(torch.cuda.current_device()).uuid}"
    if provenance["gpu_uuid"] != uuid:
        raise BenchError(f"{model.cli} sees {provenance['gpu_uuid']}, torch {uuid}: give both the same GPU")
    # The model must be the one of the kernels timed; a build outside a git checkout knows no commit.
    if "unknown" not in (provenance["commit"], _C.commit) and provenance["commit"] != _C.commit:
        raise BenchError(
            f"{model.cli} is built from commit {provenance['commit'][:12]}, the cudalab package from "
            f"{_C.commit[:12]}: build both from one checkout"
        )
    provenance.update(
        command_line=" ".join(["python -m cudalab.bench", *argv]),
        commit=_C.commit,
        dirty=bool(_C.dirty),
        cudalab_version=__version__,
        torch_version=torch.__version__,
        python_version=platform.python_version(),
    )
    return model, answer


def clocks(model):
    """The SM and memory clocks now, as the C++ side reads them (NVML)."""
    provenance = model.ask(gpu=True)["provenance"]
    return provenance["sm_clock_mhz_start"], provenance["memory_clock_mhz_start"]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        if not torch.cuda.is_available():
            raise BenchError("no CUDA device: torch.cuda.is_available() is False")
        cases = chosen_cases(args)
        model, answer = start(args, argv, cases)
    except BenchError as error:
        print(f"cudalab.bench: {error}", file=sys.stderr)
        return 2
    torch._dynamo.config.cache_size_limit = 64
    # FP32 means FP32 on both sides: cudalab's FP32 kernels do not use TF32, and cuDNN would by default.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ceilings, rule = answer["ceilings"], answer["stopping_rule"]
    document = {
        "schema": SCHEMA,
        "provenance": answer["provenance"],
        "ceilings": ceilings,
        "records": [],
        "experiments": [],
        "claims": [],
    }
    flush, began = L2Flush(answer["l2_flush_bytes"]), time.perf_counter()
    for i, case in enumerate(cases):
        progress(i, len(cases), case.label(), began)
        torch._dynamo.reset()  # each case compiles afresh: no cache entries from other dtypes or shapes
        document["records"] += run_case(case, args.seed, model, ceilings, flush, rule)
        torch.cuda.empty_cache()
        if i == 0:  # the clocks once the GPU has left its idle state (an idle H100 reads 345 MHz)
            sm, mem = clocks(model)
            document["provenance"].update(sm_clock_mhz_start=sm, memory_clock_mhz_start=mem)
        save(document, args.out)  # after every case: a run cut short keeps what it measured
    progress(len(cases), len(cases), "done", began)
    sm_end, mem_end = clocks(model)
    document["provenance"].update(sm_clock_mhz_end=sm_end, memory_clock_mhz_end=mem_end)
    save(document, args.out)
    failed = [r for r in document["records"] if r["outcome"] == "failed"]
    for r in failed:
        print(
            f"cudalab.bench: {r['op']} {r['variant']} {r['problem']['key']} failed verification "
            f"(rel L2 {r['comparison']['rel_l2_error']})",
            file=sys.stderr,
        )
    print(f"wrote {args.out}: {len(document['records'])} records, {len(failed)} failed verification")
    return 1 if failed else 0
