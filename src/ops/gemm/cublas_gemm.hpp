// cuBLAS on the harness side: the GEMM baselines of the ladder and the FP64 reference that checks
// large problems. Row-major C = alpha A B + beta C is column-major C^T = B^T A^T, so every call
// passes B before A (each with op T when stored transposed: args.b_transposed, args.a_transposed); a
// batch goes through the strided-batched entry points.
#pragma once

#include <cstdint>

#include <type_traits>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "cudalab/dtype.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {

// The calling host thread's handle on the current device, created on first use and kept for the
// process (creating one costs milliseconds; timed launches must not pay it), bound to `stream`.
// Every cuBLAS call of the harness goes through it.
cublasHandle_t cublas_handle(cudaStream_t stream);
// Throws cudalab::Error (ErrorKind::library) naming `what` unless `status` is success.
void check_cublas(cublasStatus_t status, const char* what);

// cuBLAS's name for an element type: float, __half or __nv_bfloat16.
template <typename T>
constexpr cudaDataType_t cuda_data_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                "float, __half or __nv_bfloat16");
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  if constexpr (std::is_same_v<T, __half>) return CUDA_R_16F;
  return CUDA_R_16BF;
}

// cublasSgemm (cublasSgemmStridedBatched for a batch) with the handle's math mode (no TF32): FP32
// inputs, FP32 FMAs.
void cublas_sgemm(const GemmArgs<float>& args, cudaStream_t stream);
// cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to TF32 (10-bit mantissa) on
// tensor cores, FP32 accumulation. A different precision: checked with its own tolerance.
void cublas_sgemm_tf32(const GemmArgs<float>& args, cudaStream_t stream);
// cublasGemmEx (cublasGemmStridedBatchedEx for a batch) with BF16 or FP16 A, B and C and
// CUBLAS_COMPUTE_32F: tensor cores, FP32 accumulation (reduced-precision split-K reductions
// disallowed on the handle), alpha and beta in FP32.
template <typename T>
void cublas_gemm_ex(const GemmArgs<T>& args, cudaStream_t stream);
// C = A A^T for row-major A (rows x depth): cublasSsyrk (lower triangle, then mirrored) or cublasSgemm.
void cublas_aat_syrk(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream);
void cublas_aat_gemm(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream);

// The FP64 reference for large problems, all on the device: dense row-major A (m x k, or k x m
// when `a_transposed`), B (k x n, or n x k when `b_transposed`), C0 (m x n; null: none), all of
// `dtype` (f32, f16, bf16 or e4m3), are widened to double and
//   reference = alpha A B + beta C0            (cublasDgemm)
//   bound     = |alpha| |A| |B| + |beta| |C0|  (a second cublasDgemm on absolute values)
// `reference` and `bound` are device arrays of m * n doubles; `scratch` holds m*k + k*n doubles.
void dgemm_reference(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const void* a,
                     const void* b, bool a_transposed, bool b_transposed, float beta, const void* c0, double* reference,
                     double* bound, double* scratch, cudaStream_t stream);

}  // namespace cudalab::gemm_variants
