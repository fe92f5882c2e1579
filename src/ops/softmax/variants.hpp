// The softmax ladders over the last dimension of a row-major [rows, features] array, forward
// (y = softmax(x)) and backward (dx = y * (dy - sum_j y_j dy_j)), for float, __half and
// __nv_bfloat16 with fp32 arithmetic inside. Each launcher is templated on the element type and
// takes the op's argument struct; the library entry (softmax.cu) and the registry (register.cpp)
// fill the same structs. The `*_limits` functions say, in one sentence, why a rung cannot run a
// shape ("" when it can); register.cpp's can_implement, the launchers' checks and the library's
// choice all read them.
//
// Which regime each forward rung targets:
//   three_pass     the unfused baseline: three kernels (row max, row sum of exp, normalize), x read
//                  three times from memory; any width.
//   warp_per_row   narrow rows: one fused kernel, a warp per row, shuffle reductions; three scalar
//                  passes over x, the re-reads served by L1/L2 at best; any width.
//   block_per_row  wide rows: one block per row with block reductions; three scalar passes; any
//                  width.
//   vectorized     rows that fit on chip (<= 32768 features): the row held in registers, 16-byte
//                  loads (scalar when rows are not 16-byte aligned), x read once; a lane group, a
//                  warp or a block per row by width.
//   online         long rows that do not fit on chip: running max and rescaled sum in one pass
//                  (Milakov & Gimelshein 2018), then a pass that writes y: x read twice, any width.
//   cluster        very wide rows (32k-262k) on Hopper: a row split over 2-8 CTAs of a cluster,
//                  partial (max, sum) exchanged through distributed shared memory, x read once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab::softmax_variants {

// y = softmax(x) row by row. x and y are device arrays of rows * features elements that do not
// overlap, aligned to their element; rows of 16-byte aligned arrays whose length is a multiple of
// 16 bytes are read in 16-byte vectors where a rung can.
template <typename T>
struct SoftmaxArgs {
  using Element = T;
  const T* x = nullptr;
  T* y = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  void* workspace = nullptr;  // three_pass only: three_pass_workspace_bytes(rows)
  std::size_t workspace_bytes = 0;
};

// dx = y * (dy - sum_j(y_j dy_j)) row by row: y is the forward's output. dx overlaps neither y nor dy.
template <typename T>
struct SoftmaxBackwardArgs {
  using Element = T;
  const T* y = nullptr;
  const T* dy = nullptr;
  T* dx = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
};

// The widest rows the register-resident rungs hold: 1024 threads x 32 fp32 values (forward) and
// x 16 values of each of y and dy (backward); the cluster rung holds 8 CTAs' worth.
inline constexpr std::int64_t kVectorizedMaxFeatures = 32768;
inline constexpr std::int64_t kFusedBackwardMaxFeatures = 16384;
inline constexpr std::int64_t kClusterMaxFeatures = 262144;

std::string vectorized_limits(std::int64_t features);
std::string fused_backward_limits(std::int64_t features);
// `element_size` is sizeof(T); `compute_capability` major * 10 + minor.
std::string cluster_limits(std::int64_t features, std::size_t element_size, int compute_capability);

// Forward rungs (see the table above).
template <typename T>
void three_pass(const SoftmaxArgs<T>& args, cudaStream_t stream);
std::size_t three_pass_workspace_bytes(std::int64_t rows);  // the rows' max and sum, fp32
template <typename T>
void warp_per_row(const SoftmaxArgs<T>& args, cudaStream_t stream);
template <typename T>
void block_per_row(const SoftmaxArgs<T>& args, cudaStream_t stream);
template <typename T>
void vectorized(const SoftmaxArgs<T>& args, cudaStream_t stream);
template <typename T>
void online(const SoftmaxArgs<T>& args, cudaStream_t stream);
template <typename T>
void cluster(const SoftmaxArgs<T>& args, cudaStream_t stream);

// Backward rungs.
//   two_pass  one block per row, scalar loads: a pass for the dot product sum_j(y_j dy_j), a pass
//             that writes dx; y and dy read twice (the second time from L1/L2 at best); any width.
//   fused     y and dy held in registers, 16-byte loads (scalar for unaligned rows), a lane group,
//             a warp or a block per row by width; read once; <= 16384 features.
template <typename T>
void backward_two_pass(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream);
template <typename T>
void backward_fused(const SoftmaxBackwardArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::softmax_variants
