"""``python -m cudalab.bench``: each cudalab op against eager PyTorch and ``torch.compile`` of the
same eager code (attention: against PyTorch's SDPA with each backend forced), in one process on one
GPU, written as a cudalab results file (schema cudalab-results/2) that ``cudalab report`` renders.

Method (the C++ harness's, src/harness/timer.cu): every variant is verified against a float64
reference before it is timed, and one that fails reports the failure, not a time. Each sample is one
call between two CUDA events on the current stream, after a kernel that reads twice L2's size, so no
input is served from cache; a ~1 ms sleep kernel ahead of the start event keeps the GPU busy while
Python enqueues the call (autograd's engine included), so host overhead is charged only where it
leaves the GPU idle between the call's own kernels. Samples continue under the harness's stopping rule
(relative spread below 1%, at least 10, at most 1000, about 1 s each): the median is reported.

Each case is a problem of a C++ op, and the ``cudalab`` command's ``model`` subcommand gives its key,
its work (the op's minimum bytes and flops), and each timing's summary and roofline against the
ceilings ``cudalab probe`` measured (its cache must exist: run ``cudalab probe`` first), so the numbers
are the harness's own. Modules: ``cases`` (by family), ``model`` (the C++ side), ``timing``, ``records``
and ``command_line``.
"""
