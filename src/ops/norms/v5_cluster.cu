// Rung 5 (Hopper, sm_90): one row split over a thread-block cluster of up to 8 CTAs, for
// LayerNorm and RMSNorm. Each CTA holds a contiguous share of the row in registers (rung 4's
// slices, 16-byte loads), sums its share with a block sum, and sends the result to every CTA of
// the cluster through distributed shared memory (st.async completing bytes on the receiver's
// mbarrier, core/cluster.cuh); every CTA adds the partials in rank order, so all get the same bits.
// LayerNorm takes two such exchanges per row (shifted mean, then squared deviations), RMSNorm one.
// The clusters are persistent (as many as fit at once, each striding over rows), and on rows that
// start on 16-byte boundaries each CTA copies its share of the next row into shared memory with
// cp.async while it reduces and writes this one. Fixes, relative to vector_registers: a row wider
// than one block's registers (32768 features) is still read once, and a wide row is spread over
// up to 8 SMs, with CTAs small enough to share an SM. Relative to this rung's first form (a
// cluster per row, a cluster barrier per sum: 1361-2537 GB/s at 65536-262144 features at
// 7eeb1e5), no barrier.cluster per sum, whose arrive.release waits for the previous row's stores
// to drain, and the next row's loads overlap this row's sums. Cluster sizes: ceil(features /
// 8192) CTAs, at most 8, each holding up to 8192 values (512 threads x 16), 16384 (512 x 32) or
// 32768 (1024 x 32); element loads (rows not on 16-byte boundaries) stop at 16 values a thread and
// are not prefetched. Costs: the cluster's CTAs must be co-scheduled on one GPC; the staging
// (16-128 KiB a CTA) and 1024-thread CTAs at 32 values a thread hold an SM alone.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cooperative_groups.h>

#include "core/cluster.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

namespace cg = cooperative_groups;

// The shared memory a CTA stages the next row's share in: one 16-byte slot per vector it holds.
template <int kThreads, int kItems, int kVec>
constexpr std::size_t staging_bytes() {
  return kVec > 1 ? static_cast<std::size_t>(kThreads) * (kItems / kVec) * sizeof(uint4) : 0;
}

template <typename T, int kThreads, int kItems, int kVec>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    norm_cluster_kernel(NormForwardArgs<T> a, int share_vectors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the launcher refuses older GPUs
#else
  constexpr bool kPrefetch = kVec > 1;
  extern __shared__ uint4 staged[];  // this CTA's share of the next row (aligned rows)
  __shared__ float scratch[kThreads / kWarpSize + 1];
  // One sum per CTA and exchange; group_sum's barriers stand between one exchange's reads and the
  // next one's send, as the inbox requires.
  __shared__ ClusterInbox<float, kMaxClusterSize> inbox;
  const cg::cluster_group cluster = cg::this_cluster();
  const int size = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int vectors = static_cast<int>(a.features / kVec);
  const int first = rank * share_vectors;
  const int end = std::min(vectors, first + share_vectors);
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  const std::int64_t clusters = gridDim.x / size;
  if (threadIdx.x == 0) inbox.init();
  cluster.sync();  // every CTA's barriers exist before anyone sends to them
  int exchanges = 0;
  const auto reduce = [&](float v) {
    const float* partials = inbox.exchange(cluster, exchanges++, group_sum<kThreads>(v, scratch));
    float total = 0.0f;
    for (int r = 0; r < size; ++r) total += partials[r];
    return total;
  };
  using Slice = RowSlice<kItems, kVec, kThreads>;
  std::int64_t row = blockIdx.x / size;
  // LayerNorm's shift, the row's first element: loaded a row ahead, like the staged share.
  float next_pivot = 0.0f;
  if (row < a.rows) {
    if (a.norm == Norm::layer) next_pivot = to_float(a.x[row * a.features]);
    if constexpr (kPrefetch) Slice(first + static_cast<int>(threadIdx.x), end).stage(a.x + row * a.features, staged);
  }
  for (; row < a.rows; row += clusters) {
    Slice slice(first + static_cast<int>(threadIdx.x), end);
    const float pivot = next_pivot;
    const std::int64_t next = row + clusters;
    if constexpr (kPrefetch) {
      __pipeline_wait_prior(0);
      slice.template load_staged<T>(staged);
      // The staged values are in registers: the slots take the next row's copies.
      if (next < a.rows) slice.stage(a.x + next * a.features, staged);
    } else {
      slice.load(a.x + row * a.features);
    }
    if (a.norm == Norm::layer && next < a.rows) next_pivot = to_float(a.x[next * a.features]);
    const RowStatistics statistics = row_statistics(a.norm, slice, pivot, inverse_count, a.eps, reduce);
    write_normalized(a.norm, slice, statistics, a.gamma, a.beta, a.y + row * a.features);
    if (rank == 0 && threadIdx.x == 0) {
      if (a.norm == Norm::layer && a.mean != nullptr) a.mean[row] = pivot + statistics.mean_d;
      if (a.rstd != nullptr) a.rstd[row] = statistics.rstd;
    }
  }
  cluster.sync();  // no CTA leaves while a peer's last send may still target it
#endif
}

template <typename T, int kThreads, int kItems, int kVec>
void launch(const NormForwardArgs<T>& a, int size, int share_vectors, cudaStream_t stream) {
  auto* kernel = norm_cluster_kernel<T, kThreads, kItems, kVec>;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(size);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(size));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = staging_bytes<kThreads, kItems, kVec>();
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  // Persistent: as many clusters as fit at once, each striding over the rows.
  const int resident = resident_clusters(reinterpret_cast<const void*>(kernel), config, size, "norms cluster");
  config.gridDim = dim3(static_cast<unsigned>(std::min<std::int64_t>(a.rows, resident) * size));
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
