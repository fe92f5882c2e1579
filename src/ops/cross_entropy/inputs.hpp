// The cross-entropy ops' inputs beyond the logits (which are the softmax ops' rows of four kinds,
// ops/softmax/inputs.hpp): a target class per row, seeded and stateless like fill_random, with one
// row in eight ignored; and, for the backward, an lse per row from which no gradient overflows.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "harness/random.hpp"

namespace cudalab::harness {

inline constexpr std::int64_t kCrossEntropyIgnoreIndex = -100;

// Row `row`'s target: the ignored index for one row in eight, else a class in [0, vocab).
__host__ __device__ inline std::int64_t cross_entropy_test_target(std::uint64_t seed, std::int64_t row,
                                                                  std::int64_t vocab) {
  const std::uint64_t draw = mix64(seed ^ mix64(static_cast<std::uint64_t>(row)));
  if (draw % 8 == 7) return kCrossEntropyIgnoreIndex;
  return static_cast<std::int64_t>((draw / 8) % static_cast<std::uint64_t>(vocab));
}

// `rows` int64 targets as above.
void fill_cross_entropy_targets(void* device, std::int64_t rows, std::int64_t vocab, std::uint64_t seed,
                                cudaStream_t stream);

// `rows` fp32 values in [log(vocab) + 3, log(vocab) + 5): above the log-sum-exp of any row of
// fill_random's normal or uniform values, so exp(x - lse) stays below 1.
void fill_cross_entropy_lse(void* device, std::int64_t rows, std::int64_t vocab, std::uint64_t seed,
                            cudaStream_t stream);

}  // namespace cudalab::harness
