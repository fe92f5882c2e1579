"""All-reduce (sum) across the GPUs of one host with one process per GPU, torch.distributed's usual
layout, by cudalab's one-shot kernel (cudalab::all_reduce_ipc): each GPU copies its tensor into a
staging buffer that every other process has mapped through CUDA IPC, and after a barrier between
the GPUs each sums every GPU's buffer into its own tensor, in GPU order, so every GPU holds the same
bits. On two H200s over NVLink the kernel beats NCCL at every size in one process
(docs/transfers.md); with more GPUs it leads below a few MiB.

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl")
    reduce = cudalab.distributed.AllReduce()      # collective: every rank builds it together
    reduce(x)                                     # x summed over the ranks, in place
    ddp.register_comm_hook(reduce, cudalab.distributed.ddp_comm_hook)   # DDP's gradients by it

Every process must see every GPU of the host (no CUDA_VISIBLE_DEVICES per process), each GPU
must reach the others by peer access, and every rank must make the same calls in the same order
(a rank that does not call leaves the others waiting, as with NCCL)."""

import torch
import torch.distributed as dist
from torch.multiprocessing.reductions import reduce_tensor

SIGNAL_WORDS = 16  # cudalab::kAllReduceSignalWords: a word per GPU for each of the two barriers
MAX_GPUS = 8


class AllReduce:
    """The staging buffer (``buffer_bytes``) and signal array of this process's GPU, shared with the
    other ranks of ``group`` when constructed (a collective call). Tensors larger than the buffer
    are summed in buffer-sized pieces."""

    def __init__(self, group=None, buffer_bytes=32 << 20):
        self.group = group
        self.rank = dist.get_rank(group)
        self.world = dist.get_world_size(group)
        if not 1 <= self.world <= MAX_GPUS:
            raise ValueError(f"cudalab.distributed.AllReduce: 1 to {MAX_GPUS} ranks, got {self.world}")
        if buffer_bytes < 16 or buffer_bytes % 16:
            raise ValueError(f"cudalab.distributed.AllReduce: buffer_bytes must be a positive multiple of 16, got {buffer_bytes}")
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.buffer = torch.empty(buffer_bytes, dtype=torch.uint8, device=self.device)
        self.signals = torch.zeros(SIGNAL_WORDS, dtype=torch.int32, device=self.device)
        shared = [None] * self.world
        dist.all_gather_object(shared, (reduce_tensor(self.buffer), reduce_tensor(self.signals)), group=group)
        self.buffers, self.signal_arrays = [], []
        for rank, (buffer, signals) in enumerate(shared):
            if rank == self.rank:
                buffer, signals = self.buffer, self.signals
            else:
                buffer, signals = buffer[0](*buffer[1]), signals[0](*signals[1])
            if buffer.device == self.device and rank != self.rank:
                raise RuntimeError(
                    f"cudalab.distributed.AllReduce: ranks {self.rank} and {rank} share {self.device}: one GPU per rank"
                )
            self.buffers.append(buffer)
            self.signal_arrays.append(signals)
        self.epoch = 0
        torch.cuda.synchronize(self.device)  # the zeroed signals land before any rank can signal
        dist.barrier(group=group)

    def __call__(self, x):
        """x (float32 or bfloat16, contiguous, on this rank's GPU) summed over the ranks in place;
        returns x."""
        if not x.is_contiguous():
            raise ValueError("cudalab.distributed.AllReduce: x must be contiguous")
        flat = x.view(-1)
        step = self.buffer.numel() // x.element_size() // 8 * 8  # pieces start 16-byte aligned
        for start in range(0, flat.numel(), step):
            self.epoch += 1
            torch.ops.cudalab._all_reduce_ipc_(
                flat[start : start + step], self.buffers, self.signal_arrays, self.rank, self.epoch
            )
        return x


def ddp_comm_hook(state, bucket):
    """A DistributedDataParallel comm hook whose state is an AllReduce: each gradient bucket summed
    by it and divided by the number of ranks (the average DDP's own hook gives), the same bits on
    every rank: ``ddp.register_comm_hook(AllReduce(), ddp_comm_hook)``."""
    tensor = bucket.buffer()
    state(tensor).div_(state.world)
    future = torch.futures.Future(devices=[tensor.device])
    future.set_result(tensor)
    return future
