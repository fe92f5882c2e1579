// Rung `one_per_thread`: one element per thread, a 256-thread block per 256 elements, one scalar conversion each.
// Fixes: nothing yet; it is the textbook kernel, with a 64-bit index so it works past 2^31
// elements. Costs: a block per 256 elements, and 2-byte accesses on the 16-bit side (a warp moves
// 64 bytes there per instruction, 128 on the fp32 side), where a 16-byte vector per lane moves 512.
#include "core/launch.cuh"
#include "ops/convert/convert.cuh"
#include "ops/convert/variants.hpp"

namespace cudalab::convert_variants {
namespace {

constexpr int kBlockSize = 256;

template <typename From, typename To>
__global__ void convert_one_per_thread_kernel(const From* x, To* y, std::int64_t n) {
  const std::int64_t i = global_thread_index();
  if (i < n) y[i] = Conversion<From, To>::one(x[i]);
}

template <typename From, typename To>
void launch(const From* x, To* y, std::int64_t n, cudaStream_t stream) {
  const std::int64_t blocks = ceil_div<std::int64_t>(n, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "convert one_per_thread: n needs more than 2^31-1 blocks");
  convert_one_per_thread_kernel<<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(x, y, n);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void one_per_thread(const ConvertArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  if (args.direction == ConvertDirection::narrow) {
    launch(args.f32_in, args.half_out, args.n, stream);
  } else {
    launch(args.half_in, args.f32_out, args.n, stream);
  }
}

template void one_per_thread<__half>(const ConvertArgs<__half>&, cudaStream_t);
template void one_per_thread<__nv_bfloat16>(const ConvertArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::convert_variants
