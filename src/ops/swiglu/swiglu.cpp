#include "cudalab/swiglu.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/swiglu/variants.hpp"

namespace cudalab {

namespace v = swiglu_variants;

// The vectorized rungs at every size: one pass, 16-byte accesses where the arrays allow.
template <typename T, typename>
void swiglu(const T* gate, const T* up, T* y, std::int64_t n, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "swiglu: n must be >= 0, got " + std::to_string(n));
  require_arrays("swiglu", {{gate, n, sizeof(T), "gate"}, {up, n, sizeof(T), "up"}}, {{y, n, sizeof(T), "y"}});
  v::vectorized(v::SwigluArgs<T>{gate, up, y, n}, stream);
}

template <typename T, typename>
void swiglu_backward(const T* gate, const T* up, const T* dy, T* dgate, T* dup, std::int64_t n, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "swiglu_backward: n must be >= 0, got " + std::to_string(n));
  require_arrays("swiglu_backward", {{gate, n, sizeof(T), "gate"}, {up, n, sizeof(T), "up"}, {dy, n, sizeof(T), "dy"}},
                 {{dgate, n, sizeof(T), "dgate"}, {dup, n, sizeof(T), "dup"}});
  v::backward_vectorized(v::SwigluBackwardArgs<T>{gate, up, dy, dgate, dup, n}, stream);
}

#define CUDALAB_SWIGLU_ENTRIES(T, a, b)                                     \
  template void swiglu(const T*, const T*, T*, std::int64_t, cudaStream_t); \
  template void swiglu_backward(const T*, const T*, const T*, T*, T*, std::int64_t, cudaStream_t);
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_SWIGLU_ENTRIES, , )

}  // namespace cudalab
