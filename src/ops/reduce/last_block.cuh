// What the one-launch reductions share: the unaligned head before the first 16-byte vector, and
// the ticket by which the last block of a set to finish knows that every other one has published
// its partial sum.
#pragma once

#include <cstdint>

#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {

// Elements before the first 16-byte boundary (0 when `in` is aligned; in is T-aligned).
template <typename T>
int head_elements(const T* in, std::int64_t n) {
  const auto misalignment = reinterpret_cast<std::uintptr_t>(in) % 16;
  const std::int64_t head = misalignment == 0 ? 0 : static_cast<std::int64_t>((16 - misalignment) / sizeof(T));
  return static_cast<int>(head < n ? head : n);
}

// Thread 0 stores `value` into *slot and takes a ticket from *counter; returns true, in every
// thread of the block, when this block is the last of `blocks` to do so. The last block resets
// the counter to zero for the next launch, and may then read every slot (with __ldcg: this SM's
// L1 may hold stale lines). Contains a __syncthreads(): call it from every thread.
template <typename Acc>
__device__ __forceinline__ bool publish_and_check_last(Acc value, Acc* slot, unsigned* counter, unsigned blocks) {
  __shared__ bool last;
  if (threadIdx.x == 0) {
    *slot = value;
    __threadfence();  // the partial is visible device-wide before this block takes its ticket
    last = atomicAdd(counter, 1u) == blocks - 1;
    if (last) {
      *counter = 0;
      __threadfence();  // and the other blocks' partials are read only after the ticket
    }
  }
  __syncthreads();
  return last;
}

}  // namespace cudalab::reduce_variants
