// The vector-add ladder: one launcher per technique, each templated on the element type (float,
// __half, __nv_bfloat16: the half types add in their own precision, two lanes per instruction
// where the compiler pairs them, as __hadd2 would) and taking the op's argument struct. The library entry (vecadd.cpp)
// and the registry (register.cpp) fill the same struct.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab::vecadd_variants {

// c = a + b over n elements; a, b and c are device pointers of any alignment.
template <typename T>
struct VecaddArgs {
  using Element = T;
  const T* a = nullptr;
  const T* b = nullptr;
  T* c = nullptr;
  std::int64_t n = 0;
};

// One element per thread, one block of 256 threads per 256 elements: the textbook kernel.
template <typename T>
void one_per_thread(const VecaddArgs<T>& args, cudaStream_t stream);

// A grid sized to the resident capacity of the GPU; each thread strides through the array.
template <typename T>
void grid_stride(const VecaddArgs<T>& args, cudaStream_t stream);

// 16-byte vector loads and stores (a quarter of the memory instructions for fp32), one vector per
// thread; the grid-stride kernel when the three pointers are not 16-byte aligned.
template <typename T>
void vectorized(const VecaddArgs<T>& args, cudaStream_t stream);

// The vector kernel with four vectors per operand per thread, all loads issued before the first
// add: more bytes in flight per thread, a quarter as many blocks. On an H100 it is slower than
// one vector per thread (docs/vecadd.md): enough warps are resident to hide the latency already.
template <typename T>
void vectorized_unroll4(const VecaddArgs<T>& args, cudaStream_t stream);

// Operands copied through shared memory behind a __syncthreads(), as one tutorial teaches. The
// values are used once, so staging adds shared-memory traffic and a barrier and saves nothing.
template <typename T>
void shared_staging(const VecaddArgs<T>& args, cudaStream_t stream);

// Baseline: thrust::transform with cuda::std::plus, what a CUDA programmer would write first.
template <typename T>
void thrust_transform(const VecaddArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::vecadd_variants
