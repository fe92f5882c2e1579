// cudalab::gemm_fp8 (include/cudalab/gemm.hpp): the argument checks, then rung wgmma_fp8.
#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "core/launch_attributes.hpp"
#include "cudalab/error.hpp"
#include "cudalab/gemm.hpp"
#include "ops/gemm/fp8.hpp"

namespace cudalab {

namespace v = gemm_variants;

void gemm_fp8(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const __nv_fp8_e4m3* a, std::int64_t lda,
              const __nv_fp8_e4m3* b, std::int64_t ldb, __nv_bfloat16* c, std::int64_t ldc, const float* scale_a,
              const float* scale_b, cudaStream_t stream) {
  constexpr const char* kCall = "gemm_fp8";
  CUDALAB_REQUIRE(m >= 0 && n >= 0 && k >= 0, std::string(kCall) + ": negative size m=" + std::to_string(m) +
                                                  " n=" + std::to_string(n) + " k=" + std::to_string(k));
  CUDALAB_REQUIRE(lda >= (k > 0 ? k : 1) && ldb >= (k > 0 ? k : 1),
                  std::string(kCall) + ": lda=" + std::to_string(lda) + " and ldb=" + std::to_string(ldb) +
                      " must be at least k=" + std::to_string(k) + " (A is m x k, B is n x k)");
  CUDALAB_REQUIRE(ldc >= (n > 0 ? n : 1),
                  std::string(kCall) + ": ldc=" + std::to_string(ldc) + " is below n=" + std::to_string(n));
  if (m == 0 || n == 0) return;
  // The elements each array spans: rows - 1 pitches and one row.
  const auto span = [&](std::int64_t rows, std::int64_t ld, std::int64_t row) {
    return checked_product(kCall, "an operand's size", {rows - 1, ld}) + row;
  };
  const std::int64_t a_count = k > 0 ? span(m, lda, k) : 0, b_count = k > 0 ? span(n, ldb, k) : 0;
  require_arrays(kCall,
                 {{a, a_count, 1, "A"},
                  {b, b_count, 1, "B"},
                  {scale_a, scale_a ? 1 : 0, 4, "scale_a"},
                  {scale_b, scale_b ? 1 : 0, 4, "scale_b"}},
                 {{c, span(m, ldc, n), sizeof(__nv_bfloat16), "C"}});
  if (k > 0) {
    CUDALAB_REQUIRE(aligned16(a) && aligned16(b) && lda % 16 == 0 && ldb % 16 == 0,
                    std::string(kCall) + ": A and B must be 16-byte aligned with lda and ldb multiples of 16 (TMA)");
  }
  v::GemmFp8Args args;
  args.m = m, args.n = n, args.k = k, args.alpha = alpha;
  args.a = a, args.lda = lda, args.b = b, args.ldb = ldb, args.c = c, args.ldc = ldc;
  args.scale_a = scale_a, args.scale_b = scale_b;
  const std::string why = v::wgmma_fp8_limits(v::shape_of(args), current_gpu().compute_capability);
  if (!why.empty()) throw Error(ErrorKind::unsupported_device, std::string(kCall) + ": " + why, __FILE__, __LINE__);
  v::wgmma_fp8(args, stream);
}

}  // namespace cudalab
