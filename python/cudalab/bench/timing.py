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


# No NVIDIA GPU's SM clock reaches 3.5 GHz (H100 and H200 SXM boost to 1.98), so a sleep kernel of
# n cycles lasts at least n / 3.5e9 seconds.
_CLOCK_CEILING_HZ = 3.5e9


def sleep_cycles(host_seconds):
    """Cycles of a sleep kernel that keeps the GPU busy while the host enqueues a call whose
    enqueueing took `host_seconds`: twice that at the clock ceiling, and at least 2,000,000 (about
    1 ms on an H100). The start event after it then fires once the call is queued, so the events
    time the GPU's work and not the host's."""
    return max(2_000_000, int(2.0 * host_seconds * _CLOCK_CEILING_HZ))


def enqueue_seconds(run, calls=3):
    """The longest of `calls` warm calls' host time to enqueue run(), the GPU kept busy meanwhile
    (a run() that synchronizes counts the GPU's time as well)."""
    longest = 0.0
    for _ in range(calls):
        torch.cuda._sleep(sleep_cycles(0.0))
        began = time.perf_counter()
        run()
        longest = max(longest, time.perf_counter() - began)
        torch.cuda.synchronize()
    return longest


def covered_sample(run, cycles, start, stop):
    """run() between the CUDA events `start` and `stop` after a sleep of `cycles`: (its time in ms,
    or None where the host's enqueueing outlasted the sleep's least length, so that the events may
    hold host time; the host's time in seconds)."""
    torch.cuda._sleep(cycles)
    start.record()
    began = time.perf_counter()
    run()
    host = time.perf_counter() - began
    stop.record()
    stop.synchronize()
    return (start.elapsed_time(stop) if host < cycles / _CLOCK_CEILING_HZ else None), host


def time_call(run, flush, rule):
    """The samples (ms) of run() between CUDA events, each after an L2 flush and a sleep kernel
    longer than the host takes to enqueue the call; a sample whose enqueueing outlasted its sleep
    is taken again after a longer one."""
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):  # warm-up: compilation, autotuning, allocator growth
        run()
    torch.cuda.synchronize()
    cycles = sleep_cycles(enqueue_seconds(run))
    samples, began = [], time.perf_counter()
    while True:
        flush()
        sample, host = covered_sample(run, cycles, start, stop)
        if sample is None:
            cycles = sleep_cycles(host)
            continue
        samples.append(sample)
        if enough_samples(samples, time.perf_counter() - began, rule):
            return samples
