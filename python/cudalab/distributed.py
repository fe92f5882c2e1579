"""All-reduce (sum) across the GPUs of one host with one process per GPU, torch.distributed's usual
layout, by cudalab's kernel (cudalab::all_reduce_ipc), one launch a call: each GPU copies its
tensor into a staging buffer that every other process has mapped through CUDA IPC, and after a
barrier between the GPUs' blocks each sums every GPU's buffer into its own tensor, in GPU order, so
every GPU holds the same bits (on three GPUs or more, from 2 MiB, each sums a share and the GPUs
then copy each other's shares). On two and four H200s it takes 12-22 us a call below 1 MiB
against NCCL's 47-88 through torch.distributed; larger tensors go to NCCL (docs/transfers.md).

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    reduce = cudalab.distributed.AllReduce()      # collective: every rank builds it together
    reduce(x)                                     # x summed over the ranks, in place
    cudalab.all_reduce(x)                         # the same through one AllReduce per group
    ddp.register_comm_hook(reduce, cudalab.distributed.ddp_comm_hook)   # DDP's gradients by it

Every process must see every GPU of the host (no CUDA_VISIBLE_DEVICES per process), each GPU
must reach the others by peer access, and every rank must make the same calls in the same order;
a rank that does not arrive within ``timeout`` (10 minutes by default, as NCCL's process groups)
is taken as gone: the others' kernels trap, and their next CUDA call fails. ``close()`` (every
rank together) frees the buffers once no GPU reads them; dropping an AllReduce without it leaves
that to the end of the process. Not for CUDA graphs: the barriers' epochs are counted on the
host."""

import datetime
import weakref

import torch
import torch.distributed as dist

SIGNAL_WORDS = 1024  # cudalab::kAllReduceSignalWords: a word per GPU for each of the kernel's blocks
MAX_GPUS = 8


class AllReduce:
    """The staging buffer (``buffer_bytes``) and signal array of this process's GPU, shared with the
    other ranks of ``group`` when constructed (a collective call). Calls alternate the buffer's
    halves; tensors larger than half of it are summed in half-buffer pieces. Tensors larger than
    ``kernel_bytes`` (default 32 MiB / (ranks - 1)) go to NCCL, which is faster there; 0 sends
    every call to NCCL, and a huge value none. So do dtypes the kernel does not take (float16)."""

    def __init__(self, group=None, buffer_bytes=32 << 20, kernel_bytes=None, timeout=datetime.timedelta(minutes=10)):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        if not 1 <= self.world <= MAX_GPUS:
            raise ValueError(f"cudalab.distributed.AllReduce: 1 to {MAX_GPUS} ranks, got {self.world}")
        if buffer_bytes < 32 or buffer_bytes % 32:
            raise ValueError(
                f"cudalab.distributed.AllReduce: buffer_bytes must be a multiple of 32 from 32, got {buffer_bytes}"
            )
        # Above this size a call goes to torch.distributed's all_reduce (NCCL). Measured on H200s over
        # NVLink (docs/transfers.md): the kernel leads NCCL up to 32 MiB on two GPUs (1.07-1.10x
        # there), to 16 MiB on three (1.06x) and ties it at 8-16 MiB on four (0.96-1.01x), then
        # trails: 32 MiB / (ranks - 1) follows that. Past four GPUs it is not measured.
        if kernel_bytes is not None and kernel_bytes < 0:
            raise ValueError(f"cudalab.distributed.AllReduce: kernel_bytes must be >= 0, got {kernel_bytes}")
        default = (32 << 20) // max(1, self.world - 1)
        self.kernel_bytes = default if kernel_bytes is None else kernel_bytes
        self.device = torch.device("cuda", torch.cuda.current_device())
        # Every rank learns every rank's GPU, and all refuse together where one cannot reach another
        # (a rank that raised alone would leave the others waiting at the first barrier).
        devices = [None] * self.world
        dist.all_gather_object(devices, self.device.index, group=group)
        if len(set(devices)) != self.world:
            raise RuntimeError(
                f"cudalab.distributed.AllReduce: the ranks' GPUs are {devices}: one GPU per rank, and every process "
                "must see every GPU of the host (no CUDA_VISIBLE_DEVICES per process)"
            )
        reachable = all(torch.cuda.can_device_access_peer(self.device.index, d) for d in devices if d != self.device.index)
        everyone = [None] * self.world
        dist.all_gather_object(everyone, reachable, group=group)
        if not all(everyone):
            raise RuntimeError(f"cudalab.distributed.AllReduce: some GPU of {devices} has no peer access to another")
        # Each rank's buffer and signals in one cudaMalloc'd region, opened by the others for their
        # own GPU (memory opened for its owner's GPU, as torch.multiprocessing shares CUDA tensors,
        # faults when another GPU's kernel reads it). Each step fails on every rank together.
        region_bytes = buffer_bytes + 4 * SIGNAL_WORDS
        handle = self._together("allocating the staging buffer", lambda: self._allocate(region_bytes, buffer_bytes))
        handles = [None] * self.world
        dist.all_gather_object(handles, handle, group=group)
        self._together("opening the other ranks' buffers", lambda: self._open(handles, region_bytes, buffer_bytes))
        # The epochs, the pieces of large tensors and the order between streams live in C++.
        self.handle = torch.ops.cudalab._ipc_all_reduce_create(
            self.buffers, self.signal_arrays, self.rank, timeout.total_seconds()
        )
        self._destroy = weakref.finalize(self, _release, self.handle, self.device)
        self.hook_stream = None  # ddp_comm_hook's
        torch.cuda.synchronize(self.device)  # the zeroed signals land before any rank can signal
        dist.barrier(group=group)

    def _together(self, what, step):
        """Runs `step` on every rank, then raises on every rank if it failed on any."""
        try:
            result, error = step(), None
        except (RuntimeError, ValueError) as failure:
            result, error = None, str(failure).splitlines()[0]
        errors = [None] * self.world
        dist.all_gather_object(errors, error, group=self.group)
        failed = {rank: e for rank, e in enumerate(errors) if e is not None}
        if failed:
            raise RuntimeError(f"cudalab.distributed.AllReduce: {what} failed on rank(s) {failed}")
        return result

    def _allocate(self, region_bytes, buffer_bytes):
        self.region, handle = torch.ops.cudalab._ipc_buffer(region_bytes, self.device)
        self.region[buffer_bytes:].zero_()
        return handle.numpy().tobytes()

    def _open(self, handles, region_bytes, buffer_bytes):
        self.buffers, self.signal_arrays = [], []
        for rank, theirs in enumerate(handles):
            region = (
                self.region
                if rank == self.rank
                else torch.ops.cudalab._ipc_open(
                    torch.frombuffer(bytearray(theirs), dtype=torch.uint8), region_bytes, self.device
                )
            )
            self.buffers.append(region[:buffer_bytes])
            self.signal_arrays.append(region[buffer_bytes:].view(torch.int32))

    def __call__(self, x):
        """x (contiguous, on this rank's GPU) summed over the ranks in place; returns x. float32 and
        bfloat16 up to ``kernel_bytes`` by cudalab's kernel, the rest by NCCL."""
        if x.dtype not in (torch.float32, torch.bfloat16) or x.numel() * x.element_size() > self.kernel_bytes:
            dist.all_reduce(x, group=self.group)
        else:
            torch.ops.cudalab._all_reduce_ipc_(x, self.handle)
        return x

    def close(self):
        """Frees the buffers, every rank together, once no GPU reads them (a collective; the object
        cannot be called after it)."""
        if not self._destroy.alive:
            return
        self._destroy()  # this GPU's calls finish, so it reads no other GPU's buffer
        dist.barrier(group=self.group)
        self.buffers = self.signal_arrays = None  # this process's mappings of the others' buffers close
        dist.barrier(group=self.group)  # no process maps this one's buffer any more
        self.region = None


def _release(handle, device):
    torch.cuda.synchronize(device)
    torch.ops.cudalab._ipc_all_reduce_destroy(handle)


_reducers = {}  # all_reduce's, one per process group


def all_reduce(x, group=None):
    """x summed in place over the ranks of ``group`` (the default group when None) and returned, by
    the AllReduce that the first call for that group builds (so every rank's first call must come
    together, as any collective's; ``close_all()`` frees them)."""
    key = dist.group.WORLD if group is None else group
    reducer = _reducers.get(key)
    if reducer is None:
        reducer = _reducers[key] = AllReduce(group)
    return reducer(x)


def close_all():
    """Closes the AllReduce objects that all_reduce built (a collective: every rank together)."""
    for key in list(_reducers):
        _reducers.pop(key).close()


def ddp_comm_hook(state, bucket):
    """A DistributedDataParallel comm hook whose state is an AllReduce: each gradient bucket summed
    by it and divided by the number of ranks (the average DDP's own hook gives), the same bits on
    every rank: ``ddp.register_comm_hook(AllReduce(), ddp_comm_hook)``. The sums run on a stream of
    their own, as NCCL's do, so that they overlap the rest of the backward pass."""
    tensor = bucket.buffer()
    if state.hook_stream is None:
        state.hook_stream = torch.cuda.Stream(state.device)
    state.hook_stream.wait_stream(torch.cuda.current_stream(state.device))  # the bucket's gradients are ready
    future = torch.futures.Future(devices=[tensor.device])
    with torch.cuda.stream(state.hook_stream):
        state(tensor).div_(state.world)
        future.set_result(tensor)  # records the stream: DDP's use of the result waits for it
    return future
