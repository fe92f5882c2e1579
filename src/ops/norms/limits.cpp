// What each normalization rung runs, and the backward rungs' scratch: host code shared by the
// launchers (which refuse what their limits refuse), the registry (can_implement, workspace
// sizes) and the library entry (which picks a rung per width class).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "ops/norms/variants.hpp"

namespace cudalab::norms_variants {
namespace {

constexpr std::int64_t kMaxFeatures = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kWarpRowMax = 32768;
// The fused backward's resident grid and the unfused column kernel's row chunks stop at this
// many partial rows, and at kMaxPartialFloats floats of partials per output (32 MiB for two):
// as many CTAs as an H100 holds at once in any width class (at most 12 of 128 threads an SM,
// 1584), while the second kernel, which reads the partials once, stays a few percent of the
// main pass (at 16384 x 8192, 264 partial rows: 17 MB against 805 MB in bf16).
constexpr std::int64_t kMaxPartials = 2048;
constexpr std::int64_t kMaxPartialFloats = std::int64_t{1} << 22;

}  // namespace

std::string forward_shape_limits(std::int64_t rows, std::int64_t features) {
  if (rows > 0 && features < 1) return "a row needs at least one feature (an empty row has no mean)";
  if (features > kMaxFeatures) return "a row has at most 2^31 - 1 features";
  return "";
}

std::string backward_shape_limits(std::int64_t, std::int64_t features) {
  return features > kMaxFeatures ? "a row has at most 2^31 - 1 features" : "";
}

std::string tutorial_limits(std::int64_t rows, std::int64_t features) {
  if (features > 0 && rows > std::numeric_limits<std::int32_t>::max() / features)
    return "the tutorial's kernel indexes with 32-bit ints: rows x features must stay below 2^31";
  return "";
}

// A lane adds features / 32 terms one after another: at 262144 features (8192 a lane) a RMSNorm row
// of values near 1e4 came out with rstd 6.7e-6 off (bf16, H100), three times the tree-order bound
// the check holds every rung to. 1024 terms a lane stay well inside it; wider rows are
// block_per_row's and the vector rungs'.
std::string warp_per_row_limits(std::int64_t features) {
  if (features > kWarpRowMax)
    return "one warp per row takes rows of at most " + std::to_string(kWarpRowMax) +
           " features (longer per-lane sums leave the check's fp32 bound; block_per_row takes wider rows)";
  return "";
}

std::string vector_registers_limits(std::int64_t features, bool vector_aligned) {
  if (features > kBlockRowMax)
    return "a row wider than " + std::to_string(kBlockRowMax) +
           " features does not fit one block's registers (the cluster rung splits it)";
  if (!vector_aligned && features > kBlockRowMaxElementLoads)
    return "a row wider than " + std::to_string(kBlockRowMaxElementLoads) +
           " features that does not start on a 16-byte boundary does not fit one block's registers";
  return "";
}

std::string cluster_limits(std::int64_t features, bool vector_aligned, int compute_capability) {
  if (compute_capability < 90) return "needs thread-block clusters (compute capability 9.0+)";
  const std::int64_t widest = kMaxClusterSize * (vector_aligned ? kBlockRowMax : kBlockRowMaxElementLoads);
  if (features > widest)
    return "a row wider than " + std::to_string(widest) + " features does not fit the registers of " +
           std::to_string(kMaxClusterSize) + " CTAs" + (vector_aligned ? "" : " with element loads");
  return "";
}

std::string backward_fused_limits(std::int64_t features) {
  if (features > kFusedBackwardRowMax)
    return "a row wider than " + std::to_string(kFusedBackwardRowMax) +
           " features does not fit one block's registers twice (x and dy)";
  return "";
}

std::int64_t backward_partial_count(std::int64_t rows, std::int64_t features) {
  if (rows <= 0) return 0;
  return std::min(
      {rows, kMaxPartials, std::max<std::int64_t>(1, kMaxPartialFloats / std::max<std::int64_t>(features, 1))});
}

std::size_t backward_workspace_bytes(Norm norm, std::int64_t rows, std::int64_t features) {
  const std::int64_t outputs = norm == Norm::layer ? 2 : 1;
  return static_cast<std::size_t>(outputs * backward_partial_count(rows, features) *
                                  std::max<std::int64_t>(features, 0)) *
         sizeof(float);
}

}  // namespace cudalab::norms_variants
