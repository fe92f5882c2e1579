// The tutorial claim the attention op answers: C33, "flash attention cuts attention memory from
// O(N^2) to O(N)" (tutorial 004), judged from the attention_memory experiment (memory_experiment.cpp)
// by the one verdict rule (harness/verdict.hpp).
//
// The claim is about how memory grows with seq, so each part compares growth exponents over a
// variant's whole verified sweep, from its smallest seq to its largest (seq ratio s, memory ratio
// g, exponent k = log g / log s). "Grows at most linearly" cannot be judged as g against s
// directly: a quadratic growth would lie beyond the claim in its direction and hold. Each part is
// therefore the distance of the exponent from the other power, as a ratio the rule can judge:
//   O(N^2), on naive (the seq x seq scores in memory): its growth over linear growth, g / s,
//     predicted s (quadratic); f = k - 1. A naive whose memory grew linearly measures 1: does not
//     hold.
//   to O(N), on mma_pipelined (the flash rung): quadratic growth over its growth, s^2 / g,
//     predicted s (linear); f = 2 - k. Less than linear (the fixed costs weigh more at small seq)
//     is beyond the claim and holds; a flash rung holding a seq x seq buffer measures 1: does not
//     hold; seq^1.5 holds partly (f = 0.5).
// A part needs two verified seqs of its variant; the claim is null without either.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/format.hpp"
#include "harness/claims.hpp"
#include "harness/registry.hpp"
#include "ops/attention/ids.hpp"

namespace cudalab::harness {
namespace {

namespace ids = attention_ids;

// A variant's verified rows of the memory table: seq -> GiB held.
struct MemorySweep {
  std::map<std::int64_t, double> gib;
  std::vector<std::string> did_not_fit;  // "32768 (needs 128.5 GiB)"

  bool judged() const { return gib.size() >= 2; }
  std::int64_t low() const { return gib.begin()->first; }
  std::int64_t high() const { return gib.rbegin()->first; }
  double seq_ratio() const { return static_cast<double>(high()) / static_cast<double>(low()); }
  double growth() const { return gib.rbegin()->second / gib.begin()->second; }
  double exponent() const { return std::log(growth()) / std::log(seq_ratio()); }
};

MemorySweep memory_sweep(const nlohmann::json& table, const std::string& variant) {
  MemorySweep sweep;
  const int seq = column_index(table, ids::kSeqColumn), name = column_index(table, ids::kVariantColumn),
            status = column_index(table, ids::kStatusColumn), held = column_index(table, ids::kHeldColumn),
            needed = column_index(table, ids::kNeededColumn);
  if (seq < 0 || name < 0 || status < 0 || held < 0) return sweep;
  for (const auto& row : table["rows"]) {
    if (row[name] != variant) continue;
    const auto s = row[seq].get<std::int64_t>();
    if (row[status] == ids::kMemoryVerified && row[held].is_number() && row[held].get<double>() > 0)
      sweep.gib[s] = row[held].get<double>();
    if (row[status] == ids::kMemoryDoesNotFit)
      sweep.did_not_fit.push_back(std::to_string(s) +
                                  (needed >= 0 && row[needed].is_number()
                                       ? " (needs " + format_fixed(row[needed].get<double>(), 1) + " GiB)"
                                       : ""));
  }
  return sweep;
}

std::string seq_range(const MemorySweep& sweep) {
  return "seq " + std::to_string(sweep.low()) + " -> " + std::to_string(sweep.high());
}

// "naive 0.158 GiB at seq 1024 -> 32.53 GiB at 16384 (206x for 16x the seq: seq^1.92; does not fit at 32768 ...)"
std::string describe(const std::string& variant, const MemorySweep& sweep) {
  std::string text = variant;
  if (sweep.judged())
    text += " " + format_significant(sweep.gib.begin()->second, 3) + " GiB at seq " + std::to_string(sweep.low()) +
            " -> " + format_significant(sweep.gib.rbegin()->second, 3) + " GiB at " + std::to_string(sweep.high()) +
            " (" + format_significant(sweep.growth(), 3) + "x for " + format_significant(sweep.seq_ratio(), 3) +
            "x the seq: seq^" + format_fixed(sweep.exponent(), 2) + ")";
  else
    text += " verified at fewer than two seqs";
  for (std::size_t k = 0; k < sweep.did_not_fit.size(); ++k)
    text += (k == 0 ? "; does not fit at " : ", ") + sweep.did_not_fit[k];
  return text;
}

nlohmann::json claim_c33(const nlohmann::json& results) {
  const auto* table = experiment(results, ids::kMemoryExperiment);
  if (table == nullptr) return nullptr;
  const MemorySweep naive = memory_sweep(*table, ids::kNaive);
  const MemorySweep cublas = memory_sweep(*table, ids::kCublas);
  const MemorySweep flash = memory_sweep(*table, ids::kMmaPipelined);
  std::vector<PartVerdict> parts;
  if (naive.judged()) {
    const double s = naive.seq_ratio();
    parts.push_back(judge_ratio(std::string("O(N^2): ") + ids::kNaive + ", " + seq_range(naive) +
                                    ": memory growth over the seq ratio, " + format_significant(s, 3) + "x",
                                s, naive.growth() / s));
  }
  if (flash.judged()) {
    const double s = flash.seq_ratio();
    parts.push_back(judge_ratio(std::string("to O(N): ") + ids::kMmaPipelined + ", " + seq_range(flash) +
                                    ": the seq ratio squared over memory growth, " + format_significant(s, 3) + "x",
                                s, s * s / flash.growth()));
  }
  if (parts.empty()) return nullptr;
  std::string measured = "2 x 16 x seq x 128 bf16, device memory held by one run: " + describe(ids::kNaive, naive) +
                         "; " + describe(ids::kCublas, cublas) + "; " + describe(ids::kMmaPipelined, flash);
  // The cut itself, at the largest seq both ran at.
  for (auto it = naive.gib.rbegin(); it != naive.gib.rend(); ++it) {
    const auto found = flash.gib.find(it->first);
    if (found == flash.gib.end()) continue;
    measured += "; at seq " + std::to_string(it->first) + " " + ids::kNaive + " holds " +
                format_significant(it->second / found->second, 3) + "x the memory of " + ids::kMmaPipelined;
    break;
  }
  return claim_verdict("C33",
                       "memory grows as seq^2 with the scores kept (naive) and as seq at most with flash "
                       "(mma_pipelined), each over its verified seqs; judged on the exponent's distance from the other "
                       "power: naive's memory growth over the seq ratio (predicted: the seq ratio; f = exponent - 1), "
                       "the seq ratio squared over mma_pipelined's growth (predicted: the seq ratio; f = 2 - exponent)",
                       measured, parts);
}

}  // namespace

void register_attention_claims(Registry& registry) { registry.add(ClaimCheck{"C33", ids::kForward, {}, claim_c33}); }

}  // namespace cudalab::harness
