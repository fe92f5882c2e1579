// The tutorial claims the reduction answers, judged by the one verdict rule (harness/verdict.hpp):
// C16 (the modulo filter), C17 (the filter-free race), C18 (the seven-step ladder at 1024
// elements), C19 (shared memory vs shuffles vs CUB) and C20 (divergence-free and shuffle speedups).
// Each reads fp32 records of `reduce_sum` on whole-number inputs (the distribution bench times
// reductions on) through the op's own ids, at the size the claim states: n = 2^20 for C16 (the
// lecture's million elements), n = 1024 for C18 (with n = 2^28 as a second, named part), and the
// largest bench problem, n = 2^28, where the claim states none.
#include <cstdint>
#include <map>
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

// The classic seven steps (Harris), in order: C18's 8.0, 4.0, 2.0, 1.5, 1.0, 0.5, 0.3 ms.
const std::vector<std::string> kSevenSteps = {
    ids::kInterleavedDivergent, ids::kInterleavedStrided, ids::kSequential,       ids::kFirstAddOnLoad,
    ids::kUnrolledLastWarp,     ids::kCompleteUnroll,     ids::kMultiplePerThread};

std::string ms(const nlohmann::json& record) { return format_fixed(median_ms(record), 4) + " ms"; }

// C16: removing the `%` filter cut 283 us to 176 us (1.61x) because `%` costs ~290 cycles. The
// lecture ran a million elements (grids of 4096, 16, 1 blocks: n = 2^20). The filter cannot simply
// be removed (C17), so cudalab times the modulo filter against the same filter as a mask. The
// cycle counts are not measured.
nlohmann::json claim_c16(const nlohmann::json& results, const Problem& problem, const Problem& largest) {
  const auto* modulo = timed_record(results, ids::kOp, ids::kGlobalModulo, problem, kInputs);
  const auto* mask = timed_record(results, ids::kOp, ids::kGlobalMask, problem, kInputs);
  if (modulo == nullptr || mask == nullptr) return nullptr;
  const double speedup = median_ms(*modulo) / median_ms(*mask);
  std::string measured = "global_modulo " + ms(*modulo) + ", global_mask " + ms(*mask) + " at " + problem.label() +
                         " (" + format_fixed(speedup, 2) +
                         "x; the modulo replaced by a mask, since removing the "
                         "filter is wrong, C17)";
  const auto* modulo_large = timed_record(results, ids::kOp, ids::kGlobalModulo, largest, kInputs);
  const auto* mask_large = timed_record(results, ids::kOp, ids::kGlobalMask, largest, kInputs);
  if (modulo_large != nullptr && mask_large != nullptr)
    measured += "; at " + largest.label() +
                ", not judged: " + format_fixed(median_ms(*modulo_large) / median_ms(*mask_large), 2) + "x";
  measured += "; the ~290 vs 2-9 cycle costs are not measured";
  return claim_verdict("C16", "283 -> 176 us: 1.61x from dropping the modulo, at the lecture's 2^20 elements", measured,
                       {judge_ratio("modulo over mask at " + problem.size_label(), 283.0 / 176.0, speedup)});
}

// C17: the filter-free version is a race, wrong without -G. Only the optimised build is measured:
// every checked record of the racy variant counts, whatever its problem or dtype, and the claim
// (the lecture's results "differ greatly" from the CPU's) is taken as most runs wrong: the share of
// checked runs that are wrong, in 0.5-1.
nlohmann::json claim_c17(const nlohmann::json& results) {
  int failed = 0, checked = 0;
  std::map<std::int64_t, std::pair<int, int>> by_size;  // n -> (wrong, checked)
  for (const auto& r : results.value("records", nlohmann::json::array())) {
    if (r.value("op", "") != ids::kOp || r.value("variant", "") != ids::kNoFilterRacy) continue;
    if (r.value("outcome", "") == "skipped") continue;
    const bool wrong = r.value("outcome", "") == "failed";
    ++checked;
    failed += wrong;
    std::int64_t size = -1;
    if (r.contains("problem") && !r["problem"].value("dims", nlohmann::json::array()).empty())
      size = r["problem"]["dims"][0].value("size", size);
    by_size[size].first += wrong;
    ++by_size[size].second;
  }
  if (checked == 0) return nullptr;
  const std::string part = "optimised build wrong (share of runs wrong, 0.5-1)";
  const double share = static_cast<double>(failed) / checked;
  const PartVerdict verdict = judge_range(part, 0.5, 1.0, share);
  std::string sizes;
  for (const auto& [size, counts] : by_size)
    sizes += (sizes.empty() ? "" : ", ") + ("n=" + std::to_string(size)) + ": " + std::to_string(counts.first) +
             " of " + std::to_string(counts.second);
  std::vector<PartVerdict> parts = {verdict};
  std::string measured = std::to_string(failed) + " of " + std::to_string(checked) + " checked runs wrong (" + sizes +
                         "), optimised build";
  // The -G half, from the racy_device_debug experiment: "right by luck" taken as most runs right.
  if (const auto* table = experiment(results, ids::kRacyDeviceDebug); table != nullptr) {
    for (const auto& row : (*table)["rows"]) {
      if (row[0].get<std::string>().rfind("device debug", 0) != 0) continue;
      const int runs = row[2].get<int>(), wrong = row[3].get<int>();
      parts.push_back(judge_range("-G build right by luck (share of runs right, 0.5-1)", 0.5, 1.0,
                                  static_cast<double>(runs - wrong) / runs));
      measured += "; -G build: " + std::to_string(wrong) + " of " + std::to_string(runs) +
                  " runs wrong at n=" + std::to_string(row[1].get<std::int64_t>());
    }
  } else {
    measured += "; the -G half needs the racy_device_debug experiment";
  }
  return claim_verdict("C17", "wrong results from the optimised build (most runs); right by luck with -G", measured,
                       parts);
}

// The seven steps' times at `problem`, or an empty string when one is missing.
std::string step_times(const nlohmann::json& results, const Problem& problem) {
  std::string text;
  for (const std::string& step : kSevenSteps) {
    const auto* r = timed_record(results, ids::kOp, step, problem, kInputs);
    if (r == nullptr) return "";
    text += (text.empty() ? "" : ", ") + format_fixed(1e3 * median_ms(*r), 1);
  }
  return text + " us";
}

// C18: the seven steps on 1024 elements, 8.0 -> 0.3 ms: 26.7x from step 1 to step 7. Judged at the
// stated 1024 elements first, then at n = 2^28, a second part named as such (at 1024 elements every
// step is a few launches, and launch time hides the steps).
nlohmann::json claim_c18(const nlohmann::json& results, const Problem& problem, const Problem& largest) {
  const auto* first = timed_record(results, ids::kOp, kSevenSteps.front(), problem, kInputs);
  const auto* last = timed_record(results, ids::kOp, kSevenSteps.back(), problem, kInputs);
  const auto* first_large = timed_record(results, ids::kOp, kSevenSteps.front(), largest, kInputs);
  const auto* last_large = timed_record(results, ids::kOp, kSevenSteps.back(), largest, kInputs);
  if (first == nullptr || last == nullptr || first_large == nullptr || last_large == nullptr) return nullptr;
  const double claimed = 8.0 / 0.3;
  const double at_stated = median_ms(*first) / median_ms(*last);
  const double at_largest = median_ms(*first_large) / median_ms(*last_large);
  std::string measured = "step 1 over step 7 (" + kSevenSteps.front() + " over " + kSevenSteps.back() +
                         "): " + format_fixed(at_stated, 2) + "x at " + problem.label() + ", " +
                         format_fixed(at_largest, 2) + "x at " + largest.label();
  const std::string stated_steps = step_times(results, problem);
  const std::string largest_steps = step_times(results, largest);
  if (!stated_steps.empty()) measured += "; the seven steps at " + problem.size_label() + ": " + stated_steps;
  if (!largest_steps.empty()) measured += "; at " + largest.size_label() + ": " + largest_steps;
  return claim_verdict(
      "C18", "26.7x from step 1 to step 7 (8.0 -> 0.3 ms) on 1024 elements", measured,
      {judge_ratio("step 1 over step 7 at " + problem.size_label() + " (the stated size)", claimed, at_stated),
       judge_ratio("step 1 over step 7 at " + largest.size_label() + " (not the stated size)", claimed, at_largest)});
}

// C19: shared memory 100 GB/s, warp shuffle 800 GB/s, CUB 850 GB/s: absolute figures of another
// GPU, judged by the ratios they imply, shuffle 8x the shared-memory tree and CUB 1.0625x the
// shuffles, each a part.
nlohmann::json claim_c19(const nlohmann::json& results, const Problem& problem) {
  const auto* shared = timed_record(results, ids::kOp, ids::kSequential, problem, kInputs);
  const auto* shuffle = timed_record(results, ids::kOp, ids::kShuffleAtomic, problem, kInputs);
  const auto* cub = timed_record(results, ids::kOp, ids::kCub, problem, kInputs);
  if (shared == nullptr || shuffle == nullptr || cub == nullptr) return nullptr;
  return claim_verdict("C19", "shuffle 8x the shared-memory tree's GB/s; CUB 1.06x the shuffles'",
                       "sequential " + format_fixed(gbps(*shared), 0) + " GB/s, shuffle_atomic " +
                           format_fixed(gbps(*shuffle), 0) + " GB/s, cub " + format_fixed(gbps(*cub), 0) + " GB/s at " +
                           problem.label(),
                       {judge_ratio("shuffle over shared memory (8x)", 800.0 / 100.0, gbps(*shuffle) / gbps(*shared)),
                        judge_ratio("CUB over shuffle (1.0625x)", 850.0 / 800.0, gbps(*cub) / gbps(*shuffle))});
}

// C20: the divergence-free reduction is 3.2x faster than the naive one; shuffles 4.5x. Two parts.
nlohmann::json claim_c20(const nlohmann::json& results, const Problem& problem) {
  const auto* naive = timed_record(results, ids::kOp, ids::kInterleavedDivergent, problem, kInputs);
  const auto* divergence_free = timed_record(results, ids::kOp, ids::kInterleavedStrided, problem, kInputs);
  const auto* shuffle = timed_record(results, ids::kOp, ids::kShuffleAtomic, problem, kInputs);
  if (naive == nullptr || divergence_free == nullptr || shuffle == nullptr) return nullptr;
  const double strided = median_ms(*naive) / median_ms(*divergence_free);
  const double shuffled = median_ms(*naive) / median_ms(*shuffle);
  return claim_verdict("C20", "3.2x (divergence-free, strided index), 4.5x (shuffles) over the naive reduction",
                       "interleaved_divergent " + ms(*naive) + ", interleaved_strided " + ms(*divergence_free) +
                           ", shuffle_atomic " + ms(*shuffle) + " at " + problem.label(),
                       {judge_ratio("divergence-free over naive (3.2x)", 3.2, strided),
                        judge_ratio("shuffle over naive (4.5x)", 4.5, shuffled)});
}

}  // namespace

void register_reduce_claims(Registry& registry) {
  const Op& op = *registry.find_op(ids::kOp);
  const Problem ladder = op.problem({1 << 10}, DType::f32);   // C18's stated size
  const Problem lecture = op.problem({1 << 20}, DType::f32);  // C16's million elements
  const Problem largest = op.problem({1 << 28}, DType::f32);
  // C17 reads the racy variant wherever bench ran it: every bench problem of the op.
  std::vector<ClaimUse> racy;
  for (const Problem& p : op.bench_problems) racy.push_back({ids::kOp, ids::kNoFilterRacy, p});
  std::vector<ClaimUse> seven_steps;
  for (const Problem& p : {ladder, largest})
    for (const std::string& step : kSevenSteps) seven_steps.push_back({ids::kOp, step, p});

  registry.add(
      ClaimCheck{"C16",
                 ids::kOp,
                 {{ids::kOp, ids::kGlobalModulo, lecture},
                  {ids::kOp, ids::kGlobalMask, lecture},
                  {ids::kOp, ids::kGlobalModulo, largest},
                  {ids::kOp, ids::kGlobalMask, largest}},
                 [lecture, largest](const nlohmann::json& results) { return claim_c16(results, lecture, largest); }});
  registry.add(ClaimCheck{"C17", ids::kOp, racy, claim_c17});
  registry.add(ClaimCheck{"C18", ids::kOp, seven_steps, [ladder, largest](const nlohmann::json& results) {
                            return claim_c18(results, ladder, largest);
                          }});
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
