#include "cudalab/select.hpp"

#include <string>

#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/select/variants.hpp"

namespace cudalab {
namespace {

using select_variants::SelectArgs;

// The library takes the fastest verified variant, chosen by measurement on an H100 at 2^28
// (docs/select.md): decoupled_lookback_staged, 1.00x / 1.06x / 1.05x CUB's DeviceSelect::If at
// 50% / 0% / 100% kept; decoupled_lookback (stores from registers) ran at 0.70x at 50%. The
// sizing function is the launcher's own, so the workspace is exactly what it reserves.
constexpr void (*kBest)(const SelectArgs<std::int32_t>&, cudaStream_t) = select_variants::decoupled_lookback_staged;
constexpr std::size_t (*kBestWorkspaceBytes)(std::int64_t) = select_variants::decoupled_lookback_staged_workspace_bytes;

SelectArgs<std::int32_t> validated(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                                   std::int64_t* count) {
  CUDALAB_REQUIRE(n >= 0, "select_at_least: n must be >= 0, got " + std::to_string(n));
  CUDALAB_REQUIRE(count != nullptr, "select_at_least: count must be a device pointer, got a null pointer");
  CUDALAB_REQUIRE(n == 0 || (in != nullptr && out != nullptr),
                  "select_at_least: in and out must be device pointers, got a null pointer");
  SelectArgs<std::int32_t> args;
  args.in = in;
  args.n = n;
  args.threshold = threshold;
  args.out = out;
  args.count = count;
  args.workspace_bytes = kBestWorkspaceBytes(n);
  return args;
}

}  // namespace

std::size_t select_workspace_bytes(std::int64_t n) {
  CUDALAB_REQUIRE(n >= 0, "select_workspace_bytes: n must be >= 0, got " + std::to_string(n));
  return kBestWorkspaceBytes(n);
}

void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, cudaStream_t stream) {
  SelectArgs<std::int32_t> args = validated(in, n, threshold, out, count);
  StreamOrderedWorkspace workspace(stream);
  if (args.workspace_bytes > 0) args.workspace = workspace.reserve(args.workspace_bytes);
  kBest(args, stream);
}

void select_at_least(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                     std::int64_t* count, void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  SelectArgs<std::int32_t> args = validated(in, n, threshold, out, count);
  if (n > 0) {
    CUDALAB_REQUIRE(workspace != nullptr, "select_at_least: the workspace is a null pointer");
    CUDALAB_REQUIRE(is_aligned16(workspace), "select_at_least: the workspace must be 16-byte aligned");
  }
  CallerWorkspace caller(workspace, workspace_bytes, "select_at_least", "select_workspace_bytes");
  args.workspace = caller.reserve(args.workspace_bytes);
  kBest(args, stream);
}

}  // namespace cudalab
