#include <cstdint>

#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// Each thread adds `Unroll` float4s (16 bytes per operand each), a block's worth apart so every
// warp request stays 512 contiguous bytes. float4 cuts the load/store instructions by 4; Unroll
// issues all of a thread's loads before the first add, so more bytes are in flight per thread and
// fewer blocks need scheduling. The n % 4 trailing elements are added by the first threads of the
// grid, so no second launch is needed.
template <int Unroll>
__global__ void vecadd_float4_kernel(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c,
                                     std::int64_t quads, const float* a_tail, const float* b_tail, float* c_tail,
                                     int tail) {
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x * Unroll + threadIdx.x;
  float4 x[Unroll], y[Unroll];
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::int64_t i = first + static_cast<std::int64_t>(u) * blockDim.x;
    if (i < quads) {
      x[u] = a[i];
      y[u] = b[i];
    }
  }
#pragma unroll
  for (int u = 0; u < Unroll; ++u) {
    const std::int64_t i = first + static_cast<std::int64_t>(u) * blockDim.x;
    if (i < quads) c[i] = make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w);
  }
  const std::int64_t thread = global_thread_index();
  if (thread < tail) c_tail[thread] = a_tail[thread] + b_tail[thread];
}

bool aligned16(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

template <int Unroll>
void launch_float4(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (!aligned16(a) || !aligned16(b) || !aligned16(c)) {
    grid_stride(a, b, c, n, stream);
    return;
  }
  const std::int64_t quads = n / 4;
  const int tail = static_cast<int>(n % 4);
  const std::int64_t per_block = static_cast<std::int64_t>(kBlockSize) * Unroll;
  const std::int64_t blocks = quads > 0 ? ceil_div<std::int64_t>(quads, per_block) : 1;
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd vectorized: n needs more than 2^31-1 blocks");
  const std::int64_t tail_start = quads * 4;
  vecadd_float4_kernel<Unroll><<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(
      reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(c), quads,
      a + tail_start, b + tail_start, c + tail_start, tail);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

void vectorized(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  launch_float4<1>(a, b, c, n, stream);
}

void vectorized_unroll4(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  launch_float4<4>(a, b, c, n, stream);
}

}  // namespace cudalab::vecadd_variants
