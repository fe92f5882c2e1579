// Tensor-core rung `wgmma_cluster` (Hopper, sm_90a): rung `wgmma_persistent`'s persistent blocks in clusters of two.
// The two blocks of a cluster compute vertically adjacent 128 x 256 tiles (rows m0 and m0 + 128 of one 256 x 256
// cluster tile), which need the same 256 x 64 slice of B per k-tile. Each block loads its own A tile and one half of B
// (128 columns), and multicasts that half to both blocks: a block's full barrier completes on 16 KiB of A from its own
// producer, 16 KiB of B from its own and 16 KiB from its peer's. Because the peer writes into this block's ring, a slot
// is free only when the consumers of both blocks have released it: each consumer warpgroup arrives on the empty barrier
// of its slot in both blocks (4 arrivals per phase), and the producers wait on it at CTA scope, as CUTLASS does.
// Cluster tiles follow rung `wgmma_persistent`'s L2 order in bands of 8 cluster rows; the grid is as many clusters as
// can be resident at once (cudaOccupancyMaxActiveClusters), so no cluster waits for an SM pair to free up. The epilogue
// is rung `wgmma_persistent`'s. The first version ran ~30% behind rung `wgmma_persistent` (502 vs 744 TFLOP/s at
// 4096^3, beta = 0); the cause, seen in its SASS and confirmed by the fix (764 vs 767 after it): its remote arrivals
// were mbarrier.arrive.release.cluster, which ptxas compiles to MEMBAR.ALL.GPU before the arrive, so once per k-tile
// each consumer warpgroup stalled on a GPU-scope fence between wgmma.wait_group and its next wgmma (and the producer's
// acquire.cluster waits invalidated L1, CCTL.IVALL). The ordering they bought is not needed: the
// slot's readers are the consumers' wgmmas, complete at wgmma.wait_group before the arrival, and the
// producer only issues TMA writes after its wait. Both now use the default (CTA-scope) semantics.
// Fixes, relative to rung `wgmma_persistent`: B's tiles cross from L2 to the SMs once per cluster instead of once
// per block, a third less L2-to-SM traffic per k-tile (32 instead of 48 KiB per block) at the
// same 128 x 256 x 64 block tile. Costs: the two blocks advance in lockstep (a slow block stalls
// its peer's producer); a cluster's second tile row is computed even when it lies past m (its A
// loads arrive as zeros, its stores are clipped); a GPC whose SM count is odd leaves an SM idle.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cluster.cuh"
#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/schedules.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

constexpr int kWgmmaClusterBlockM = 128, kWgmmaClusterBlockN = 256;
constexpr int kWgmmaClusterSize = 2;  // blocks along m sharing B

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kBlockM = kWgmmaClusterBlockM, kBlockN = kWgmmaClusterBlockN;
constexpr int kClusterSize = kWgmmaClusterSize;
constexpr int kStages = 4;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kGroupM = 8;                          // cluster rows per band: 16 tile rows, as rung `wgmma_persistent`
constexpr int kATileBytes = kBlockM * kBlockK * 2;  // 16 KiB
constexpr int kBPartColumns = kBlockN / kClusterSize;             // the B columns one block loads
constexpr int kBPartBytes = kBPartColumns * kBlockK * 2;          // 16 KiB
constexpr int kStageBytes = kATileBytes + kBlockN * kBlockK * 2;  // + 32 KiB of B

// Every block's storage sits at the same shared offset: multicast writes and remote arrivals use
// this block's offsets in the peer.
struct SharedStorage {
  alignas(1024) std::uint8_t ring[kStages][kStageBytes];
  alignas(1024) std::uint8_t staging[kConsumers][kStagingBytes];
  PipelineBarriers<kStages> barriers;  // empty: both consumers of both blocks are done with the slot
};
constexpr int kSharedBytes = shared_storage_bytes<SharedStorage>();
constexpr std::uint16_t kClusterMask = (1 << kClusterSize) - 1;
static_assert(kSharedBytes <= 227 * 1024, "one block per SM must fit");
using Pipeline = TmaPipeline<kStages, kStageBytes>;
using Schedule = ClusterSchedule<kClusterSize, kGroupM>;

template <typename T, bool kAMnMajor, bool kBMnMajor, bool kTmaStore>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_cluster_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                         const __grid_constant__ CUtensorMap c_map, const __grid_constant__ CUtensorMap aux_map,
                         const WgmmaParams<T> p, const Schedule schedule) {
#if CUDALAB_SM90A_DEVICE
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t shared = aligned_shared_base(dynamic_shared);
  const Pipeline pipeline(shared + offsetof(SharedStorage, ring), shared + offsetof(SharedStorage, barriers));
  const std::uint32_t staging = shared + offsetof(SharedStorage, staging);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  const int rank = static_cast<int>(cluster_cta_rank());
  const int cluster = schedule.claim();
  pipeline.init(kConsumers * kClusterSize);
  cluster_sync();  // the peer's barriers exist before any multicast or remote arrival reaches them

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      // The k-tile whose loads also prefetch the old C; -1: none (beta == 0 never reads C).
      // A separate C is not prefetched, but a fused gradient's G is (through aux_map).
      const bool old_c = kTmaStore && p.out.beta != 0.0f && p.out.old == p.out.c;
      const bool g = kTmaStore && !kAMnMajor && p.out.fused.kind == FusedKind::kGradient;
      const int prefetch_kt = old_c || g ? std::max(p.k_tiles - kOldCPrefetchKTiles, 0) : -1;
      const CUtensorMap* prefetch_map = g ? &aux_map : &c_map;
      RingPosition<kStages> ring;
      schedule.for_each(cluster, [&](const GemmWork& work) {
        const TileCoord at = work.at;
        const int m0 = at.m * kBlockM, n0 = at.n * kBlockN;
        // Each slot's empty barrier collects the arrivals of both blocks' consumers.
        produce(pipeline, ring, work.k_tiles, [&](std::uint32_t stage, std::uint32_t barrier, int kt) {
          load_operand<kBlockM, kAMnMajor>(stage, &a_map, barrier, kt * kBlockK, m0, at.batch * p.batch_step_a);
          load_operand<kBPartColumns, kBMnMajor>(stage + kATileBytes + rank * kBPartBytes, &b_map, barrier,
                                                 kt * kBlockK, n0 + rank * kBPartColumns, at.batch * p.batch_step_b,
                                                 kClusterMask);
          if (kt == prefetch_kt)
            prefetch_old_c<T, kBlockM, kBlockN>(prefetch_map, p.out, m0, n0, at.batch * p.batch_step_c);
        });
      });
    }
  } else {
    setmaxnreg_inc<232>();
    const int consumer = warpgroup - 1;
    const int thread = static_cast<int>(threadIdx.x) % 128;
    const auto release = [&](int stage) {  // thread r of the warpgroup frees the slot in block r
      if (thread < kClusterSize) pipeline.consumer_release_in(stage, thread);
    };
    RingPosition<kStages> ring;
    schedule.for_each(cluster, [&](const GemmWork& work) {
      const TileCoord at = work.at;
      float acc[kBlockN / 2] = {};
      consumer_k_loop<T, kAMnMajor, kBMnMajor, kATileBytes>(acc, work.k_tiles, pipeline, ring,
                                                            consumer * 64 * kRowBytes, release);
      const int row0 = at.m * kBlockM + 64 * consumer, col0 = at.n * kBlockN;
      store_accumulators<kTmaStore, !kAMnMajor>(at_offset(p.out, at.batch * p.stride_c), acc, &c_map,
                                                staging + consumer * kStagingBytes, row0, col0,
                                                at.batch * p.batch_step_c, consumer, &aux_map);
    });
    if (kTmaStore && thread == 0) bulk_wait_all();
  }
  cluster_sync();  // no block leaves while its peer may still arrive on its barriers
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

std::string wgmma_cluster_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty() ? hopper::tile_count_limits(shape, kWgmmaClusterSize * kWgmmaClusterBlockM, kWgmmaClusterBlockN)
                     : why;
}

template <typename T>
void wgmma_cluster(const GemmArgs<T>& args, cudaStream_t stream) {
  require_limits("wgmma_cluster", wgmma_cluster_limits(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  const bool tma_store = c_storable_by_tma(args);
  const hopper::WgmmaLaunch<T> launch =
      hopper::prepare_launch(args, "wgmma_cluster", kBlockM, kBlockN, kBlockM, kBPartColumns, tma_store ? 64 : 0);
  auto* kernel =
      with_flags([](auto a_mn_major, auto b_mn_major,
                    auto tma_store_c) { return wgmma_cluster_kernel<T, a_mn_major, b_mn_major, tma_store_c>; },
                 args.a_transposed, !args.b_transposed, tma_store);
  hopper::set_shared_memory(kernel, kSharedBytes);
  const auto& p = launch.params;
  const int cluster_rows = ceil_div(p.tiles_m, kClusterSize);
  const Schedule schedule{{}, cluster_rows, p.tiles_n, p.batch * cluster_rows * p.tiles_n, p.k_tiles};
  launch_persistent_clusters(kernel, kClusterSize, kThreads, kSharedBytes, schedule.cluster_tiles, stream,
                             "wgmma_cluster", launch.a_map, launch.b_map, launch.c_map, launch.aux_map, p, schedule);
#else
  (void)stream;
#endif
}

template void wgmma_cluster<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_cluster<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
