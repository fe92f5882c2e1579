// Steps 1 and 2: one thread per output, the dot product read straight from global memory. The
// only difference is which index threadIdx.x walks.
#include "core/launch.cuh"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kSide = 32;

__device__ __forceinline__ void dot_and_store(const GemmArgs<float>& p, std::int64_t row, std::int64_t col) {
  if (row >= p.m || col >= p.n) return;
  float acc = 0.0f;
  for (std::int64_t i = 0; i < p.k; ++i) acc = fmaf(p.a[row * p.lda + i], p.b[i * p.ldb + col], acc);
  blend_store(&p.c[row * p.ldc + col], p.alpha, p.beta, acc);
}

// Lanes of a warp take consecutive rows: A is read with a stride of lda, C written with ldc.
__global__ void naive_kernel(GemmArgs<float> p) {
  dot_and_store(p, static_cast<std::int64_t>(blockIdx.x) * kSide + threadIdx.x,
                static_cast<std::int64_t>(blockIdx.y) * kSide + threadIdx.y);
}

// Lanes take consecutive columns: B's row segment and C's are contiguous, A's element is shared.
__global__ void coalesced_kernel(GemmArgs<float> p) {
  dot_and_store(p, static_cast<std::int64_t>(blockIdx.y) * kSide + threadIdx.y,
                static_cast<std::int64_t>(blockIdx.x) * kSide + threadIdx.x);
}

}  // namespace

void naive(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.m, kSide)),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kSide)));
  naive_kernel<<<grid, dim3(kSide, kSide), 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

void coalesced(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kSide)),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.m, kSide)));
  coalesced_kernel<<<grid, dim3(kSide, kSide), 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::gemm_variants
