#include <cstdint>

#include "core/launch.cuh"
#include "ops/vecadd/variants.hpp"

namespace cudalab::vecadd_variants {
namespace {

constexpr int kBlockSize = 256;

// One float4 (16 bytes) per operand per thread: a quarter of the load/store instructions of the
// scalar kernels, and each warp request covers 512 contiguous bytes. The n % 4 trailing elements
// are added by the first threads of the grid, so no second launch is needed.
__global__ void vecadd_float4_kernel(const float4* a, const float4* b, float4* c,
                                     std::int64_t quads, const float* a_tail, const float* b_tail,
                                     float* c_tail, int tail) {
  const std::int64_t i = global_thread_index();
  if (i < quads) {
    const float4 x = a[i];
    const float4 y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (i < tail) c_tail[i] = a_tail[i] + b_tail[i];
}

bool aligned16(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

}  // namespace

void vectorized(const float* a, const float* b, float* c, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if (!aligned16(a) || !aligned16(b) || !aligned16(c)) {
    grid_stride(a, b, c, n, stream);
    return;
  }
  const std::int64_t quads = n / 4;
  const int tail = static_cast<int>(n % 4);
  const std::int64_t threads = quads > tail ? quads : tail;
  const std::int64_t blocks = ceil_div<std::int64_t>(threads, kBlockSize);
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "vecadd vectorized: n needs more than 2^31-1 blocks");
  const std::int64_t tail_start = quads * 4;
  vecadd_float4_kernel<<<static_cast<unsigned>(blocks), kBlockSize, 0, stream>>>(
      reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
      reinterpret_cast<float4*>(c), quads, a + tail_start, b + tail_start, c + tail_start, tail);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::vecadd_variants
