// The skeleton the Hopper (sm_90a) kernels are built on, over core/hopper.cuh's PTX layer: shared
// storage laid out by structs, a TMA pipeline object (CUTLASS's PipelineTmaAsync in our own
// terms) and the producer's loop. The GEMM rungs' tile schedules: ops/gemm/schedules.cuh.
//
// A pipeline is a ring of kStages shared-memory slots of kSlotBytes between one producer thread
// (issuing TMA loads) and consumer warpgroups. Each slot has a full barrier (one arrival: the
// producer's expect_tx, completed by TMA's bytes) and an empty barrier (one arrival per consumer
// that must be done with the slot). Producer and consumers each walk the ring with a RingPosition
// of their own; the pipeline object holds only addresses, so every thread may copy it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hopper.cuh"

namespace cudalab::hopper {

#if CUDALAB_SM90A

// The barriers of a ring, in shared storage: full then empty, 8 bytes each.
template <int kStages>
struct PipelineBarriers {
  std::uint64_t full[kStages];
  std::uint64_t empty[kStages];
};

// A kernel lays out its shared memory as a Storage struct (alignas(1024) on each tile) placed at
// aligned_shared_base, and asks for shared_storage_bytes<Storage>() of dynamic shared memory. Its
// members are reached as 32-bit addresses, base + offsetof(Storage, member): computed from the one
// aligned base, they fold into immediate offsets and keep their known 1024-byte alignment (through
// a generic pointer the compiler lost both, and the small-tile GEMM rung ran 2-3% slower).
template <typename Storage>
constexpr int shared_storage_bytes() {
  return static_cast<int>(sizeof(Storage) + kAtomBytes);
}

template <int kStages, int kSlotBytes>
struct TmaPipeline {
  std::uint32_t slots;  // slot 0; slot s at slots + s * kSlotBytes
  std::uint32_t full, empty;

  // `first_slot` and `barriers` (a PipelineBarriers<kStages>): shared addresses.
  __device__ __forceinline__ TmaPipeline(std::uint32_t first_slot, std::uint32_t barriers)
      : slots(first_slot), full(barriers), empty(barriers + 8 * kStages) {}

  // Thread 0 initializes the barriers; the caller syncs the block (or cluster) before any use.
  __device__ __forceinline__ void init(std::uint32_t consumer_arrivals) const {
    init_ring_barriers(full, empty, kStages, consumer_arrivals);
  }

  __device__ __forceinline__ std::uint32_t slot(int stage) const { return slots + stage * kSlotBytes; }
  __device__ __forceinline__ std::uint32_t full_barrier(int stage) const { return full + 8 * stage; }
  __device__ __forceinline__ std::uint32_t empty_barrier(int stage) const { return empty + 8 * stage; }

  // Producer: waits until the consumers have released the slot at `at`, then arms its full barrier
  // for `bytes` of TMA loads; returns that barrier, which the loads complete.
  __device__ __forceinline__ std::uint32_t producer_acquire(const RingPosition<kStages>& at,
                                                            std::uint32_t bytes = kSlotBytes) const {
    mbarrier_wait(empty_barrier(at.stage), at.phase ^ 1);
    mbarrier_arrive_expect_tx(full_barrier(at.stage), bytes);
    return full_barrier(at.stage);
  }

  // Consumer: waits until the slot at `at` holds its bytes.
  __device__ __forceinline__ void consumer_wait(const RingPosition<kStages>& at) const {
    mbarrier_wait(full_barrier(at.stage), at.phase);
  }

  // Consumer: one arrival on the slot's empty barrier, in this CTA or in CTA `cta` of the cluster.
  __device__ __forceinline__ void consumer_release(int stage) const { mbarrier_arrive(empty_barrier(stage)); }
  __device__ __forceinline__ void consumer_release_in(int stage, std::uint32_t cta) const {
    mbarrier_arrive_cluster(empty_barrier(stage), cta);
  }
};

// The producer thread's loop over `count` slots: acquire each (kSlotBytes expected), let
// load(slot address, full barrier, i) issue its TMA loads, advance. `at` carries across calls.
template <int kStages, int kSlotBytes, typename Load>
__device__ __forceinline__ void produce(const TmaPipeline<kStages, kSlotBytes>& pipeline, RingPosition<kStages>& at,
                                        int count, Load&& load) {
  for (int i = 0; i < count; ++i) {
    const std::uint32_t barrier = pipeline.producer_acquire(at);
    load(pipeline.slot(at.stage), barrier, i);
    at.advance();
  }
}

#endif  // CUDALAB_SM90A

}  // namespace cudalab::hopper
