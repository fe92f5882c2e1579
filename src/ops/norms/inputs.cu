#include "ops/norms/inputs.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

// out[i] = low + (high - low) * u_i, u_i uniform in [0, 1) from (seed, i); plus, when
// `row_offset` is nonzero, +row_offset for even rows of `features` elements and -row_offset for
// odd ones. Rounded to T once.
template <typename T>
__global__ void fill_affine_kernel(T* out, std::int64_t count, std::int64_t features, std::uint64_t seed, float low,
                                   float high, double row_offset) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < count; i += stride) {
    const double u = unit_float(mix64(seed ^ mix64(static_cast<std::uint64_t>(i))));
    double value = low + (static_cast<double>(high) - low) * u;
    if (row_offset != 0.0) value += (i / features) % 2 == 0 ? row_offset : -row_offset;
    out[i] = from_float<T>(static_cast<float>(value));
  }
}

template <typename T>
void launch_affine(void* device, std::int64_t count, std::int64_t features, std::uint64_t seed, float low, float high,
                   double row_offset, cudaStream_t stream) {
  if (count == 0) return;
  const int blocks = resident_grid_size(fill_affine_kernel<T>, kBlockSize, count);
  fill_affine_kernel<T>
      <<<blocks, kBlockSize, 0, stream>>>(static_cast<T*>(device), count, features, seed, low, high, row_offset);
  CUDALAB_CHECK_LAUNCH();
}

void fill_affine(DType dtype, void* device, std::int64_t count, std::int64_t features, std::uint64_t seed, float low,
                 float high, double row_offset, cudaStream_t stream) {
  switch (dtype) {
    case DType::f32: return launch_affine<float>(device, count, features, seed, low, high, row_offset, stream);
    case DType::f16: return launch_affine<__half>(device, count, features, seed, low, high, row_offset, stream);
    case DType::bf16: return launch_affine<__nv_bfloat16>(device, count, features, seed, low, high, row_offset, stream);
    default: CUDALAB_REQUIRE(false, std::string("norm inputs: no dtype ") + to_string(dtype));
  }
}

}  // namespace

double large_row_noise(DType dtype) {
  switch (dtype) {
    case DType::f16: return 64.0;
    case DType::bf16: return 512.0;
    default: return 1.0;
  }
}

void fill_norm_x(DType dtype, void* device, std::int64_t count, std::int64_t features, std::uint64_t seed,
                 Distribution distribution, cudaStream_t stream) {
  if (count == 0) return;
  if (distribution != Distribution::large_magnitude)
    return fill_random(dtype, device, count, seed, distribution, stream);
  const auto noise = static_cast<float>(large_row_noise(dtype));
  fill_affine(dtype, device, count, features, seed, -noise, noise, kLargeRowOffset, stream);
}

void fill_norm_dy(DType dtype, void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                  cudaStream_t stream) {
  if (count == 0) return;
  fill_random(dtype, device, count, seed,
              distribution == Distribution::large_magnitude ? Distribution::uniform : distribution, stream);
}

void fill_norm_gamma(DType dtype, void* device, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_affine(dtype, device, count, 1, seed, 0.5f, 1.5f, 0.0, stream);
}

void fill_norm_beta(DType dtype, void* device, std::int64_t count, std::uint64_t seed, cudaStream_t stream) {
  fill_affine(dtype, device, count, 1, seed, -0.5f, 0.5f, 0.0, stream);
}

void fill_norm_mean(float* device, std::int64_t rows, std::uint64_t seed, Distribution distribution, DType dtype,
                    cudaStream_t stream) {
  if (distribution != Distribution::large_magnitude)
    return fill_affine(DType::f32, device, rows, 1, seed, -1.0f, 1.0f, 0.0, stream);
  const auto spread = static_cast<float>(0.05 * large_row_noise(dtype));
  fill_affine(DType::f32, device, rows, 1, seed, -spread, spread, kLargeRowOffset, stream);
}

void fill_norm_rstd(float* device, std::int64_t rows, std::uint64_t seed, Distribution distribution, DType dtype,
                    norms_variants::Norm norm, cudaStream_t stream) {
  double scale = 1.0;
  if (distribution == Distribution::large_magnitude)
    scale = norm == norms_variants::Norm::layer ? 1.0 / large_row_noise(dtype) : 1.0 / kLargeRowOffset;
  fill_affine(DType::f32, device, rows, 1, seed, static_cast<float>(0.5 * scale), static_cast<float>(2.0 * scale), 0.0,
              stream);
}

}  // namespace cudalab::harness
