// The FP8 GEMM's baseline through cuBLASLt (see fp8.hpp). Row-major C = A B^T is column-major
// C^T = B A^T: cuBLASLt's A is our B (n x k stored, op T) and its B our A (op N), the "TN" form
// cuBLASLt requires for FP8 inputs; its A and B scales are our scale_b and scale_a.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include <cublasLt.h>

#include "cudalab/error.hpp"
#include "ops/gemm/cublas_gemm.hpp"
#include "ops/gemm/fp8.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // what cuBLASLt asks for on Hopper

// One handle per host thread and device, as cublas_handle; a plan (descriptors and the heuristic's
// algorithm) per shape, so a timed call pays neither.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

struct Handles {
  cublasLtHandle_t per_device[64] = {};
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, Plan>
      plans;
  ~Handles() {
    for (auto& [key, plan] : plans) {
      cublasLtMatrixLayoutDestroy(plan.a);
      cublasLtMatrixLayoutDestroy(plan.b);
      cublasLtMatrixLayoutDestroy(plan.c);
      cublasLtMatmulDescDestroy(plan.op);
    }
    for (cublasLtHandle_t h : per_device)
      if (h != nullptr) cublasLtDestroy(h);
  }
};

template <typename Value>
void set(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  check_cublas(cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof(value)), "cublasLtMatmulDescSetAttribute");
}

const Plan& plan_for(Handles& handles, cublasLtHandle_t handle, int device, const GemmFp8Args& args) {
  const auto key = std::make_tuple(device, args.m, args.n, args.k, args.lda, args.ldb, args.ldc);
  const auto found = handles.plans.find(key);
  if (found != handles.plans.end()) return found->second;
  Plan plan;
  check_cublas(cublasLtMatmulDescCreate(&plan.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  set(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  set(plan.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t{0});
  check_cublas(cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(args.k),
                                          static_cast<std::uint64_t>(args.n), args.ldb),
               "cublasLtMatrixLayoutCreate");
  check_cublas(cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_8F_E4M3, static_cast<std::uint64_t>(args.k),
                                          static_cast<std::uint64_t>(args.m), args.lda),
               "cublasLtMatrixLayoutCreate");
  check_cublas(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_16BF, static_cast<std::uint64_t>(args.n),
                                          static_cast<std::uint64_t>(args.m), args.ldc),
               "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t workspace = kWorkspaceBytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                    sizeof(workspace)),
               "cublasLtMatmulPreferenceSetAttribute");
  // The scale pointers change the kernels cuBLASLt may pick; the heuristic sees them set.
  const float* any_scale = args.scale_a != nullptr ? args.scale_a : args.scale_b;
  if (any_scale != nullptr) {
    set(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, any_scale);
    set(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, any_scale);
  }
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.a, plan.b, plan.c, plan.c, preference, 1, &result, &count);
  cublasLtMatmulPreferenceDestroy(preference);
  check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");
  if (count == 0)
    throw Error(ErrorKind::library,
                "cuBLASLt has no FP8 algorithm for " + std::to_string(args.m) + " x " + std::to_string(args.n) + " x " +
                    std::to_string(args.k),
                __FILE__, __LINE__);
  plan.algo = result.algo;
  return handles.plans.emplace(key, plan).first->second;
}

}  // namespace

std::size_t cublaslt_fp8_workspace_bytes() { return kWorkspaceBytes; }

std::string cublaslt_fp8_limits(const GemmFp8Shape& shape, int compute_capability) {
  if (compute_capability < 89)
    return "cuBLASLt's FP8 GEMM needs compute capability 8.9 or later; this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  if (shape.k == 0) return "cuBLASLt's FP8 GEMM needs k > 0";
  // torch._scaled_mm asks the same of its operands before it calls cuBLASLt.
  if (shape.m % 16 != 0 || shape.n % 16 != 0 || shape.k % 16 != 0 || shape.lda % 16 != 0 || shape.ldb % 16 != 0 ||
      shape.ldc % 8 != 0)
    return "cuBLASLt's FP8 GEMM takes m, n, k and the pitches of A and B as multiples of 16, C's of 8";
  return "";
}

void cublaslt_fp8(const GemmFp8Args& args, cudaStream_t stream) {
  thread_local Handles handles;
  int device = 0;
  CUDALAB_CUDA_CHECK(cudaGetDevice(&device));
  CUDALAB_REQUIRE(device < 64, "cuBLASLt handles: device ordinal above 63");
  cublasLtHandle_t& handle = handles.per_device[device];
  if (handle == nullptr) check_cublas(cublasLtCreate(&handle), "cublasLtCreate");
  if (args.m == 0 || args.n == 0) return;
  CUDALAB_REQUIRE(args.workspace != nullptr, "cublaslt_fp8: a workspace of cublaslt_fp8_workspace_bytes() is needed");
  const Plan& plan = plan_for(handles, handle, device, args);
  set(plan.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, args.scale_b);
  set(plan.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, args.scale_a);
  const float alpha = args.alpha, beta = 0.0f;
  check_cublas(cublasLtMatmul(handle, plan.op, &alpha, args.b, plan.a, args.a, plan.b, &beta, args.c, plan.c, args.c,
                              plan.c, &plan.algo, args.workspace, kWorkspaceBytes, stream),
               "cublasLtMatmul");
}

}  // namespace cudalab::gemm_variants
