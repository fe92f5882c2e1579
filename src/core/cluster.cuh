// What the thread-block-cluster rungs share (softmax, the norms and the GEMM's cluster rung,
// Hopper): a persistent grid of as many clusters as fit at once, and an all-to-all exchange of one small value per CTA
// through distributed shared memory that needs no cluster barrier per exchange.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cuda/ptx>

#include "core/launch_attributes.hpp"
#include "cudalab/error.hpp"

namespace cudalab {

// How many clusters of `kernel` launched with `config` (its cluster dimension and dynamic shared
// memory set) fit on the current device at once, asked of the runtime once per device, kernel,
// cluster size and dynamic shared memory size: the occupancy query costs host time a timed launch
// would otherwise include. The kernel's dynamic shared memory limit is set to config's on every
// call, since one kernel may be launched with several sizes.
inline int resident_clusters(const void* kernel, const cudaLaunchConfig_t& config, int ctas, const char* caller) {
  struct Entry {
    int device;
    const void* kernel;
    int ctas;
    std::size_t bytes;
    int clusters;
  };
  static std::mutex mutex;
  static std::vector<Entry> known;
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  set_dynamic_shared_memory(kernel, config.dynamicSmemBytes);
  const std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : known)
    if (e.device == device && e.kernel == kernel && e.ctas == ctas && e.bytes == config.dynamicSmemBytes)
      return e.clusters;
  int clusters = 0;
  CUDALAB_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  CUDALAB_REQUIRE(clusters > 0, std::string(caller) + ": no cluster of " + std::to_string(ctas) + " CTAs of " +
                                    std::to_string(config.blockDim.x) + " threads fits on this GPU");
  known.push_back({device, kernel, ctas, config.dynamicSmemBytes, clusters});
  return clusters;
}

// Launches `kernel(args...)` as a persistent grid of clusters of `ctas` CTAs along x, `threads`
// each with `dynamic_bytes` of dynamic shared memory: as many clusters as fit at once
// (resident_clusters), or `work` of them when there is less work than that; each cluster strides
// over the work items. `caller` names the launch in errors.
template <typename... Params, typename... Args>
void launch_persistent_clusters(void (*kernel)(Params...), int ctas, int threads, std::size_t dynamic_bytes,
                                std::int64_t work, cudaStream_t stream, const char* caller, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(ctas);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(ctas));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = dynamic_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const int resident = resident_clusters(reinterpret_cast<const void*>(kernel), config, ctas, caller);
  config.gridDim = dim3(static_cast<unsigned>(std::min<std::int64_t>(work, resident) * ctas));
  CUDALAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// Every CTA of a cluster sends one Value (4 or 8 bytes) per exchange to every CTA, itself
// included, and reads all of them back in rank order, so every CTA combines the same bits. The
// sends are st.async stores, which complete their bytes on the receiver's mbarrier: no cluster
// barrier per exchange, whose arrive.release compiles to a GPU-wide fence that waits for this
// thread's outstanding global stores and copies (the row written just before).
//
// Exchanges alternate between two slots. A CTA sends exchange e + 2 only after it has received
// every peer's exchange e + 1, which each peer sends only after a block barrier that follows all
// its threads' reads of exchange e: a slot is never overwritten while it is read, as long as a
// block barrier separates each exchange's reads from the next exchange's send. Clusters of two
// CTAs or more: memcheck reports st.async in a one-CTA cluster as an invalid shared write.
template <typename Value, int kMaxRanks>
struct ClusterInbox {
  static_assert(sizeof(Value) == 4 || sizeof(Value) == 8, "st.async sends 4 or 8 bytes here");
  Value values[2][kMaxRanks];
  std::uint64_t delivered[2];

  // By thread 0 of every CTA, before a cluster barrier: no CTA sends before every barrier exists.
  __device__ __forceinline__ void init() {
    cuda::ptx::mbarrier_init(&delivered[0], 1);
    cuda::ptx::mbarrier_init(&delivered[1], 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }

  // Exchange number `number` (0, 1, 2, ... in every CTA alike), called by every thread of the CTA
  // after a block barrier that follows the previous exchange's reads: threads [0, ranks) send
  // `value` (this CTA's) to CTA threadIdx.x, thread 0 arms this CTA's barrier, and every thread
  // waits until all `ranks` values are in. Returns the slot holding them, indexed by rank.
  __device__ __forceinline__ const Value* exchange(const cooperative_groups::cluster_group& cluster, int number,
                                                   Value value) {
    const int slot = number & 1;
    const int ranks = static_cast<int>(cluster.num_blocks());
    const unsigned rank = cluster.block_rank();
    if (static_cast<int>(threadIdx.x) < ranks) {
      Value* remote = cluster.map_shared_rank(&values[slot][rank], threadIdx.x);
      std::uint64_t* remote_barrier = cluster.map_shared_rank(&delivered[slot], threadIdx.x);
      if constexpr (sizeof(Value) == 4) {
        std::uint32_t bits;
        std::memcpy(&bits, &value, 4);
        cuda::ptx::st_async(reinterpret_cast<std::uint32_t*>(remote), bits, remote_barrier);
      } else {
        std::uint32_t bits[2];
        std::memcpy(bits, &value, 8);
        cuda::ptx::st_async(reinterpret_cast<std::uint32_t*>(remote), bits, remote_barrier);
      }
    }
    if (threadIdx.x == 0)
      cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                           &delivered[slot], static_cast<std::uint32_t>(ranks * sizeof(Value)));
    const std::uint32_t phase = (number >> 1) & 1;
    while (!cuda::ptx::mbarrier_try_wait_parity(cuda::ptx::sem_acquire, cuda::ptx::scope_cluster, &delivered[slot],
                                                phase)) {
    }
    return values[slot];
  }
};
#endif

}  // namespace cudalab
