#include "cudalab/reduce.hpp"

#include <type_traits>

#include "cudalab/error.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab {
namespace {

// Chosen by measurement on the H100 (docs/reduce.md): int32 takes `tile_atomic`, the fastest
// verified variant (integer atomics give the same bits in any order); fp32, and fp32 summed in
// double, take `tile_deterministic`, the fastest with the same bits on every run (float atomics
// add in any order).
template <typename T, typename Out>
void reduce_sum_impl(const T* in, std::int64_t n, Out* out, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "reduce_sum: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(out != nullptr, "reduce_sum: out must be a device pointer, got null");
  CUDALAB_REQUIRE(n == 0 || in != nullptr, "reduce_sum: in must be a device pointer, got null");
  constexpr bool kDoubleSum = !std::is_same_v<T, Out>;
  const std::size_t bytes =
      kDoubleSum ? reduce_variants::workspace_bytes_f64(n) : reduce_variants::workspace_bytes<T>(n);
  void* workspace = nullptr;
  CUDALAB_CUDA_CHECK(cudaMallocAsync(&workspace, bytes, stream));
  // Released on the stream even when a launch below throws.
  struct Release {
    void* pointer;
    cudaStream_t stream;
    ~Release() { cudaFreeAsync(pointer, stream); }
  } release{workspace, stream};
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(workspace, 0, reduce_variants::counter_bytes(n), stream));  // ticket counters
  if constexpr (kDoubleSum) {
    reduce_variants::tile_deterministic_f64(in, n, out, workspace, stream);
  } else if constexpr (std::is_floating_point_v<T>) {
    reduce_variants::tile_deterministic(in, n, out, workspace, stream);
  } else {
    reduce_variants::tile_atomic(in, n, out, workspace, stream);
  }
}

}  // namespace

void reduce_sum(const float* in, std::int64_t n, float* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

void reduce_sum(const std::int32_t* in, std::int64_t n, std::int32_t* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

void reduce_sum(const float* in, std::int64_t n, double* out, cudaStream_t stream) {
  reduce_sum_impl(in, n, out, stream);
}

}  // namespace cudalab
