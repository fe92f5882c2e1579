"""cudalab.distributed on a host of two GPUs or more: one process per GPU (torch.multiprocessing),
NCCL for the setup, and every rank's sum compared with the fp32 sum of every rank's tensor in rank
order, bit for bit (the kernel's order); pieces larger than the buffer and odd sizes included.
Skipped elsewhere with the reason."""

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# (elements, offset): 300001 f32 elements are three calls on half of a 1 MiB buffer each, and a
# tail; an offset starts x off its 16-byte alignment (the kernel's element-wise path).
SIZES = [(1, 0), (17, 0), (1000, 0), (1000, 1), (300001, 0), (300001, 3)]
# On three GPUs or more a call of 2 MiB or more runs the two-shot form (on half of a 16 MiB buffer:
# 3000001 f32 elements are a call of 8 MiB, two turns of each warp's loop, and one of 3.4 MiB),
# alternating with one-shot calls on the same buffers; on two GPUs, the one-shot every time.
LARGE_SIZES = [
    (torch.float32, (1 << 19) + 5, 0),
    (torch.float32, 1000, 0),
    (torch.float32, 3000001, 0),
    (torch.bfloat16, 17, 0),
    (torch.bfloat16, (1 << 20) + 3, 1),
]


def _expect_rank_order_sum(reduce, dtype, n, offset, rank, world):
    generator = torch.Generator(device="cuda").manual_seed(1000 * n + rank)
    x = torch.randn(n + offset, device="cuda", generator=generator).to(dtype)[offset:]
    every = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(every, x)
    want = torch.zeros(n, device="cuda")
    for part in every:
        want += part.float()
    assert reduce(x) is x
    mismatches = int((x != want.to(dtype)).sum())
    assert mismatches == 0, f"rank {rank}, {dtype}, {n} elements at {offset}: {mismatches} differ"


def _worker(rank, world, store):
    import cudalab

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        reduce = cudalab.distributed.AllReduce(buffer_bytes=1 << 20, kernel_bytes=1 << 40)
        for dtype in (torch.float32, torch.bfloat16):
            for n, offset in SIZES:
                _expect_rank_order_sum(reduce, dtype, n, offset, rank, world)
        large = cudalab.distributed.AllReduce(buffer_bytes=16 << 20, kernel_bytes=1 << 40)
        for dtype, n, offset in LARGE_SIZES:
            _expect_rank_order_sum(large, dtype, n, offset, rank, world)
        large.close()
        # cudalab.all_reduce: the same sum through the group's cached AllReduce.
        x = torch.randn(1000, device="cuda", generator=torch.Generator(device="cuda").manual_seed(rank))
        every = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(every, x)
        want = torch.zeros_like(x)
        for part in every:
            want += part
        assert torch.equal(cudalab.all_reduce(x), want)
        cudalab.distributed.close_all()
        # float16 goes to NCCL (the kernel takes float32 and bfloat16).
        half = x.half()
        nccl_half = half.clone()
        dist.all_reduce(nccl_half)
        assert torch.equal(reduce(half), nccl_half)
        # Above kernel_bytes, NCCL's sum: the same on every rank.
        routed = cudalab.distributed.AllReduce(buffer_bytes=1 << 20, kernel_bytes=4096)
        x = torch.randn(4097, device="cuda", generator=torch.Generator(device="cuda").manual_seed(rank))
        nccl = x.clone()
        dist.all_reduce(nccl)
        assert torch.equal(routed(x), nccl)
        with pytest.raises(RuntimeError, match="x must be contiguous"):  # every op's check_tensor
            reduce(torch.ones(4, 2, device="cuda").t())
        # As DDP's comm hook: the averaged gradients, the same on every rank, match NCCL's average.
        torch.manual_seed(0)
        model = torch.nn.Linear(64, 33).cuda()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        ddp.register_comm_hook(reduce, cudalab.distributed.ddp_comm_hook)
        x = torch.randn(8, 64, device="cuda", generator=torch.Generator(device="cuda").manual_seed(rank))
        ddp(x).square().sum().backward()
        reference = torch.nn.Linear(64, 33).cuda()
        reference.load_state_dict(model.state_dict())
        reference(x).square().sum().backward()
        for ours, local in zip(model.parameters(), reference.parameters()):
            average = local.grad.clone()
            dist.all_reduce(average)
            torch.testing.assert_close(ours.grad, average / world, rtol=1e-6, atol=1e-7)
            first = ours.grad.clone()
            dist.broadcast(first, 0)
            assert torch.equal(ours.grad, first), f"rank {rank}: gradients differ from rank 0's"
        # close() frees the buffers on every rank together; a closed AllReduce refuses calls.
        reduce.close()
        routed.close()
        with pytest.raises(ValueError, match="no all-reduce state"):
            reduce(torch.ones(4, device="cuda"))
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs (torch.cuda.device_count() < 2)")
def test_all_reduce_is_the_sum_in_rank_order_on_every_rank(tmp_path):
    world = min(torch.cuda.device_count(), 8)
    mp.spawn(_worker, args=(world, str(tmp_path / "store")), nprocs=world, join=True)


def test_all_reduce_needs_a_process_group():
    import cudalab

    with pytest.raises((ValueError, RuntimeError)):
        cudalab.distributed.AllReduce()
