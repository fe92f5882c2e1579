#include "ops/attention/inputs.hpp"

#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"

namespace cudalab::harness {
namespace {

constexpr int kBlockSize = 256;

// Rewrites the planted elements of Q (kKeys false) or K (kKeys true) in place; the others keep
// fill_random's values.
template <bool kKeys, typename T>
__global__ void attention_plant_kernel(T* x, std::int64_t count, std::int64_t seq, std::int64_t head_dim,
                                       float planted) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < count; i += stride) {
    const std::int64_t row = (i / head_dim) % seq, dim = i % head_dim;
    const float drawn = to_float(x[i]);
    const float value = kKeys ? attention_test_key(drawn, row, dim, seq, head_dim, planted)
                              : attention_test_query(drawn, row, dim, head_dim, planted);
    if (value != drawn) x[i] = from_float<T>(value);
  }
}

template <bool kKeys, typename T>
void launch_plant(void* device, std::int64_t count, std::int64_t seq, std::int64_t head_dim, float planted,
                  cudaStream_t stream) {
  const int blocks = resident_grid_size(attention_plant_kernel<kKeys, T>, kBlockSize, count);
  attention_plant_kernel<kKeys, T>
      <<<blocks, kBlockSize, 0, stream>>>(static_cast<T*>(device), count, seq, head_dim, planted);
  CUDALAB_CHECK_LAUNCH();
}

template <bool kKeys>
void fill(DType dtype, void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
          std::int64_t seq, std::int64_t head_dim, float scale, cudaStream_t stream) {
  CUDALAB_REQUIRE(dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16,
                  std::string("attention inputs: f32, bf16 or f16, got ") + to_string(dtype));
  if (count == 0) return;
  CUDALAB_REQUIRE(seq > 0 && head_dim > 0 && count % (seq * head_dim) == 0,
                  "attention inputs: count must be a multiple of seq * head_dim");
  fill_random(dtype, device, count, seed, attention_score_distribution(distribution), stream);
  const float planted = attention_planted_value(scale);
  if (dtype == DType::f32) {
    launch_plant<kKeys, float>(device, count, seq, head_dim, planted, stream);
  } else if (dtype == DType::bf16) {
    launch_plant<kKeys, __nv_bfloat16>(device, count, seq, head_dim, planted, stream);
  } else {
    launch_plant<kKeys, __half>(device, count, seq, head_dim, planted, stream);
  }
}

}  // namespace

void fill_attention_queries(DType dtype, void* device, std::int64_t count, std::uint64_t seed,
                            Distribution distribution, std::int64_t seq, std::int64_t head_dim, float scale,
                            cudaStream_t stream) {
  fill<false>(dtype, device, count, seed, distribution, seq, head_dim, scale, stream);
}

void fill_attention_keys(DType dtype, void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                         std::int64_t seq, std::int64_t head_dim, float scale, cudaStream_t stream) {
  fill<true>(dtype, device, count, seed, distribution, seq, head_dim, scale, stream);
}

}  // namespace cudalab::harness
