// Shared-memory atomics a kernel issues and forgets.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace cudalab {

// *address += value in shared memory, atomically, with no result: PTX red.shared rather than
// atom.shared, so no register waits for the old value and back-to-back adds never stall on each
// other. `address` must point into shared memory.
__device__ __forceinline__ void shared_add_no_return(std::uint32_t* address, std::uint32_t value) {
  const auto shared_address = static_cast<std::uint32_t>(__cvta_generic_to_shared(address));
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(shared_address), "r"(value) : "memory");
}

}  // namespace cudalab
