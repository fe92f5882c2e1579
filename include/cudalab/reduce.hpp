// Sum reduction.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Sums in[0, n) into *out (a device pointer), asynchronously on `stream`. n == 0 writes 0. The
// float sum runs in fp32 and is deterministic (same inputs, same GPU: same bits); its error is
// that of a tree sum, at most about 2 log2(n) eps sum|x|. The int32 sum wraps around on
// overflow, like two's complement hardware. Any alignment of `in` is accepted.
// A workspace of about n/32 bytes (n/16 for the double sum) comes from the stream-ordered
// allocator (cudaMallocAsync) and is released on the stream. Throws cudalab::Error:
// invalid_argument for n < 0 or null pointers.
void reduce_sum(const float* in, std::int64_t n, float* out, cudaStream_t stream = nullptr);
void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, cudaStream_t stream = nullptr);
// fp32 inputs summed and returned in double (*out is a device double): the error is that of a
// double tree sum, about 2 log2(n) 2^-52 sum|x|, for the same memory traffic. Deterministic.
void reduce_sum(const float* in, std::int64_t n, double* out, cudaStream_t stream = nullptr);

}  // namespace cudalab
