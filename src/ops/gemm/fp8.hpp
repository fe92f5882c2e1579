// The FP8 GEMM: C (bf16, m x n, rows ldc apart) = alpha * scale_a * scale_b * A B^T for e4m3 A (m x k)
// and B (n x k), both row-major, that is K-major: a Linear's activations and its weight as stored.
// fp32 accumulation. The library entry (gemm_fp8.cpp), the registry (fp8_register.cpp) and the
// PyTorch op fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

namespace cudalab::gemm_variants {

struct GemmFp8Args {
  using Element = __nv_bfloat16;  // C's type: the registry's dtype of the op
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const __nv_fp8_e4m3* a = nullptr;
  std::int64_t lda = 0;
  const __nv_fp8_e4m3* b = nullptr;
  std::int64_t ldb = 0;
  __nv_bfloat16* c = nullptr;
  std::int64_t ldc = 0;
  // Device pointers to one float each, the inputs' dequantization scales (what a quantize step
  // wrote); null: 1. Read on the device, so a launch needs no copy back to the host.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  void* workspace = nullptr;  // the cuBLASLt baseline's: cublaslt_fp8_workspace_bytes()
};

struct GemmFp8Shape {
  std::int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};
inline GemmFp8Shape shape_of(const GemmFp8Args& args) { return {args.m, args.n, args.k, args.lda, args.ldb, args.ldc}; }

// Hopper (sm_90a): the persistent kernel's skeleton (one CTA per SM over the L2-grouped tile order,
// a TMA producer warpgroup, two consumer warpgroups) on 128 x 128 tiles and 128-byte k-tiles (128
// elements), wgmma m64n128k32 e4m3. Each k-tile's four wgmmas sum into registers of their own,
// which are then added to the fp32 accumulators (promotion): the tensor cores' FP8 accumulation
// keeps about 14 significant bits, so over a long k the sums would drift by far more than fp32's.
// Costs: 64 more registers a thread and the adds; the wgmmas of a warpgroup's next k-tile wait for
// them (the other warpgroup's keep the tensor cores busy meanwhile).
void wgmma_fp8(const GemmFp8Args& args, cudaStream_t stream);
// Why wgmma_fp8 cannot run a shape on this GPU ("" when it can): compute capability 9.0, and rows
// of A and B whose pitch is a multiple of 16 bytes (TMA's rule).
std::string wgmma_fp8_limits(const GemmFp8Shape& shape, int compute_capability);

// The baseline: cublasLtMatmul with e4m3 A and B, per-tensor scale pointers, bf16 C and fp32
// accumulation without its fast (unpromoted) mode, as torch._scaled_mm calls it by default.
void cublaslt_fp8(const GemmFp8Args& args, cudaStream_t stream);
std::size_t cublaslt_fp8_workspace_bytes();
std::string cublaslt_fp8_limits(const GemmFp8Shape& shape, int compute_capability);

}  // namespace cudalab::gemm_variants
