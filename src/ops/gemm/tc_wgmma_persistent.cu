// Tensor-core rung 7 (Hopper, sm_90a): persistent blocks. Rung 6's block (one TMA producer
// warpgroup, two consumer warpgroups on a 128 x 256 tile, 4-slot ring of 48 KiB) now stays on its
// SM for the whole launch: the grid is one block per SM, and block b takes tiles b, b + grid, ...
// of an order that walks bands of 16 tile rows column by column (grouped_tile), so the tiles that
// run at one time share their A and B panels in L2. The producer's ring position carries across
// tiles: while the consumers finish one tile's epilogue, the producer is already filling the ring
// with the next tile's first k-tiles. The epilogue goes through shared memory: each consumer
// warpgroup writes its 64 x 256 accumulators, 64 columns at a time, into two 8 KiB buffers with the
// 128-byte swizzle (conflict-free: the 8 rows a warp writes per instruction hit 8 different bank
// groups) and one thread hands each box to a TMA store, which clips rows and columns outside C and
// proceeds while the warpgroup fills the other buffer and starts the next tile's k-loop; one named
// barrier per box. With beta != 0 the producer asks L2 for the tile's old C (TMA prefetch) 8
// k-tiles before the tile's last, and each consumer thread issues all 64 of its 4-byte loads of
// the old C before its first box, so the epilogue waits for one L2 latency per tile (it used to
// wait for each load in turn from DRAM: beta = -0.5 cost ~20% at 4096^3). A C whose rows or
// matrices are not 16-byte aligned (odd ldc, ...) takes rung 6's stores from registers.
// Fixes, relative to rung 6: no block launch, barrier setup or cold ring per tile; the loads of
// the next tile overlap the epilogue; C leaves as whole 128-byte lines instead of 16-byte pieces
// per row and warp instruction; L2 reuse by tile order rather than by launch order. Costs: the
// tensor cores still idle while the consumers convert and stage their accumulators (one set of
// accumulators per warpgroup; a ping-pong of two tiles per block would hide it); beta != 0 reads
// the old C with 4-byte loads in the accumulators' layout (16 bytes per row per warp instruction)
// into 64 more registers per thread; the last wave of tiles still leaves SMs idle when the tile
// count is not a multiple of the SMs.
// Measured (H100, bf16, B as K x N, results/nvidia-h100-80gb-hbm3/gemm.json at f09762a): 764
// TFLOP/s at 8192^3 (0.99x cuBLAS), 726 at 4096^3 (0.97x); 1024 x 64^3 batched in 28.2 us (cuBLAS
// 15.0; gemm-batched.json at 6f4fdc7).
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

constexpr int kWgmmaPersistentBlockM = 128, kWgmmaPersistentBlockN = 256;

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kBlockM = kWgmmaPersistentBlockM, kBlockN = kWgmmaPersistentBlockN;
constexpr int kStages = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kGroupM = 16;  // tile rows per band: 132 running tiles span ~16 x 8 tiles, A and B panels balanced
constexpr int kATileBytes = kBlockM * kBlockK * 2;                // 16 KiB
constexpr int kStageBytes = kATileBytes + kBlockN * kBlockK * 2;  // + 32 KiB of B
constexpr int kRingBytes = kStages * kStageBytes;                 // 192 KiB
constexpr int kSharedBytes =
    kRingBytes + kConsumers * static_cast<int>(kStagingBytes) + 2 * kStages * 8 + static_cast<int>(kAtomBytes);
static_assert(kSharedBytes <= 227 * 1024, "one block per SM must fit");

template <typename T, bool kBMnMajor, bool kTmaStore>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_persistent_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                            const __grid_constant__ CUtensorMap c_map, const WgmmaParams<T> p) {
#if CUDALAB_SM90A_DEVICE
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t stages = aligned_shared_base(dynamic_shared);
  const std::uint32_t staging = stages + kRingBytes;  // kStagingBytes per consumer warpgroup
  const std::uint32_t full = staging + kConsumers * kStagingBytes;
  const std::uint32_t empty = full + 8 * kStages;
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int tiles = p.batch * p.tiles_m * p.tiles_n;
  init_ring_barriers(full, empty, kStages, kConsumers);
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      // The k-tile whose loads also prefetch the old C; -1: none (beta == 0 never reads C).
      const int prefetch_kt = kTmaStore && p.out.beta != 0.0f ? std::max(p.k_tiles - kOldCPrefetchKTiles, 0) : -1;
      RingPosition<kStages> ring;
      for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
        const TileCoord at = grouped_tile(tile, p.tiles_m, p.tiles_n, kGroupM);
        for (int kt = 0; kt < p.k_tiles; ++kt) {
          mbarrier_wait(empty + 8 * ring.stage, ring.phase ^ 1);
          const std::uint32_t stage = stages + ring.stage * kStageBytes, barrier = full + 8 * ring.stage;
          mbarrier_arrive_expect_tx(barrier, kStageBytes);
          tma_load(stage, &a_map, barrier, kt * kBlockK, at.m * kBlockM, at.batch * p.batch_step_a);
          load_b<kBlockN, kBMnMajor>(stage + kATileBytes, &b_map, barrier, kt * kBlockK, at.n * kBlockN,
                                     at.batch * p.batch_step_b);
          if (kt == prefetch_kt)
            prefetch_old_c<T, kBlockM, kBlockN>(&c_map, p.out, at.m * kBlockM, at.n * kBlockN,
                                                at.batch * p.batch_step_c);
          ring.advance();
        }
      }
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    const std::uint32_t my_staging = staging + consumer * kStagingBytes;
    const auto release = [&](int stage) {
      if (leader) mbarrier_arrive(empty + 8 * stage);
    };
    RingPosition<kStages> ring;
    for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
      const TileCoord at = grouped_tile(tile, p.tiles_m, p.tiles_n, kGroupM);
      float acc[kBlockN / 2] = {};
      consumer_k_loop<T, kBMnMajor, kStages, kStageBytes, kATileBytes>(acc, p.k_tiles, ring, stages, full,
                                                                       consumer * 64 * kRowBytes, release);
      OutputMatrix<T> out = p.out;
      out.c += at.batch * p.stride_c;
      const int row0 = at.m * kBlockM + 64 * consumer, col0 = at.n * kBlockN;
      if constexpr (kTmaStore) {
        store_accumulators_tma(out, acc, &c_map, my_staging, row0, col0, at.batch * p.batch_step_c, 1 + consumer);
      } else {
        store_accumulators_direct(out, acc, row0, col0);
      }
    }
    if (kTmaStore && leader) bulk_wait_all();  // the staging buffers must outlive their last stores
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_persistent_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty() ? hopper::tile_count_limits(shape, kWgmmaPersistentBlockM, kWgmmaPersistentBlockN) : why;
}

template <typename T>
void wgmma_persistent(const GemmArgs<T>& args, cudaStream_t stream) {
  require_limits("wgmma_persistent", wgmma_persistent_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  const bool tma_store = hopper::c_storable_by_tma(args);
  const hopper::WgmmaLaunch<T> launch =
      hopper::prepare_launch(args, "wgmma_persistent", kBlockM, kBlockN, kBlockM, kBlockN, tma_store ? 64 : 0);
  auto* kernel = args.b_transposed
                     ? (tma_store ? wgmma_persistent_kernel<T, false, true> : wgmma_persistent_kernel<T, false, false>)
                     : (tma_store ? wgmma_persistent_kernel<T, true, true> : wgmma_persistent_kernel<T, true, false>);
  hopper::set_shared_memory(kernel, kSharedBytes);
  const std::int64_t tiles =
      static_cast<std::int64_t>(launch.params.batch) * launch.params.tiles_m * launch.params.tiles_n;
  const int grid = static_cast<int>(std::min<std::int64_t>(tiles, current_gpu().sm_count));
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(launch.a_map, launch.b_map, launch.c_map, launch.params);
  CUDALAB_CHECK_LAUNCH();
#else
  (void)stream;
#endif
}

template void wgmma_persistent<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_persistent<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
