// Rung `block_per_row`: one 512-thread block per row, block sums (warp shuffles, one value per warp in shared
// memory, the first warp adds them), for LayerNorm and RMSNorm. Fixes, relative to
// warp_per_row: a wide row is shared by 16 warps instead of one (at 262144 features each thread
// walks 512 elements per pass, not 8192), and a few wide rows fill more of the GPU. Costs: each
// sum now needs two barriers (the block sum's and the broadcast's), narrow rows idle most of the
// block (a 128-feature row uses 4 of 16 warps), and it is still element loads and three passes
// over the row.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/norms.cuh"

namespace cudalab::norms_variants {
namespace {

constexpr int kBlockThreads = 512;

template <typename T>
__global__ void __launch_bounds__(kBlockThreads) norm_block_per_row_kernel(NormForwardArgs<T> a) {
  __shared__ float scratch[kBlockThreads / kWarpSize + 1];
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x)
    normalize_row_in_passes<kBlockThreads>(a, row, static_cast<int>(threadIdx.x), scratch);
}

}  // namespace

template <typename T>
void block_per_row(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = forward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "block_per_row: " + why);
  if (a.rows == 0) return;
  const std::int64_t blocks = std::min<std::int64_t>(a.rows, 1 << 30);
  norm_block_per_row_kernel<<<static_cast<int>(blocks), kBlockThreads, 0, stream>>>(a);
  CUDALAB_CHECK_LAUNCH();
}

CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, block_per_row, NormForwardArgs)

}  // namespace cudalab::norms_variants
