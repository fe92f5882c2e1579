#include "cudalab/select.hpp"

#include <string>

#include "cudalab/error.hpp"
#include "ops/select/variants.hpp"

namespace cudalab {
namespace {

// The library takes the fastest verified variant, chosen by measurement on an H100 at 2^28
// (docs/select.md): decoupled_lookback_staged, 1.00x / 1.06x / 1.05x CUB's DeviceSelect::If at
// 50% / 0% / 100% kept; decoupled_lookback (stores from registers) ran at 0.70x at 50%.
constexpr select_variants::Launcher kBest = select_variants::decoupled_lookback_staged;

void validate(const std::int32_t* in, std::int64_t n, const std::int32_t* out, const std::int64_t* count) {
  CUDALAB_REQUIRE(n >= 0, "select_at_least: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(count != nullptr, "select_at_least: count must be a device pointer, got a null pointer");
  CUDALAB_REQUIRE(n == 0 || (in != nullptr && out != nullptr),
                  "select_at_least: in and out must be device pointers, got a null pointer");
}

}  // namespace

std::size_t select_workspace_bytes(std::int64_t n) {
  CUDALAB_REQUIRE(n >= 0, "select_workspace_bytes: n must be >= 0, got " + std::to_string(n));
  return select_variants::decoupled_lookback_workspace_bytes(n);
}

void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, cudaStream_t stream) {
  validate(in, n, out, count);
  StreamOrderedWorkspace workspace(stream);
  kBest(in, n, threshold, out, count, workspace, stream);
}

void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  validate(in, n, out, count);
  if (n > 0) {
    CUDALAB_REQUIRE(workspace != nullptr, "select_at_least: the workspace is a null pointer");
    CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(workspace) % 16 == 0,
                    "select_at_least: the workspace must be 16-byte aligned");
  }
  CallerWorkspace caller(workspace, workspace_bytes, "select_at_least", "select_workspace_bytes");
  kBest(in, n, threshold, out, count, caller, stream);
}

}  // namespace cudalab
