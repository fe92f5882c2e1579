// Prefix sums (scans) of int32 and fp32 arrays on the GPU.
//   inclusive: out[i] = in[0] + ... + in[i]
//   exclusive: out[i] = in[0] + ... + in[i-1], out[0] = 0
// int32 sums wrap around (two's complement), as CUB's do. fp32 sums are added in an order of the
// implementation's choosing, so results can differ from a sequential loop by rounding (within
// about log2(n) * eps * (|in[0]| + ... + |in[i]|)).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Scans n elements on `stream`, asynchronously. in and out are device pointers; out may equal in
// (an in-place scan), partial overlap is undefined. n == 0 does nothing. Any alignment is
// accepted (16-byte-aligned arrays take the vectorized path). Scratch memory (about 8 bytes per
// 4096 elements) comes from the stream-ordered allocator (cudaMallocAsync) and is released on the
// stream when the scan is done.
// Throws cudalab::Error: invalid_argument for n < 0 or a null pointer with n > 0; out_of_memory
// when the scratch memory cannot be had; cuda when a launch fails.
void inclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, cudaStream_t stream = nullptr);
void inclusive_scan(const float* in, float* out, std::int64_t n, cudaStream_t stream = nullptr);
void exclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, cudaStream_t stream = nullptr);
void exclusive_scan(const float* in, float* out, std::int64_t n, cudaStream_t stream = nullptr);

// Bytes of scratch memory a scan of n elements needs (either kind, either type); 0 for n == 0.
std::size_t scan_workspace_bytes(std::int64_t n);

// The same scans with the caller's scratch memory: `workspace` is device memory of at least
// scan_workspace_bytes(n) bytes, 16-byte aligned, which the scan may use until it is done on the
// stream (it may not be shared with concurrent work). Throws invalid_argument when it is smaller,
// null or misaligned.
void inclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream = nullptr);
void inclusive_scan(const float* in, float* out, std::int64_t n, void* workspace, std::size_t workspace_bytes,
                    cudaStream_t stream = nullptr);
void exclusive_scan(const std::int32_t* in, std::int32_t* out, std::int64_t n, void* workspace,
                    std::size_t workspace_bytes, cudaStream_t stream = nullptr);
void exclusive_scan(const float* in, float* out, std::int64_t n, void* workspace, std::size_t workspace_bytes,
                    cudaStream_t stream = nullptr);

}  // namespace cudalab
