// The FP8 quantization ladder's argument struct, launchers and the resident rung's capacity rule
// (the formulas: include/cudalab/quantize.hpp). The library entry (quantize.cpp) and the registry
// (register.cpp) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

namespace cudalab::quantize_variants {

template <typename T>
struct QuantizeArgs {
  using Element = T;
  const T* x = nullptr;
  __nv_fp8_e4m3* q = nullptr;
  float* scale = nullptr;
  float* amax = nullptr;
  std::int64_t n = 0;
  void* workspace = nullptr;  // the baseline's: cub_thrust_workspace_bytes<T>(n)
  std::size_t workspace_bytes = 0;
};

// quantize_fp8_scaled's: the scale is an input, amax the one float written beside q.
template <typename T>
struct ScaledQuantizeArgs {
  using Element = T;
  const T* x = nullptr;
  const float* scale = nullptr;
  __nv_fp8_e4m3* q = nullptr;
  float* amax = nullptr;
  std::int64_t n = 0;
  void* workspace = nullptr;  // the baseline's: cub_thrust_scaled_workspace_bytes<T>(n)
  std::size_t workspace_bytes = 0;
};

// Elements a thread moves at once: one 16-byte vector of q. A block's slice in the resident rung is
// a whole number of them, so every slice of an aligned x starts aligned.
constexpr int kChunk = 16;

// The most elements of `element_size` bytes the resident rung holds: one block per SM, each with
// the largest multiple of kChunk elements that fits its opt-in shared memory less 1 KiB (the block
// reduction's static shared memory).
inline std::int64_t resident_capacity(int sm_count, std::size_t shared_bytes_per_block, std::size_t element_size) {
  constexpr std::size_t kReserved = 1024;
  if (shared_bytes_per_block <= kReserved || sm_count <= 0) return 0;
  const auto per_block =
      static_cast<std::int64_t>((shared_bytes_per_block - kReserved) / element_size) / kChunk * kChunk;
  return static_cast<std::int64_t>(sm_count) * per_block;
}

// resident_capacity on the current device (its SM count and opt-in shared memory per block).
std::int64_t resident_capacity_here(std::size_t element_size);

// Two passes: an amax kernel (16-byte loads, a block's max, one atomicMax a block on the float's
// bits), then a quantize kernel that reads amax, computes the scales and converts in pairs.
template <typename T>
void two_pass(const QuantizeArgs<T>& args, cudaStream_t stream);

// One read: a cooperative kernel of one block per SM copies its slice of x into shared memory while
// taking its max, meets the grid at a barrier once every block's atomicMax has landed, and converts
// from shared memory. Only for 16-byte aligned x and q and n <= resident_capacity(...).
template <typename T>
void resident(const QuantizeArgs<T>& args, cudaStream_t stream);

// The baseline, the same two passes from CCCL's building blocks: cub::DeviceReduce::TransformReduce
// for the amax, one thrust::for_each_n element for the scales, thrust::transform for q. Its workspace
// holds the multiplier (448 / amax) and CUB's temporary storage.
template <typename T>
std::size_t cub_thrust_workspace_bytes(std::int64_t n);
template <typename T>
void cub_thrust(const QuantizeArgs<T>& args, cudaStream_t stream);

// Delayed scaling in one pass: each thread converts its chunks with the given scale's multiplier
// while taking their max (a block's max, one atomicMax a block); x read once.
template <typename T>
void one_pass_scaled(const ScaledQuantizeArgs<T>& args, cudaStream_t stream);

// Its baseline from CCCL: cub::DeviceReduce::TransformReduce for the amax, thrust::transform for q
// (x read twice).
template <typename T>
std::size_t cub_thrust_scaled_workspace_bytes(std::int64_t n);
template <typename T>
void cub_thrust_scaled(const ScaledQuantizeArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::quantize_variants
