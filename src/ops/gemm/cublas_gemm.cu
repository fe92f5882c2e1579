// cuBLAS baselines and the FP64 device reference (see cublas_gemm.hpp).
#include "ops/gemm/cublas_gemm.hpp"

#include <cmath>
#include <string>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"

namespace cudalab::gemm_variants {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::library, std::string(what) + " failed: " + cublasGetStatusString(status), __FILE__,
                __LINE__);
}

// One handle per host thread and device (64 device ordinals at most).
cublasHandle_t cublas_handle(cudaStream_t stream) {
  struct Handles {
    cublasHandle_t per_device[64] = {};
    ~Handles() {
      for (cublasHandle_t h : per_device)
        if (h != nullptr) cublasDestroy(h);
    }
  };
  thread_local Handles handles;
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_REQUIRE(device < 64, "cuBLAS handles: device ordinal above 63");
  cublasHandle_t& h = handles.per_device[device];
  if (h == nullptr) {
    check_cublas(cublasCreate(&h), "cublasCreate");
    // FP32 accumulation throughout, the contract the kernels are checked to: in its default mode
    // cuBLAS may round split-K partial sums to BF16/FP16 (6 output units off at 3x67x1032 on an
    // H200). Its times did not change at the shapes measured both ways (decode rows against 4096^2
    // and 8192^2 weights, 4095x4097x4093).
    check_cublas(cublasSetMathMode(h, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), "cublasSetMathMode");
  }
  check_cublas(cublasSetStream(h, stream), "cublasSetStream");
  return h;
}

namespace {

int as_int(std::int64_t value, const char* what) {
  CUDALAB_REQUIRE(value <= 0x7fffffff, std::string("cuBLAS takes 32-bit ") + what);
  return static_cast<int>(value);
}

template <typename T>
__global__ void widen_kernel(const T* in, double* out, std::int64_t count, bool absolute, double scale) {
  for (std::int64_t i = global_thread_index(); i < count; i += global_thread_count()) {
    const double x = to_float(in[i]);
    out[i] = scale * (absolute ? fabs(x) : x);
  }
}

template <typename T>
void widen_as(const void* in, double* out, std::int64_t count, bool absolute, double scale, cudaStream_t stream) {
  const int blocks = resident_grid_size(widen_kernel<T>, 256, count);
  widen_kernel<T><<<blocks, 256, 0, stream>>>(static_cast<const T*>(in), out, count, absolute, scale);
  CUDALAB_CHECK_LAUNCH();
}

void widen(DType dtype, const void* in, double* out, std::int64_t count, bool absolute, double scale,
           cudaStream_t stream) {
  if (count == 0) return;
  switch (dtype) {
    case DType::f32: return widen_as<float>(in, out, count, absolute, scale, stream);
    case DType::f16: return widen_as<__half>(in, out, count, absolute, scale, stream);
    case DType::bf16: return widen_as<__nv_bfloat16>(in, out, count, absolute, scale, stream);
    case DType::e4m3: return widen_as<__nv_fp8_e4m3>(in, out, count, absolute, scale, stream);
    default:
      throw Error(ErrorKind::invalid_argument, "dgemm_reference: f32, f16, bf16 or e4m3 only", __FILE__, __LINE__);
  }
}

// An operand stored transposed (A as k x m, B as n x k) is, to column-major cuBLAS, op = T.
cublasOperation_t operation(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

void dgemm_row_major(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a, const double* b,
                     bool a_transposed, bool b_transposed, double beta, double* c, cudaStream_t stream) {
  check_cublas(cublasDgemm(cublas_handle(stream), operation(b_transposed), operation(a_transposed), as_int(n, "n"),
                           as_int(m, "m"), as_int(k, "k"), &alpha, b, as_int(b_transposed ? k : n, "ldb"), a,
                           as_int(a_transposed ? m : k, "lda"), &beta, c, as_int(n, "ldc")),
               "cublasDgemm");
}

}  // namespace

void cublas_sgemm(const GemmArgs<float>& p, cudaStream_t stream) {
  const int m = as_int(p.m, "m"), n = as_int(p.n, "n"), k = as_int(p.k, "k");
  const int lda = as_int(p.lda, "lda"), ldb = as_int(p.ldb, "ldb"), ldc = as_int(p.ldc, "ldc");
  if (p.batch == 1) {
    check_cublas(cublasSgemm(cublas_handle(stream), operation(p.b_transposed), operation(p.a_transposed), n, m, k,
                             &p.alpha, p.b, ldb, p.a, lda, &p.beta, p.c, ldc),
                 "cublasSgemm");
  } else {
    check_cublas(cublasSgemmStridedBatched(cublas_handle(stream), operation(p.b_transposed), operation(p.a_transposed),
                                           n, m, k, &p.alpha, p.b, ldb, p.stride_b, p.a, lda, p.stride_a, &p.beta, p.c,
                                           ldc, p.stride_c, as_int(p.batch, "batch")),
                 "cublasSgemmStridedBatched");
  }
}

void cublas_sgemm_tf32(const GemmArgs<float>& p, cudaStream_t stream) {
  CUDALAB_REQUIRE(p.batch == 1, "cublas_sgemm_tf32: one matrix at a time");
  check_cublas(cublasGemmEx(cublas_handle(stream), operation(p.b_transposed), operation(p.a_transposed),
                            as_int(p.n, "n"), as_int(p.m, "m"), as_int(p.k, "k"), &p.alpha, p.b, CUDA_R_32F,
                            as_int(p.ldb, "ldb"), p.a, CUDA_R_32F, as_int(p.lda, "lda"), &p.beta, p.c, CUDA_R_32F,
                            as_int(p.ldc, "ldc"), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (TF32)");
}

template <typename T>
void cublas_gemm_ex(const GemmArgs<T>& p, cudaStream_t stream) {
  constexpr cudaDataType_t type = cuda_data_type<T>();
  const int m = as_int(p.m, "m"), n = as_int(p.n, "n"), k = as_int(p.k, "k");
  const int lda = as_int(p.lda, "lda"), ldb = as_int(p.ldb, "ldb"), ldc = as_int(p.ldc, "ldc");
  if (p.batch == 1) {
    check_cublas(
        cublasGemmEx(cublas_handle(stream), operation(p.b_transposed), operation(p.a_transposed), n, m, k, &p.alpha,
                     p.b, type, ldb, p.a, type, lda, &p.beta, p.c, type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
  } else {
    check_cublas(
        cublasGemmStridedBatchedEx(cublas_handle(stream), operation(p.b_transposed), operation(p.a_transposed), n, m, k,
                                   &p.alpha, p.b, type, ldb, p.stride_b, p.a, type, lda, p.stride_a, &p.beta, p.c, type,
                                   ldc, p.stride_c, as_int(p.batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  }
}
template void cublas_gemm_ex<__half>(const GemmArgs<__half>&, cudaStream_t);
template void cublas_gemm_ex<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

void cublas_aat_syrk(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  // Row-major A (rows x depth) is column-major A^T; C = A A^T = (A^T)^T (A^T): trans = T.
  // Column-major lower triangle = row-major upper triangle; only that half is written.
  check_cublas(cublasSsyrk(cublas_handle(stream), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, as_int(rows, "n"),
                           as_int(depth, "k"), &one, a, as_int(depth, "lda"), &zero, c, as_int(rows, "ldc")),
               "cublasSsyrk");
}

void cublas_aat_gemm(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasSgemm(cublas_handle(stream), CUBLAS_OP_T, CUBLAS_OP_N, as_int(rows, "m"), as_int(rows, "n"),
                           as_int(depth, "k"), &one, a, as_int(depth, "lda"), a, as_int(depth, "ldb"), &zero, c,
                           as_int(rows, "ldc")),
               "cublasSgemm (A A^T)");
}

void dgemm_reference(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const void* a,
                     const void* b, bool a_transposed, bool b_transposed, float beta, const void* c0, double* reference,
                     double* bound, double* scratch, cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  double* wide_a = scratch;
  double* wide_b = scratch + m * k;
  const auto widen_c0 = [&](double* out, bool absolute, double scale) {
    if (c0 == nullptr) {
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(m * n) * sizeof(double), stream));
    } else {
      widen(dtype, c0, out, m * n, absolute, scale, stream);
    }
  };
  widen(dtype, a, wide_a, m * k, false, 1.0, stream);
  widen(dtype, b, wide_b, k * n, false, 1.0, stream);
  widen_c0(reference, false, 1.0);
  if (k > 0) {
    dgemm_row_major(m, n, k, alpha, wide_a, wide_b, a_transposed, b_transposed, beta, reference, stream);
  } else {
    widen_c0(reference, false, beta);
  }
  widen(dtype, a, wide_a, m * k, true, 1.0, stream);
  widen(dtype, b, wide_b, k * n, true, 1.0, stream);
  widen_c0(bound, true, std::fabs(static_cast<double>(beta)));
  if (k > 0)
    dgemm_row_major(m, n, k, std::fabs(static_cast<double>(alpha)), wide_a, wide_b, a_transposed, b_transposed, 1.0,
                    bound, stream);
}

}  // namespace cudalab::gemm_variants
