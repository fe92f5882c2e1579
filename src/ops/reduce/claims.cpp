// The tutorial claims the reduction answers: C16 (the modulo filter), C17 (the filter-free race),
// C18 (the seven-step ladder at 1024 elements), C19 (shared memory vs shuffles vs CUB) and C20
// (divergence-free and shuffle speedups). Each reads fp32 records of `reduce_sum` on whole-number
// inputs (the distribution bench times reductions on) through the op's own ids, at fixed problems:
// n = 1024 for C18, n = 2^28 for the others.
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/reduce/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = reduce_ids;

constexpr const char* kInputs = "integers";  // the distribution bench times reductions on

std::string ms(const nlohmann::json& record) { return format_fixed(median_ms(record), 4) + " ms"; }

// C16: removing the `%` filter cut 283 us to 176 us (1.61x) because `%` is slow. The filter cannot
// simply be removed (C17); cudalab times the modulo filter against the same filter as a mask.
nlohmann::json claim_c16(const nlohmann::json& results, const Problem& problem) {
  const auto* modulo = timed_record(results, ids::kOp, ids::kGlobalModulo, problem, kInputs);
  const auto* mask = timed_record(results, ids::kOp, ids::kGlobalMask, problem, kInputs);
  if (modulo == nullptr || mask == nullptr) return nullptr;
  const double ratio = median_ms(*modulo) / median_ms(*mask);
  return verdict("C16",
                 "Removing the tid % (2*stride) filter cuts the reduction's time 283 -> 176 us, because % is slow",
                 "seed 002", "1.61x from dropping the modulo",
                 "global_modulo " + ms(*modulo) + ", global_mask " + ms(*mask) + " at " + problem.label() +
                     " (the modulo replaced by a mask; removing the filter is wrong, C17)",
                 ratio, speedup_verdict(ratio, 283.0 / 176.0));
}

// C17: the filter-free version is a race: wrong without -G. Every checked record of the racy
// variant counts, whatever its problem or distribution.
nlohmann::json claim_c17(const nlohmann::json& results) {
  int failed = 0, checked = 0;
  for (const auto& r : results.value("records", nlohmann::json::array())) {
    if (r.value("op", "") != ids::kOp || r.value("variant", "") != ids::kNoFilterRacy) continue;
    if (r.value("outcome", "") == "skipped") continue;
    ++checked;
    failed += r.value("outcome", "") == "failed";
  }
  if (checked == 0) return nullptr;
  return verdict(
      "C17", "The filter-free in-place reduction is a race: wrong without -G, right by luck with -G", "seed 002",
      "wrong results from optimised code",
      std::to_string(failed) + " of " + std::to_string(checked) + " checked runs wrong (optimised build; -G not built)",
      static_cast<double>(failed) / checked,
      failed > 0 ? "holds for the optimised build (the -G half is not measured)" : "not reproduced in this run");
}

// C18: the classic seven steps at 1024 elements: 8.0 -> 0.3 ms, 26.7x from step 1 to step 7. The
// same ratio at the largest problem is reported beside it.
nlohmann::json claim_c18(const nlohmann::json& results, const Problem& problem, const Problem& largest) {
  const auto* first = timed_record(results, ids::kOp, ids::kInterleavedDivergent, problem, kInputs);
  const auto* last = timed_record(results, ids::kOp, ids::kMultiplePerThread, problem, kInputs);
  if (first == nullptr || last == nullptr) return nullptr;
  const double ratio = median_ms(*first) / median_ms(*last);
  std::string measured = "at " + problem.label() + ": step 1 " + ms(*first) + ", step 7 " + ms(*last);
  const auto* first_large = timed_record(results, ids::kOp, ids::kInterleavedDivergent, largest, kInputs);
  const auto* last_large = timed_record(results, ids::kOp, ids::kMultiplePerThread, largest, kInputs);
  if (first_large != nullptr && last_large != nullptr)
    measured +=
        "; at " + largest.label() + ": " + format_fixed(median_ms(*first_large) / median_ms(*last_large), 2) + "x";
  return verdict("C18", "Reduction 7-step ladder on 1024 elements: 8.0, 4.0, 2.0, 1.5, 1.0, 0.5, 0.3 ms", "seed 000",
                 "26.7x from step 1 to step 7", measured, ratio, speedup_verdict(ratio, 8.0 / 0.3));
}

// C19: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s.
nlohmann::json claim_c19(const nlohmann::json& results, const Problem& problem) {
  const auto* shared = timed_record(results, ids::kOp, ids::kSequential, problem, kInputs);
  const auto* shuffle = timed_record(results, ids::kOp, ids::kShuffleAtomic, problem, kInputs);
  const auto* cub = timed_record(results, ids::kOp, ids::kCub, problem, kInputs);
  if (shared == nullptr || shuffle == nullptr || cub == nullptr) return nullptr;
  const double ratio = gbps(*shuffle) / gbps(*shared);
  return verdict("C19", "Reduction: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s", "seed 000",
                 "shuffle 8x the shared-memory tree; CUB 1.06x shuffle",
                 "sequential " + format_fixed(gbps(*shared), 0) + " GB/s, shuffle_atomic " +
                     format_fixed(gbps(*shuffle), 0) + " GB/s, cub " + format_fixed(gbps(*cub), 0) + " GB/s at " +
                     problem.label(),
                 ratio, speedup_verdict(ratio, 8.0));
}

// C20: the divergence-free reduction is 3.2x faster than the naive one; shuffles 4.5x.
nlohmann::json claim_c20(const nlohmann::json& results, const Problem& problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kInterleavedDivergent, problem, kInputs);
  const auto* divergence_free = timed_record(results, ids::kOp, ids::kInterleavedStrided, problem, kInputs);
  const auto* shuffle = timed_record(results, ids::kOp, ids::kShuffleAtomic, problem, kInputs);
  if (naive == nullptr || divergence_free == nullptr || shuffle == nullptr) return nullptr;
  const double ratio = median_ms(*naive) / median_ms(*divergence_free);
  const double shuffle_ratio = median_ms(*naive) / median_ms(*shuffle);
  return verdict("C20", "Divergence-free reduction 3.2x faster than naive; shuffle 4.5x", "seed 000",
                 "3.2x (strided index), 4.5x (shuffles)",
                 "interleaved_strided " + format_fixed(ratio, 2) + "x, shuffle_atomic " +
                     format_fixed(shuffle_ratio, 2) + "x over interleaved_divergent at " + problem.label(),
                 ratio, speedup_verdict(ratio, 3.2) + "; shuffle: " + speedup_verdict(shuffle_ratio, 4.5));
}

}  // namespace

void register_reduce_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem ladder = op.problem({1 << 10}, DType::f32);  // the classic ladder's size
  const Problem largest = op.problem({1 << 28}, DType::f32);
  // C17 reads the racy variant wherever bench ran it: every bench problem of the op.
  std::vector<ClaimUse> racy;
  for (const Problem& p : op.bench_problems) racy.push_back({ids::kOp, ids::kNoFilterRacy, p});

  registry.add(ClaimCheck{"C16",
                          ids::kOp,
                          {{ids::kOp, ids::kGlobalModulo, largest}, {ids::kOp, ids::kGlobalMask, largest}},
                          [largest](const nlohmann::json& results) { return claim_c16(results, largest); }});
  registry.add(ClaimCheck{"C17", ids::kOp, racy, claim_c17});
  registry.add(
      ClaimCheck{"C18",
                 ids::kOp,
                 {{ids::kOp, ids::kInterleavedDivergent, ladder},
                  {ids::kOp, ids::kMultiplePerThread, ladder},
                  {ids::kOp, ids::kInterleavedDivergent, largest},
                  {ids::kOp, ids::kMultiplePerThread, largest}},
                 [ladder, largest](const nlohmann::json& results) { return claim_c18(results, ladder, largest); }});
  registry.add(ClaimCheck{
      "C19",
      ids::kOp,
      {{ids::kOp, ids::kSequential, largest}, {ids::kOp, ids::kShuffleAtomic, largest}, {ids::kOp, ids::kCub, largest}},
      [largest](const nlohmann::json& results) { return claim_c19(results, largest); }});
  registry.add(ClaimCheck{"C20",
                          ids::kOp,
                          {{ids::kOp, ids::kInterleavedDivergent, largest},
                           {ids::kOp, ids::kInterleavedStrided, largest},
                           {ids::kOp, ids::kShuffleAtomic, largest}},
                          [largest](const nlohmann::json& results) { return claim_c20(results, largest); }});
}

}  // namespace cudalab::harness
