#include "harness/verdict.hpp"

#include <cmath>

#include "core/format.hpp"
#include "cudalab/error.hpp"

namespace cudalab::harness {

const char* to_string(Outcome3 outcome) {
  switch (outcome) {
    case Outcome3::holds: return "holds";
    case Outcome3::holds_partly: return "holds partly";
    case Outcome3::does_not_hold: return "does not hold";
  }
  return "unknown";
}

PartVerdict judge_ratio(const std::string& part, double predicted, double measured) {
  CUDALAB_REQUIRE(predicted > 0 && predicted != 1 && std::isfinite(predicted),
                  "verdict: a ratio claim predicts a positive ratio other than 1, got " + std::to_string(predicted));
  CUDALAB_REQUIRE(measured > 0 && std::isfinite(measured),
                  "verdict: a measured ratio must be positive and finite, got " + std::to_string(measured));
  PartVerdict v;
  v.part = part;
  v.predicted = predicted;
  v.measured = measured;
  v.fraction = std::log(measured) / std::log(predicted);
  // Rounded down, so a part short of a boundary never reads as reaching it (f = 0.798 is 79%).
  const std::string share = format_fixed(std::floor(100 * v.fraction), 0) + "% of the claimed effect";
  if (v.fraction >= 0.8) {
    v.outcome = Outcome3::holds;
    v.wording = "holds";
  } else if (v.fraction >= 0.5) {
    v.outcome = Outcome3::holds_partly;
    v.wording = "holds partly: right direction, " + share;
  } else if (v.fraction > 0) {
    v.outcome = Outcome3::does_not_hold;
    v.wording = "does not hold: right direction, " + share;
  } else {
    v.outcome = Outcome3::does_not_hold;
    v.wording = "does not hold: the opposite direction";
  }
  return v;
}

PartVerdict judge_range(const std::string& part, double low, double high, double measured) {
  CUDALAB_REQUIRE(
      low > 0 && high >= low && std::isfinite(high),
      "verdict: a range claim needs 0 < low <= high, got [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  CUDALAB_REQUIRE(measured >= 0 && std::isfinite(measured),
                  "verdict: a measured value must be finite and not negative, got " + std::to_string(measured));
  PartVerdict v;
  v.part = part;
  v.predicted = low;
  v.predicted_high = high;
  v.measured = measured;
  if (measured >= low && measured <= high) {
    v.outcome = Outcome3::holds;
    v.wording = "holds";
  } else if (measured >= low / 1.5 && measured <= high * 1.5) {
    v.outcome = Outcome3::holds_partly;
    v.wording = "holds partly: within a factor 1.5 of the claimed range";
  } else {
    v.outcome = Outcome3::does_not_hold;
    v.wording = measured == 0
                    ? "does not hold: 0, below the claimed range"
                    : "does not hold: " + std::string(measured < low ? "below" : "above") + " the claimed range by " +
                          format_fixed(measured < low ? low / measured : measured / high, 1) + "x";
  }
  return v;
}

std::string verdict_list(const std::vector<PartVerdict>& parts) {
  std::string text;
  for (const PartVerdict& p : parts)
    text += (text.empty() ? "" : "; ") + (parts.size() > 1 ? p.part + ": " : "") + p.wording;
  return text;
}

nlohmann::json to_json(const PartVerdict& p) {
  nlohmann::json j = {{"part", p.part},
                      {"predicted", p.predicted},
                      {"measured", p.measured},
                      {"outcome", to_string(p.outcome)},
                      {"verdict", p.wording}};
  if (p.predicted_high > 0) j["predicted_high"] = p.predicted_high;
  if (p.predicted_high == 0) j["fraction"] = p.fraction;
  return j;
}

}  // namespace cudalab::harness
