// The tutorial claims the matrix multiply answers, each judged part by part by the one verdict rule
// (harness/verdict.hpp): C26 (the RTX 3090 ladder, "tiled reaches ~90% of cuBLAS"), C27 (the
// tile-size table), C28 (double buffering's 20-30%), C30 (the A100 table, its own arithmetic
// included), C34 (tensor cores against CUDA cores), C35 (FP8 tensor cores against BF16), read at
// fixed bench problems through the ops' ids, and C11, C12 (shared-memory staging with K = 32), read from the staging
// experiment's table.
//
// The variants the claims are about: the tutorials' naive kernel (tutorials 000 and 004) puts
// threadIdx.x along the columns of C, which is the ladder's `coalesced` step (the ladder's `naive`
// step walks rows and is only quoted); their tiled kernel is TILE_SIZE 16, `shared_16`.
#include <cstdint>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/gemm/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = gemm_ids;

// "Near": within 20% either way (a time, a rate, or a table's figure against its own arithmetic).
constexpr double kNearLow = 0.8;
constexpr double kNearHigh = 1.25;
// "Slower" with no number: at least the near band's edge. Judged as a ratio, so any larger
// slowdown is "beyond the claim in its direction" and holds.
constexpr double kSlower = 1.25;

// "1024^3" for a cube, else the problem's sizes.
std::string at(const Problem& problem) {
  const std::int64_t m = problem.dim("M");
  return m == problem.dim("N") && m == problem.dim("K") ? std::to_string(m) + "^3" : problem.size_label();
}

std::string gflops(const nlohmann::json& record) { return format_fixed(1e3 * tflops(record), 0); }
std::string pct(double fraction) { return format_fixed(100 * fraction, 0) + "%"; }

// C26: RTX 3090, 1024^3: naive 48 GFLOPS, tiled-16 373, tiled+opt 555, cuBLAS 620; "tiled reaches
// ~90% of cuBLAS". Three parts: the tiled-16 kernel's fraction of cuBLAS, the naive -> tiled-16
// factor, and tiled + optimizations' fraction (555/620), answered by the fastest ladder step. A
// "~90%" fraction is a range (0.8-1.0): as a ratio part, any smaller fraction would read as beyond
// the claim.
nlohmann::json claim_c26(const nlohmann::json& results, const Problem& problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kCoalesced, problem);
  const auto* tiled = timed_record(results, ids::kOp, ids::kShared16, problem);
  const auto* best = fastest_ladder_record(results, ids::kOp, problem);
  const auto* cublas = timed_record(results, ids::kOp, ids::kCublas, problem);
  if (naive == nullptr || tiled == nullptr || best == nullptr || cublas == nullptr) return nullptr;
  const auto* row_walk = timed_record(results, ids::kOp, ids::kNaive, problem);
  const double tiled_fraction = tflops(*tiled) / tflops(*cublas);
  const double best_fraction = tflops(*best) / tflops(*cublas);
  const double factor = tflops(*tiled) / tflops(*naive);
  const std::string best_name = (*best)["variant"].get<std::string>();
  std::string measured = "at " + at(problem) + ", GFLOP/s: " + ids::kCoalesced + " (the tutorial's naive kernel) " +
                         gflops(*naive) + ", " + ids::kShared16 + " " + gflops(*tiled) + " (" + pct(tiled_fraction) +
                         " of cuBLAS), fastest ladder step " + best_name + " " + gflops(*best) + " (" +
                         pct(best_fraction) + "), cuBLAS " + gflops(*cublas) + "; " + ids::kShared16 + " / " +
                         ids::kCoalesced + " " + format_fixed(factor, 2) + "x";
  if (row_walk != nullptr)
    measured += " (over the slower " + std::string(ids::kNaive) +
                " step, threadIdx.x along rows: " + format_fixed(tflops(*tiled) / tflops(*row_walk), 1) + "x)";
  return claim_verdict(
      "C26",
      "fractions of cuBLAS: tiled-16 ~0.9 (0.8-1.0; the table's own 373/620 is 0.6), tiled + optimizations ~0.9 "
      "(555/620); naive -> tiled-16 7.8x (48 -> 373 GFLOPS)",
      measured,
      {judge_range("tiled-16 reaches ~90% of cuBLAS", kNearLow, 1.0, tiled_fraction),
       judge_ratio("naive -> tiled-16: 7.8x", 373.0 / 48.0, factor),
       judge_range("tiled + optimizations ~90% of cuBLAS (fastest ladder step " + best_name + ")", kNearLow, 1.0,
                   best_fraction)});
}

// C27: tile size 16x16 optimal, 32x32 good, 8x8 too small (too little reuse); the tutorial's table
// also calls 64x64 slow (low occupancy). Each tile's time over tile 16's: 8 and 64 "slower" (ratio
// parts, at least 1.25x), 32 "good" but not better than the optimum (a range, 1.0-1.25).
nlohmann::json claim_c27(const nlohmann::json& results, const Problem& problem) {
  const int tiles[4] = {8, 16, 32, 64};
  const char* const variants[4] = {ids::kShared8, ids::kShared16, ids::kShared32, ids::kShared64};
  double ms[4] = {};
  std::string measured = "at " + at(problem) + ", GFLOP/s:";
  for (int i = 0; i < 4; ++i) {
    const auto* r = timed_record(results, ids::kOp, variants[i], problem);
    if (r == nullptr) return nullptr;
    ms[i] = median_ms(*r);
    measured += std::string(i == 0 ? "" : ",") + " tile " + std::to_string(tiles[i]) + " " + gflops(*r);
  }
  measured += "; time over tile 16's: tile 8 " + format_fixed(ms[0] / ms[1], 2) + "x, tile 32 " +
              format_fixed(ms[2] / ms[1], 2) + "x, tile 64 " + format_fixed(ms[3] / ms[1], 2) + "x";
  return claim_verdict(
      "C27",
      "time over tile 16's: tile 8 slower (>= 1.25x), tile 32 1.0-1.25x (good, not better), tile 64 "
      "slower (>= 1.25x; the tutorial's table: low occupancy)",
      measured,
      {judge_ratio("8x8 too small: slower than 16x16", kSlower, ms[0] / ms[1]),
       judge_range("16x16 optimal, 32x32 good: 32x32 within 1.0-1.25x of 16x16's time", 1.0, kNearHigh, ms[2] / ms[1]),
       judge_ratio("16x16 optimal: 64x64 slower", kSlower, ms[3] / ms[1])});
}

// "20-30% faster": the gain (speedup - 1) against the range 0.2-0.3; no gain or a loss is the
// opposite direction.
PartVerdict judge_gain(const std::string& part, double speedup) {
  return speedup > 1 ? judge_range(part, 0.2, 0.3, speedup - 1) : judge_ratio(part, 1.25, speedup);
}

// C28: double buffering / software prefetch hides latency, 20-30% faster. Two parts, each a
// single-buffered step against its double-buffered twin at the largest bench problem.
nlohmann::json claim_c28(const nlohmann::json& results, const Problem& problem) {
  const auto* single = timed_record(results, ids::kOp, ids::kVectorized, problem);
  const auto* dbl = timed_record(results, ids::kOp, ids::kDoubleBuffered, problem);
  const auto* warp_single = timed_record(results, ids::kOp, ids::kWarpTiledSingleBuffer, problem);
  const auto* warp_double = timed_record(results, ids::kOp, ids::kWarpTiled, problem);
  if (single == nullptr || dbl == nullptr || warp_single == nullptr || warp_double == nullptr) return nullptr;
  const double ratio = median_ms(*single) / median_ms(*dbl);
  const double warp_ratio = median_ms(*warp_single) / median_ms(*warp_double);
  const std::string thread_pair = std::string(ids::kVectorized) + " -> " + ids::kDoubleBuffered;
  const std::string warp_pair = std::string(ids::kWarpTiledSingleBuffer) + " -> " + ids::kWarpTiled;
  return claim_verdict(
      "C28", "20-30% faster (a gain of 0.2-0.3) from a second buffer",
      "at " + at(problem) + ": " + thread_pair + " " + format_fixed(ratio, 3) + "x, " + warp_pair + " " +
          format_fixed(warp_ratio, 3) + "x",
      {judge_gain(thread_pair + ": 20-30% faster", ratio), judge_gain(warp_pair + ": 20-30% faster", warp_ratio)});
}

// C30: the A100 table. SGEMM 1024: naive 8 ms 2.6 TFLOPS, tiled 2 ms 10.4 TFLOPS, cuBLAS 0.3 ms 72
// TFLOPS; vector add 1M 0.1 ms 80 GB/s; HGEMM 4096 1.5 ms 183 TFLOPS. Ratio parts from the table's
// times (tiled / naive, cuBLAS / tiled), and one part per row for its own arithmetic: the stated
// rate over the one its time and size give, which a consistent table keeps near 1.
nlohmann::json claim_c30(const nlohmann::json& results, const Problem& problem, const Problem& hgemm_problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kCoalesced, problem);
  const auto* tiled = timed_record(results, ids::kOp, ids::kShared16, problem);
  const auto* cublas = timed_record(results, ids::kOp, ids::kCublas, problem);
  const auto* tf32 = timed_record(results, ids::kOp, ids::kCublasTf32, problem);
  const auto* hgemm = timed_record(results, ids::kOp, ids::kCublasGemmEx, hgemm_problem);
  if (naive == nullptr || tiled == nullptr || cublas == nullptr || hgemm == nullptr) return nullptr;
  const double tiled_over_naive = tflops(*tiled) / tflops(*naive);
  const double cublas_over_tiled = tflops(*cublas) / tflops(*tiled);
  const double hgemm_over_sgemm = tflops(*hgemm) / tflops(*cublas);
  const double sgemm_flop = 2.0 * 1024 * 1024 * 1024;
  const double hgemm_flop = 2.0 * 4096 * 4096 * 4096;
  const double vecadd_bytes = 3.0 * 4 * (1 << 20);  // two float inputs read, one written
  const double naive_implied = sgemm_flop / 8e-3 / 1e12;
  const double tiled_implied = sgemm_flop / 2e-3 / 1e12;
  const double cublas_implied = sgemm_flop / 0.3e-3 / 1e12;
  const double hgemm_implied = hgemm_flop / 1.5e-3 / 1e12;
  const double vecadd_implied = vecadd_bytes / 0.1e-3 / 1e9;
  auto arithmetic = [](const std::string& row, double stated, double implied, const std::string& unit,
                       const std::string& basis) {
    return judge_range("table arithmetic, " + row + ": " + format_significant(stated, 3) + " " + unit + " stated, " +
                           basis + " is " + format_significant(implied, 3) + " " + unit,
                       kNearLow, kNearHigh, stated / implied);
  };
  std::string measured = "at " + at(problem) + ", TFLOP/s: " + ids::kCoalesced + " (the tutorial's naive kernel) " +
                         format_fixed(tflops(*naive), 2) + ", " + ids::kShared16 + " (its TILE_SIZE 16) " +
                         format_fixed(tflops(*tiled), 2) + ", cuBLAS FP32 " + format_fixed(tflops(*cublas), 2);
  if (tf32 != nullptr) measured += " (TF32 tensor cores " + format_fixed(tflops(*tf32), 2) + ")";
  measured += "; cuBLAS HGEMM (cublasGemmEx, FP16, FP32 accumulation) at " + at(hgemm_problem) + " " +
              format_fixed(tflops(*hgemm), 1) + "; tiled / naive " + format_fixed(tiled_over_naive, 2) +
              "x, cuBLAS / tiled " + format_fixed(cublas_over_tiled, 2) + "x, HGEMM / SGEMM rate " +
              format_fixed(hgemm_over_sgemm, 1) +
              "x. The SGEMM rows' TFLOPS are ~10x what their own times give (72 would also exceed the A100's 19.5 "
              "TFLOPS FP32 peak) and the HGEMM row's 2x. Not measured here: the vector-add row (the vecadd bench, "
              "C03)";
  // The HGEMM row against the SGEMM cuBLAS row, both as their times give them: 2*4096^3 flop in
  // 1.5 ms over 2*1024^3 in 0.3 ms.
  const double hgemm_over_sgemm_claimed = (hgemm_flop / 1.5e-3) / (sgemm_flop / 0.3e-3);
  return claim_verdict(
      "C30",
      "from the table's times: tiled / naive 4x (8 -> 2 ms), cuBLAS / tiled 6.7x (2 -> 0.3 ms), cuBLAS HGEMM 4096 "
      "over cuBLAS SGEMM 1024 12.8x in rate (91.6 vs 7.2 TFLOPS); each row's stated rate within 0.8-1.25x of what "
      "its own time and size give",
      measured,
      {judge_ratio("SGEMM 1024, tiled over naive: 4x", 8.0 / 2.0, tiled_over_naive),
       judge_ratio("SGEMM 1024, cuBLAS over tiled: 6.7x", 2.0 / 0.3, cublas_over_tiled),
       judge_ratio("HGEMM 4096 over SGEMM 1024 (cuBLAS): 12.8x", hgemm_over_sgemm_claimed, hgemm_over_sgemm),
       arithmetic("vector add", 80, vecadd_implied, "GB/s", "1M floats (12 bytes each) in 0.1 ms"),
       arithmetic("SGEMM naive", 2.6, naive_implied, "TFLOPS", "2*1024^3 flop in 8 ms"),
       arithmetic("SGEMM tiled", 10.4, tiled_implied, "TFLOPS", "2*1024^3 flop in 2 ms"),
       arithmetic("SGEMM cuBLAS", 72, cublas_implied, "TFLOPS", "2*1024^3 flop in 0.3 ms"),
       arithmetic("HGEMM", 183, hgemm_implied, "TFLOPS", "2*4096^3 flop in 1.5 ms")});
}

// C34: "tensor cores give 8x+ the throughput of CUDA cores" (A100, FP16). Two ratio parts at the
// same size: cuBLAS BF16 (tensor cores) over cuBLAS SGEMM (FP32 FMA), and cudalab's fastest BF16
// ladder step over its fastest FP32 one. "8x+" is a lower bound: a larger ratio is beyond the claim
// in its direction and holds. FP16 is quoted beside it (its tensor-core rate equals BF16's).
nlohmann::json claim_c34(const nlohmann::json& results, const Problem& fp32, const Problem& bf16, const Problem& fp16) {
  const auto* cublas_fp32 = timed_record(results, ids::kOp, ids::kCublas, fp32);
  const auto* cublas_bf16 = timed_record(results, ids::kOp, ids::kCublasGemmEx, bf16);
  const auto* best_fp32 = fastest_ladder_record(results, ids::kOp, fp32);
  const auto* best_bf16 = fastest_ladder_record(results, ids::kOp, bf16);
  if (cublas_fp32 == nullptr || cublas_bf16 == nullptr || best_fp32 == nullptr || best_bf16 == nullptr) return nullptr;
  const auto* cublas_fp16 = timed_record(results, ids::kOp, ids::kCublasGemmEx, fp16);
  const double vendor = tflops(*cublas_bf16) / tflops(*cublas_fp32);
  const double ours = tflops(*best_bf16) / tflops(*best_fp32);
  std::string measured = "at " + at(fp32) + ", TFLOP/s: cuBLAS BF16 " + format_fixed(tflops(*cublas_bf16), 1);
  if (cublas_fp16 != nullptr) measured += " (FP16 " + format_fixed(tflops(*cublas_fp16), 1) + ")";
  measured += ", cuBLAS SGEMM " + format_fixed(tflops(*cublas_fp32), 1) + ": " + format_fixed(vendor, 1) +
              "x; cudalab BF16 " + (*best_bf16)["variant"].get<std::string>() + " " +
              format_fixed(tflops(*best_bf16), 1) + ", FP32 " + (*best_fp32)["variant"].get<std::string>() + " " +
              format_fixed(tflops(*best_fp32), 1) + ": " + format_fixed(ours, 1) + "x";
  return claim_verdict("C34", "8x or more the CUDA cores' GEMM rate from tensor cores", measured,
                       {judge_ratio("cuBLAS BF16 over cuBLAS SGEMM: 8x+", 8.0, vendor),
                        judge_ratio("cudalab BF16 over cudalab FP32: 8x+", 8.0, ours)});
}

// C35: "4th-gen Tensor Cores: FP8 support, up to 6x A100 performance" (H100). Across GPUs the 6x is
// the H100's dense BF16 rate over the A100's (989 / 312 TFLOP/s on NVIDIA's datasheets) times FP8's
// 2x over BF16 on the H100 (1979 / 989); on one GPU the claim's measurable part is that 2x. Two
// ratio parts at 8192^3: cuBLASLt FP8 over cuBLAS BF16, and cudalab's fastest FP8 ladder step over
// its fastest BF16 one.
nlohmann::json claim_c35(const nlohmann::json& results, const Problem& fp8, const Problem& bf16) {
  const auto* cublas_fp8 = timed_record(results, ids::kFp8Op, ids::kCublasLtFp8, fp8);
  const auto* cublas_bf16 = timed_record(results, ids::kOp, ids::kCublasGemmEx, bf16);
  const auto* best_fp8 = fastest_ladder_record(results, ids::kFp8Op, fp8);
  const auto* best_bf16 = fastest_ladder_record(results, ids::kOp, bf16);
  if (cublas_fp8 == nullptr || cublas_bf16 == nullptr || best_fp8 == nullptr || best_bf16 == nullptr) return nullptr;
  const double vendor = tflops(*cublas_fp8) / tflops(*cublas_bf16);
  const double ours = tflops(*best_fp8) / tflops(*best_bf16);
  const std::string measured = "at " + at(bf16) + ", TFLOP/s: cuBLASLt FP8 " + format_fixed(tflops(*cublas_fp8), 1) +
                               ", cuBLAS BF16 " + format_fixed(tflops(*cublas_bf16), 1) + ": " +
                               format_fixed(vendor, 2) + "x; cudalab FP8 " + (*best_fp8)["variant"].get<std::string>() +
                               " " + format_fixed(tflops(*best_fp8), 1) + ", BF16 " +
                               (*best_bf16)["variant"].get<std::string>() + " " + format_fixed(tflops(*best_bf16), 1) +
                               ": " + format_fixed(ours, 2) + "x";
  return claim_verdict("C35", "2x the BF16 GEMM rate from FP8 on one GPU (the 6x over an A100 less the H100's 3.2x)",
                       measured,
                       {judge_ratio("cuBLASLt FP8 over cuBLAS BF16: 2x", 2.0, vendor),
                        judge_ratio("cudalab FP8 over cudalab BF16: 2x", 2.0, ours)});
}

// The staging experiment's value in `column` for (product, kernel), 0 when absent.
double row_value(const nlohmann::json& table, const std::string& product, const std::string& kernel, int column) {
  for (const auto& row : table["rows"])
    if (row[0] == product && row[1] == kernel) return row[column].get<double>();
  return 0.0;
}

constexpr int kEffectiveGbpsColumn = 6;

// C11: C = AA^T: 3.6 -> 27.5 GB/s (shared memory) -> 39.2 GB/s (padding), M2090. One ratio part
// per step.
nlohmann::json claim_c11(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kStagingExperiment);
  if (table == nullptr) return nullptr;
  const double simple = row_value(*table, ids::kProductAAT, ids::kSimple, kEffectiveGbpsColumn);
  const double shared = row_value(*table, ids::kProductAAT, ids::kSharedTransposed, kEffectiveGbpsColumn);
  const double padded = row_value(*table, ids::kProductAAT, ids::kSharedPadded, kEffectiveGbpsColumn);
  if (simple <= 0 || shared <= 0 || padded <= 0) return nullptr;
  return claim_verdict("C11",
                       "7.6x from staging through shared memory (3.6 -> 27.5 GB/s), then 1.43x from padding "
                       "(27.5 -> 39.2 GB/s)",
                       std::string(ids::kSimple) + " " + format_fixed(simple, 0) + " GB/s, " + ids::kSharedTransposed +
                           " " + format_fixed(shared, 0) + ", " + ids::kSharedPadded + " " + format_fixed(padded, 0) +
                           ": " + format_fixed(shared / simple, 2) + "x then " + format_fixed(padded / shared, 2) + "x",
                       {judge_ratio("shared-memory staging: 7.6x", 27.5 / 3.6, shared / simple),
                        judge_ratio("padding out the bank conflicts: 1.43x", 39.2 / 27.5, padded / shared)});
}

// C12: C = AB: 6.6 -> 7.8 (A tile in shared memory) -> 14.9 GB/s (B tile too), K20X. One ratio
// part per step.
nlohmann::json claim_c12(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kStagingExperiment);
  if (table == nullptr) return nullptr;
  const double simple = row_value(*table, ids::kProductAB, ids::kSimple, kEffectiveGbpsColumn);
  const double shared_a = row_value(*table, ids::kProductAB, ids::kSharedA, kEffectiveGbpsColumn);
  const double shared_ab = row_value(*table, ids::kProductAB, ids::kSharedAB, kEffectiveGbpsColumn);
  if (simple <= 0 || shared_a <= 0 || shared_ab <= 0) return nullptr;
  return claim_verdict("C12", "1.18x from the A tile (6.6 -> 7.8 GB/s), then 1.91x from the B tile (7.8 -> 14.9)",
                       std::string(ids::kSimple) + " " + format_fixed(simple, 0) + " GB/s, " + ids::kSharedA + " " +
                           format_fixed(shared_a, 0) + ", " + ids::kSharedAB + " " + format_fixed(shared_ab, 0) + ": " +
                           format_fixed(shared_a / simple, 2) + "x then " + format_fixed(shared_ab / shared_a, 2) +
                           "x (" + format_fixed(shared_ab / simple, 2) + "x overall, claimed 2.26x)",
                       {judge_ratio("A tile in shared memory: 1.18x", 7.8 / 6.6, shared_a / simple),
                        judge_ratio("B tile too: 1.91x", 14.9 / 7.8, shared_ab / shared_a)});
}

std::vector<ClaimUse> uses_of(const Problem& problem, const std::vector<std::string>& variants) {
  std::vector<ClaimUse> uses;
  for (const std::string& variant : variants) uses.push_back({ids::kOp, variant, problem});
  return uses;
}

}  // namespace

void register_gemm_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  // The tutorials' size, and the largest bench problem for double buffering's gain.
  const Problem cube1024 = op.problem({1024, 1024, 1024}, DType::f32);
  const Problem cube8192 = op.problem({8192, 8192, 8192}, DType::f32);

  // C26 reads the fastest ladder step too: every ladder variant at that problem.
  std::vector<std::string> c26_variants = {ids::kCublas};
  for (const Variant& v : op.variants)
    if (v.role == Role::ladder) c26_variants.push_back(v.id);
  registry.add(ClaimCheck{"C26", ids::kOp, uses_of(cube1024, c26_variants),
                          [cube1024](const nlohmann::json& results) { return claim_c26(results, cube1024); }});
  registry.add(ClaimCheck{"C27", ids::kOp,
                          uses_of(cube1024, {ids::kShared8, ids::kShared16, ids::kShared32, ids::kShared64}),
                          [cube1024](const nlohmann::json& results) { return claim_c27(results, cube1024); }});
  registry.add(ClaimCheck{
      "C28", ids::kOp,
      uses_of(cube8192, {ids::kVectorized, ids::kDoubleBuffered, ids::kWarpTiledSingleBuffer, ids::kWarpTiled}),
      [cube8192](const nlohmann::json& results) { return claim_c28(results, cube8192); }});
  // C30's HGEMM row: cuBLAS in FP16 at the table's 4096^3.
  const Problem hgemm4096 = op.problem({4096, 4096, 4096}, DType::f16);
  std::vector<ClaimUse> c30_uses = uses_of(cube1024, {ids::kCoalesced, ids::kShared16, ids::kCublas, ids::kCublasTf32});
  c30_uses.push_back({ids::kOp, ids::kCublasGemmEx, hgemm4096});
  registry.add(ClaimCheck{"C30", ids::kOp, c30_uses, [cube1024, hgemm4096](const nlohmann::json& results) {
                            return claim_c30(results, cube1024, hgemm4096);
                          }});
  // C34 at the largest square bench size, where both engines run closest to their ceilings.
  const Problem bf16_8192 = op.problem({8192, 8192, 8192}, DType::bf16);
  const Problem fp16_8192 = op.problem({8192, 8192, 8192}, DType::f16);
  std::vector<ClaimUse> c34_uses = {{ids::kOp, ids::kCublas, cube8192},
                                    {ids::kOp, ids::kCublasGemmEx, bf16_8192},
                                    {ids::kOp, ids::kCublasGemmEx, fp16_8192}};
  for (const Variant& v : op.variants)
    if (v.role == Role::ladder) {
      if (v.supports(DType::f32)) c34_uses.push_back({ids::kOp, v.id, cube8192});
      if (v.supports(DType::bf16)) c34_uses.push_back({ids::kOp, v.id, bf16_8192});
    }
  registry.add(ClaimCheck{"C34", ids::kOp, c34_uses, [=](const nlohmann::json& results) {
                            return claim_c34(results, cube8192, bf16_8192, fp16_8192);
                          }});
  // C35 at the same size: the FP8 op's variants and the BF16 ones C34 reads.
  const Op& fp8_op = *registry.find_op(ids::kFp8Op);
  const Problem fp8_8192 = fp8_op.problem({8192, 8192, 8192}, DType::bf16);
  std::vector<ClaimUse> c35_uses = {{ids::kOp, ids::kCublasGemmEx, bf16_8192}};
  for (const Variant& v : fp8_op.variants) c35_uses.push_back({ids::kFp8Op, v.id, fp8_8192});
  for (const Variant& v : op.variants)
    if (v.role == Role::ladder && v.supports(DType::bf16)) c35_uses.push_back({ids::kOp, v.id, bf16_8192});
  registry.add(ClaimCheck{"C35", ids::kFp8Op, c35_uses,
                          [=](const nlohmann::json& results) { return claim_c35(results, fp8_8192, bf16_8192); }});
  registry.add(ClaimCheck{"C11", ids::kOp, {}, claim_c11});
  registry.add(ClaimCheck{"C12", ids::kOp, {}, claim_c12});
}

}  // namespace cudalab::harness
