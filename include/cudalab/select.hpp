// Stream compaction (selection) of int32 arrays on the GPU: the elements x of in[0, n) with
// x >= threshold, copied to out in their original order, and their number, as
// cub::DeviceSelect::If computes with that predicate.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// Selects on `stream`, asynchronously. in, out and count are device pointers; out holds room for
// n elements and must not overlap in; only out[0, *count) is written. *count (int64) is written
// on the device, 0 when n == 0 (in and out may then be null). Any alignment of in (16-byte-aligned
// arrays take the vectorized loads). Scratch memory (about 8 bytes per 8192 elements) comes from
// the stream-ordered allocator (cudaMallocAsync) and is released on the stream when the call is
// done. Throws cudalab::Error: invalid_argument for n < 0, a null count, or a null in or out with
// n > 0; out_of_memory when the scratch memory cannot be had; cuda when a launch fails.
void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, cudaStream_t stream = nullptr);

// Bytes of scratch memory a selection of n elements needs; 0 for n == 0.
std::size_t select_workspace_bytes(std::int64_t n);

// The same with the caller's scratch memory: `workspace` is device memory of at least
// select_workspace_bytes(n) bytes, 16-byte aligned, which the call may use until it is done on the
// stream (not shared with concurrent work). Throws invalid_argument when it is smaller, null or
// misaligned (n > 0).
void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, void* workspace, std::size_t workspace_bytes, cudaStream_t stream = nullptr);

}  // namespace cudalab
