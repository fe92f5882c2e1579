// Indexing and launch-shape helpers shared by every kernel. All element indices are 64-bit: a
// 32-bit `blockIdx.x * blockDim.x + threadIdx.x` wraps past 2^31 elements.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_runtime.h>

#include "core/launch_attributes.hpp"
#include "cudalab/error.hpp"

namespace cudalab {

template <typename T>
__host__ __device__ constexpr T ceil_div(T numerator, T denominator) {
  return (numerator + denominator - 1) / denominator;
}

// f(std::bool_constant<flag>...) for runtime flags: picks a kernel instance by its bool template
// parameters without a branch written out per combination, e.g.
//   auto* kernel = with_flags([](auto a, auto b) { return my_kernel<T, a, b>; }, a_transposed, b_transposed);
// Every combination is instantiated; f must return one type for all of them.
template <typename F>
decltype(auto) with_flags(F&& f) {
  return f();
}
template <typename F, typename... Flags>
decltype(auto) with_flags(F&& f, bool first, Flags... rest) {
  if (first) return with_flags([&](auto... more) -> decltype(auto) { return f(std::true_type{}, more...); }, rest...);
  return with_flags([&](auto... more) -> decltype(auto) { return f(std::false_type{}, more...); }, rest...);
}

__device__ __forceinline__ std::int64_t global_thread_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ std::int64_t global_thread_count() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// Blocks for a grid-stride kernel: enough resident blocks to fill every SM, no more (extra blocks
// only add scheduling work), and never more than the work needs. `dynamic_shared_bytes` is what
// each block asks for at launch (it lowers how many blocks an SM holds).
template <typename Kernel>
int resident_grid_size(Kernel kernel, int block_size, std::int64_t work_items, std::size_t dynamic_shared_bytes = 0) {
  const int blocks_per_sm =
      resident_blocks_per_sm(reinterpret_cast<const void*>(kernel), block_size, dynamic_shared_bytes);
  const std::int64_t needed = ceil_div<std::int64_t>(work_items, block_size);
  const std::int64_t resident = static_cast<std::int64_t>(current_gpu().sm_count) * blocks_per_sm;
  return static_cast<int>(needed < resident ? (needed > 0 ? needed : 1) : resident);
}

}  // namespace cudalab
