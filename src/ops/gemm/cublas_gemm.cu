// cuBLAS baselines and the FP64 device reference (see cublas_gemm.hpp).
#include "ops/gemm/cublas_gemm.hpp"

#include <cmath>
#include <string>

#include <cublas_v2.h>

#include "core/launch.cuh"
#include "cudalab/error.hpp"

namespace cudalab::gemm_variants {
namespace {

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::library, std::string(what) + " failed: " + cublasGetStatusString(status), __FILE__,
                __LINE__);
}

// One handle per host thread and device, created on first use and kept for the process (creating
// a handle costs milliseconds; the timed launches must not pay it).
cublasHandle_t handle_on(cudaStream_t stream) {
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
  if (h == nullptr) check(cublasCreate(&h), "cublasCreate");
  check(cublasSetStream(h, stream), "cublasSetStream");
  return h;
}

int as_int(std::int64_t value, const char* what) {
  CUDALAB_REQUIRE(value <= 0x7fffffff, std::string("cuBLAS takes 32-bit ") + what);
  return static_cast<int>(value);
}

__global__ void widen_kernel(const float* in, double* out, std::int64_t count, bool absolute, double scale) {
  for (std::int64_t i = global_thread_index(); i < count; i += global_thread_count()) {
    const double x = in[i];
    out[i] = scale * (absolute ? fabs(x) : x);
  }
}

void widen(const float* in, double* out, std::int64_t count, bool absolute, double scale, cudaStream_t stream) {
  if (count == 0) return;
  const int blocks = resident_grid_size(widen_kernel, 256, count);
  widen_kernel<<<blocks, 256, 0, stream>>>(in, out, count, absolute, scale);
  CUDALAB_CHECK_LAUNCH();
}

void dgemm_row_major(std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a, const double* b,
                     double beta, double* c, cudaStream_t stream) {
  check(cublasDgemm(handle_on(stream), CUBLAS_OP_N, CUBLAS_OP_N, as_int(n, "n"), as_int(m, "m"), as_int(k, "k"), &alpha,
                    b, as_int(n, "ldb"), a, as_int(k, "lda"), &beta, c, as_int(n, "ldc")),
        "cublasDgemm");
}

}  // namespace

void cublas_sgemm(const GemmArgs<float>& p, cudaStream_t stream) {
  check(cublasSgemm(handle_on(stream), CUBLAS_OP_N, CUBLAS_OP_N, as_int(p.n, "n"), as_int(p.m, "m"), as_int(p.k, "k"),
                    &p.alpha, p.b, as_int(p.ldb, "ldb"), p.a, as_int(p.lda, "lda"), &p.beta, p.c, as_int(p.ldc, "ldc")),
        "cublasSgemm");
}

void cublas_sgemm_tf32(const GemmArgs<float>& p, cudaStream_t stream) {
  check(cublasGemmEx(handle_on(stream), CUBLAS_OP_N, CUBLAS_OP_N, as_int(p.n, "n"), as_int(p.m, "m"), as_int(p.k, "k"),
                     &p.alpha, p.b, CUDA_R_32F, as_int(p.ldb, "ldb"), p.a, CUDA_R_32F, as_int(p.lda, "lda"), &p.beta,
                     p.c, CUDA_R_32F, as_int(p.ldc, "ldc"), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx (TF32)");
}

void cublas_aat_syrk(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  // Row-major A (rows x depth) is column-major A^T; C = A A^T = (A^T)^T (A^T): trans = T.
  // Column-major lower triangle = row-major upper triangle; only that half is written.
  check(cublasSsyrk(handle_on(stream), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, as_int(rows, "n"), as_int(depth, "k"), &one,
                    a, as_int(depth, "lda"), &zero, c, as_int(rows, "ldc")),
        "cublasSsyrk");
}

void cublas_aat_gemm(const float* a, std::int64_t rows, std::int64_t depth, float* c, cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  check(
      cublasSgemm(handle_on(stream), CUBLAS_OP_T, CUBLAS_OP_N, as_int(rows, "m"), as_int(rows, "n"), as_int(depth, "k"),
                  &one, a, as_int(depth, "lda"), a, as_int(depth, "ldb"), &zero, c, as_int(rows, "ldc")),
      "cublasSgemm (A A^T)");
}

void dgemm_reference(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, const float* b,
                     float beta, const float* c0, double* reference, double* bound, double* scratch,
                     cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  double* wide_a = scratch;
  double* wide_b = scratch + m * k;
  widen(a, wide_a, m * k, false, 1.0, stream);
  widen(b, wide_b, k * n, false, 1.0, stream);
  widen(c0, reference, m * n, false, 1.0, stream);
  if (k > 0) {
    dgemm_row_major(m, n, k, alpha, wide_a, wide_b, beta, reference, stream);
  } else {
    widen(c0, reference, m * n, false, beta, stream);
  }
  widen(a, wide_a, m * k, true, 1.0, stream);
  widen(b, wide_b, k * n, true, 1.0, stream);
  widen(c0, bound, m * n, true, std::fabs(static_cast<double>(beta)), stream);
  if (k > 0) dgemm_row_major(m, n, k, std::fabs(static_cast<double>(alpha)), wide_a, wide_b, 1.0, bound, stream);
}

}  // namespace cudalab::gemm_variants
