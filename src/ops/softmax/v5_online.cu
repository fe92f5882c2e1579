// Rung `online`: online softmax (Milakov & Gimelshein 2018, "Online normalizer calculation for softmax")
// for rows too long to hold on chip. A block of 512 threads streams its row once, each thread
// carrying a running max m and the sum s of exp(x - m) over what it has seen: a step of two 16-byte
// vectors per thread takes the step's max, rescales s by exp(m_old - m_new) when the max grew, and
// adds the step's exponentials; the per-thread (m, s) pairs then merge across the block. A second
// pass reads x again and writes y = exp(x - m) / s. Fixes: warp_per_row's and block_per_row's three passes over long
// rows (two here; the re-read comes from L2 when the rows in flight fit in it) and their scalar loads, with no width
// limit (rung `vectorized` stops at 32768). Costs: x read twice, so 2/3 of the copy rate at best when the re-read
// misses L2; one extra exp per rescale; rows that are not 16-byte aligned take scalar loads.
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kThreads = 512;

template <typename T, int kPack>
__global__ void __launch_bounds__(kThreads)
    softmax_online_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t features) {
  constexpr int kStep = 2 * kVector16<T>;  // values per thread per step: two 16-byte vectors
  constexpr std::int64_t kBlockStep = static_cast<std::int64_t>(kThreads) * kStep;
  __shared__ RowStats scratch[kWarpSize];
  const std::int64_t offset = blockIdx.x * features;
  RowStats stats{-INFINITY, 0.0f};
  for (std::int64_t base = 0; base < features; base += kBlockStep) {
    const int count = static_cast<int>(features - base < kBlockStep ? features - base : kBlockStep);
    float v[kStep];
    load_fragment<kPack>(x + offset + base, count, threadIdx.x, kThreads, -INFINITY, v);
    accumulate(stats, v);
  }
  stats = block_all_reduce(stats, RowStats{-INFINITY, 0.0f}, MergeOf{}, scratch);
  const float scale = 1.0f / stats.sum;
  for (std::int64_t base = 0; base < features; base += kBlockStep) {
    const int count = static_cast<int>(features - base < kBlockStep ? features - base : kBlockStep);
    float v[kStep];
    load_fragment<kPack>(x + offset + base, count, threadIdx.x, kThreads, -INFINITY, v);
#pragma unroll
    for (int i = 0; i < kStep; ++i) v[i] = exp_shifted(v[i], stats.max) * scale;
    store_fragment<kPack>(y + offset + base, count, threadIdx.x, kThreads, v);
  }
}

}  // namespace

template <typename T>
void online(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  CUDALAB_REQUIRE(args.rows <= 0x7fffffff, "softmax online: more than 2^31-1 rows (a block per row)");
  constexpr int kVec = kVector16<T>;
  const auto blocks = static_cast<unsigned>(args.rows);
  if (is_aligned16(args.x) && is_aligned16(args.y) && args.features % kVec == 0) {
    softmax_online_kernel<T, kVec><<<blocks, kThreads, 0, stream>>>(args.x, args.y, args.features);
  } else {
    softmax_online_kernel<T, 1><<<blocks, kThreads, 0, stream>>>(args.x, args.y, args.features);
  }
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, online, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
