// cudalab::gemm: argument checks, then the pipelined kernel configuration measured fastest.
#include "cudalab/gemm.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/arguments.hpp"
#include "ops/gemm/variants.hpp"

namespace cudalab {
namespace gemm_variants {

namespace {

// Split-K for outputs of fewer tiles than SMs; the three constants are the knobs, to be set from
// the config_*_kS rows. Such an output leaves SMs idle, and each busy SM runs one 4-warp block
// whose memory latency nothing else covers. Splitting K into S slices makes tiles * S blocks, each
// running 1/S of the K loop. While every SM can hold its share of them at once (kSplitBlocksPerSm
// blocks of 128 threads: 16 warps, which is also the register limit of the 64x128 and 64x64 tiles)
// the slices run side by side, the loop takes about 1/S of the time, and the largest such S wins;
// beyond that, the extra blocks queue behind the first ones. S costs S m n fp32 partial sums
// written and read back, a second launch (the reduce) and a stream-ordered allocation:
// kMinSliceTiles keeps at least that many BK-deep tiles in each slice, so that cost stays small
// next to the multiply. Only splits built into pipeline_configs() are candidates.
constexpr int kSplitBlocksPerSm = 4;
constexpr int kMinSliceTiles = 8;
constexpr int kSplits[] = {8, 4, 2};  // tried in this order

bool is_built(const PipelineConfig& config) {
  const std::vector<PipelineConfig>& built = pipeline_configs();
  return std::find(built.begin(), built.end(), config) != built.end();
}

}  // namespace

PipelineConfig tuned_config(int compute_capability, int sm_count, std::int64_t m, std::int64_t n, std::int64_t k,
                            std::int64_t batch) {
  (void)compute_capability;
  // Measured on an H100 (sm_90, results/nvidia-h100-80gb-hbm3/gemm.json, commit eb9ee2c): the
  // 64x128x16 tile, 3 stages, warp tiled, was the fastest configuration at 1024^3, 4096^3 and
  // 8192^3 (32.3, 46.4, 47.6 TFLOP/s), once its tiles come near one wave (1024^3 gives 128 tiles
  // on 132 SMs). Narrower outputs, or fewer tiles, leave SMs idle and waste half of each tile's
  // columns where n < 128; the 64x64 tile was fastest there (8192x64x8192: 29.5 vs 9.1).
  // Since the copy-cursor rewrite that added batches (commit b387007) the 128x128x16 two-stage tile
  // is the fastest at two waves of its tiles and up: 47.1 against 64x128's 45.8 TFLOP/s at 4096^3
  // and 47.6 against 46.9 at 8192^3 (gemm.json, commit 61f8edc). A batch's matrices are tiles of
  // one grid.
  const std::int64_t square_tiles = batch * ceil_div<std::int64_t>(m, 128) * ceil_div<std::int64_t>(n, 128);
  if (n >= 128 && square_tiles >= 2 * std::int64_t{sm_count}) return PipelineConfig{128, 128, 16, 2, 2, 2, true};
  // Below one wave of tiles K is split (the first of kSplits that is built, keeps every block
  // resident and every slice kMinSliceTiles deep). The 64x128 tile stays when its tiles, split, fill
  // the SMs: 64x8192x8192 ran 40.3 TFLOP/s as 64x128 split 4 against 36.5 as 64x64 split 4
  // (gemm.json at 9c921e2); 64x64 otherwise, where n < 128 or K is too short to split.
  const auto split_for = [&](const PipelineConfig& config) {
    const std::int64_t tiles = batch * ceil_div<std::int64_t>(m, config.bm) * ceil_div<std::int64_t>(n, config.bn);
    if (tiles >= sm_count) return 1;
    for (int split : kSplits) {
      PipelineConfig candidate = config;
      candidate.split_k = split;
      const bool resident = tiles * split <= std::int64_t{kSplitBlocksPerSm} * sm_count;
      const bool deep = k >= std::int64_t{kMinSliceTiles} * config.bk * split;
      if (resident && deep && is_built(candidate)) return split;
    }
    return 1;
  };
  const PipelineConfig wide{64, 128, 16, 2, 2, 3, true}, narrow{64, 64, 16, 1, 2, 3, true};
  const std::int64_t wide_tiles = batch * ceil_div<std::int64_t>(m, 64) * ceil_div<std::int64_t>(n, 128);
  const bool wide_fills = 10 * wide_tiles >= 9 * std::int64_t{sm_count} || wide_tiles * split_for(wide) >= sm_count;
  PipelineConfig config = n >= 128 && wide_fills ? wide : narrow;
  config.split_k = split_for(config);
  return config;
}

}  // namespace gemm_variants

namespace {

void run_fp32(const gemm_variants::GemmArgs<float>& p, cudaStream_t stream) {
  gemm_variants::validate_gemm_args(p);
  if (p.m == 0 || p.n == 0 || p.batch == 0) return;
  CUDALAB_REQUIRE(p.m <= std::int64_t{65535} * 64, "gemm: m=" + std::to_string(p.m) + " exceeds 65535 * 64 rows");
  const CurrentGpu gpu = current_gpu();
  gemm_variants::launch_pipelined(
      gemm_variants::tuned_config(gpu.compute_capability, gpu.sm_count, p.m, p.n, p.k, p.batch), p, stream);
}

}  // namespace

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream, Layout layout) {
  CUDALAB_REQUIRE(layout == Layout::row_major,
                  "gemm: only row-major matrices are supported; for column-major C = A B call it with the "
                  "transposed problem, row-major C^T = B^T A^T (swap A and B, m and n)");
  gemm_variants::GemmArgs<float> args;
  args.m = m, args.n = n, args.k = k, args.alpha = alpha, args.beta = beta;
  args.a = a, args.lda = lda, args.b = b, args.ldb = ldb, args.c = c, args.ldc = ldc;
  run_fp32(args, stream);
}

void gemm_batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                  std::int64_t lda, std::int64_t stride_a, const float* b, std::int64_t ldb, std::int64_t stride_b,
                  float beta, float* c, std::int64_t ldc, std::int64_t stride_c, cudaStream_t stream) {
  gemm_variants::GemmArgs<float> args;
  args.m = m, args.n = n, args.k = k, args.alpha = alpha, args.beta = beta;
  args.a = a, args.lda = lda, args.b = b, args.ldb = ldb, args.c = c, args.ldc = ldc;
  args.batch = batch, args.stride_a = stride_a, args.stride_b = stride_b, args.stride_c = stride_c;
  run_fp32(args, stream);
}

}  // namespace cudalab
