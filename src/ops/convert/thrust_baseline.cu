// Baseline: thrust::transform with a functor that converts one element, the first thing a CUDA
// programmer writes. CCCL picks its own strategy per architecture (vector width, items per thread).
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

#include "cudalab/error.hpp"
#include "ops/convert/convert.cuh"
#include "ops/convert/variants.hpp"

namespace cudalab::convert_variants {
namespace {

template <typename From, typename To>
struct ConvertOne {
  __device__ To operator()(From x) const { return Conversion<From, To>::one(x); }
};

template <typename From, typename To>
void transform(const From* x, To* y, std::int64_t n, cudaStream_t stream) {
  // par_nosync: no stream synchronization inside the call, so the timer measures the kernel.
  thrust::transform(thrust::cuda::par_nosync.on(stream), x, x + n, y, ConvertOne<From, To>{});
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void thrust_transform(const ConvertArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  if (args.direction == ConvertDirection::narrow) {
    transform(args.f32_in, args.half_out, args.n, stream);
  } else {
    transform(args.half_in, args.f32_out, args.n, stream);
  }
}

template void thrust_transform<__half>(const ConvertArgs<__half>&, cudaStream_t);
template void thrust_transform<__nv_bfloat16>(const ConvertArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::convert_variants
