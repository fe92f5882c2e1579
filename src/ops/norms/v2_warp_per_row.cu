// Rung `warp_per_row`: one warp per row, warp-shuffle sums (no shared memory, no barrier, no atomics), for
// LayerNorm and RMSNorm. Fixes, relative to tutorial_fixed: narrow rows use 32 threads instead
// of 256 (a 128-feature row no longer idles 7 of 8 warps), the sums are register shuffles, and
// each lane keeps four loads in flight (four accumulators). Costs: still element loads (4 or 2
// bytes a lane, 128 or 64 bytes a warp instruction) and three passes over the row (two for
// RMSNorm); a wide row gets only one warp, so at 262144 features each lane walks 8192 elements
// per pass and a few rows cannot fill the GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kWarpsPerBlock = 8;

template <typename T>
__global__ void __launch_bounds__(kWarpsPerBlock* kWarpSize) norm_warp_per_row_kernel(NormForwardArgs<T> a) {
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  for (std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + warp; row < a.rows;
       row += static_cast<std::int64_t>(gridDim.x) * kWarpsPerBlock)
    normalize_row_in_passes<kWarpSize>(a, row, lane, nullptr);
}

}  // namespace

template <typename T>
void warp_per_row(const NormForwardArgs<T>& a, cudaStream_t stream) {
  std::string why = forward_shape_limits(a.rows, a.features);
  if (why.empty()) why = warp_per_row_limits(a.features);
  CUDALAB_REQUIRE(why.empty(), "warp_per_row: " + why);
  if (a.rows == 0) return;
  const std::int64_t blocks = std::min<std::int64_t>(ceil_div<std::int64_t>(a.rows, kWarpsPerBlock), 1 << 30);
  norm_warp_per_row_kernel<<<static_cast<int>(blocks), kWarpsPerBlock * kWarpSize, 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, warp_per_row, NormForwardArgs)

}  // namespace cudalab::norms_variants
