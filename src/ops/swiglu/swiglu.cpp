#include "cudalab/swiglu.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/swiglu/variants.hpp"

namespace cudalab {

namespace v = swiglu_variants;

namespace {

// The vectorized rungs at every size: one pass, 16-byte accesses where the arrays allow.
template <typename T>
void forward(const char* call, v::GluActivation activation, const T* gate, const T* up, T* y, std::int64_t n,
             cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, std::string(call) + ": n must be >= 0, got " + std::to_string(n));
  require_arrays(call, {{gate, n, sizeof(T), "gate"}, {up, n, sizeof(T), "up"}}, {{y, n, sizeof(T), "y"}});
  const v::SwigluArgs<T> args{gate, up, y, n, nullptr, activation, {}};
  v::vectorized(args, stream);
}

template <typename T>
void backward(const char* call, v::GluActivation activation, const T* gate, const T* up, const T* dy, T* dgate, T* dup,
              std::int64_t n, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, std::string(call) + ": n must be >= 0, got " + std::to_string(n));
  require_arrays(call, {{gate, n, sizeof(T), "gate"}, {up, n, sizeof(T), "up"}, {dy, n, sizeof(T), "dy"}},
                 {{dgate, n, sizeof(T), "dgate"}, {dup, n, sizeof(T), "dup"}});
  const v::SwigluBackwardArgs<T> args{gate, up, dy, dgate, dup, n, nullptr, activation, {}};
  v::backward_vectorized(args, stream);
}

// The packed forms: x's rows hold gate's width, then up's; y and dy dense; dx in x's layout.
// rows * width, the elements of y; x holds twice as many.
std::int64_t packed_elements(const char* call, std::int64_t rows, std::int64_t width) {
  CUDALAB_REQUIRE(rows >= 0 && width >= 0, std::string(call) + ": rows and width must be >= 0, got " +
                                               std::to_string(rows) + " and " + std::to_string(width));
  return checked_product(call, "rows * 2 * width", {rows, width, 2}) / 2;
}

template <typename T>
void forward_packed(const char* call, v::GluActivation activation, const T* x, T* y, std::int64_t rows,
                    std::int64_t width, cudaStream_t stream) {
  const std::int64_t n = packed_elements(call, rows, width);
  require_arrays(call, {{x, 2 * n, sizeof(T), "x"}}, {{y, n, sizeof(T), "y"}});
  const v::SwigluArgs<T> args{x, x + width, y, n, nullptr, activation, {width, 2 * width}};
  v::vectorized(args, stream);
}

template <typename T>
void backward_packed(const char* call, v::GluActivation activation, const T* x, const T* dy, T* dx, std::int64_t rows,
                     std::int64_t width, cudaStream_t stream) {
  const std::int64_t n = packed_elements(call, rows, width);
  require_arrays(call, {{x, 2 * n, sizeof(T), "x"}, {dy, n, sizeof(T), "dy"}}, {{dx, 2 * n, sizeof(T), "dx"}});
  const v::SwigluBackwardArgs<T> args{x, x + width, dy, dx, dx + width, n, nullptr, activation, {width, 2 * width}};
  v::backward_vectorized(args, stream);
}

}  // namespace

template <typename T, typename>
void swiglu(const T* gate, const T* up, T* y, std::int64_t n, cudaStream_t stream) {
  forward("swiglu", v::GluActivation::silu, gate, up, y, n, stream);
}

template <typename T, typename>
void swiglu_backward(const T* gate, const T* up, const T* dy, T* dgate, T* dup, std::int64_t n, cudaStream_t stream) {
  backward("swiglu_backward", v::GluActivation::silu, gate, up, dy, dgate, dup, n, stream);
}

template <typename T, typename>
void geglu(const T* gate, const T* up, T* y, std::int64_t n, cudaStream_t stream) {
  forward("geglu", v::GluActivation::gelu_tanh, gate, up, y, n, stream);
}

template <typename T, typename>
void geglu_backward(const T* gate, const T* up, const T* dy, T* dgate, T* dup, std::int64_t n, cudaStream_t stream) {
  backward("geglu_backward", v::GluActivation::gelu_tanh, gate, up, dy, dgate, dup, n, stream);
}

template <typename T, typename>
void swiglu_packed(const T* x, T* y, std::int64_t rows, std::int64_t width, cudaStream_t stream) {
  forward_packed("swiglu_packed", v::GluActivation::silu, x, y, rows, width, stream);
}

template <typename T, typename>
void swiglu_packed_backward(const T* x, const T* dy, T* dx, std::int64_t rows, std::int64_t width,
                            cudaStream_t stream) {
  backward_packed("swiglu_packed_backward", v::GluActivation::silu, x, dy, dx, rows, width, stream);
}

template <typename T, typename>
void geglu_packed(const T* x, T* y, std::int64_t rows, std::int64_t width, cudaStream_t stream) {
  forward_packed("geglu_packed", v::GluActivation::gelu_tanh, x, y, rows, width, stream);
}

template <typename T, typename>
void geglu_packed_backward(const T* x, const T* dy, T* dx, std::int64_t rows, std::int64_t width, cudaStream_t stream) {
  backward_packed("geglu_packed_backward", v::GluActivation::gelu_tanh, x, dy, dx, rows, width, stream);
}

#define CUDALAB_SWIGLU_ENTRIES(T, a, b)                                                                   \
  template void swiglu(const T*, const T*, T*, std::int64_t, cudaStream_t);                               \
  template void swiglu_backward(const T*, const T*, const T*, T*, T*, std::int64_t, cudaStream_t);        \
  template void geglu(const T*, const T*, T*, std::int64_t, cudaStream_t);                                \
  template void geglu_backward(const T*, const T*, const T*, T*, T*, std::int64_t, cudaStream_t);         \
  template void swiglu_packed(const T*, T*, std::int64_t, std::int64_t, cudaStream_t);                    \
  template void swiglu_packed_backward(const T*, const T*, T*, std::int64_t, std::int64_t, cudaStream_t); \
  template void geglu_packed(const T*, T*, std::int64_t, std::int64_t, cudaStream_t);                     \
  template void geglu_packed_backward(const T*, const T*, T*, std::int64_t, std::int64_t, cudaStream_t);
CUDALAB_SWIGLU_ELEMENTS(CUDALAB_SWIGLU_ENTRIES, , )

}  // namespace cudalab
