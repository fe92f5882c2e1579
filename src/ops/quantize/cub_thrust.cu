// Baseline: the quantization as a CUDA programmer composes it from CCCL, with no kernel of their
// own: cub::DeviceReduce::TransformReduce for the amax, thrust::for_each_n on one element for the
// scales, thrust::transform for q. Two reads of x, as two_pass, and one launch more. With a scale
// given (cub_thrust_scaled), the same reduce and transform without the scales' step.
#include <algorithm>
#include <string>

#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <cub/device/device_reduce.cuh>

#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "cudalab/quantize.hpp"
#include "ops/quantize/scales.cuh"
#include "ops/quantize/variants.hpp"

namespace cudalab::quantize_variants {
namespace {

// The multiplier's slot, then CUB's storage from the next 256-byte boundary.
constexpr std::size_t kCubOffset = 256;

template <typename T>
struct Magnitude {
  __device__ float operator()(T x) const { return counted_magnitude(to_float(x)); }
};

struct LargerOf {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct Scales {
  const float* amax;
  float* scale;
  float* multiplier;
  __device__ void operator()(int) const {
    *scale = dequantize_scale(*amax);
    *multiplier = quantize_multiplier(*amax);
  }
};

template <typename T>
struct QuantizeOne {
  const float* multiplier;
  __device__ __nv_fp8_storage_t operator()(T x) const { return quantize_one(to_float(x), *multiplier); }
};

template <typename T>
struct QuantizeScaled {
  const float* scale;
  __device__ __nv_fp8_storage_t operator()(T x) const { return quantize_one(to_float(x), scaled_multiplier(*scale)); }
};

template <typename T>
cudaError_t amax_call(void* temp, std::size_t& bytes, const T* x, float* amax, std::int64_t n, cudaStream_t stream) {
  return cub::DeviceReduce::TransformReduce(temp, bytes, x, amax, n, LargerOf{}, Magnitude<T>{}, 0.0f, stream);
}

}  // namespace

template <typename T>
std::size_t cub_thrust_workspace_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(amax_call<T>(nullptr, bytes, nullptr, nullptr, std::max<std::int64_t>(n, 1), nullptr));
  return kCubOffset + bytes;
}

template <typename T>
void cub_thrust(const QuantizeArgs<T>& args, cudaStream_t stream) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(amax_call<T>(nullptr, bytes, args.x, args.amax, args.n, stream));
  CUDALAB_REQUIRE(args.workspace != nullptr && args.workspace_bytes >= kCubOffset + bytes,
                  "quantize_fp8 cub_thrust: the workspace holds " + std::to_string(args.workspace_bytes) +
                      " bytes, the call needs " + std::to_string(kCubOffset + bytes));
  auto* multiplier = static_cast<float*>(args.workspace);
  CUDALAB_CUDA_CHECK(
      amax_call<T>(static_cast<unsigned char*>(args.workspace) + kCubOffset, bytes, args.x, args.amax, args.n, stream));
  // par_nosync: no stream synchronization inside the calls, so the timer measures the kernels.
  thrust::for_each_n(thrust::cuda::par_nosync.on(stream), thrust::counting_iterator<int>(0), 1,
                     Scales{args.amax, args.scale, multiplier});
  CUDALAB_CHECK_LAUNCH();
  if (args.n > 0) {
    thrust::transform(thrust::cuda::par_nosync.on(stream), args.x, args.x + args.n,
                      reinterpret_cast<__nv_fp8_storage_t*>(args.q), QuantizeOne<T>{multiplier});
    CUDALAB_CHECK_LAUNCH();
  }
}

template <typename T>
std::size_t cub_thrust_scaled_workspace_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(amax_call<T>(nullptr, bytes, nullptr, nullptr, std::max<std::int64_t>(n, 1), nullptr));
  return bytes;
}

template <typename T>
void cub_thrust_scaled(const ScaledQuantizeArgs<T>& args, cudaStream_t stream) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(amax_call<T>(nullptr, bytes, args.x, args.amax, args.n, stream));
  CUDALAB_REQUIRE(args.workspace != nullptr && args.workspace_bytes >= bytes,
                  "quantize_fp8_scaled cub_thrust: the workspace holds " + std::to_string(args.workspace_bytes) +
                      " bytes, the call needs " + std::to_string(bytes));
  CUDALAB_CUDA_CHECK(amax_call<T>(args.workspace, bytes, args.x, args.amax, args.n, stream));
  if (args.n > 0) {
    thrust::transform(thrust::cuda::par_nosync.on(stream), args.x, args.x + args.n,
                      reinterpret_cast<__nv_fp8_storage_t*>(args.q), QuantizeScaled<T>{args.scale});
    CUDALAB_CHECK_LAUNCH();
  }
}

#define CUDALAB_QUANTIZE_BASELINE(T, a, b)                                 \
  template std::size_t cub_thrust_workspace_bytes<T>(std::int64_t);        \
  template std::size_t cub_thrust_scaled_workspace_bytes<T>(std::int64_t); \
  CUDALAB_LAUNCHER_INSTANCE(T, cub_thrust, QuantizeArgs)                   \
  CUDALAB_LAUNCHER_INSTANCE(T, cub_thrust_scaled, ScaledQuantizeArgs)
CUDALAB_QUANTIZE_ELEMENTS(CUDALAB_QUANTIZE_BASELINE, , )

}  // namespace cudalab::quantize_variants
