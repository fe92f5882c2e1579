#include "ops/cross_entropy/inputs.hpp"

#include <cmath>
#include <cstdint>

#include "core/launch.cuh"
#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

__global__ void targets_kernel(std::int64_t* target, std::int64_t rows, std::int64_t vocab, std::uint64_t seed) {
  for (std::int64_t i = global_thread_index(); i < rows; i += global_thread_count())
    target[i] = cross_entropy_test_target(seed, i, vocab);
}

__global__ void lse_kernel(float* lse, std::int64_t rows, float low, std::uint64_t seed) {
  for (std::int64_t i = global_thread_index(); i < rows; i += global_thread_count())
    lse[i] = low + 2.0f * static_cast<float>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 40) * 0x1p-24f;
}

}  // namespace

void fill_cross_entropy_targets(void* device, std::int64_t rows, std::int64_t vocab, std::uint64_t seed,
                                cudaStream_t stream) {
  if (rows == 0) return;
  const int blocks = resident_grid_size(targets_kernel, kBlockSize, rows);
  targets_kernel<<<blocks, kBlockSize, 0, stream>>>(static_cast<std::int64_t*>(device), rows, vocab, seed);
  CUDALAB_CHECK_LAUNCH();
}

void fill_cross_entropy_lse(void* device, std::int64_t rows, std::int64_t vocab, std::uint64_t seed,
                            cudaStream_t stream) {
  if (rows == 0) return;
  const int blocks = resident_grid_size(lse_kernel, kBlockSize, rows);
  const float low = std::log(static_cast<float>(vocab)) + 3.0f;
  lse_kernel<<<blocks, kBlockSize, 0, stream>>>(static_cast<float*>(device), rows, low, seed);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::harness
