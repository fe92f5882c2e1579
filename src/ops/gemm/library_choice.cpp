// The library call's choice of tensor-core rung (library_rung in tensor_core_variants.hpp): a pure
// function of the shape, the operands' alignment and the GPU, so a host test pins it.
#include <algorithm>
#include <cstdint>

#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

namespace {
constexpr int kHopper = 90;                      // the compute capability of the wgmma rungs
constexpr std::int64_t kDecodeRows = 16;         // the most rows decode_gemv and decode_mma take from the library call
constexpr std::int64_t kDecodeWgmmaMinK = 4096;  // the shortest k decode_wgmma was measured to win at, 17-64 rows
constexpr std::int64_t kDecodeMmaLongestK = 8192;  // the longest decode_mma keeps 5-16 rows against a narrow weight
constexpr std::int64_t kLineElements = 64;         // 16-bit elements in a 128-byte L2 line
constexpr std::int64_t kPingPongLongestK = 1024;   // the longest k a C read was measured faster at on ping-pong tiles
constexpr std::int64_t kPingPongFusedLongestK = 2048;  // and a fused activation

// Whether every row of A and B starts on a 128-byte line (16-bit elements). TMA reads rows that
// start off a line (16-byte aligned only) at a cost in L2: at 3000x5000x7000 (rows of 14000
// bytes) wgmma_persistent took 482 us on an H200 with its L2 77% busy, against 301 us and 50% at
// 3072x5120x7168 (k = 7040 and 7104, rows on lines: 298 and 301 us).
bool rows_on_lines(const GemmShape& shape) { return shape.lda % kLineElements == 0 && shape.ldb % kLineElements == 0; }

// Tiles of a persistent rung run in rounds of one tile an SM, the last one part full. A tile's k-step
// (64 of k) against a 128x256 tile's (wgmma_persistent), from an H200 at k = 2048-8192 (bf16,
// results/nvidia-h200/gemm-mid-*.json): 128x128 tiles (wgmma_mid) 0.51-0.55, 64x128 tiles
// (wgmma_small) 0.32-0.39; as twentieths, the slower ends. Stream-K (wgmma_streamk) shares all the
// large tiles' k-steps evenly and pays a fixed 16-19.5 us on top since its owners read their peers'
// partials through the ring (gemm-streamk-ring-compare.md: 768 x 3072 to 11264 x 2048 at k = 8192),
// 25-29 of a large tile's k-steps at the H200's clocks: 28.
constexpr std::int64_t kLargeStep = 20, kMidStep = 11, kSmallStep = 8, kStreamKExtraSteps = 28;
std::int64_t rounds(std::int64_t tiles, int sm_count) { return (tiles + sm_count - 1) / sm_count; }
std::int64_t tiles_of(const GemmShape& shape, std::int64_t rows, std::int64_t columns) {
  return shape.batch * ((shape.m + rows - 1) / rows) * ((shape.n + columns - 1) / columns);
}

// Each tile rung's time for a shape, in twentieths of a large tile's k-step.
struct TileCosts {
  std::int64_t large, mid, small, streamed;
};
TileCosts tile_costs(const GemmShape& shape, int sm_count) {
  const std::int64_t steps = (shape.k + 63) / 64, large_tiles = tiles_of(shape, 128, 256);
  return {kLargeStep * steps * rounds(large_tiles, sm_count),
          kMidStep * steps * rounds(tiles_of(shape, 128, 128), sm_count),
          kSmallStep * steps * rounds(tiles_of(shape, 64, 128), sm_count),
          (kLargeStep * steps * large_tiles + sm_count - 1) / sm_count + kLargeStep * kStreamKExtraSteps};
}
// Whether `cost` is at least 5% less than `other`.
bool cheaper(std::int64_t cost, std::int64_t other) { return 20 * cost < 19 * other; }
}  // namespace

GemmShape with_aligned_pitches(const GemmShape& shape, OperandAlignment alignment) {
  const auto round = [](std::int64_t x) { return (x + kLineElements - 1) / kLineElements * kLineElements; };
  GemmShape copied = shape;
  if (shape.lda % 8 != 0 || !alignment.a) copied.lda = round(shape.a_transposed ? shape.m : shape.k);
  if (shape.ldb % 8 != 0 || !alignment.b) copied.ldb = round(shape.b_transposed ? shape.k : shape.n);
  return copied;
}

// The choice, from the H100 measurements in docs/gemm-tensor-cores.md (bf16, same process as
// cuBLAS): the big-tile rungs (128x256 tiles, a deep pipeline) need about half a wave of those
// tiles and a k long enough to fill the pipeline: at 2048^3 (128 tiles) wgmma_persistent ran
// 543 TFLOP/s against mma_small's 229, while at 1024^3 (32 tiles) mma_small took 15.8 us against
// 18.2, at 8192x1x8192 68 us against 139, and on batches of 64^3-256x256x64 (k <= 128) 1.0-1.02x
// cuBLAS's time against persistent's 2.6-4.7x. Below that line, on Hopper with k >= 256,
// wgmma_small's 64x128 tiles (1024^3: 10.8 us against mma_small's 16.0 and persistent's 18.2;
// 256x4096x4096: 22.0 against 46.9 and 45.8; 1x8192x8192: 55.6 against 68.1; 1000^3: 16.7 against
// 19.6); with k <= 128 (the batches) the 64x64 tiles of mma_small (1.3-1.7x faster than
// wgmma_small there), which also take any alignment. Above it, on Hopper: wgmma_cluster from 6 waves of tiles up
// (8192^3, 7.8 waves: 786.2 against persistent's 777.8 TFLOP/s in bf16, 749.8 against 741.6 in fp16; B as N x K
// 785.9/785.6 and 751.9/747.7), wgmma_persistent below (4096^3, 3.9 waves: cluster 0.5-1% behind; 2048^3: 4% behind);
// mma_pipelined on other GPUs; and on Hopper wgmma_cluster at any count of tiles where rows start off 128-byte
// lines (rows_on_lines), its multicast halving the L2 reads (3000x5000x7000 on an H200: 331 us against
// persistent's 482; cuBLAS 291). mma_swizzled for rows that are not 16-byte multiples (4095x4097x4093: 111 TFLOP/s
// against mma_small's 85; on Hopper such rows are now copied to pitches of 128-byte lines for the TMA rungs:
// aligned_copies). The cp.async and TMA rungs also need A, B and C 16-byte aligned besides the pitches their
// limits check; mma_swizzled and mma_small take anything. A stored k x m (transpose_a) runs where a rung takes it:
// wgmma_cluster, wgmma_persistent and wgmma_small on Hopper, mma_small otherwise (the other rungs' limits refuse it).
// A decode step (one product, m <= 16 against B stored N x K) is a read of B, on any GPU. On an H100 (bf16, TB/s of
// the weight): one row on decode_gemv (4096^2 1.99, 8192^2 2.58, 128256 x 4096 2.59, where decode_mma read 1.99, 2.48,
// 2.50); 2-4 rows on decode_mma (4096^2 1.97-1.99 against decode_gemv's 1.54-1.78; 8192^2 2.46-2.48 against
// 2.24-2.53); 5-16 rows on decode_mma where wgmma_small has few column tiles (n / 128, at most a quarter of the SMs:
// 4096^2 1.92-1.95 against 1.46-1.48, 8 x 4096 x 14336 2.54 against 1.80) and on wgmma_small where it has more
// (8192^2 2.53-2.55 against 2.44-2.50, 8 x 14336 x 4096 2.60 against 2.48, 16 x 28672 x 8192 2.48 against 2.31);
// but 2-4 rows against a wide weight on decode_wgmma (8192^2 51.7-52.0 us against decode_mma's 54.1-54.6), and 5-16
// against a narrow one with k above 8192 (x 4096 x 11008: 37.2-37.8 us against 39.5-40.5; x 14336: 46.1-46.7 against
// 46.4-47.3; at 8192 29.3-29.8 against 29.4-29.9, a tie). 17-64 rows on decode_wgmma against a narrow weight with
// k >= 4096, where wgmma_small's 32 tiles leave most SMs idle (32-64 x 4096 x 4096, 8192, 11008, 14336: 19.0-20.3,
// 30.6-32.4, 38.3-40.4, 47.3-49.9 us against wgmma_small's 21.5-22.8, 37.6-39.3, 49.1-50.6, 61.6-64.2), on
// wgmma_small against a wide one (8192^2: 52.9-53.6 against 54.0-57.6).
// Between the big and small tiles, wgmma_mid's 128x128 where its rounds cost less (tile_costs): its
// tiles fill the SMs where a round of the others would run part empty. On an H200 (bf16, k = 8192 unless
// stated): 3072 x 2048 (192 big tiles, two rounds; 384 mid, three) 138.6 us against persistent's 165.9,
// 2560 x 2048 135.5 against 166.1, 2304 x 768 (108 mid tiles, one round; 216 small, two) 44.4 against
// wgmma_small's 62.2, 512 x 4096 46.6 against 62.0, 512 x 4096 x 4096 26.7 against 33.6, 1024 x 2048 x
// 2048 17.0 against 20.4; and, as predicted, behind where its rounds are not fewer (1024 x 4096: 91.6
// against 87.7; 768 x 3072: 87.9 against 80.9).
// And wgmma_streamk where sharing the large tiles' k-steps evenly costs 5% less than whole tiles of either
// size, fixed cost included (tile_costs): one round of large tiles at most 73% full over k = 8192 (768 x 3072
// 65.4 us against persistent's 81.2, 1024 x 2560 72.1 against 81.0, 3072 x 1024 78.4 against 83.0), or 84%
// over k = 16384 (3072 x 1024 144.5 against 160.5); 2560 x 2048 x 8192 (121.7 against wgmma_mid's 133.3);
// 11264 x 2048 x 8192 (473 against 503).
// Not at k = 4096 and below (768 x 3072 x 2048: 30.1 against 26.0) nor with the round fuller (2048 x 2048 x 8192:
// 97.7 against 86.2). Single products only (its schedule was measured without batches).
LibraryRung library_rung(const GemmShape& shape, OperandAlignment alignment, int compute_capability, int sm_count,
                         bool may_copy) {
  const int cc = compute_capability;
  const std::int64_t big_tiles = tiles_of(shape, 128, 256);
  const bool big = 2 * big_tiles >= sm_count && shape.k >= 256 && shape.m >= 64 && shape.n >= 128;
  const bool aligned = alignment.a && alignment.b && alignment.c;
  const std::int64_t column_tiles = (shape.n + 127) / 128;
  const bool narrow = 4 * column_tiles <= sm_count;  // wgmma_small's tiles for at most a quarter of the SMs
  if (shape.batch == 1 && shape.m <= kDecodeRows && alignment.a && alignment.b &&
      decode_mma_limits(shape, cc).empty()) {
    if (shape.m == 1) return LibraryRung::decode_gemv;
    const bool wgmma_fits = decode_wgmma_limits(shape, cc).empty();
    if (shape.m <= 4 && !narrow && wgmma_fits) return LibraryRung::decode_wgmma;
    if (shape.m > 4 && narrow && shape.k > kDecodeMmaLongestK && wgmma_fits) return LibraryRung::decode_wgmma;
    if (shape.m <= 4 || narrow) return LibraryRung::decode_mma;
  }
  // decode_wgmma's limits hold m to its 64 tokens.
  if (shape.batch == 1 && shape.m > kDecodeRows && narrow && shape.k >= kDecodeWgmmaMinK && alignment.a &&
      alignment.b && decode_wgmma_limits(shape, cc).empty())
    return LibraryRung::decode_wgmma;
  const TileCosts cost = tile_costs(shape, sm_count);
  if (big && aligned && wgmma_persistent_limits(shape, cc).empty()) {
    const bool waves =
        (big_tiles >= 6 * std::int64_t{sm_count} || !rows_on_lines(shape)) && wgmma_cluster_limits(shape, cc).empty();
    if (waves) return LibraryRung::wgmma_cluster;
    const bool mid_fits = wgmma_mid_limits(shape, cc).empty();
    if (shape.batch == 1 && cheaper(cost.streamed, mid_fits ? std::min(cost.large, cost.mid) : cost.large))
      return LibraryRung::wgmma_streamk;
    if (mid_fits && cheaper(cost.mid, cost.large)) return LibraryRung::wgmma_mid;
    return LibraryRung::wgmma_persistent;
  }
  if (may_copy && big && cc == kHopper && shape.batch == 1 && alignment.c &&
      wgmma_persistent_limits(with_aligned_pitches(shape, alignment), cc).empty())
    return LibraryRung::aligned_copies;
  if (big && aligned && mma_pipelined_limits(shape, cc).empty()) return LibraryRung::mma_pipelined;
  if (big && mma_swizzled_limits(shape, cc).empty()) return LibraryRung::mma_swizzled;
  if (!big && aligned && shape.k >= 256 && shape.n >= 128 && rows_on_lines(shape) && cheaper(cost.mid, cost.small) &&
      wgmma_mid_limits(shape, cc).empty())
    return LibraryRung::wgmma_mid;
  if (!big && aligned && shape.k >= 256 && wgmma_small_limits(shape, cc).empty()) return LibraryRung::wgmma_small;
  return LibraryRung::mma_small;
}

// The large tiles' products whose epilogue does more than store: on an H200 (bf16, B as N x K, same
// process, results/nvidia-h200/gemm-pingpong-nt-beta{0,1}.json), wgmma_pingpong's epilogue beside
// the other warpgroup's k-loop took 0.964-0.970x the best large-tile rung's time with beta = 1 at
// k = 1024 (8192 x 4096: 116.4 against 120.8 us; 8192 x 3072: 88.3 against 91.0; 8192 x 1024: 33.1
// against 34.1), but 1.04-1.07x at k = 4096-11008, where the 64-row tiles' extra B traffic shows
// (plain products: 1.05-1.08x there, level at k = 1024). A fused activation's epilogue is longer:
// there the ping-pong tiles ran the MLP's first product in 0.90-0.93x the cooperative kernel's time
// at 8192 tokens, k = 768-2048, and 0.95-1.11x cuBLASLt's fused kernel's speed
// (gemm-activation-epilogue-*.json); but at k = 4096 the large tiles took 0.96-0.97x the ping-pong
// tiles' time for the forward and 0.94-0.95x for the gradient, and at k = 3072 1.01x and 0.97x
// (mlp-fused-rule-compare.md: tokens x d_model 4096 x 4096, 8192 x 4096, 8192 x 3072).
LibraryRung epilogue_rung(LibraryRung rung, const GemmShape& shape, bool reads_c, bool fused, int compute_capability) {
  const bool large = rung == LibraryRung::wgmma_cluster || rung == LibraryRung::wgmma_persistent ||
                     rung == LibraryRung::wgmma_mid || rung == LibraryRung::wgmma_streamk;
  if (!large || !wgmma_pingpong_limits(shape, compute_capability).empty()) return rung;
  const bool overlap = fused ? shape.k <= kPingPongFusedLongestK : reads_c && shape.k <= kPingPongLongestK;
  return overlap ? LibraryRung::wgmma_pingpong : rung;
}

}  // namespace cudalab::gemm_variants
