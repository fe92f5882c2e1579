#include "cudalab/reduce.hpp"

#include <algorithm>
#include <type_traits>

#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab {
namespace {

// Chosen by measurement on the H100 (docs/reduce.md): int32 takes `tile_atomic`, the fastest
// verified variant (integer atomics give the same bits in any order); fp32, and fp32 summed in
// double, take `tile_deterministic`, the fastest with the same bits on every run (float atomics
// add in any order).
// `scratch` is the caller's workspace or the stream-ordered allocator.
template <typename T, typename Out>
void reduce_sum_impl(const T* in, std::int64_t n, Out* out, Workspace& scratch, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "reduce_sum: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(out != nullptr, "reduce_sum: out must be a device pointer, got null");
  CUDALAB_REQUIRE(n == 0 || in != nullptr, "reduce_sum: in must be a device pointer, got null");
  constexpr bool kDoubleSum = !std::is_same_v<T, Out>;
  reduce_variants::ReduceArgs<T, Out> args{in, n, out};
  args.workspace_bytes = kDoubleSum ? reduce_variants::workspace_bytes_f64(n) : reduce_variants::workspace_bytes<T>(n);
  args.workspace = scratch.reserve(args.workspace_bytes);
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.workspace, 0, reduce_variants::counter_bytes(n), stream));  // tickets
  if constexpr (kDoubleSum) {
    reduce_variants::tile_deterministic_f64(args, stream);
  } else if constexpr (std::is_floating_point_v<T>) {
    reduce_variants::tile_deterministic(args, stream);
  } else {
    reduce_variants::tile_atomic(args, stream);
  }
}

// The stream-ordered allocator's scratch, handed back on the stream when the call ends (also when
// a launch throws).
template <typename T, typename Out>
void reduce_sum_allocating(const T* in, std::int64_t n, Out* out, cudaStream_t stream) {
  StreamOrderedWorkspace scratch(stream);
  reduce_sum_impl(in, n, out, scratch, stream);
}

// Every sum needs its tickets, so a null workspace is refused at once, before the size query
// (CUB's) touches the GPU.
template <typename T, typename Out>
void reduce_sum_with(const T* in, std::int64_t n, Out* out, void* workspace, std::size_t workspace_bytes,
                     cudaStream_t stream) {
  CUDALAB_REQUIRE(workspace != nullptr, "reduce_sum: workspace must be a device pointer, got null");
  CallerWorkspace scratch(workspace, workspace_bytes, "reduce_sum", "reduce_sum_workspace_bytes");
  reduce_sum_impl(in, n, out, scratch, stream);
}

}  // namespace

std::size_t reduce_sum_workspace_bytes(std::int64_t n) {
  CUDALAB_REQUIRE(n >= 0, "reduce_sum_workspace_bytes: n must be >= 0, got " + std::to_string(n));
  return std::max({reduce_variants::workspace_bytes<float>(n), reduce_variants::workspace_bytes<std::int32_t>(n),
                   reduce_variants::workspace_bytes_f64(n)});
}

void reduce_sum(const float* in, std::int64_t n, float* out, cudaStream_t stream) {
  reduce_sum_allocating(in, n, out, stream);
}

void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, cudaStream_t stream) {
  reduce_sum_allocating(in, n, out, stream);
}

void reduce_sum(const float* in, std::int64_t n, double* out, cudaStream_t stream) {
  reduce_sum_allocating(in, n, out, stream);
}

void reduce_sum(const float* in, std::int64_t n, float* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  reduce_sum_with(in, n, out, workspace, workspace_bytes, stream);
}

void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  reduce_sum_with(in, n, out, workspace, workspace_bytes, stream);
}

void reduce_sum(const float* in, std::int64_t n, double* out, void* workspace, std::size_t workspace_bytes,
                cudaStream_t stream) {
  reduce_sum_with(in, n, out, workspace, workspace_bytes, stream);
}

}  // namespace cudalab
