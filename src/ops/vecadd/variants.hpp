// The vector-add ladder: one launcher per technique. Each takes device pointers and enqueues on
// `stream`; the library entry (vecadd.cu) and the registry (register.cu) call these.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::vecadd_variants {

// One element per thread, one block of 256 threads per 256 elements: the textbook kernel.
void one_per_thread(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// A grid sized to the resident capacity of the GPU; each thread strides through the array.
void grid_stride(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// 16-byte float4 loads and stores (a quarter of the memory instructions), one float4 per thread;
// scalar fallback when the three pointers are not 16-byte aligned.
void vectorized(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// The float4 kernel with four float4s per operand per thread, all loads issued before the first
// add: more bytes in flight per thread, a quarter as many blocks. On an H100 it is slower than
// one float4 per thread (docs/vecadd.md): enough warps are resident to hide the latency already.
void vectorized_unroll4(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// Seed 003's kernel: operands copied through shared memory behind a __syncthreads(). The values
// are used once, so staging adds shared-memory traffic and a barrier and saves nothing.
void shared_staging(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

// Baseline: thrust::transform with cuda::std::plus, what a CUDA programmer would write first.
void thrust_transform(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream);

}  // namespace cudalab::vecadd_variants
