// The tutorial claims conv2d answers: C13 (constant memory for a small filter) and the texture,
// constant and tiling parts of C14. Each reads records through the op's own ids at the bench
// problem its claim names.
#include "harness/claims.hpp"
#include "core/format.hpp"
#include "harness/registry.hpp"
#include "ops/conv2d/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = conv2d_ids;

double median_of(const nlohmann::json* record) { return record ? median_ms(*record) : 0.0; }

std::string ms_text(const char* name, const nlohmann::json* record) {
  return std::string(name) + " " + format_significant(median_of(record), 4) + " ms";
}

// C13: the tutorial's table for a 3x3 filter on a 1000x1000 image: global memory 100 ms, shared
// memory 20 ms, constant memory 5 ms (20x over global).
nlohmann::json claim_c13(const nlohmann::json& results, const Problem& problem) {
  const auto* global = timed_record(results, ids::kOp, ids::kGlobalFilter, problem);
  const auto* shared = timed_record(results, ids::kOp, ids::kSharedTile, problem);
  const auto* constant = timed_record(results, ids::kOp, ids::kConstantFilter, problem);
  if (global == nullptr || shared == nullptr || constant == nullptr) return nullptr;
  const double ratio = median_of(global) / median_of(constant);
  std::string outcome = speedup_verdict(ratio, 20.0);
  if (median_of(shared) < median_of(constant))
    outcome += "; and the order differs: the shared-memory tile is faster than the constant filter";
  return verdict("C13",
                 "Constant memory for a 3x3 filter: global 100 ms, shared 20 ms, constant 5 ms (20x) on 1000x1000",
                 "seed 000", "global_filter / constant_filter = 20x; shared_tile in between (5x over global)",
                 ms_text(ids::kGlobalFilter, global) + ", " + ms_text(ids::kSharedTile, shared) + ", " +
                     ms_text(ids::kConstantFilter, constant) + " at " + problem.size_label() + "; global/shared " +
                     format_fixed(median_of(global) / median_of(shared), 2) + "x",
                 ratio, outcome);
}

// C14, the parts a convolution measures: texture 2-5x on 2-D access (texture against the same
// kernel reading global memory), constant memory 2-4x (constant_filter over global_filter),
// tiling 5-20x (shared_tile over constant_filter). Coalescing (2-32x) is measured by the memory
// experiments (docs/memory.md) and not judged here.
nlohmann::json claim_c14(const nlohmann::json& results, const Problem& problem) {
  const auto* global = timed_record(results, ids::kOp, ids::kGlobalFilter, problem);
  const auto* constant = timed_record(results, ids::kOp, ids::kConstantFilter, problem);
  const auto* shared = timed_record(results, ids::kOp, ids::kSharedTile, problem);
  const auto* texture = timed_record(results, ids::kOp, ids::kTexture, problem);
  if (global == nullptr || constant == nullptr || shared == nullptr || texture == nullptr) return nullptr;
  const double texture_ratio = median_of(constant) / median_of(texture);
  const double constant_ratio = median_of(global) / median_of(constant);
  const double tiling_ratio = median_of(constant) / median_of(shared);
  const std::string parts[3] = {speedup_verdict(texture_ratio, 2.0), speedup_verdict(constant_ratio, 2.0),
                                speedup_verdict(tiling_ratio, 5.0)};
  int held = 0, failed = 0;
  for (const std::string& part : parts) {
    held += part == "holds";
    failed += part == "does not hold";
  }
  std::string outcome = held == 3 ? "holds" : failed == 3 ? "does not hold" : "holds partly";
  outcome += " (texture: " + parts[0] + "; constant: " + parts[1] + "; tiling: " + parts[2] +
             "; coalescing is judged on the memory page)";
  return verdict(
      "C14", "Texture cache 2-5x on 2-D access; constant memory 2-4x; tiling 5-20x (coalescing: memory page)",
      "seed 000", "texture >= 2x, constant >= 2x, tiling >= 5x",
      "at " + problem.size_label() + ": texture " + format_fixed(texture_ratio, 2) +
          "x over constant_filter, constant " + format_fixed(constant_ratio, 2) +
          "x over global_filter, tiling (shared_tile) " + format_fixed(tiling_ratio, 2) + "x over constant_filter",
      texture_ratio, outcome);
}

}  // namespace

void register_conv2d_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem small = op.problem({1000, 1000, 3}, DType::f32);
  const Problem large = op.problem({4096, 4096, 3}, DType::f32);
  registry.add(ClaimCheck{"C13",
                          ids::kOp,
                          {{ids::kOp, ids::kGlobalFilter, small},
                           {ids::kOp, ids::kSharedTile, small},
                           {ids::kOp, ids::kConstantFilter, small}},
                          [small](const nlohmann::json& results) { return claim_c13(results, small); }});
  registry.add(ClaimCheck{"C14",
                          ids::kOp,
                          {{ids::kOp, ids::kGlobalFilter, large},
                           {ids::kOp, ids::kConstantFilter, large},
                           {ids::kOp, ids::kSharedTile, large},
                           {ids::kOp, ids::kTexture, large}},
                          [large](const nlohmann::json& results) { return claim_c14(results, large); }});
}

}  // namespace cudalab::harness
