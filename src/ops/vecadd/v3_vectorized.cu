#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// Each thread adds `Unroll` 16-byte vectors per operand, a block's worth apart so every warp
// request stays 512 contiguous bytes. Vectors cut the load/store instructions by 16/sizeof(T);
// Unroll issues all of a thread's loads before the first add, so more bytes are in flight per
// thread and fewer blocks need scheduling. The trailing n % (16/sizeof(T)) elements are added by
// the first threads of the grid, so no second launch is needed.
template <typename T, int Unroll>
__global__ void vecadd_vector16_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                                       std::int64_t vectors, int tail) {
  using V = Vector16<T>;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * Unroll + threadIdx.x;
  V x[Unroll], y[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::int64_t i = first + static_cast<std::int64_t>(u) * blockDim.x;
    if (i < vectors) {
      x[u] = load_vector16(a + i * V::kCount);
      y[u] = load_vector16(b + i * V::kCount);
    }
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::int64_t i = first + static_cast<std::int64_t>(u) * blockDim.x;
    if (i < vectors) {
#pragma unroll
      for (int k = 0; k < V::kCount; ++k) x[u][k] = x[u][k] + y[u][k];
      store_vector16(c + i * V::kCount, x[u]);
    }
  }
  const std::int64_t thread = global_thread_index();
  const std::int64_t tail_start = vectors * V::kCount;
  if (thread < tail) c[tail_start + thread] = a[tail_start + thread] + b[tail_start + thread];
}

template <typename T, int Unroll>
void launch_vector16(const VecaddArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  if (!is_aligned16(args.a) || !is_aligned16(args.b) || !is_aligned16(args.c)) {
    grid_stride(args, stream);
    return;
  }
  constexpr int kCount = Vector16<T>::kCount;
  const std::int64_t vectors = args.n / kCount;
  const int tail = static_cast<int>(args.n % kCount);
  const std::int64_t per_block = static_cast<std::int64_t>(kBlockSize) * Unroll;
  const std::int64_t blocks = vectors > 0 ? ceil_div<std::int64_t>(vectors, per_block) : 1;
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd vectorized: n needs more than 2^31-1 blocks");
  vecadd_vector16_kernel<T, Unroll>
      <<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(args.a, args.b, args.c, vectors, tail);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void vectorized(const VecaddArgs<T>& args, cudaStream_t stream) {
  launch_vector16<T, 1>(args, stream);
}

template <typename T>
void vectorized_unroll4(const VecaddArgs<T>& args, cudaStream_t stream) {
  launch_vector16<T, 4>(args, stream);
}

template void vectorized<float>(const VecaddArgs<float>&, cudaStream_t);
template void vectorized<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void vectorized<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);
template void vectorized_unroll4<float>(const VecaddArgs<float>&, cudaStream_t);
template void vectorized_unroll4<__half>(const VecaddArgs<__half>&, cudaStream_t);
template void vectorized_unroll4<__nv_bfloat16>(const VecaddArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::vecadd_variants
