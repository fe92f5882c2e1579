// The tutorial claim the transpose answers: C10 (padding the shared tile), read through the op's
// own ids at the largest bench problem.
#include "harness/claims.hpp"
#include "core/format.hpp"
#include "harness/registry.hpp"
#include "ops/transpose/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = transpose_ids;

// C10: padding the shared tile to [32][33] makes the tiled transpose 6.2x faster (45 to 280 GB/s).
nlohmann::json claim_c10(const nlohmann::json& results, const Problem& problem) {
  const auto* plain = timed_record(results, ids::kOp, ids::kTiled, problem);
  const auto* padded = timed_record(results, ids::kOp, ids::kPadded, problem);
  if (plain == nullptr || padded == nullptr) return nullptr;
  const double ratio = median_ms(*plain) / median_ms(*padded);
  // Each element read once and written once.
  const double bytes = 2.0 * static_cast<double>(size_of(problem.dtype)) * static_cast<double>(problem.elements());
  auto gbps = [bytes](const nlohmann::json& r) { return bytes / (median_ms(r) * 1e-3) / 1e9; };
  return verdict("C10", "Padding the transpose's shared tile to [32][33] makes it 6.2x faster than the unpadded tile",
                 "seed 000", "6.2x (45 -> 280 GB/s)",
                 "tiled " + format_fixed(gbps(*plain), 0) + " GB/s, padded " + format_fixed(gbps(*padded), 0) +
                     " GB/s at " + problem.label(),
                 ratio, speedup_verdict(ratio, 6.2));
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
