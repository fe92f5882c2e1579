// The one verdict rule for tutorial claims (docs/claims.md). A claim predicts a ratio r_c (a
// speedup, a slowdown, a fraction of peak) and a run measures r_m; f = log(r_m) / log(r_c) is the
// share of the claimed effect that was measured, on a log scale so a halving and a doubling weigh
// the same:
//   f >= 0.8 (or beyond the claim in its direction)  holds
//   0.5 <= f < 0.8                                   holds partly ("right direction, N% of the claimed effect")
//   f < 0.5, or the opposite direction               does not hold (with "right direction, N% ..." when f > 0)
// A range claim holds when the measurement falls in the range, partly when it is within a factor
// 1.5 of it, and does not hold otherwise. Each part of a multi-part claim is judged on its own; a
// claim's verdict is the list of its parts.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cudalab::harness {

enum class Outcome3 { holds, holds_partly, does_not_hold };
const char* to_string(Outcome3 outcome);

struct PartVerdict {
  std::string part;           // what this part claims, e.g. "stride 2: 50% of sequential"
  double predicted = 0;       // r_c (or the range's low end for a range part)
  double predicted_high = 0;  // a range part's high end; 0 for a ratio part
  double measured = 0;        // r_m
  double fraction = 0;        // f for a ratio part; 0 for a range part
  Outcome3 outcome = Outcome3::does_not_hold;
  std::string wording;  // "holds", "holds partly: right direction, 63% of the claimed effect", ...
};

// A ratio part. `predicted` must be positive and not 1 (a claim of "no effect" is a range part);
// `measured` must be positive. Throws invalid_argument otherwise.
PartVerdict judge_ratio(const std::string& part, double predicted, double measured);
// A range part: holds in [low, high], partly within a factor 1.5 of the range, else does not. A
// measured 0 (no run wrong, never idle) lies below any range.
PartVerdict judge_range(const std::string& part, double low, double high, double measured);

// "holds; holds partly: ...; does not hold" in part order: the claim's verdict, never a summary
// that hides a failing part.
std::string verdict_list(const std::vector<PartVerdict>& parts);

nlohmann::json to_json(const PartVerdict& part);

}  // namespace cudalab::harness
