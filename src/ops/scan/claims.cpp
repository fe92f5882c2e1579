// The tutorial claim scan answers: C21 (Hillis-Steele for small inputs, Blelloch for large ones),
// read through the op's own ids at fixed bench problems of the inclusive int32 scan.
#include <string>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/scan/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = scan_ids;

// C21: "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones".
// Small: the single-block scans at n = 1024. Large: the largest bench size, where both scans serve
// as the per-tile scan of the same scan-then-propagate structure.
nlohmann::json claim_c21(const nlohmann::json& results, const Problem& small, const Problem& large) {
  const auto* hs_small = timed_record(results, ids::kOp, ids::kHillisSteele, small);
  const auto* blelloch_small = timed_record(results, ids::kOp, ids::kBlellochPadded, small);
  const auto* hs_large = timed_record(results, ids::kOp, ids::kScanThenPropagateHillisSteele, large);
  const auto* blelloch_large = timed_record(results, ids::kOp, ids::kScanThenPropagate, large);
  if (hs_small == nullptr || blelloch_small == nullptr || hs_large == nullptr || blelloch_large == nullptr)
    return nullptr;
  // Ratios are Hillis-Steele's time over Blelloch's: above 1, Blelloch is faster.
  const double small_ratio = median_ms(*hs_small) / median_ms(*blelloch_small);
  const double large_ratio = median_ms(*hs_large) / median_ms(*blelloch_large);
  const bool fine_small = small_ratio <= 1.10;
  const bool wins_large = large_ratio > 1.03;
  std::string outcome;
  if (fine_small && wins_large) {
    outcome = "holds";
  } else if (fine_small) {
    outcome = "holds partly: Hillis-Steele is fine for small inputs, but Blelloch does not win on large ones";
  } else if (wins_large) {
    outcome = "holds partly: Blelloch wins on large inputs, and on small ones too";
  } else {
    outcome = "does not hold: Hillis-Steele is slower for small inputs and not for large ones";
  }
  return verdict(
      "C21", "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones", "seed 000",
      "n=1024: Hillis-Steele within 10% of Blelloch (ratio <= 1.1); large n: Blelloch faster (ratio > 1)",
      small.size_label() + ": hillis_steele " + format_fixed(1e3 * median_ms(*hs_small), 2) + " us, blelloch_padded " +
          format_fixed(1e3 * median_ms(*blelloch_small), 2) + " us (ratio " + format_fixed(small_ratio, 3) + "); " +
          large.size_label() + " scan-then-propagate: Hillis-Steele tiles " + format_fixed(median_ms(*hs_large), 4) +
          " ms, Blelloch tiles " + format_fixed(median_ms(*blelloch_large), 4) + " ms",
      large_ratio, outcome);
}

}  // namespace

void register_scan_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem small = op.problem({1 << 10}, DType::i32, {{ids::kExclusive, 0}});
  const Problem large = op.problem({1 << 28}, DType::i32, {{ids::kExclusive, 0}});
  registry.add(ClaimCheck{"C21",
                          ids::kOp,
                          {{ids::kOp, ids::kHillisSteele, small},
                           {ids::kOp, ids::kBlellochPadded, small},
                           {ids::kOp, ids::kScanThenPropagateHillisSteele, large},
                           {ids::kOp, ids::kScanThenPropagate, large}},
                          [small, large](const nlohmann::json& results) { return claim_c21(results, small, large); }});
}

}  // namespace cudalab::harness
