#include "ops/rope/inputs.hpp"

#include <cmath>
#include <cstdint>

#include "core/launch.cuh"
#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

// In double, then rounded: the tables a model would precompute, exact to fp32's rounding.
__global__ void rope_table_kernel(float* table, std::int64_t positions, std::int64_t head_dim, bool sine) {
  const std::int64_t half = head_dim / 2, n = positions * half;
  for (std::int64_t k = global_thread_index(); k < n; k += global_thread_count()) {
    const std::int64_t p = k / half, i = k % half;
    const double angle = static_cast<double>(p) * pow(kRopeBase, -2.0 * static_cast<double>(i) / head_dim);
    table[k] = static_cast<float>(sine ? sin(angle) : cos(angle));
  }
}

}  // namespace

void fill_rope_table(float* device, std::int64_t positions, std::int64_t head_dim, bool sine, cudaStream_t stream) {
  const std::int64_t n = positions * (head_dim / 2);
  if (n == 0) return;
  rope_table_kernel<<<resident_grid_size(rope_table_kernel, kBlockSize, n), kBlockSize, 0, stream>>>(device, positions,
                                                                                                     head_dim, sine);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::harness
