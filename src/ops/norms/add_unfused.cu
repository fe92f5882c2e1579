// The add_ forms' unfused baseline: the residual add as a pass of its own, then the plain norm over
// the sum, as eager PyTorch runs `h = x + residual; y = norm(h)`. Against the fused rung it writes
// h and reads it back (two more passes over a rows x features array, of the fused rung's four).
#include <cstdint>
#include <string>

#include "core/flat_map.cuh"
#include "cudalab/error.hpp"
#include "cudalab/norms.hpp"
#include "ops/norms/variants.hpp"

namespace cudalab::norms_variants {
namespace {

struct Sum {
  __device__ void operator()(const float (&in)[2], float (&out)[1]) const { out[0] = in[0] + in[1]; }
};

}  // namespace

template <typename T>
void add_elements(const T* a, const T* b, T* out, std::int64_t count, cudaStream_t stream) {
  launch_flat_map_vectorized(FlatArrays<T, 2, 1>{{a, b}, {out}}, count, Sum{}, stream);
}

template <typename T>
void add_unfused(const NormForwardArgs<T>& a, cudaStream_t stream) {
  const std::string why = forward_shape_limits(a.rows, a.features);
  CUDALAB_REQUIRE(why.empty(), "add_unfused: " + why);
  if (a.rows == 0) return;
  CUDALAB_REQUIRE(a.residual != nullptr && a.residual_out != nullptr,
                  "add_unfused: the add_ forms' baseline needs residual and residual_out");
  add_elements(a.x, a.residual, a.residual_out, a.rows * a.features, stream);
  NormForwardArgs<T> plain = a;
  plain.x = a.residual_out;
  plain.residual = nullptr;
  plain.residual_out = nullptr;
  fastest_forward(plain, stream);
}

#define CUDALAB_ADD_ELEMENTS_INSTANCE(T, a, b) \
  template void add_elements(const T*, const T*, T*, std::int64_t, cudaStream_t);
CUDALAB_NORM_ELEMENTS(CUDALAB_ADD_ELEMENTS_INSTANCE, , )
CUDALAB_NORM_ELEMENTS(CUDALAB_LAUNCHER_INSTANCE, add_unfused, NormForwardArgs)

}  // namespace cudalab::norms_variants
