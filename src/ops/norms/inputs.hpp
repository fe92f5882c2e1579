// The normalization ops' inputs, seeded and stateless like fill_random (element i depends only on
// the seed, i and the shape). x and dy follow the requested distribution, except that
// large_magnitude (values near 1e30, whose squares overflow fp32) becomes the case that matters
// for a norm: rows far from zero relative to their spread, where a mean computed in fp32 loses
// the spread's digits. gamma, beta and the backward's saved statistics are realistic values
// whatever the distribution.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"
#include "ops/norms/variants.hpp"

namespace cudalab::harness {

// Large-magnitude rows: row r is kLargeRowOffset * (+1 for even r, -1 for odd) plus uniform noise
// in [-a, a), a = large_row_noise(dtype): 1 in fp32; in fp16 and bf16, 8 ulps of 1e4 (64 and 512),
// so that rounding to the dtype leaves a row more than a handful of distinct values.
inline constexpr double kLargeRowOffset = 1e4;
double large_row_noise(DType dtype);

// x, rows x features of `dtype`: fill_random's stream for `distribution`, or large-magnitude rows.
void fill_norm_x(DType dtype, void* device, std::int64_t count, std::int64_t features, std::uint64_t seed,
                 Distribution distribution, cudaStream_t stream);
// dy: fill_random's stream for `distribution` (uniform in place of large_magnitude: a gradient
// near 1e30 only overflows the fp16 column sums).
void fill_norm_dy(DType dtype, void* device, std::int64_t count, std::uint64_t seed, Distribution distribution,
                  cudaStream_t stream);
// gamma uniform in [0.5, 1.5), beta uniform in [-0.5, 0.5), rounded to `dtype`.
void fill_norm_gamma(DType dtype, void* device, std::int64_t count, std::uint64_t seed, cudaStream_t stream);
void fill_norm_beta(DType dtype, void* device, std::int64_t count, std::uint64_t seed, cudaStream_t stream);
// The backward's saved statistics (fp32, one per row), which cannot be computed from an x the
// fill does not see. mean: uniform in [-1, 1); for large_magnitude, the row's offset plus 5% of
// its noise amplitude. rstd: uniform in [0.5, 2]; for large_magnitude, divided by the row's noise
// amplitude (LayerNorm: xhat stays O(1)) or by kLargeRowOffset (RMSNorm: x * rstd stays O(1)).
void fill_norm_mean(float* device, std::int64_t rows, std::uint64_t seed, Distribution distribution, DType dtype,
                    cudaStream_t stream);
void fill_norm_rstd(float* device, std::int64_t rows, std::uint64_t seed, Distribution distribution, DType dtype,
                    norms_variants::Norm norm, cudaStream_t stream);

}  // namespace cudalab::harness
