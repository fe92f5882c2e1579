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


# No SM clock of the GPUs timed here passes 2 GHz (1.98 GHz on H100 and H200 SXM), so a sleep kernel
# of n cycles lasts at least n / 2e9 seconds.
_CLOCK_CEILING_HZ = 2.0e9


def sleep_cycles(host_seconds):
    """Cycles of a sleep kernel that keeps the GPU busy while the host enqueues a call whose
    enqueueing took `host_seconds`: twice that, and at least ~1 ms. The start event after it
    then fires once the call is queued, so the events time the GPU's work and not the host's (a
    call queued more slowly than the GPU ran the sleep would count the host's time as the GPU's)."""
    return max(2_000_000, int(2.0 * host_seconds * _CLOCK_CEILING_HZ))


def enqueue_seconds(run):
    """The host's time to enqueue run(), the GPU kept busy meanwhile (measured on a warm call)."""
    torch.cuda._sleep(sleep_cycles(0.0))
    began = time.perf_counter()
    run()
    took = time.perf_counter() - began
    torch.cuda.synchronize()
    return took


def time_call(run, flush, rule):
    """The samples (ms) of run() between CUDA events, each after an L2 flush and a sleep kernel
    longer than the host takes to enqueue the call (`sleep_cycles`)."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):  # warm-up: compilation, autotuning, allocator growth
        run()
    torch.cuda.synchronize()
    cycles = sleep_cycles(enqueue_seconds(run))
    samples, began = [], time.perf_counter()
    while True:
        flush()
        torch.cuda._sleep(cycles)
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop))
        if enough_samples(samples, time.perf_counter() - began, rule):
            return samples
