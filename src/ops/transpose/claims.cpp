// The tutorial claim the transpose answers: C10 (padding the shared tile), read through the op's
// own ids at the largest bench problem.
#include <string>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/transpose/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = transpose_ids;

// C10: padding the shared tile to [32][33] makes the tiled transpose 6.2x faster (45 to 280 GB/s:
// the same ratio, one part). Unpadded tiled time over padded time at 8192x8192 f32.
nlohmann::json claim_c10(const nlohmann::json& results, const Problem& problem) {
  const auto* plain = timed_record(results, ids::kOp, ids::kTiled, problem);
  const auto* padded = timed_record(results, ids::kOp, ids::kPadded, problem);
  if (plain == nullptr || padded == nullptr) return nullptr;
  const double ratio = median_ms(*plain) / median_ms(*padded);
  // Each element read once and written once.
  const double bytes = 2.0 * static_cast<double>(size_of(problem.dtype)) * static_cast<double>(problem.elements());
  auto rate = [bytes](const nlohmann::json& r) { return bytes / (median_ms(r) * 1e-3) / 1e9; };
  return claim_verdict("C10", "padded/unpadded speed 6.2x (45 -> 280 GB/s)",
                       std::string(ids::kTiled) + " " + format_fixed(rate(*plain), 0) + " GB/s, " + ids::kPadded + " " +
                           format_fixed(rate(*padded), 0) + " GB/s at " + problem.label() + ": " +
                           format_fixed(ratio, 2) + "x",
                       {judge_ratio("[32][33] padded tile over the unpadded [32][32] tile: 6.2x", 6.2, ratio)});
}

}  // namespace

void register_transpose_claims(Registry& registry) {
  const Problem largest = registry.find_op(ids::kOp)->problem({8192, 8192}, DType::f32);
  registry.add(ClaimCheck{"C10",
                          ids::kOp,
                          {{ids::kOp, ids::kTiled, largest}, {ids::kOp, ids::kPadded, largest}},
                          [largest](const nlohmann::json& results) { return claim_c10(results, largest); }});
}

}  // namespace cudalab::harness
