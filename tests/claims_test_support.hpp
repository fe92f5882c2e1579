// What the claim tests share: finding a registered claim check and listing a verdict's part
// outcomes in order.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/registry.hpp"

namespace cudalab::test_support {

using Outcomes = std::vector<std::string>;
inline const std::string kHolds = "holds", kPartly = "holds partly", kNot = "does not hold";

// The check registered for claim `id` in `registry` (the built-in one unless a test builds its own).
inline const harness::ClaimCheck& claim_check(const std::string& id,
                                              const harness::Registry& registry = harness::builtin_registry()) {
  for (const harness::ClaimCheck& c : registry.claims())
    if (c.id == id) return c;
  throw std::logic_error("no claim " + id);
}

// The outcomes of a judged claim's parts, in order.
inline Outcomes outcomes(const nlohmann::json& verdict) {
  Outcomes list;
  for (const auto& part : verdict.at("parts")) list.push_back(part.at("outcome").get<std::string>());
  return list;
}

}  // namespace cudalab::test_support
