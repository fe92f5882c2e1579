// Rung `vectorized`: the row held in registers, read once with 16-byte vectors. A thread holds up to 32 fp32
// values of its row; the number of threads per row follows the width: a group of 4-32 lanes (rows
// of up to one vector per lane, several rows per warp), a warp (up to 1024 features), or a block of
// up to 1024 threads (up to 32768 features). The max and the sum come from those registers, then y
// is written from them. Fixes: warp_per_row's and block_per_row's three passes over x (now exactly one read and one
// write, the copy roofline) and their 2-4 byte accesses (one 16-byte vector per lane and
// instruction, 512 bytes per warp). Costs: a register budget per width (a template instance per
// layout: sub-warp, warp, block with 8/16/32 values per thread), at most 32768 features; rows that
// are not 16-byte aligned (features not a multiple of 4 fp32 or 8 bf16/fp16 values) take the same
// layout with scalar loads.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kMaxElements = static_cast<int>(kVectorizedMaxFeatures / kMaxBlockThreads);  // 32

// y = softmax over the values a row's threads hold (padding is -inf, whose exp is 0).
template <int kElements, typename Reduce>
__device__ __forceinline__ void softmax_in_registers(float (&v)[kElements], const Reduce& reduce) {
  float max = -INFINITY;
#pragma unroll
  for (int i = 0; i < kElements; ++i) max = fmaxf(max, v[i]);
  max = reduce.max(max);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kElements; ++i) {
    v[i] = exp_shifted(v[i], max);
    sum += v[i];
  }
  const float scale = 1.0f / reduce.sum(sum);
#pragma unroll
  for (int i = 0; i < kElements; ++i) v[i] *= scale;
}

template <typename T, int kThreadsPerRow, int kElements, int kPack>
__global__ void __launch_bounds__(kThreadsPerRow == 0 ? kMaxBlockThreads : kGroupBlockThreads)
    softmax_vectorized_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, int features) {
  for_this_row<kThreadsPerRow>(rows, [&](std::int64_t row, int thread, int threads, bool valid, const auto& reduce) {
    const std::int64_t offset = valid ? row * features : 0;
    float v[kElements];
    load_fragment<kPack>(x + offset, valid ? features : 0, thread, threads, -INFINITY, v);
    softmax_in_registers(v, reduce);
    if (valid) store_fragment<kPack>(y + offset, features, thread, threads, v);
  });
}

}  // namespace

std::string vectorized_limits(std::int64_t features) {
  if (features <= kVectorizedMaxFeatures) return "";
  return "holds a row in the registers of one block, at most " + std::to_string(kVectorizedMaxFeatures) +
         " features (1024 threads x 32), got " + std::to_string(features);
}

template <typename T>
void vectorized(const SoftmaxArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  const std::string why = vectorized_limits(args.features);
  CUDALAB_REQUIRE(why.empty(), "softmax vectorized: " + why);
  constexpr int kVec = kVector16<T>;
  const bool aligned = is_aligned16(args.x) && is_aligned16(args.y) && args.features % kVec == 0;
  const RowLayout layout = choose_row_layout(args.features, kVec, kMaxElements, aligned);
  const std::int64_t blocks = row_layout_blocks(layout, args.rows);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "softmax vectorized: rows need more than 2^31-1 blocks");
  const bool launched = dispatch_row_layout<kVec, kMaxElements>(layout, [&](auto threads, auto elements, auto pack) {
    softmax_vectorized_kernel<T, decltype(threads)::value, decltype(elements)::value, decltype(pack)::value>
        <<<static_cast<unsigned>(blocks), layout.block_threads, 0, stream>>>(args.x, args.y, args.rows,
                                                                             static_cast<int>(args.features));
  });
  CUDALAB_REQUIRE(launched,
                  "softmax vectorized: no kernel for the layout of " + std::to_string(args.features) + " features");
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, vectorized, SoftmaxArgs)

}  // namespace cudalab::softmax_variants
