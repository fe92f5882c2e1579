// The RoPE ops' angle tables: Llama's frequencies, cos and sin of p * 10000^(-2i / head_dim) for
// positions p and pairs i, in fp32, `positions` dense rows of head_dim / 2 values.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::harness {

inline constexpr double kRopeBase = 10000.0;

void fill_rope_table(float* device, std::int64_t positions, std::int64_t head_dim, bool sine, cudaStream_t stream);

}  // namespace cudalab::harness
