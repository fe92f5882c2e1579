// Sum reduction.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Sums in[0, n) into *out (a device pointer), asynchronously on `stream`. n == 0 writes 0. The
// float sum runs in fp32 and is deterministic (same inputs, same GPU: same bits); its error is
// that of a tree sum, at most about 2 log2(n) eps sum|x|. The int32 sum wraps around on
// overflow, like two's complement hardware. Any alignment of `in` is accepted.
// Scratch memory of reduce_sum_workspace_bytes(n) comes from the stream-ordered allocator
// (cudaMallocAsync) and is released on the stream. Throws cudalab::Error: invalid_argument for
// n < 0 or null pointers.
void reduce_sum(const float* in, std::int64_t n, float* out, cudaStream_t stream = nullptr);
void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, cudaStream_t stream = nullptr);
// fp32 inputs summed and returned in double (*out is a device double): the error is that of a
// double tree sum, about 2 log2(n) 2^-52 sum|x|, for the same memory traffic. Deterministic.
void reduce_sum(const float* in, std::int64_t n, double* out, cudaStream_t stream = nullptr);

// Scratch bytes any of the sums above needs for n elements (partial sums and ticket counters).
std::size_t reduce_sum_workspace_bytes(std::int64_t n);

// The same sums with the caller's scratch memory: `workspace` is device memory of at least
// reduce_sum_workspace_bytes(n) bytes, 16-byte aligned, which the sum may use until it is done on
// the stream. A smaller buffer is refused (invalid_argument).
void reduce_sum(const float* in, std::int64_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream = nullptr);
void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream = nullptr);
void reduce_sum(const float* in, std::int64_t n, double* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream = nullptr);

}  // namespace cudalab
