// The softmax ops' inputs, seeded and stateless like fill_random. Rows come in four kinds, by row
// index r % 4, so every test problem of four rows or more holds each kind:
//   0: the distribution's values as drawn;
//   1: every logit + 1e4 and 3: every logit - 1e4 (large magnitude: exp(x) overflows or underflows
//      in fp32 unless the row max is subtracted first);
//   2: one column (picked by the seed and r) set to 48, at least 30 above every other logit the
//      distributions draw (one value dominates: the others' probabilities are below e^-30).
// Distribution::large_magnitude rows stay as drawn: they are large already (1e30-1e32; fp16's
// 1024-65504), and an offset would overflow fp16.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"

namespace cudalab::harness {

inline constexpr float kSoftmaxRowOffset = 1e4f;
inline constexpr float kSoftmaxDominantLogit = 48.0f;

// The column of row `row` that dominates when the row is of kind 2.
__host__ __device__ inline std::int64_t softmax_dominant_column(std::uint64_t seed, std::int64_t row,
                                                                std::int64_t features) {
  return static_cast<std::int64_t>(mix64(seed ^ mix64(~static_cast<std::uint64_t>(row))) %
                                   static_cast<std::uint64_t>(features));
}

// The logit at (row, column) given the value the distribution drew there.
__host__ __device__ inline float softmax_test_logit(float drawn, std::int64_t row, std::int64_t column,
                                                    std::int64_t features, std::uint64_t seed,
                                                    Distribution distribution) {
  if (distribution == Distribution::large_magnitude) return drawn;
  switch (row % 4) {
    case 1: return drawn + kSoftmaxRowOffset;
    case 2: return column == softmax_dominant_column(seed, row, features) ? kSoftmaxDominantLogit : drawn;
    case 3: return drawn - kSoftmaxRowOffset;
    default: return drawn;
  }
}

// x of the forward: fill_random's values for `dtype` (f32, bf16, f16), then the row kinds above,
// rounded to the dtype.
void fill_softmax_logits(DType dtype, void* device, std::int64_t rows, std::int64_t features, std::uint64_t seed,
                         Distribution distribution, cudaStream_t stream);

// y of the backward: a real softmax output, row by row, of logits drawn as x's are (fill_random's
// values for `dtype`, then the row kinds), computed in fp32 with the max subtracted and rounded to
// `dtype`. dy takes plain fill_random.
void fill_softmax_outputs(DType dtype, void* device, std::int64_t rows, std::int64_t features, std::uint64_t seed,
                          Distribution distribution, cudaStream_t stream);

}  // namespace cudalab::harness
