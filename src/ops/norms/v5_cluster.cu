// Rung 5 (Hopper, sm_90): one row split over a thread-block cluster of up to 8 CTAs, for
// LayerNorm and RMSNorm. Each CTA holds a contiguous share of the row in registers (rung 4's
// slices, 16-byte loads), sums its share with a block sum, and publishes the result in its own
// shared memory; after a cluster barrier every warp reads the CTAs' partials through distributed
// shared memory (cluster.map_shared_rank, one lane per CTA) and adds them with the same
// butterfly, so every thread of every CTA gets the same bits. LayerNorm takes two such rounds
// (shifted mean, then squared deviations), RMSNorm one. Fixes, relative to vector_registers: a
// row wider than one block's registers (32768 features) is still read once, and a wide row is
// spread over up to 8 SMs instead of one, so a few hundred rows of 65536-262144 features fill the
// GPU with blocks small enough to share an SM. Cluster sizes: ceil(features / 8192) CTAs, at most
// 8, each holding up to 8192 values (512 threads x 16), 16384 (512 x 32) or 32768 (1024 x 32);
// element loads (rows not on 16-byte boundaries) stop at 16 values a thread. Costs: a cluster
// barrier per sum (every CTA of the row waits for the slowest, ~1 us) and one more before a CTA
// exits (a peer may still be reading its partials); the cluster's CTAs must be co-scheduled on
// one GPC; 1024-thread CTAs at 32 values a thread hold an SM alone.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cooperative_groups.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

namespace cg = cooperative_groups;

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
// A cluster barrier whose arrive releases this thread's shared-memory writes to the cluster and
// whose wait acquires the peers': the partials exchange. (cg::cluster_group::sync() is this
// barrier too.)
__device__ __forceinline__ void cluster_sync_release_acquire() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// A cluster barrier that orders no memory: the exit barrier, which only keeps a CTA's shared
// memory alive until every peer is past its last read of it (each read's value was used before
// the peer arrived). Relaxed, the arrive does not wait for this CTA's y stores to drain first.
__device__ __forceinline__ void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
#endif

template <typename T, int kThreads, int kItems, int kVec>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    norm_cluster_kernel(NormForwardArgs<T> a, int share_vectors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the launcher refuses older GPUs
#else
  __shared__ float scratch[kThreads / kWarpSize + 1];
  // This CTA's partial of the current sum, one slot per round: a CTA writes round r + 1's slot
  // while its peers may still read round r's, and a slot is reused only after the next round's
  // barrier, by which time every peer has read it.
  __shared__ float partials[2];
  const cg::cluster_group cluster = cg::this_cluster();
  const int size = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int vectors = static_cast<int>(a.features / kVec);
  const int first = rank * share_vectors;
  const int end = std::min(vectors, first + share_vectors);
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  const std::int64_t clusters = gridDim.x / size;
  int round = 0;
  const auto reduce = [&](float v) {
    v = block_sum<kThreads>(v, scratch);
    if (threadIdx.x == 0) partials[round] = v;
    cluster_sync_release_acquire();
    const float peer = lane < size ? *cluster.map_shared_rank(&partials[round], lane) : 0.0f;
    round ^= 1;
    return warp_sum(peer);
  };
  for (std::int64_t row = blockIdx.x / size; row < a.rows; row += clusters) {
    const T* x = a.x + row * a.features;
    RowSlice<kItems, kVec, kThreads> slice(first + static_cast<int>(threadIdx.x), end);
    slice.load(x);
    const float pivot = a.norm == Norm::layer ? to_float(x[0]) : 0.0f;
    const RowStatistics statistics = row_statistics(a.norm, slice, pivot, inverse_count, a.eps, reduce);
    write_normalized(a.norm, slice, statistics, a.gamma, a.beta, a.y + row * a.features);
    if (rank == 0 && threadIdx.x == 0) {
      if (a.norm == Norm::layer && a.mean != nullptr) a.mean[row] = pivot + statistics.mean_d;
      if (a.rstd != nullptr) a.rstd[row] = statistics.rstd;
    }
  }
  cluster_sync_relaxed();  // no CTA exits while a peer may still read its partials
#endif
}

template <typename T, int kThreads, int kItems, int kVec>
void launch(const NormForwardArgs<T>& a, int size, int share_vectors, cudaStream_t stream) {
  auto* kernel = norm_cluster_kernel<T, kThreads, kItems, kVec>;
  // One cluster per row, up to a grid of 2^30 CTAs; the kernel loops when there are more rows.
  const std::int64_t clusters = std::min<std::int64_t>(a.rows, (std::int64_t{1} << 30) / size);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(size);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * size));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CUDALAB_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, a, share_vectors));
}

// The cluster size and the smallest CTA whose registers hold its share of the row.
template <typename T, int kVec>
void launch_for_width(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::int64_t vectors = a.features / kVec;
  const int size = static_cast<int>(std::min<std::int64_t>(kMaxClusterSize, ceil_div<std::int64_t>(a.features, 8192)));
  const int share = static_cast<int>(ceil_div<std::int64_t>(vectors, size));
  const std::int64_t share_elements = std::int64_t{share} * kVec;
  if (share_elements <= 8192) return launch<T, 512, 16, kVec>(a, size, share, stream);
  if constexpr (kVec == 1) {
    return launch<T, 1024, 16, kVec>(a, size, share, stream);
  } else {
    if (share_elements <= 16384) return launch<T, 512, 32, kVec>(a, size, share, stream);
    return launch<T, 1024, 32, kVec>(a, size, share, stream);
  }
}

}  // namespace

template <typename T>
void cluster(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const bool aligned = a.features % kVector16<T> == 0 && is_aligned16(a.x) && is_aligned16(a.y) &&
                       is_aligned16(a.gamma) && (a.norm == Norm::rms || is_aligned16(a.beta));
  const std::string why =
      forward_shape_limits(a.rows, a.features) + cluster_limits(a.features, aligned, current_gpu().compute_capability);
  CUDALAB_REQUIRE(why.empty(), "cluster: " + why);
  if (a.rows == 0) return;
  if (aligned) {
    launch_for_width<T, kVector16<T>>(a, stream);
  } else {
    launch_for_width<T, 1>(a, stream);
  }
}

template void cluster<float>(const NormForwardArgs<float>&, cudaStream_t);
template void cluster<__half>(const NormForwardArgs<__half>&, cudaStream_t);
template void cluster<__nv_bfloat16>(const NormForwardArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::norms_variants
