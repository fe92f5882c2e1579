// cuBLAS has no transpose call of its own; cublasSgeam (C = alpha op(A) + beta op(B)) with
// op(A) = Aᵀ and beta = 0 is its out-of-place transpose. cuBLAS is column-major: the row-major
// rows x cols input is a column-major cols x rows matrix (lda = cols), and the row-major
// cols x rows output a column-major rows x cols one (ldc = rows).
#include <climits>
#include <string>

#include <cublas_v2.h>

#include "cudalab/error.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab::transpose_variants {
namespace {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(ErrorKind::library, std::string(what) + " failed: " + cublasGetStatusString(status), __FILE__,
                __LINE__);
}

// One handle per host thread, created on first use and kept: creating one costs milliseconds.
cublasHandle_t thread_handle() {
  struct Owner {
    Owner() { check_cublas(cublasCreate(&handle), "cublasCreate"); }
    ~Owner() { cublasDestroy(handle); }
    cublasHandle_t handle = nullptr;
  };
  thread_local Owner owner;
  return owner.handle;
}

}  // namespace

void cublas_geam(const TransposeArgs<float>& args, cudaStream_t stream) {
  CUDALAB_REQUIRE(args.rows <= INT_MAX && args.cols <= INT_MAX, "cublas_geam: cuBLAS takes 32-bit dimensions");
  cublasHandle_t handle = thread_handle();
  check_cublas(cublasSetStream(handle, stream), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(args.rows), n = static_cast<int>(args.cols);
  // With beta = 0, B is not read; passing C as B with ldb = ldc is the documented in-place form.
  check_cublas(cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, &alpha, args.in, n, &beta, args.out, m, args.out, m),
               "cublasSgeam");
}

}  // namespace cudalab::transpose_variants
