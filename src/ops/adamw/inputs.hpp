// AdamW's second moments: non-negative, as a running mean of squared gradients is, seeded and
// stateless like fill_random: (u^2 + 0.01) / 100 for u uniform in [-1, 1), rounded to the dtype.
// The floor keeps them above f16's smallest normal (6.1e-5): below it a stored moment (the
// baseline's, as torch's fp16 steps store theirs) keeps a fixed absolute spacing, not a relative
// precision, and the update m / sqrt(v) grows without a bound a check could state.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

void fill_adamw_second_moments(DType dtype, void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

}  // namespace cudalab::harness
