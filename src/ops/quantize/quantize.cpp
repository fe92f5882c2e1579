#include "cudalab/quantize.hpp"

#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/quantize/variants.hpp"

namespace cudalab {

namespace v = quantize_variants;

// Tensors from 4 MiB up that the SMs' shared memory holds are read once (resident); smaller ones
// stay in L2 between two_pass's reads, and a cooperative launch's grid barrier costs more there.
constexpr std::int64_t kResidentFromBytes = std::int64_t{4} << 20;

template <typename T, typename>
void quantize_fp8(const T* x, __nv_fp8_e4m3* q, float* scale, float* amax, std::int64_t n, cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "quantize_fp8: n must be >= 0, got " + std::to_string(n));
  require_arrays(
      "quantize_fp8", {{x, n, sizeof(T), "x"}},
      {{q, n, sizeof(__nv_fp8_e4m3), "q"}, {scale, 1, sizeof(float), "scale"}, {amax, 1, sizeof(float), "amax"}});
  const v::QuantizeArgs<T> args{x, q, scale, amax, n};
  const bool resident = n * static_cast<std::int64_t>(sizeof(T)) >= kResidentFromBytes && aligned16(x) &&
                        aligned16(q) && n <= v::resident_capacity_here(sizeof(T));
  if (resident) {
    v::resident(args, stream);
  } else {
    v::two_pass(args, stream);
  }
}

template <typename T, typename>
void quantize_fp8_scaled(const T* x, const float* scale, __nv_fp8_e4m3* q, float* amax, std::int64_t n,
                         cudaStream_t stream) {
  CUDALAB_REQUIRE(n >= 0, "quantize_fp8_scaled: n must be >= 0, got " + std::to_string(n));
  require_arrays("quantize_fp8_scaled", {{x, n, sizeof(T), "x"}, {scale, 1, sizeof(float), "scale"}},
                 {{q, n, sizeof(__nv_fp8_e4m3), "q"}, {amax, 1, sizeof(float), "amax"}});
  v::one_pass_scaled(v::ScaledQuantizeArgs<T>{x, scale, q, amax, n}, stream);
}

#define CUDALAB_QUANTIZE_ENTRIES(T, a, b)                                                           \
  template void quantize_fp8(const T*, __nv_fp8_e4m3*, float*, float*, std::int64_t, cudaStream_t); \
  template void quantize_fp8_scaled(const T*, const float*, __nv_fp8_e4m3*, float*, std::int64_t, cudaStream_t);
CUDALAB_QUANTIZE_ELEMENTS(CUDALAB_QUANTIZE_ENTRIES, , )

}  // namespace cudalab
