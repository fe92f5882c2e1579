// Every tutorial claim cudalab measures, C01-C34: what it says, where it was stated, what measures
// it. `cudalab claims` lists them all, with a verdict where a results file has the data.
#pragma once

#include <string>
#include <vector>

namespace cudalab::harness {

struct ClaimText {
  const char* id;
  const char* claim;        // as the tutorial states it
  const char* sources;      // tutorial numbers, e.g. "000, 001"
  const char* measured_by;  // the ladder or experiment that answers it
};

const std::vector<ClaimText>& claim_catalog();
// The entry for `id`, or nullptr.
const ClaimText* find_claim_text(const std::string& id);

}  // namespace cudalab::harness
