#include "ops/softmax/inputs.hpp"

#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::harness {
namespace {

using softmax_variants::BlockReduce;
using softmax_variants::exp_shifted;

constexpr int kBlockSize = 256;

template <typename T>
__global__ void apply_row_kinds_kernel(T* x, std::int64_t count, std::int64_t features, std::uint64_t seed,
                                       Distribution distribution) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < count; i += stride)
    x[i] = from_float<T>(softmax_test_logit(to_float(x[i]), i / features, i % features, features, seed, distribution));
}

// A block per row turns fill_random's values in y into the row's logits (the row kinds) and then
// into their softmax, in place: each thread writes only the elements it read, after the block's
// max and sum.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    softmax_outputs_kernel(T* y, std::int64_t features, std::uint64_t seed, Distribution distribution) {
  __shared__ float scratch[kWarpSize];
  const BlockReduce reduce{scratch};
  const std::int64_t row = blockIdx.x;
  T* y_row = y + row * features;
  auto logit = [&](std::int64_t column) {
    return softmax_test_logit(to_float(y_row[column]), row, column, features, seed, distribution);
  };
  float max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < features; j += kBlockSize) max = fmaxf(max, logit(j));
  max = reduce.max(max);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j < features; j += kBlockSize) sum += exp_shifted(logit(j), max);
  const float scale = 1.0f / reduce.sum(sum);
  for (std::int64_t j = threadIdx.x; j < features; j += kBlockSize)
    y_row[j] = from_float<T>(exp_shifted(logit(j), max) * scale);
}

template <typename T>
void launch_row_kinds(void* device, std::int64_t count, std::int64_t features, std::uint64_t seed,
                      Distribution distribution, cudaStream_t stream) {
  const int blocks = resident_grid_size(apply_row_kinds_kernel<T>, kBlockSize, count);
  apply_row_kinds_kernel<T>
      <<<blocks, kBlockSize, 0, stream>>>(static_cast<T*>(device), count, features, seed, distribution);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void launch_outputs(void* device, std::int64_t rows, std::int64_t features, std::uint64_t seed,
                    Distribution distribution, cudaStream_t stream) {
  CUDALAB_REQUIRE(rows <= 0x7fffffff, "softmax outputs fill: more than 2^31-1 rows");
  softmax_outputs_kernel<T>
      <<<static_cast<unsigned>(rows), kBlockSize, 0, stream>>>(static_cast<T*>(device), features, seed, distribution);
  CUDALAB_CHECK_LAUNCH();
}

void require_float_dtype(DType dtype) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string("softmax inputs: f32, bf16 or f16, got ") + to_string(dtype));
}

}  // namespace

void fill_softmax_logits(DType dtype, void* device, std::int64_t rows, std::int64_t features, std::uint64_t seed,
                         Distribution distribution, cudaStream_t stream) {
  require_float_dtype(dtype);
  const std::int64_t count = rows * features;
  if (count == 0) return;
  fill_random(dtype, device, count, seed, distribution, stream);
  if (dtype == DType::f32) {
    launch_row_kinds<float>(device, count, features, seed, distribution, stream);
  } else if (dtype == DType::bf16) {
    launch_row_kinds<__nv_bfloat16>(device, count, features, seed, distribution, stream);
  } else {
    launch_row_kinds<__half>(device, count, features, seed, distribution, stream);
  }
}

void fill_softmax_outputs(DType dtype, void* device, std::int64_t rows, std::int64_t features, std::uint64_t seed,
                          Distribution distribution, cudaStream_t stream) {
  require_float_dtype(dtype);
  if (rows * features == 0) return;
  fill_random(dtype, device, rows * features, seed, distribution, stream);
  if (dtype == DType::f32) {
    launch_outputs<float>(device, rows, features, seed, distribution, stream);
  } else if (dtype == DType::bf16) {
    launch_outputs<__nv_bfloat16>(device, rows, features, seed, distribution, stream);
  } else {
    launch_outputs<__half>(device, rows, features, seed, distribution, stream);
  }
}

}  // namespace cudalab::harness
