// Matrix transpose, fp32: out = inᵀ.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Transposes the row-major rows x cols matrix `in` into the row-major cols x rows matrix `out`,
// on `stream`, asynchronously. in and out are device pointers to distinct, non-overlapping
// arrays (an in-place transpose is not supported). rows == 0 or cols == 0 does nothing; sizes are
// 64-bit and need not be multiples of anything.
// Throws cudalab::Error (invalid_argument for a negative size, a null pointer with data to move,
// or in == out; cuda when the launch fails).
void transpose(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream = nullptr);

}  // namespace cudalab
