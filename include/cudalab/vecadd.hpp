// Element-wise vector addition, c[i] = a[i] + b[i], in fp32.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Adds n elements on `stream`, asynchronously. a, b and c are device pointers (c may alias a or
// b exactly; partial overlap is undefined). n == 0 does nothing. Any alignment is accepted:
// 16-byte-aligned arrays take the vectorized kernel, others a scalar one.
// Throws cudalab::Error (invalid_argument for n < 0 or a null pointer with n > 0; cuda when the
// launch fails).
void vecadd(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream = nullptr);

}  // namespace cudalab
