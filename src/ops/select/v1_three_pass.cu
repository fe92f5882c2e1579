#include <climits>
#include <string>

#include "core/launch.cuh"
#include "ops/scan/levels.hpp"
#include "ops/scan/variants.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::select_variants {
namespace {

constexpr int kThreads = 256;

// Pass 1: flags[i] = 1 where in[i] is kept, else 0.
__global__ void select_three_pass_flags_kernel(const std::int32_t* in, std::int64_t n, std::int32_t threshold,
                                               std::int32_t* flags) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) flags[i] = selected(in[i], threshold) ? 1 : 0;
}

// Pass 3: positions holds the exclusive scan of the flags, so a kept in[i] goes to positions[i];
// the predicate is evaluated again rather than the flags kept, since the scan overwrote them.
// The last element's position plus its own flag is the count.
__global__ void select_three_pass_scatter_kernel(const std::int32_t* in, const std::int32_t* positions, std::int64_t n,
                                                 std::int32_t threshold, std::int32_t* out, std::int64_t* count) {
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) {
    const std::int32_t x = in[i];
    const bool keep = selected(x, threshold);
    if (keep) out[positions[i]] = x;
    if (i == n - 1) *count = static_cast<std::int64_t>(positions[i]) + (keep ? 1 : 0);
  }
}

// One reservation: the flags (scanned in place into positions), then the scan's own scratch.
std::size_t flags_bytes(std::int64_t n) {
  return scan_variants::workspace_align(static_cast<std::size_t>(n) * sizeof(std::int32_t));
}

}  // namespace

std::size_t three_pass_workspace_bytes(const SelectArgs<std::int32_t>& args) {
  if (args.n == 0) return 0;
  return flags_bytes(args.n) + scan_variants::decoupled_lookback_workspace_bytes(args.n);
}

void three_pass(const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  const std::int64_t n = args.n;
  if (n == 0) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(args.count, 0, sizeof *args.count, stream));
    return;
  }
  CUDALAB_REQUIRE(n <= INT_MAX, "select three_pass: int32 positions hold n < 2^31 elements, got " + std::to_string(n));
  auto* const base =
      static_cast<unsigned char*>(workspace_of(args, three_pass_workspace_bytes(args), "select three_pass"));
  auto* const flags = reinterpret_cast<std::int32_t*>(base);
  scan_variants::ScanArgs<std::int32_t> scan;
  scan.in = flags;
  scan.out = flags;
  scan.n = n;
  scan.kind = scan_variants::ScanKind::exclusive;
  scan.workspace = base + flags_bytes(n);
  scan.workspace_bytes = scan_variants::decoupled_lookback_workspace_bytes(n);

  const int flag_blocks = resident_grid_size(select_three_pass_flags_kernel, kThreads, n);
  select_three_pass_flags_kernel<<<flag_blocks, kThreads, 0, stream>>>(args.in, n, args.threshold, flags);
  CUDALAB_CHECK_LAUNCH();
  scan_variants::decoupled_lookback(scan, stream);
  const int scatter_blocks = resident_grid_size(select_three_pass_scatter_kernel, kThreads, n);
  select_three_pass_scatter_kernel<<<scatter_blocks, kThreads, 0, stream>>>(args.in, flags, n, args.threshold, args.out,
                                                                            args.count);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::select_variants
