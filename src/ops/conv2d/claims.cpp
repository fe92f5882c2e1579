// The tutorial claims conv2d answers: C13 (constant memory for a small filter) and the texture,
// constant and tiling parts of C14. Each reads records through the op's own ids at the bench
// problem its claim names.
#include <cstdint>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/conv2d/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = conv2d_ids;

// The filter widths C14 is judged at, each at 4096x4096 (the bench problems of that size).
constexpr std::int64_t kC14FilterWidths[] = {3, 5, 7};

std::string ms_text(const char* name, const nlohmann::json& record) {
  return std::string(name) + " " + format_significant(median_ms(record), 4) + " ms";
}

// C13: the tutorial's table for a 3x3 filter on a 1000x1000 image: global memory 100 ms, shared
// memory 20 ms, constant memory 5 ms. Two speedup parts over global_filter: shared_tile 5x
// (100/20) and constant_filter 20x (100/5). The constant-over-shared 4x the table also implies
// follows from the two and is only reported.
nlohmann::json claim_c13(const nlohmann::json& results, const Problem& problem) {
  const auto* global = timed_record(results, ids::kOp, ids::kGlobalFilter, problem);
  const auto* shared = timed_record(results, ids::kOp, ids::kSharedTile, problem);
  const auto* constant = timed_record(results, ids::kOp, ids::kConstantFilter, problem);
  if (global == nullptr || shared == nullptr || constant == nullptr) return nullptr;
  const double shared_ratio = median_ms(*global) / median_ms(*shared);
  const double constant_ratio = median_ms(*global) / median_ms(*constant);
  return claim_verdict("C13", "over global_filter: shared_tile 5x (100 -> 20 ms), constant_filter 20x (100 -> 5 ms)",
                       ms_text(ids::kGlobalFilter, *global) + ", " + ms_text(ids::kSharedTile, *shared) + ", " +
                           ms_text(ids::kConstantFilter, *constant) + " at " + problem.size_label() + ": shared " +
                           format_fixed(shared_ratio, 2) + "x, constant " + format_fixed(constant_ratio, 2) +
                           "x over global; constant over shared " + format_fixed(constant_ratio / shared_ratio, 2) +
                           "x (the table implies 4x)",
                       {judge_ratio("shared memory over global: 5x", 5.0, shared_ratio),
                        judge_ratio("constant memory over global: 20x", 20.0, constant_ratio)});
}

// C14, the parts a convolution measures, each a range part at each filter width (3, 5, 7 at
// 4096x4096): texture 2-5x on 2-D access (texture over constant_filter: the same loop and
// constant filter, the input read through the texture cache instead of plain loads), constant
// memory 2-4x (constant_filter over global_filter), tiling 5-20x (shared_tile over
// constant_filter: both read the filter from constant memory). Coalescing (2-32x) is measured by
// the memory experiments (C05's strides) and not judged here.
nlohmann::json claim_c14(const nlohmann::json& results, const std::vector<Problem>& problems) {
  std::vector<PartVerdict> parts;
  std::string measured;
  for (const Problem& problem : problems) {
    const auto* global = timed_record(results, ids::kOp, ids::kGlobalFilter, problem);
    const auto* constant = timed_record(results, ids::kOp, ids::kConstantFilter, problem);
    const auto* shared = timed_record(results, ids::kOp, ids::kSharedTile, problem);
    const auto* texture = timed_record(results, ids::kOp, ids::kTexture, problem);
    if (global == nullptr || constant == nullptr || shared == nullptr || texture == nullptr) return nullptr;
    const double texture_ratio = median_ms(*constant) / median_ms(*texture);
    const double constant_ratio = median_ms(*global) / median_ms(*constant);
    const double tiling_ratio = median_ms(*constant) / median_ms(*shared);
    const std::string at = " at " + problem.size_label();
    parts.push_back(judge_range("texture 2-5x" + at, 2, 5, texture_ratio));
    parts.push_back(judge_range("constant 2-4x" + at, 2, 4, constant_ratio));
    parts.push_back(judge_range("tiling 5-20x" + at, 5, 20, tiling_ratio));
    measured += (measured.empty() ? "" : "; ") + problem.size_label() + ": texture " + format_fixed(texture_ratio, 2) +
                "x over constant_filter, constant " + format_fixed(constant_ratio, 2) +
                "x over global_filter, tiling (shared_tile) " + format_fixed(tiling_ratio, 2) +
                "x over constant_filter";
  }
  if (parts.empty()) return nullptr;
  return claim_verdict("C14", "texture 2-5x, constant 2-4x, tiling 5-20x at each filter width (coalescing: C05)",
                       measured, parts);
}

}  // namespace

void register_conv2d_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem small = op.problem({1000, 1000, 3}, DType::f32);
  std::vector<Problem> large;
  for (std::int64_t width : kC14FilterWidths) large.push_back(op.problem({4096, 4096, width}, DType::f32));
  std::vector<ClaimUse> large_uses;
  for (const Problem& problem : large)
    for (const char* variant : {ids::kGlobalFilter, ids::kConstantFilter, ids::kSharedTile, ids::kTexture})
      large_uses.push_back({ids::kOp, variant, problem});
  registry.add(ClaimCheck{"C13",
                          ids::kOp,
                          {{ids::kOp, ids::kGlobalFilter, small},
                           {ids::kOp, ids::kSharedTile, small},
                           {ids::kOp, ids::kConstantFilter, small}},
                          [small](const nlohmann::json& results) { return claim_c13(results, small); }});
  registry.add(ClaimCheck{"C14", ids::kOp, large_uses,
                          [large](const nlohmann::json& results) { return claim_c14(results, large); }});
}

}  // namespace cudalab::harness
