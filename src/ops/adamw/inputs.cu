#include "ops/adamw/inputs.hpp"

#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "harness/random.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

template <typename T>
__global__ void second_moments_kernel(T* v, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = global_thread_index(); i < n; i += global_thread_count()) {
    const float u = static_cast<float>(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))) >> 40) * 0x1p-23f - 1.0f;
    v[i] = from_float<T>((u * u + 0.01f) * 0.01f);
  }
}

template <typename T>
void launch(void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  second_moments_kernel<T><<<resident_grid_size(second_moments_kernel<T>, kBlockSize, n), kBlockSize, 0, stream>>>(
      static_cast<T*>(device), n, seed);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void fill_adamw_second_moments(DType dtype, void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  switch (dtype) {
    case DType::f32: return launch<float>(device, n, seed, stream);
    case DType::bf16: return launch<__nv_bfloat16>(device, n, seed, stream);
    case DType::f16: return launch<__half>(device, n, seed, stream);
    default: CUDALAB_REQUIRE(false, std::string("adamw inputs: f32, bf16 or f16, got ") + to_string(dtype));
  }
}

}  // namespace cudalab::harness
