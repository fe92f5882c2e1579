// Backward rung `fused`: y and dy held in registers, read once with 16-byte vectors; the dot product
// sum_j(y_j dy_j) reduced across the threads sharing the row, then dx = y * (dy - dot) written from
// the registers. The threads per row follow the width as in the forward's vectorized rung: a group
// of 4-32 lanes, a warp (up to 512 features) or a block of up to 1024 threads, up to 16 values of
// each of y and dy per thread. Fixes: rung `two_pass`'s second read of y and dy (now the minimum: read both
// once, write dx once) and its 2-4 byte accesses. Costs: at most 16384 features (twice the
// registers per value of the forward); a template instance per layout; rows that are not 16-byte
// aligned take the same layout with scalar loads.
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/softmax.hpp"
#include "ops/softmax/softmax.cuh"
#include "ops/softmax/variants.hpp"

namespace cudalab::softmax_variants {
namespace {

constexpr int kMaxElements = static_cast<int>(kFusedBackwardMaxFeatures / kMaxBlockThreads);  // 16

template <typename T, int kThreadsPerRow, int kElements, int kPack>
__global__ void __launch_bounds__(kThreadsPerRow == 0 ? kMaxBlockThreads : kGroupBlockThreads)
    softmax_backward_fused_kernel(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                                  std::int64_t rows, int features) {
  for_this_row<kThreadsPerRow>(rows, [&](std::int64_t row, int thread, int threads, bool valid, const auto& reduce) {
    const std::int64_t offset = valid ? row * features : 0;
    const int count = valid ? features : 0;
    float yv[kElements], dyv[kElements];
    load_fragment<kPack>(y + offset, count, thread, threads, 0.0f, yv);
    load_fragment<kPack>(dy + offset, count, thread, threads, 0.0f, dyv);
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kElements; ++i) dot = fmaf(yv[i], dyv[i], dot);
    dot = reduce.sum(dot);
#pragma unroll
    for (int i = 0; i < kElements; ++i) yv[i] *= dyv[i] - dot;
    if (valid) store_fragment<kPack>(dx + offset, features, thread, threads, yv);
  });
}

}  // namespace

std::string fused_backward_limits(std::int64_t features) {
  if (features <= kFusedBackwardMaxFeatures) return "";
  return "holds y and dy in the registers of one block, at most " + std::to_string(kFusedBackwardMaxFeatures) +
         " features (1024 threads x 16), got " + std::to_string(features);
}

template <typename T>
void backward_fused(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream) {
  if (args.rows == 0 || args.features == 0) return;
  const std::string why = fused_backward_limits(args.features);
  CUDALAB_REQUIRE(why.empty(), "softmax_backward fused: " + why);
  constexpr int kVec = kVector16<T>;
  const bool aligned =
      is_aligned16(args.y) && is_aligned16(args.dy) && is_aligned16(args.dx) && args.features % kVec == 0;
  const RowLayout layout = choose_row_layout(args.features, kVec, kMaxElements, aligned);
  const std::int64_t blocks = row_layout_blocks(layout, args.rows);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "softmax_backward fused: rows need more than 2^31-1 blocks");
  const bool launched = dispatch_row_layout<kVec, kMaxElements>(layout, [&](auto threads, auto elements, auto pack) {
    softmax_backward_fused_kernel<T, decltype(threads)::value, decltype(elements)::value, decltype(pack)::value>
        <<<static_cast<unsigned>(blocks), layout.block_threads, 0, stream>>>(args.y, args.dy, args.dx, args.rows,
                                                                             static_cast<int>(args.features));
  });
  CUDALAB_REQUIRE(launched,
                  "softmax_backward fused: no kernel for the layout of " + std::to_string(args.features) + " features");
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, backward_fused, SoftmaxBackwardArgs)

}  // namespace cudalab::softmax_variants
