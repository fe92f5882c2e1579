// The FP8 rung `wgmma_fp8` (Hopper, sm_90a): e4m3 A (m x k) and B (n x k), both K-major, into bf16 C
// with per-tensor scales, on the persistent skeleton of rung `wgmma_persistent` (ops/gemm/schedules.cuh,
// core/hopper/pipeline.cuh): one CTA per SM walks the L2-grouped tile order; a producer warpgroup
// fills a 6-slot TMA ring; two consumer warpgroups each own 64 rows of a 128 x 128 tile.
// A k-tile is one 128-byte swizzled row per operand row (128 e4m3 elements), so the tiles, boxes
// and wgmma descriptors are those of the 16-bit rungs byte for byte; a k-step is wgmma m64n128k32.
// Promotion: each k-tile's four k-steps accumulate into registers of their own (the first
// overwrites them), which are then added to the fp32 accumulators. The tensor cores' FP8 sums keep
// about 14 significant bits (DeepSeek-V3's report, section 3.3.2), so summing all of a long k there
// would drift far from fp32; 128 products at a time is DeepGEMM's choice too. The epilogue scales by
// alpha * scale_a * scale_b (read once on the device) and stores bf16 through the 16-bit rungs'
// TMA-store path (or straight from registers where C's rows do not allow it).
// Costs, against an unpromoted kernel: 64 more registers a thread (hence 128-column tiles, not
// 256: twice the B traffic per FLOP of wgmma_persistent's tiles) and a wait for each k-tile's
// wgmmas before the next are issued; the other consumer warpgroup's wgmmas fill that gap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/hopper/pipeline.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/gemm/fp8.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/schedules.cuh"

namespace cudalab::gemm_variants {
namespace {
constexpr int kBlockM = 128, kBlockN = 128;  // a CTA's tile of C
}  // namespace

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kStages = 6, kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kKTile = static_cast<int>(kRowBytes);  // e4m3 elements a k-tile: one 128-byte row
constexpr int kATileBytes = kBlockM * static_cast<int>(kRowBytes);
constexpr int kStageBytes = kATileBytes + kBlockN * static_cast<int>(kRowBytes);
constexpr int kGroupM = 16;  // tile rows per band of the L2 order, as wgmma_persistent
constexpr int kRegisters = kBlockN / 2;

struct SharedStorage {
  alignas(1024) std::uint8_t ring[kStages][kStageBytes];
  alignas(1024) std::uint8_t staging[kConsumers][kStagingBytes];
  PipelineBarriers<kStages> barriers;
};
constexpr int kSharedBytes = shared_storage_bytes<SharedStorage>();
static_assert(kSharedBytes <= 227 * 1024, "one block per SM must fit");
using Pipeline = TmaPipeline<kStages, kStageBytes>;

// The dequantization scales, device pointers (null: 1).
struct Fp8Scales {
  const float* a;
  const float* b;
};

// A consumer warpgroup's k-loop with promotion: each k-tile's four k-steps into `part`, then part
// added to `acc`. `ring` continues across tiles; a_offset picks this warpgroup's rows of the A tile.
template <typename Release>
__device__ __forceinline__ void promoted_k_loop(float (&acc)[kRegisters], int k_tiles, const Pipeline& pipeline,
                                                RingPosition<kStages>& ring, std::uint32_t a_offset,
                                                Release&& release) {
  float part[kRegisters] = {};
  fence_accumulators(part);
  for (int kt = 0; kt < k_tiles; ++kt) {
    pipeline.consumer_wait(ring);
    const std::uint32_t a_tile = pipeline.slot(ring.stage) + a_offset;
    const std::uint32_t b_tile = pipeline.slot(ring.stage) + kATileBytes;
    wgmma_fence();
    wgmma_e4m3_m64n128k32<false>(part, k_major_descriptor(a_tile, 0), k_major_descriptor(b_tile, 0));
#pragma unroll
    for (int kk = 1; kk < kKTile / 32; ++kk)
      wgmma_e4m3_m64n128k32<true>(part, k_major_descriptor(a_tile, kk), k_major_descriptor(b_tile, kk));
    wgmma_commit();
    wgmma_wait<0>();
    fence_accumulators(part);
    release(ring.stage);
    ring.advance();
#pragma unroll
    for (int i = 0; i < kRegisters; ++i) acc[i] += part[i];
  }
}

// kSplitK: the schedule's items are parts of k (few tiles for the SMs, as at decode rows); each
// part's sums, dequantized, go to the schedule's scratch and add_partial_sums finishes C.
template <bool kTmaStore, bool kSplitK>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_fp8_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                     const __grid_constant__ CUtensorMap c_map, const WgmmaParams<__nv_bfloat16> p,
                     const PersistentSchedule<kGroupM, kSplitK> schedule, const Fp8Scales scales) {
#if CUDALAB_SM90A_DEVICE
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t shared = aligned_shared_base(dynamic_shared);
  const Pipeline pipeline(shared + offsetof(SharedStorage, ring), shared + offsetof(SharedStorage, barriers));
  const std::uint32_t staging = shared + offsetof(SharedStorage, staging);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  pipeline.init(kConsumers);
  const int unit = schedule.claim();
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      RingPosition<kStages> ring;
      schedule.for_each(unit, [&](const GemmWork& work) {
        produce(pipeline, ring, work.k_tiles, [&](std::uint32_t stage, std::uint32_t barrier, int i) {
          const int k0 = (work.kt0 + i) * kKTile;
          load_operand<kBlockM, false>(stage, &a_map, barrier, k0, work.at.m * kBlockM, 0);
          load_operand<kBlockN, false>(stage + kATileBytes, &b_map, barrier, k0, work.at.n * kBlockN, 0);
        });
      });
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    const auto release = [&](int stage) {
      if (leader) pipeline.consumer_release(stage);
    };
    const float dequantize = (scales.a != nullptr ? *scales.a : 1.0f) * (scales.b != nullptr ? *scales.b : 1.0f);
    OutputMatrix<__nv_bfloat16> out = p.out;
    out.alpha *= dequantize;
    RingPosition<kStages> ring;
    schedule.for_each(unit, [&](const GemmWork& work) {
      float acc[kRegisters] = {};
      promoted_k_loop(acc, work.k_tiles, pipeline, ring, consumer * 64 * kRowBytes, release);
      const int row0 = work.at.m * kBlockM + 64 * consumer, col0 = work.at.n * kBlockN;
      if constexpr (kSplitK) {
#pragma unroll
        for (int i = 0; i < kRegisters; ++i) acc[i] *= dequantize;
      }
      if (!schedule.finish(acc, work, consumer, p, row0, col0, 0)) return;
      store_accumulators<kTmaStore>(out, acc, &c_map, staging + consumer * kStagingBytes, row0, col0, 0, consumer);
    });
    if (kTmaStore && leader) bulk_wait_all();  // the staging buffers must outlive their last stores
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_fp8_limits(const GemmFp8Shape& shape, int compute_capability) {
  const std::string why = hopper::hopper_limits(compute_capability);
  if (!why.empty()) return why;
  if (shape.k > 0 && (shape.lda % 16 != 0 || shape.ldb % 16 != 0))
    return "TMA reads rows whose pitch is a multiple of 16 bytes: lda and ldb must be multiples of 16, got " +
           std::to_string(shape.lda) + " and " + std::to_string(shape.ldb);
  if (ceil_div<std::int64_t>(shape.m, kBlockM) * ceil_div<std::int64_t>(shape.n, kBlockN) > 0x7fffffff)
    return "more than 2^31 - 1 tiles of 128 x 128";
  return "";
}

void wgmma_fp8(const GemmFp8Args& args, cudaStream_t stream) {
  require_limits("wgmma_fp8", wgmma_fp8_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  if (args.m == 0 || args.n == 0) return;
  const bool tma_store = is_aligned16(args.c) && args.ldc % 8 == 0 && args.n % 8 == 0;
  WgmmaParams<__nv_bfloat16> p{};
  const bool pairs = reinterpret_cast<std::uintptr_t>(args.c) % 4 == 0 && args.ldc % 2 == 0;
  p.out = {args.c, args.ldc, args.m, args.n, args.alpha, 0.0f, pairs, args.c, args.ldc};
  p.k_tiles = static_cast<int>(ceil_div<std::int64_t>(args.k, kKTile));
  p.tiles_m = static_cast<int>(ceil_div<std::int64_t>(args.m, kBlockM));
  p.tiles_n = static_cast<int>(ceil_div<std::int64_t>(args.n, kBlockN));
  p.batch = 1;
  CUtensorMap a_map{}, b_map{}, c_map{};
  if (args.k > 0) {
    CUDALAB_REQUIRE(is_aligned16(args.a) && is_aligned16(args.b), "wgmma_fp8: A and B must be 16-byte aligned (TMA)");
    a_map = hopper::make_tensor_map(args.a, args.m, args.k, args.lda, 1, 0, kBlockM);
    b_map = hopper::make_tensor_map(args.b, args.n, args.k, args.ldb, 1, 0, kBlockN);
  }
  if (tma_store)
    c_map = hopper::make_tensor_map(static_cast<const __nv_bfloat16*>(args.c), args.m, args.n, args.ldc, 1, 0, 64);
  const int tiles = p.tiles_m * p.tiles_n;
  const int sm_count = current_gpu().sm_count;
  // Few tiles for the SMs (decode rows: 64 tiles at n = 8192): k split across CTAs (split_k_for).
  SplitK split = split_k_for(tiles, p.k_tiles, sm_count);
  const int grid = static_cast<int>(std::min<std::int64_t>(static_cast<std::int64_t>(tiles) * split.splits, sm_count));
  const Fp8Scales fp8_scales{args.scale_a, args.scale_b};
  if (split.splits > 1) {
    StreamOrderedWorkspace scratch(stream);  // the parts' sums, handed back on the stream afterwards
    split.partial = static_cast<float*>(scratch.reserve(static_cast<std::size_t>(split.splits) *
                                                        static_cast<std::size_t>(args.m * args.n) * sizeof(float)));
    const PersistentSchedule<kGroupM, true> schedule{p.tiles_m, p.tiles_n, tiles, p.k_tiles, split};
    hopper::set_shared_memory(wgmma_fp8_kernel<false, true>, kSharedBytes);
    wgmma_fp8_kernel<false, true>
        <<<grid, kThreads, kSharedBytes, stream>>>(a_map, b_map, c_map, p, schedule, fp8_scales);
    CUDALAB_CHECK_LAUNCH();
    add_partial_sums(split.partial, split.splits, p.out, 0, 1, stream);  // the parts are dequantized already
    return;
  }
  const PersistentSchedule<kGroupM, false> schedule{p.tiles_m, p.tiles_n, tiles, p.k_tiles, split};
  auto* kernel = tma_store ? wgmma_fp8_kernel<true, false> : wgmma_fp8_kernel<false, false>;
  hopper::set_shared_memory(kernel, kSharedBytes);
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(a_map, b_map, c_map, p, schedule, fp8_scales);
  CUDALAB_CHECK_LAUNCH();
#else
  (void)stream;
#endif
}

}  // namespace cudalab::gemm_variants
