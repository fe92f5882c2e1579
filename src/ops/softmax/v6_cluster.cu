// Rung `cluster` (Hopper, compute capability 9.0+): a row split over a thread-block cluster of 2-8 CTAs of
// 1024 threads, for very wide rows (32k-262k features). Each CTA holds its slice of the row in
// registers (up to 32 values per thread: 262144 features over 8 CTAs), reduces its slice's max and
// sum of exp(x - max) across the block, and sends the pair to every CTA of the cluster through
// distributed shared memory (st.async to the address cluster.map_shared_rank gives, completing bytes
// on the receiver's mbarrier); each CTA waits for all pairs, merges them in rank order as online
// softmax does and writes y = e * exp(m_cta - m) / s. The clusters are persistent (as many as fit at
// once, each striding over rows), and each CTA copies its slice of the next row into shared memory
// with cp.async while it reduces and writes the current one, so the next row's loads overlap this
// row's reductions, exchange and stores. barrier.cluster runs only at the start (the mbarriers exist
// before anyone sends) and the end (no CTA leaves while a peer may send to it): its arrive.release
// compiles to MEMBAR.ALL.GPU, which would wait for this thread's outstanding stores and copies on
// every row.
// Fixes: rung `vectorized` stops at 32768 features and rung `online` reads long rows twice; here x is read once at
// any width up to 262144. Costs: rows must be a multiple of 16 bytes (features a multiple of 4 fp32
// or 8 bf16/fp16 values) for the 16-byte copies; one CTA per SM at the widest slices (60-62
// registers per thread, up to 128 KiB of staging per CTA); a cluster needs its CTAs free together
// in one GPC, so at 8 CTAs a few of the 132 SMs stay idle; the exchange is a round trip through
// another SM's shared memory per row, hidden only by the prefetch.
#include <algorithm>
#include <cstdint>
#include <string>

#include <cooperative_groups.h>
#include <cuda_pipeline_primitives.h>

#include "core/cluster.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kMaxClusterSize = 8;  // the portable limit
constexpr int kMaxElements = static_cast<int>(kClusterMaxFeatures / (kMaxClusterSize * kThreads));  // 32

// Thread t of CTA `rank` holds the row's 16-byte vectors rank * kThreads * kVectors + i * kThreads + t
// (i < kVectors), and stages them in shared memory at i * kThreads + t.
template <typename T, int kVectors>
__global__ void __launch_bounds__(kThreads, 1)
    softmax_cluster_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, int features) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kPack = kVector16<T>;
  extern __shared__ uint4 staged[];  // kVectors * kThreads vectors: this CTA's slice of the next row
  // Each row's (max, sum) pairs, one per CTA (core/cluster.cuh); the block reductions between one
  // row's reads of them and the next row's send are the barrier the inbox asks for.
  __shared__ ClusterInbox<RowStats, kMaxClusterSize> inbox;
  __shared__ float scratch[kWarpSize];
  const BlockReduce reduce{scratch};
  const cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int ranks = static_cast<int>(cluster.num_blocks());
  const std::int64_t row_stride = gridDim.x / ranks;
  const int first_vector = rank * kThreads * kVectors + static_cast<int>(threadIdx.x);
  const int owned = features / kPack - first_vector;  // this thread's vector i exists when i * kThreads < owned
  // This thread's first element in a row; vector i is a constant offset further.
  const std::int64_t thread_offset = static_cast<std::int64_t>(first_vector) * kPack;

  if (threadIdx.x == 0) inbox.init();
  cluster.sync();  // every CTA's barriers exist before anyone sends to them

  // Each thread copies and later reads only its own staging slots: cp.async's wait makes its own
  // copies visible to it, so no block barrier guards the buffer.
  auto prefetch = [&](std::int64_t row) {
    const T* source = x + (row * features + thread_offset);
    // Opaque to the compiler, so it adds the vectors' offsets to this base instead of keeping each
    // loop-invariant thread_offset + i * kThreads * kPack in a register pair (which spilled).
    asm("" : "+l"(source));
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      if (i * kThreads < owned)
        __pipeline_memcpy_async(&staged[i * kThreads + threadIdx.x], source + i * kThreads * kPack, 16);
    }
    __pipeline_commit();
  };

  std::int64_t row = blockIdx.x / ranks;
  if (row < rows) prefetch(row);
  for (int iteration = 0; row < rows; row += row_stride, ++iteration) {
    __pipeline_wait_prior(0);
    float v[kVectors * kPack];
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      if (i * kThreads < owned) {
        load_floats<kPack>(reinterpret_cast<const T*>(&staged[i * kThreads + threadIdx.x]), &v[i * kPack]);
      } else {
#pragma unroll
        for (int k = 0; k < kPack; ++k) v[i * kPack + k] = -INFINITY;
      }
    }
    float local_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < kVectors * kPack; ++i) local_max = fmaxf(local_max, v[i]);
    local_max = reduce.max(local_max);
    // The staged values are in registers and used: the slots take the next row's copies.
    if (row + row_stride < rows) prefetch(row + row_stride);
    // A CTA past the row's end (narrow rows) or holding only -inf: its exponentials are 0.
    const float shift = local_max == -INFINITY ? 0.0f : local_max;
    float local_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kVectors * kPack; ++i) {
      v[i] = exp_shifted(v[i], shift);
      local_sum += v[i];
    }
    local_sum = reduce.sum(local_sum);
    const RowStats* pairs = inbox.exchange(cluster, iteration, RowStats{local_max, local_sum});
    // Every CTA merges the pairs in rank order, so all of them scale by the same bits.
    RowStats total{-INFINITY, 0.0f};
    for (int r = 0; r < ranks; ++r) total = merge(total, pairs[r]);
    const float scale = exp_shifted(shift, total.max) * __frcp_rn(total.sum);
    T* destination = y + (row * features + thread_offset);
#pragma unroll
    for (int i = 0; i < kVectors; ++i) {
      if (i * kThreads < owned) {
        float out[kPack];
#pragma unroll
        for (int k = 0; k < kPack; ++k) out[k] = v[i * kPack + k] * scale;
        store_floats<kPack>(destination + i * kThreads * kPack, out);
      }
    }
  }
  cluster.sync();  // no CTA leaves while a peer's last send may still target it
#elif defined(__CUDA_ARCH__)
  __trap();  // code for an architecture without clusters: cluster_limits never lets it launch
#endif
}

struct ClusterShape {
  int ctas;     // CTAs per row: 2, 4 or 8
  int vectors;  // 16-byte vectors per thread: 1, 2, 4 or 8 (fp32), up to 4 (16-bit)
};

// Enough CTAs (2 to 8) that each thread holds about two vectors, so 32 KiB of every CTA's slice is
// in flight (one vector each, 16 KiB, is under what an SM needs in flight to keep its share of the
// bandwidth), then the fewest vectors per thread that cover the row: 262144 fp32 features is 8 CTAs
// x 8 vectors, 262144 bf16 8 x 4, 65536 fp32 8 x 2, 65536 bf16 4 x 2, 32768 fp32 4 x 2.
ClusterShape cluster_shape(std::int64_t features, int vector_elements) {
  const std::int64_t vectors = features / vector_elements;
  const int ctas = std::clamp(next_power_of_two(ceil_div<std::int64_t>(vectors, 2 * kThreads)), 2, kMaxClusterSize);
  return {ctas, next_power_of_two(ceil_div<std::int64_t>(vectors, static_cast<std::int64_t>(ctas) * kThreads))};
}

template <typename T, int kVectors>
void launch(const SoftmaxArgs<T>& args, int ctas, cudaStream_t stream) {
  const std::size_t staging = static_cast<std::size_t>(kVectors) * kThreads * sizeof(uint4);
  launch_persistent_clusters(softmax_cluster_kernel<T, kVectors>, ctas, kThreads, staging, args.rows, stream,
                             "softmax cluster", args.x, args.y, args.rows, static_cast<int>(args.features));
}

}  // namespace

std::string cluster_limits(std::int64_t features, std::size_t element_size, int compute_capability) {
  if (compute_capability < 90) return "needs thread-block clusters (compute capability 9.0+)";
  if (features > kClusterMaxFeatures)
    return "holds a row in the registers of 8 CTAs, at most " + std::to_string(kClusterMaxFeatures) +
           " features, got " + std::to_string(features);
  if (features * static_cast<std::int64_t>(element_size) % 16 != 0)
    return "copies rows in 16-byte pieces, so the features must be a multiple of " + std::to_string(16 / element_size) +
           " here, got " + std::to_string(features);
  return "";
}

template <typename T>
void cluster(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  const std::string why = cluster_limits(args.features, sizeof(T), current_gpu().compute_capability);
  CUDALAB_REQUIRE(why.empty(), "softmax cluster: " + why);
  CUDALAB_REQUIRE(is_aligned16(args.x) && is_aligned16(args.y), "softmax cluster: x and y must be 16-byte aligned");
  constexpr int kVec = kVector16<T>;
  const ClusterShape shape = cluster_shape(args.features, kVec);
  const bool launched = dispatch_power_of_two<1, kMaxElements / kVec>(
      shape.vectors, [&](auto vectors) { launch<T, decltype(vectors)::value>(args, shape.ctas, stream); });
  CUDALAB_REQUIRE(launched, "softmax cluster: no kernel for " + std::to_string(args.features) + " features");
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, cluster, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
