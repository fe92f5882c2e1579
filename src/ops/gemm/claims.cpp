// The tutorial claims the matrix multiply answers: C26 (tiled kernels reach ~90% of cuBLAS), C27
// (the best tile size), C28 (double buffering's gain), C30 (the A100 SGEMM table), each read at a
// fixed bench problem through the op's ids, and C11, C12 (shared-memory staging with K = 32), read
// from the staging experiment's table.
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/gemm/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = gemm_ids;

// "1024^3" for a cube, else the problem's sizes.
std::string at(const Problem& problem) {
  const std::int64_t m = problem.dim("M");
  return m == problem.dim("N") && m == problem.dim("K") ? std::to_string(m) + "^3" : problem.size_label();
}

// C26: RTX 3090, 1024^3: naive 48 GFLOPS, tiled-16 373, tiled+opt 555, cuBLAS 620.
nlohmann::json claim_c26(const nlohmann::json& results, const Problem& problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kNaive, problem);
  const auto* tiled = timed_record(results, ids::kOp, ids::kShared16, problem);
  const auto* best = fastest_ladder_record(results, ids::kOp, problem);
  const auto* cublas = timed_record(results, ids::kOp, ids::kCublas, problem);
  if (naive == nullptr || tiled == nullptr || best == nullptr || cublas == nullptr) return nullptr;
  const double ratio = tflops(*best) / tflops(*cublas);
  return verdict("C26",
                 "Matmul 1024 (RTX 3090): naive 48 GFLOPS, tiled-16 373, tiled+opt 555, cuBLAS 620; tiled reaches "
                 "~90% of cuBLAS",
                 "seed 000", "best hand-written kernel ~0.9 of cuBLAS; tiled-16 / naive ~7.8x",
                 "at " + at(problem) + ": " + ids::kNaive + " " + format_fixed(1e3 * tflops(*naive), 0) + " GFLOP/s, " +
                     ids::kShared16 + " " + format_fixed(1e3 * tflops(*tiled), 0) + ", best ladder (" +
                     (*best)["variant"].get<std::string>() + ") " + format_fixed(1e3 * tflops(*best), 0) + ", cuBLAS " +
                     format_fixed(1e3 * tflops(*cublas), 0) + "; " + ids::kShared16 + " / " + ids::kNaive + " " +
                     format_fixed(tflops(*tiled) / tflops(*naive), 1) + "x",
                 ratio,
                 ratio >= 0.85
                     ? "holds: the optimized kernel reaches " + format_fixed(100 * ratio, 0) +
                           "% of cuBLAS (absolute figures are another GPU's)"
                     : "holds partly: the best kernel reaches " + format_fixed(100 * ratio, 0) + "% of cuBLAS here");
}

// C27: tile size 16x16 optimal, 32x32 good, 8x8 too small.
nlohmann::json claim_c27(const nlohmann::json& results, const Problem& problem) {
  const int tiles[4] = {8, 16, 32, 64};
  const char* const variants[4] = {ids::kShared8, ids::kShared16, ids::kShared32, ids::kShared64};
  double ms[4] = {};
  std::string measured = "at " + at(problem) + ":";
  for (int i = 0; i < 4; ++i) {
    const auto* r = timed_record(results, ids::kOp, variants[i], problem);
    if (r == nullptr) return nullptr;
    ms[i] = median_ms(*r);
    measured += " tile " + std::to_string(tiles[i]) + " " + format_fixed(1e3 * tflops(*r), 0) + " GFLOP/s;";
  }
  int fastest = 0;
  for (int i = 1; i < 4; ++i)
    if (ms[i] < ms[fastest]) fastest = i;
  const bool eight_slowest = ms[0] > ms[1] && ms[0] > ms[2];
  std::string outcome;
  if (fastest == 1 && eight_slowest) {
    outcome = "holds";
  } else if (eight_slowest) {
    outcome = "holds partly: 8x8 is too small, but tile " + std::to_string(tiles[fastest]) + " is fastest here";
  } else {
    outcome = "does not hold: tile " + std::to_string(tiles[fastest]) + " is fastest";
  }
  return verdict("C27", "Tile size: 16x16 optimal, 32x32 good, 8x8 too small (too little reuse)", "seed 000",
                 "tile 16 fastest, tile 8 slowest of 8/16/32", measured, ms[1] / ms[fastest], outcome);
}

// C28: double buffering hides latency, 20-30% faster.
nlohmann::json claim_c28(const nlohmann::json& results, const Problem& problem) {
  const auto* single = timed_record(results, ids::kOp, ids::kVectorized, problem);
  const auto* dbl = timed_record(results, ids::kOp, ids::kDoubleBuffered, problem);
  const auto* warp_single = timed_record(results, ids::kOp, ids::kWarpTiledSingleBuffer, problem);
  const auto* warp_double = timed_record(results, ids::kOp, ids::kWarpTiled, problem);
  if (single == nullptr || dbl == nullptr || warp_single == nullptr || warp_double == nullptr) return nullptr;
  const double ratio = median_ms(*single) / median_ms(*dbl);
  const double warp_ratio = median_ms(*warp_single) / median_ms(*warp_double);
  return verdict("C28", "Double buffering / software prefetch hides latency: 20-30% faster", "seed 000", "1.2-1.3x",
                 "at " + at(problem) + ": " + ids::kVectorized + " -> " + ids::kDoubleBuffered + " " +
                     format_fixed(ratio, 2) + "x; " + ids::kWarpTiledSingleBuffer + " -> " + ids::kWarpTiled + " " +
                     format_fixed(warp_ratio, 2) + "x",
                 ratio, speedup_verdict(ratio, 1.2));
}

// C30: A100, SGEMM 1024: naive 8 ms 2.6 TFLOPS, tiled 2 ms 10.4 TFLOPS, cuBLAS 0.3 ms 72 TFLOPS.
nlohmann::json claim_c30(const nlohmann::json& results, const Problem& problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kNaive, problem);
  const auto* tiled = timed_record(results, ids::kOp, ids::kShared32, problem);
  const auto* cublas = timed_record(results, ids::kOp, ids::kCublas, problem);
  const auto* tf32 = timed_record(results, ids::kOp, ids::kCublasTf32, problem);
  if (naive == nullptr || tiled == nullptr || cublas == nullptr || tf32 == nullptr) return nullptr;
  const double tiled_over_naive = tflops(*tiled) / tflops(*naive);
  const double cublas_over_tiled = tflops(*cublas) / tflops(*tiled);
  return verdict(
      "C30", "A100 table: SGEMM 1024 naive 8 ms 2.6 TFLOPS, tiled 2 ms 10.4 TFLOPS, cuBLAS 0.3 ms 72 TFLOPS",
      "seed 004", "tiled / naive 4x, cuBLAS / tiled 6.9x (and 2*1024^3 flop in 8 ms is 0.27 TFLOPS, not 2.6)",
      "at " + at(problem) + ": " + ids::kNaive + " " + format_fixed(tflops(*naive), 2) + " TFLOP/s, " + ids::kShared32 +
          " " + format_fixed(tflops(*tiled), 2) + ", cuBLAS FP32 " + format_fixed(tflops(*cublas), 2) +
          ", cuBLAS TF32 " + format_fixed(tflops(*tf32), 2) + "; tiled/naive " + format_fixed(tiled_over_naive, 1) +
          "x, cuBLAS/tiled " + format_fixed(cublas_over_tiled, 1) + "x",
      cublas_over_tiled,
      "holds partly: the ordering holds, but 72 TFLOPS exceeds the A100's 19.5 TFLOPS FP32 peak: the table's "
      "cuBLAS figure can only be TF32 tensor-core math, a different precision");
}

// The staging experiment's value in `column` for (product, kernel), 0 when absent.
double row_value(const nlohmann::json& table, const std::string& product, const std::string& kernel, int column) {
  for (const auto& row : table["rows"])
    if (row[0] == product && row[1] == kernel) return row[column].get<double>();
  return 0.0;
}

constexpr int kEffectiveGbpsColumn = 6;

// C11: C = AA^T: 3.6 -> 27.5 GB/s (shared memory) -> 39.2 GB/s (padding).
nlohmann::json claim_c11(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kStagingExperiment);
  if (table == nullptr) return nullptr;
  const double simple = row_value(*table, ids::kProductAAT, ids::kSimple, kEffectiveGbpsColumn);
  const double shared = row_value(*table, ids::kProductAAT, ids::kSharedTransposed, kEffectiveGbpsColumn);
  const double padded = row_value(*table, ids::kProductAAT, ids::kSharedPadded, kEffectiveGbpsColumn);
  if (simple <= 0 || shared <= 0 || padded <= 0) return nullptr;
  const double ratio = padded / shared;
  const std::string outcome =
      speedup_verdict(shared / simple, 27.5 / 3.6) == "holds" && speedup_verdict(ratio, 39.2 / 27.5) == "holds"
          ? "holds"
          : (shared > simple && padded > shared
                 ? "holds partly: both steps help, by less than on the tutorial's GPU"
                 : "holds partly: " + std::string(shared > simple ? "staging helps" : "staging does not help") + ", " +
                       (padded > shared ? "padding helps" : "padding does not help"));
  return verdict("C11",
                 "C = A·Aᵀ: coalescing through shared memory 3.6 to 27.5 GB/s; removing bank conflicts 39.2 GB/s",
                 "seed 001", "7.6x from shared memory, then 1.43x from padding (M2090)",
                 std::string(ids::kSimple) + " " + format_fixed(simple, 0) + " GB/s, " + ids::kSharedTransposed + " " +
                     format_fixed(shared, 0) + ", " + ids::kSharedPadded + " " + format_fixed(padded, 0) + ": " +
                     format_fixed(shared / simple, 2) + "x then " + format_fixed(ratio, 2) + "x",
                 ratio, outcome);
}

// C12: C = AB: 6.6 -> 7.8 (A tile in shared memory) -> 14.9 GB/s (B tile too), K20X.
nlohmann::json claim_c12(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kStagingExperiment);
  if (table == nullptr) return nullptr;
  const double simple = row_value(*table, ids::kProductAB, ids::kSimple, kEffectiveGbpsColumn);
  const double shared_a = row_value(*table, ids::kProductAB, ids::kSharedA, kEffectiveGbpsColumn);
  const double shared_ab = row_value(*table, ids::kProductAB, ids::kSharedAB, kEffectiveGbpsColumn);
  if (simple <= 0 || shared_a <= 0 || shared_ab <= 0) return nullptr;
  const double ratio = shared_ab / simple;
  return verdict("C12", "C = A·B with shared-memory tiles: 6.6 to 7.8 to 14.9 GB/s effective (K20X)", "seed 001",
                 "1.18x (A tile), then 1.91x (B tile): 2.26x overall",
                 std::string(ids::kSimple) + " " + format_fixed(simple, 0) + " GB/s, " + ids::kSharedA + " " +
                     format_fixed(shared_a, 0) + ", " + ids::kSharedAB + " " + format_fixed(shared_ab, 0) + ": " +
                     format_fixed(shared_a / simple, 2) + "x then " + format_fixed(shared_ab / shared_a, 2) + "x",
                 ratio, speedup_verdict(ratio, 14.9 / 6.6));
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
  registry.add(ClaimCheck{"C30", ids::kOp,
                          uses_of(cube1024, {ids::kNaive, ids::kShared32, ids::kCublas, ids::kCublasTf32}),
                          [cube1024](const nlohmann::json& results) { return claim_c30(results, cube1024); }});
  registry.add(ClaimCheck{"C11", ids::kOp, {}, claim_c11});
  registry.add(ClaimCheck{"C12", ids::kOp, {}, claim_c12});
}

}  // namespace cudalab::harness
