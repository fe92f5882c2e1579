// The tutorial claim scan answers: C21 (Hillis-Steele for small inputs, Blelloch for large ones),
// judged by the one verdict rule (harness/verdict.hpp) through the op's own ids at fixed bench
// problems of the inclusive int32 scan.
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/scan/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = scan_ids;

// C21: "Hillis-Steele is fine for small inputs, Blelloch (work-efficient) wins for large ones". Two
// parts, each Hillis-Steele's time over Blelloch's (above 1, Blelloch is faster):
//   small, the single-block scans at n = 1024: "fine" is a range, from twice as fast as Blelloch to
//     10% slower (0.5-1.1);
//   large, the largest bench size, where both serve as the per-tile scan of the same
//     scan-then-propagate structure: "wins" states no size, and is taken as 1.05x.
// The middle size (n = 2^20) is reported, not judged.
nlohmann::json claim_c21(const nlohmann::json& results, const Problem& small, const Problem& middle,
                         const Problem& large) {
  const auto* hs_small = timed_record(results, ids::kOp, ids::kHillisSteele, small);
  const auto* blelloch_small = timed_record(results, ids::kOp, ids::kBlellochPadded, small);
  const auto* hs_large = timed_record(results, ids::kOp, ids::kScanThenPropagateHillisSteele, large);
  const auto* blelloch_large = timed_record(results, ids::kOp, ids::kScanThenPropagate, large);
  if (hs_small == nullptr || blelloch_small == nullptr || hs_large == nullptr || blelloch_large == nullptr)
    return nullptr;
  const double small_ratio = median_ms(*hs_small) / median_ms(*blelloch_small);
  const double large_ratio = median_ms(*hs_large) / median_ms(*blelloch_large);
  std::string measured = small.size_label() + ": hillis_steele " + format_fixed(1e3 * median_ms(*hs_small), 2) +
                         " us, blelloch_padded " + format_fixed(1e3 * median_ms(*blelloch_small), 2) + " us (" +
                         format_fixed(small_ratio, 3) + "); " + large.size_label() +
                         " scan-then-propagate: Hillis-Steele tiles " + format_fixed(median_ms(*hs_large), 4) +
                         " ms, Blelloch tiles " + format_fixed(median_ms(*blelloch_large), 4) + " ms (" +
                         format_fixed(large_ratio, 3) + ")";
  const auto* hs_middle = timed_record(results, ids::kOp, ids::kScanThenPropagateHillisSteele, middle);
  const auto* blelloch_middle = timed_record(results, ids::kOp, ids::kScanThenPropagate, middle);
  if (hs_middle != nullptr && blelloch_middle != nullptr)
    measured += "; at " + middle.size_label() +
                ", not judged: " + format_fixed(median_ms(*hs_middle) / median_ms(*blelloch_middle), 3);
  return claim_verdict(
      "C21",
      "Hillis-Steele's time over Blelloch's: 0.5-1.1 at n=1024 (fine: at most 10% slower); >= 1.05 at large n "
      "(Blelloch wins)",
      measured,
      {judge_range("Hillis-Steele fine at " + small.size_label() + " (0.5-1.1)", 0.5, 1.1, small_ratio),
       judge_ratio("Blelloch wins at " + large.size_label() + " (taken as 1.05x)", 1.05, large_ratio)});
}

}  // namespace

void register_scan_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem small = op.problem({1 << 10}, DType::i32, {{ids::kExclusive, 0}});
  const Problem middle = op.problem({1 << 20}, DType::i32, {{ids::kExclusive, 0}});
  const Problem large = op.problem({1 << 28}, DType::i32, {{ids::kExclusive, 0}});
  registry.add(ClaimCheck{
      "C21",
      ids::kOp,
      {{ids::kOp, ids::kHillisSteele, small},
       {ids::kOp, ids::kBlellochPadded, small},
       {ids::kOp, ids::kScanThenPropagateHillisSteele, middle},
       {ids::kOp, ids::kScanThenPropagate, middle},
       {ids::kOp, ids::kScanThenPropagateHillisSteele, large},
       {ids::kOp, ids::kScanThenPropagate, large}},
      [small, middle, large](const nlohmann::json& results) { return claim_c21(results, small, middle, large); }});
}

}  // namespace cudalab::harness
