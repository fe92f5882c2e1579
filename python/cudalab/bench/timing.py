"""Timing as the C++ harness times (src/harness/timer.cu): CUDA events around one call, each sample
after an L2 flush, until the harness's stopping rule (from ``cudalab model``) is met."""

import statistics
import time

import torch


class L2Flush:
    """Reads a buffer of the C++ timer's flush size (``cudalab model --gpu``). Reading, not writing: a
    written buffer would leave L2 full of dirty lines whose write-back the next sample would pay
    (measured: writing made a 0.18 ms bf16 LayerNorm 2.9% slower, 0.1859 against 0.1806 ms)."""

    def __init__(self, flush_bytes):
        self.buffer = torch.ones(flush_bytes // 4, dtype=torch.int32, device="cuda")

    def __call__(self):
        return self.buffer.sum()


def enough_samples(samples, elapsed_seconds, rule):
    """Whether sampling ends under the harness's stopping rule: at its most samples, or at its fewest
    with the relative spread below its target or its time budget spent."""
    if len(samples) >= rule["max_samples"]:
        return True
    if len(samples) < rule["min_samples"]:
        return False
    spread = statistics.stdev(samples) / statistics.fmean(samples) if len(samples) > 1 else 0.0
    return elapsed_seconds >= rule["budget_seconds"] or spread < rule["target_stdrel"]


def time_call(run, flush, rule):
    """The samples (ms) of run() between CUDA events, each after an L2 flush and a ~1 ms sleep kernel
    (Python enqueues the call while the GPU is busy)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):  # warm-up: compilation, autotuning, allocator growth
        run()
    torch.cuda.synchronize()
    samples, began = [], time.perf_counter()
    while True:
        flush()
        torch.cuda._sleep(2_000_000)  # ~1 ms at 1.98 GHz
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
        if enough_samples(samples, time.perf_counter() - began, rule):
            return samples
