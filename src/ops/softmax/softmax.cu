#include "cudalab/softmax.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/softmax/variants.hpp"

namespace cudalab {
namespace {

namespace v = softmax_variants;

// Validates the sizes; false when there is nothing to do.
bool has_work(const char* call, std::int64_t rows, std::int64_t features) {
  CUDALAB_REQUIRE(rows >= 0 && features >= 0, std::string(call) + ": rows and features must be >= 0, got " +
                                                  std::to_string(rows) + " and " + std::to_string(features));
  return checked_product(call, "rows * features", {rows, features}) > 0;
}

// Rows of up to 16384 features take the register-resident rung (one read; up to 512 threads per
// row, so blocks share an SM and one's loads overlap another's reductions): the bench's choice at 1024-16384 features
// (docs/softmax.md). Wider rows that the cluster rung runs take it (one read, the next row prefetched while this one is
// reduced; ahead of online at 65536 and 262144 features). Beyond that the register rung still holds rows up to 32768
// (one block of 1024 threads per SM, no such overlap), then the online rung (two reads).
template <typename T>
void forward(const T* x, T* y, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  if (!has_work("softmax", rows, features)) return;
  const std::int64_t n = rows * features;
  require_arrays("softmax", {{x, n, sizeof(T), "x"}}, {{y, n, sizeof(T), "y"}});
  v::SoftmaxArgs<T> args;
  args.x = x;
  args.y = y;
  args.rows = rows;
  args.features = features;
  constexpr std::int64_t kNarrow = 16384;
  if (features <= kNarrow) return v::vectorized(args, stream);
  const bool clusters = is_aligned16(x) && is_aligned16(y) &&
                        v::cluster_limits(features, sizeof(T), current_gpu().compute_capability).empty();
  if (clusters) return v::cluster(args, stream);
  if (v::vectorized_limits(features).empty()) return v::vectorized(args, stream);
  v::online(args, stream);
}

// The fused rung (one read of y and dy) wherever it holds the row (3077-3132 GB/s in the bench at
// 7eeb1e5 up to 16384 features, against 1663-3088 for two_pass), the two-pass rung beyond.
template <typename T>
void backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  if (!has_work("softmax_backward", rows, features)) return;
  const std::int64_t n = rows * features;
  // y and dy may be one array; dx overlaps neither.
  require_arrays("softmax_backward", {{y, n, sizeof(T), "y"}, {dy, n, sizeof(T), "dy"}}, {{dx, n, sizeof(T), "dx"}});
  v::SoftmaxBackwardArgs<T> args;
  args.y = y;
  args.dy = dy;
  args.dx = dx;
  args.rows = rows;
  args.features = features;
  if (v::fused_backward_limits(features).empty()) return v::backward_fused(args, stream);
  v::backward_two_pass(args, stream);
}

}  // namespace

template <typename T, typename>
void softmax(const T* x, T* y, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  forward(x, y, rows, features, stream);
}

template <typename T, typename>
void softmax_backward(const T* y, const T* dy, T* dx, std::int64_t rows, std::int64_t features, cudaStream_t stream) {
  backward(y, dy, dx, rows, features, stream);
}

#define CUDALAB_SOFTMAX_ENTRIES(T, a, b)                                         \
  template void softmax(const T*, T*, std::int64_t, std::int64_t, cudaStream_t); \
  template void softmax_backward(const T*, const T*, T*, std::int64_t, std::int64_t, cudaStream_t);
CUDALAB_SOFTMAX_ELEMENTS(CUDALAB_SOFTMAX_ENTRIES, , )

}  // namespace cudalab
