// Rung `cluster` (Hopper, sm_90): one row split over a thread-block cluster of up to 8 CTAs, for
// LayerNorm and RMSNorm. Each CTA holds a contiguous share of the row in registers (rung `vector_registers`'s
// slices, 16-byte loads) and sends one pair per row to every CTA of the cluster through
// distributed shared memory (st.async completing bytes on the receiver's mbarrier,
// core/cluster.cuh): RMSNorm's sum of squares of its share; LayerNorm's mean of its share (shifted
// by the row's first element) and the squared deviations from it, which every CTA merges with
// Chan's pairwise formula in rank order, so all get the same bits and no sum cancels. The clusters
// are persistent (as many as fit at once, each striding over rows), and on rows that start on
// 16-byte boundaries each CTA copies its share of the next row into shared memory with cp.async
// while it reduces and writes this one; such a CTA's share of gamma and beta is the same every row,
// so 16-bit ones stay in shared memory when they fit and fp32 ones are prefetched into L1
// (write_normalized's Parameters). Fixes, relative to vector_registers: a row wider than one
// block's registers (32768 features) is still read once, and a wide row is spread over up to 8
// SMs. Relative to this rung's first form (a cluster per row, a cluster barrier per sum, two sums
// per LayerNorm row: 1361-2537 GB/s at 65536-262144 features at 7eeb1e5): one exchange per row
// and no barrier.cluster per row, whose arrive.release waited for the previous row's stores to
// drain; the next row's loads overlap this row's sums. Sizes: 32 KiB of the row a CTA (8192 fp32
// or 16384 bf16/fp16 values: 512 threads x 16 or 32), at most 8 CTAs (then up to 1024 threads x
// 32); element loads (rows not on 16-byte boundaries) take 8192 values a CTA, at most 16 a
// thread, and are not prefetched. Costs: the cluster's CTAs must be co-scheduled on one GPC; the
// staging (32-128 KiB a CTA) and 1024-thread CTAs hold an SM alone.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cooperative_groups.h>

#include "core/cluster.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

namespace cg = cooperative_groups;

// What a CTA sends per row: RMSNorm's sum of squares of its share (m2 unused), or LayerNorm's mean
// of its share's shifted values d = x - pivot and their squared deviations from that mean, which
// Chan's formula merges without cancellation: one exchange per row for either norm.
struct alignas(8) Moments {
  float mean;
  float m2;
};

// The shared memory a CTA stages the next row's share in: one 16-byte slot per vector it holds.
template <int kThreads, int kItems, int kVec>
constexpr std::size_t staging_bytes() {
  return kVec > 1 ? static_cast<std::size_t>(kThreads) * (kItems / kVec) * sizeof(uint4) : 0;
}

template <typename T, int kThreads, int kItems, int kVec, bool kResidentParameters>
__global__ void __launch_bounds__(kThreads, 1024 / kThreads)
    norm_cluster_kernel(NormForwardArgs<T> a, int share_vectors) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  __trap();  // clusters need sm_90; the launcher refuses older GPUs
#else
  constexpr bool kPrefetch = kVec > 1;
  // This CTA's share of the next row (aligned rows), then, with kResidentParameters, its share of
  // gamma (and beta) in the same layout.
  extern __shared__ uint4 staged[];
  uint4* const parameters = staged + kThreads * (kItems / kVec);
  __shared__ float scratch[kThreads / kWarpSize + 1];
  // One Moments per CTA and row; group_sum's barriers stand between one row's reads and the next
  // row's send, as the inbox requires.
  __shared__ ClusterInbox<Moments, kMaxClusterSize> inbox;
  const cg::cluster_group cluster = cg::this_cluster();
  const int size = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int vectors = static_cast<int>(a.features / kVec);
  const int first = rank * share_vectors;
  const int end = std::min(vectors, first + share_vectors);
  const float inverse_count = 1.0f / static_cast<float>(a.features);
  const std::int64_t clusters = gridDim.x / size;
  // Chan's merge weights, the same for every row: CTA r's share of the row holds count(r)
  // elements, and merging it into the first r shares (n elements) moves the mean by
  // delta * count(r) / (n + count(r)) and adds delta^2 * n * count(r) / (n + count(r)) to m2.
  // Computed once, into shared memory (registers for them spilled): with the divisions in the row
  // loop every thread's merge took issue slots the row's loads needed (LayerNorm at 65536 fp32
  // features: 2466 GB/s at 4404605, 2789 with two exchanges a row at 317be25). Written before the
  // cluster barrier below, which orders them for the block.
  __shared__ float2 weights[kMaxClusterSize];
  __shared__ float own_inverse_count;
  if (threadIdx.x == 0) {
    float n = 0.0f;
    for (int r = 0; r < size; ++r) {
      const float count =
          static_cast<float>(std::max(0, std::min(vectors, (r + 1) * share_vectors) - r * share_vectors) * kVec);
      const float total = n + count;
      weights[r] = count > 0.0f ? make_float2(count / total, n * count / total) : make_float2(0.0f, 0.0f);
      if (r == rank) own_inverse_count = count > 0.0f ? 1.0f / count : 0.0f;
      n = total;
    }
    inbox.init();
  }
  cluster.sync();  // every CTA's barriers exist before anyone sends to them
  // Every CTA's Moments, indexed by rank (null for a one-CTA cluster, which has no peer to send to:
  // st.async needs one, and its own Moments are all there is).
  int exchanges = 0;
  const auto gather = [&](Moments mine) -> const Moments* {
    return size == 1 ? nullptr : inbox.exchange(cluster, exchanges++, mine);
  };
  using Slice = RowSlice<kItems, kVec, kThreads>;
  std::int64_t row = blockIdx.x / size;
  // LayerNorm's shift, the row's first element: loaded a row ahead, like the staged share.
  // Lane 0 of each warp loads it and hands it to the other lanes where it is used: loaded by every
  // lane and converted at once, it was taken for a uniform value and moved into a uniform register
  // right after the load, every warp waiting out the DRAM round trip there (22% of the stall
  // samples, LayerNorm bf16 at 262144 features).
  const bool loads_pivot = a.norm == Norm::layer && threadIdx.x % kWarpSize == 0;
  T next_pivot{};
  if (row < a.rows) {
    if (loads_pivot) next_pivot = a.x[row * a.features];
    if constexpr (kPrefetch) {
      const Slice share(first + static_cast<int>(threadIdx.x), end);
      // Every row's share uses the same gamma and beta: copied once, waited for with the first row.
      if constexpr (kResidentParameters) {
        share.stage(a.gamma, parameters);
        if (a.norm == Norm::layer) share.stage(a.beta, parameters + kThreads * Slice::kVectors);
      }
      share.stage(a.x + row * a.features, staged);
    }
  }
  for (; row < a.rows; row += clusters) {
    Slice slice(first + static_cast<int>(threadIdx.x), end);
    const float pivot = to_float(__shfl_sync(kFullWarpMask, next_pivot, 0));
    const std::int64_t next = row + clusters;
    if constexpr (kPrefetch) {
      __pipeline_wait_prior(0);
      slice.template load_staged<T>(staged);
      // The staged values are in registers: the slots take the next row's copies.
      if (next < a.rows) slice.stage(a.x + next * a.features, staged);
    } else {
      slice.load(a.x + row * a.features);
    }
    if (loads_pivot && next < a.rows) next_pivot = a.x[next * a.features];
    RowStatistics statistics;
    if (a.norm == Norm::rms) {
      const Moments mine{group_sum<kThreads>(sum_of_squares(slice), scratch), 0.0f};
      const Moments* parts = gather(mine);
      float total = 0.0f;
      for (int r = 0; r < size; ++r) total += (parts != nullptr ? parts[r] : mine).mean;
      statistics = {0.0f, rsqrtf(total * inverse_count + a.eps)};
    } else {
      const float local_mean = group_sum<kThreads>(shift_and_sum(slice, pivot), scratch) * own_inverse_count;
      const Moments mine{local_mean, group_sum<kThreads>(squared_deviations(slice, local_mean), scratch)};
      const Moments* parts = gather(mine);
      // Chan et al.'s pairwise update, in rank order: every CTA gets the same bits. An empty share
      // has weights 0 and adds nothing.
      float mean = 0.0f, m2 = 0.0f;
#pragma unroll
      for (int r = 0; r < kMaxClusterSize; ++r) {
        if (r >= size) break;
        const Moments part = parts != nullptr ? parts[r] : mine;
        const float delta = part.mean - mean;
        mean = fmaf(delta, weights[r].x, mean);
        m2 += fmaf(delta * delta, weights[r].y, part.m2);
      }
      statistics = {mean, rsqrtf(m2 * inverse_count + a.eps)};
    }
    write_normalized<kResidentParameters ? Parameters::resident : Parameters::global_prefetched>(
        a.norm, slice, statistics, a.gamma, a.beta, a.y + row * a.features, parameters);
    if (rank == 0 && threadIdx.x == 0) {
      if (a.norm == Norm::layer && a.mean != nullptr) a.mean[row] = pivot + statistics.mean_d;
      if (a.rstd != nullptr) a.rstd[row] = statistics.rstd;
    }
  }
  cluster.sync();  // no CTA leaves while a peer's last send may still target it
#endif
}

// Whether `ctas` CTAs of `dynamic_bytes` each fit in one SM's shared memory, with the runtime's
// reservation per CTA and 1 KiB for the kernel's static arrays (under 600 bytes).
bool fits_per_sm(std::size_t dynamic_bytes, int ctas) {
  int device = 0, per_sm = 0, reserved = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  CUDALAB_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  return static_cast<std::size_t>(ctas) * (dynamic_bytes + static_cast<std::size_t>(reserved) + 1024) <=
         static_cast<std::size_t>(per_sm);
}

template <typename T, int kThreads, int kItems, int kVec, bool kResidentParameters>
void launch_kernel(const NormForwardArgs<T>& a, int size, int share_vectors, std::size_t shared_bytes,
                   cudaStream_t stream) {
  // Persistent: as many clusters as fit at once, each striding over the rows.
  launch_persistent_clusters(norm_cluster_kernel<T, kThreads, kItems, kVec, kResidentParameters>, size, kThreads,
                             shared_bytes, a.rows, stream, "norms cluster", a, share_vectors);
}

template <typename T, int kThreads, int kItems, int kVec>
void launch(const NormForwardArgs<T>& a, int size, int share_vectors, cudaStream_t stream) {
  // 16-bit gamma and beta stay in shared memory when they fit beside the staging without costing
  // the SM a CTA: they are then read from L2 once, not on every row (the L2 round trip was the
  // largest stall of the row's output loop, ncu at 65536 bf16 features: 53% of stall cycles waiting
  // on L1TEX; LayerNorm there went from 2468 to 2706 GB/s). fp32 ones stay in global memory: at
  // 65536 features, where they fit, resident ones measured 2749 against 2805 GB/s.
  constexpr std::size_t kStaging = staging_bytes<kThreads, kItems, kVec>();
  const std::size_t with_parameters = kStaging * (a.norm == Norm::layer ? 3 : 2);
  if constexpr (kVec > 1 && sizeof(T) == 2) {
    if (fits_per_sm(with_parameters, 1024 / kThreads))
      return launch_kernel<T, kThreads, kItems, kVec, true>(a, size, share_vectors, with_parameters, stream);
  }
  launch_kernel<T, kThreads, kItems, kVec, false>(a, size, share_vectors, kStaging, stream);
}

// The cluster size and the smallest CTA whose registers hold its share of the row.
template <typename T, int kVec>
void launch_for_width(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::int64_t vectors = a.features / kVec;
  // 32 KiB of the row a CTA on aligned rows (8192 fp32 or 16384 bf16/fp16 values: what the
  // softmax cluster rung found an SM needs in flight), 8192 values with element loads.
  constexpr std::int64_t kShareTarget = kVec > 1 ? 32768 / sizeof(T) : 8192;
  const int size =
      static_cast<int>(std::min<std::int64_t>(kMaxClusterSize, ceil_div<std::int64_t>(a.features, kShareTarget)));
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

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cluster, NormForwardArgs)

}  // namespace cudalab::norms_variants
