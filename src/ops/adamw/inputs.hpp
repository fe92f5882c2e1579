// AdamW's second moments: non-negative, as a running mean of squared gradients is, seeded and
// stateless like fill_random: u^2 / 100 for u uniform in [-1, 1), rounded to the dtype.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

void fill_adamw_second_moments(DType dtype, void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

}  // namespace cudalab::harness
