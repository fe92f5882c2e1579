#include "ops/transfers/kernels.hpp"

#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"

namespace cudalab::transfers {
namespace {

constexpr int kBlockSize = 256;

__global__ void transfers_copy_words_kernel(uint4* destination, const uint4* source, std::int64_t count) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < count; i += stride) destination[i] = source[i];
}

__global__ void transfers_affine_steps_kernel(std::uint32_t* out, const std::uint32_t* in, std::int64_t n,
                                              std::uint32_t multiplier, std::uint32_t increment,
                                              std::int64_t iterations) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    std::uint32_t x = in[i];
    for (std::int64_t k = 0; k < iterations; ++k) x = multiplier * x + increment;
    out[i] = x;
  }
}

}  // namespace

void copy_words(void* destination, const void* source, std::size_t bytes, cudaStream_t stream) {
  CUDALAB_REQUIRE(bytes % sizeof(uint4) == 0,
                  "copy_words: bytes must be a multiple of 16, got " + std::to_string(bytes));
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(destination) % alignof(uint4) == 0 &&
                      reinterpret_cast<std::uintptr_t>(source) % alignof(uint4) == 0,
                  "copy_words: pointers must be 16-byte aligned");
  if (bytes == 0) return;
  CUDALAB_REQUIRE(destination != nullptr && source != nullptr, "copy_words: null pointer");
  const auto count = static_cast<std::int64_t>(bytes / sizeof(uint4));
  // Several blocks per SM keep enough loads in flight to cover PCIe's microsecond latency when a
  // side is host memory.
  const int blocks = resident_grid_size(transfers_copy_words_kernel, kBlockSize, count);
  transfers_copy_words_kernel<<<blocks, kBlockSize, 0, stream>>>(static_cast<uint4*>(destination),
                                                                 static_cast<const uint4*>(source), count);
  CUDALAB_CHECK_LAUNCH();
}

void affine_steps(std::uint32_t* out, const std::uint32_t* in, std::int64_t n, AffineMap step, std::int64_t iterations,
                  cudaStream_t stream, int blocks) {
  CUDALAB_REQUIRE(n >= 0 && iterations >= 0, "affine_steps: n and iterations must be >= 0");
  if (n == 0) return;
  CUDALAB_REQUIRE(out != nullptr && in != nullptr, "affine_steps: null pointer");
  const std::int64_t needed = ceil_div<std::int64_t>(n, kBlockSize);
  const std::int64_t grid = blocks > 0 && blocks < needed ? blocks : (needed < (1 << 30) ? needed : (1 << 30));
  transfers_affine_steps_kernel<<<static_cast<unsigned>(grid), kBlockSize, 0, stream>>>(out, in, n, step.multiplier,
                                                                                        step.increment, iterations);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::transfers
