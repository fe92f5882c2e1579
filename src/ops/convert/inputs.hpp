// The convert op's inputs, seeded and stateless like fill_random (element i depends only on the
// seed and i): fp32 values that reach every rounding case of a conversion to fp16 or bf16, and
// 16-bit patterns of every kind for the way back. The input distribution does not apply: a
// conversion's cost does not depend on the values, and its check needs the edge cases mixed in.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

// fp32 inputs for conversion to `half_dtype` (f16 or bf16), with a random sign each: 1/8 from a
// list of edge values (zeros, infinities, NaNs, fp32 and 16-bit subnormal boundaries, the
// largest finite values and the ties next to them), 1/8 exact ties between two neighbouring
// 16-bit values (rounding to the even one), 1/8 one fp32 ulp either side of such a tie, 1/8
// 16-bit values (converted unchanged), and 1/2 random fp32 values over the exponents around the
// 16-bit range (fp16: 2^-27 to 2^17, so underflow to zero and overflow to infinity; bf16: every
// finite fp32 exponent, subnormals included).
void fill_narrowing_inputs(float* device, std::int64_t n, std::uint64_t seed, DType half_dtype, cudaStream_t stream);

// 16-bit inputs (fp16 or bf16 alike): uniformly random bit patterns, so zeros, subnormals,
// normals, infinities and NaNs all appear.
void fill_widening_inputs(void* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

}  // namespace cudalab::harness
