// Tensor-core rung `wgmma_persistent` (Hopper, sm_90a): persistent blocks. Rung `wgmma_specialized`'s block (one TMA
// producer warpgroup, two consumer warpgroups on a 128 x 256 tile, 4-slot ring of 48 KiB) now stays on its SM for the
// whole launch: the grid is one block per SM, and block b takes tiles b, b + grid, ... of an order that walks bands of
// 16 tile rows column by column (grouped_tile), so the tiles that run at one time share their A and B panels in L2. The
// producer's ring position carries across tiles: while the consumers finish one tile's epilogue, the producer is
// already filling the ring with the next tile's first k-tiles. The epilogue goes through shared memory: each consumer
// warpgroup writes its 64 x 256 accumulators, 64 columns at a time, into two 8 KiB buffers with the
// 128-byte swizzle (conflict-free: the 8 rows a warp writes per instruction hit 8 different bank
// groups) and one thread hands each box to a TMA store, which clips rows and columns outside C and
// proceeds while the warpgroup fills the other buffer and starts the next tile's k-loop; one named
// barrier per box. With beta != 0 the producer asks L2 for the tile's old C (TMA prefetch) 8
// k-tiles before the tile's last, and each consumer thread issues all 64 of its 4-byte loads of
// the old C before its first box, so the epilogue waits for one L2 latency per tile (it used to
// wait for each load in turn from DRAM: beta = -0.5 cost ~20% at 4096^3). A C whose rows or
// matrices are not 16-byte aligned (odd ldc, ...) takes rung `wgmma_specialized`'s stores from registers.
// Fixes, relative to rung `wgmma_specialized`: no block launch, barrier setup or cold ring per tile; the loads of
// the next tile overlap the epilogue; C leaves as whole 128-byte lines instead of 16-byte pieces
// per row and warp instruction; L2 reuse by tile order rather than by launch order. Costs: the
// tensor cores still idle while the consumers convert and stage their accumulators (one set of
// accumulators per warpgroup; a ping-pong of two tiles per block would hide it); beta != 0 reads
// the old C with 4-byte loads in the accumulators' layout (16 bytes per row per warp instruction)
// into 64 more registers per thread; the last wave of tiles still leaves SMs idle when the tile
// count is not a multiple of the SMs.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
// Rung `wgmma_small` is the same kernel on 64 x 128 tiles whose two consumer warpgroups split
// each k-tile (PersistentTiles below). Fixes: shapes with few large tiles, which left most SMs
// idle. Costs: twice the A and B traffic per FLOP of the large tiles, and a 32 KiB hand-over of
// partial sums per tile.
// Rung `wgmma_mid` is the large tiles' kernel on 128 x 128 tiles. Fixes: the last round of tiles. Tiles run in
// rounds of one an SM, so 192 large tiles (3072 x 2048) take two rounds on 132 SMs, the second 45% full; their
// 384 halves take three rounds of about 0.55 the time (1.2x on an H200 at k = 8192). Costs: a third more A and B
// traffic per FLOP, and 10% less rate a round than the large tiles where both fill their rounds.
// Rung `wgmma_small_splitk` also splits k across CTAs: a decode batch (m <= 64) against a 4096-wide
// weight is 32 small tiles for 132 SMs (0.72-0.78x cuBLAS at m = 8-64 on an H200), so each tile's
// k-range is cut into as many parts as give about one work item per SM; each part's fp32 sums go to
// scratch, and a second kernel adds the parts in order and blends them into C. Costs: the partial
// sums' round trip (splits x m x n floats) and a second launch.
// Rung `wgmma_streamk` runs the large tiles' kernel with every CTA taking an equal share of all
// the tiles' k-steps (stream-K, ops/gemm/stream_k.hpp): the shapes of few tiles and long k (a
// weight gradient, 3072 x 1024 x 8192: 96 tiles for 132 SMs) keep every SM busy to the end. A tile
// cut between CTAs is finished by its owner, the CTA with its last k-steps, which waits for the
// others' fp32 partial tiles (written to scratch in the accumulators' order, a flag raised per tile
// and warpgroup with release semantics) and adds them in a fixed order before its epilogue: no
// second launch, and the same bits on every run. Costs: the partial tiles' round trip through L2
// (64 KiB per warpgroup), an owner's wait when a peer is late, a memset of the flags per call, and
// L2 reuse: CTAs at different k-offsets share no A or B panels (3.6x persistent's DRAM reads at
// 4096^3 on an H200 with every tile split), hence all but the last one or two waves' tiles whole
// (stream_k_plan).
// Rung `wgmma_pingpong` runs the kernel on 64 x 256 tiles, each a consumer warpgroup's own, the
// CTA's work items dealt to the two in turn. Fixes: the idle tensor cores during an epilogue; one
// warpgroup's epilogue runs beside the other's k-loop. The library takes it for a C read at
// k <= 1024 and for fused activations (0.96-0.97x the large tiles' time with a C at k = 1024 on an
// H200). Costs: twice the B traffic per FLOP of the large tiles (1.05-1.08x their time at
// k >= 4096), one warpgroup's wgmmas in flight at a time, and a named-barrier turn per tile.
// All six rungs of this file are one kernel over the schedules of ops/gemm/schedules.cuh.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/launch.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/gemm/hopper.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/schedules.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

// The two tile shapes of the one kernel below. Large (rung `wgmma_persistent`): 128 x 256 tiles, two consumer
// warpgroups on 64 rows each, a 4-slot ring of 48 KiB. Small (rung `wgmma_small`): 64 x 128 tiles, 8x as
// many, for shapes with fewer than about two waves of large tiles (1024^3: 32 large tiles for 132
// SMs, 128 small ones); its two consumer warpgroups share the tile and split every k-tile, two
// k-steps of 16 each, so a tile gets the tensor throughput of two warpgroups, and the second hands
// its fp32 partial sums to the first through 32 KiB of shared memory before the first stores C. A
// 7-slot ring of 24 KiB, as many as fit (6 slots: 1.00-1.05x the time on an H200, most at rows of
// 32-128 against k = 4096-8192). (One consumer warpgroup per 64 x 128 tile and two blocks per SM ran
// 1024^3 in 12.5 us and 256x4096x4096 in 32.2 us: one warpgroup keeps too few wgmmas in flight. Not
// faster either, on an H200: B multicast over clusters of two tiles, 1.10-1.16x the time; the
// consumers taking turns by k-tile, at best level with splitting k-steps; each on a column half (m64n64) with 8 slots
// and no hand-over, 1.07-1.09x at k = 4096-8192.)
template <int kConsumerCount, int kTileN, int kStageCount, bool kSplitKSteps, bool kPingPongTiles = false>
struct PersistentTiles {
  static constexpr int kConsumers = kConsumerCount, kStages = kStageCount;
  static constexpr bool kSplit = kSplitKSteps, kPingPong = kPingPongTiles;
  static constexpr int kBlockM = kSplit || kPingPong ? 64 : 64 * kConsumers, kBlockN = kTileN;
  static constexpr int kStoringConsumers = kSplit ? 1 : kConsumers;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kATileBytes = kBlockM * hopper::kBlockK * 2;
  static constexpr int kStageBytes = kATileBytes + kBlockN * hopper::kBlockK * 2;
  static constexpr int kRingBytes = kStages * kStageBytes;
  static constexpr int kReduceBytes = kSplit ? (64 * kBlockN + 8 * 128) * 4 : 0;  // the sums, A's row sums
};
using LargeTiles = PersistentTiles<2, 256, 4, false>;
using SmallTiles = PersistentTiles<2, 128, 7, true>;
// Mid (rung `wgmma_mid`): 128 x 128 tiles, the large tiles' two consumer warpgroups on 64 rows each, a 6-slot
// ring of 32 KiB.
using MidTiles = PersistentTiles<2, 128, 6, false>;
// Ping-pong (rung `wgmma_pingpong`): 64 x 256 tiles, each a consumer warpgroup's own, the CTA's
// work items dealt to its two warpgroups in turn. The producer fills the ring in item order, so a
// warpgroup's k-loop starts as the other's ends, and each epilogue runs beside the other's k-loop
// instead of leaving the tensor cores idle. A 4-slot ring of 40 KiB.
using PingPongTiles = PersistentTiles<2, 256, 4, false, true>;

#if CUDALAB_SM90A
namespace {

using namespace hopper;

constexpr int kGroupM = 16;  // tile rows per band: 132 running tiles span ~16 x 8 tiles, A and B panels balanced

// The schedules whose sums over k of A's rows are whole where a tile's k-loop ends: every work item
// a whole tile (not split-K), or stream-K's, whose owners add their peers' sums as their partial tiles.
template <typename Schedule>
inline constexpr bool kWholeTiles = false;
template <int kGroup>
inline constexpr bool kWholeTiles<PersistentSchedule<kGroup, false>> = true;
template <typename Schedule>
inline constexpr bool kStreamK = false;
template <int kGroup, int kTileN>
inline constexpr bool kStreamK<StreamKSchedule<kGroup, kTileN>> = true;

// The split warpgroups' hand-over buffer (64 x kBlockN fp32) and its two barriers; one byte for the
// large tiles, which have none (it comes last, so it moves no tile).
template <int kBytes>
struct ReduceBuffer {
  alignas(16) float sums[kBytes / 4];
  std::uint64_t full, free;  // the second warpgroup's sums stored; the first's read (128 arrivals each)
};
template <>
struct ReduceBuffer<0> {};

template <typename Tiles>
struct SharedStorage {
  alignas(1024) std::uint8_t ring[Tiles::kStages][Tiles::kStageBytes];
  alignas(1024) std::uint8_t staging[Tiles::kStoringConsumers][kStagingBytes];
  PipelineBarriers<Tiles::kStages> barriers;
  ReduceBuffer<Tiles::kReduceBytes> reduce;
};
static_assert(shared_storage_bytes<SharedStorage<LargeTiles>>() <= 227 * 1024 &&
                  shared_storage_bytes<SharedStorage<SmallTiles>>() <= 227 * 1024 &&
                  shared_storage_bytes<SharedStorage<MidTiles>>() <= 227 * 1024 &&
                  shared_storage_bytes<SharedStorage<PingPongTiles>>() <= 227 * 1024,
              "one block per SM must fit");

// Split k-steps: the second consumer warpgroup's accumulators into `reduce` (element i of thread t
// at float i * 128 + t: a warp's 32 stores hit 32 banks), added by the first; with `row_sums`, its
// sums of A's rows (add_mn_major_rows) after them likewise. The CTA's `index`-th hand-over: the
// second waits on `free` until the first has read the previous one's sums, and the first on `full`
// for this one's. Every thread arrives on an mbarrier, whose release and acquire order its shared
// memory accesses. Named barriers (bar.arrive, bar.sync) order them too, but racecheck does not
// model bar.arrive's ordering and reported the hand-over as a race (a litmus kernel of the same
// protocol draws the same report).
template <int kRegisters>
__device__ __forceinline__ void hand_over_partial_sums(float (&acc)[kRegisters], float (&sums)[8], bool row_sums,
                                                       int consumer, std::uint32_t reduce, std::uint32_t full,
                                                       std::uint32_t free, int index) {
  const std::uint32_t mine = reduce + 4 * (static_cast<std::uint32_t>(threadIdx.x) % 128);
  if (consumer == 1) {
    if (index > 0) mbarrier_wait(free, static_cast<std::uint32_t>(index - 1) & 1u);
#pragma unroll
    for (int i = 0; i < kRegisters; ++i) asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(mine + 512 * i), "f"(acc[i]));
    if (row_sums) {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(mine + 512 * (kRegisters + e)), "f"(sums[e]));
    }
    mbarrier_arrive(full);
  } else {
    mbarrier_wait(full, static_cast<std::uint32_t>(index) & 1u);
#pragma unroll
    for (int i = 0; i < kRegisters; ++i) {
      float partial;
      asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(partial) : "r"(mine + 512 * i));
      acc[i] += partial;
    }
    if (row_sums) {
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float partial;
        asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(partial) : "r"(mine + 512 * (kRegisters + e)));
        sums[e] += partial;
      }
    }
    mbarrier_arrive(free);
  }
}

template <typename T, typename Tiles, bool kAMnMajor, bool kBMnMajor, bool kTmaStore, typename Schedule>
__global__ void __launch_bounds__(Tiles::kThreads, 1)
    wgmma_persistent_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                            const __grid_constant__ CUtensorMap c_map, const __grid_constant__ CUtensorMap aux_map,
                            const WgmmaParams<T> p, const Schedule schedule) {
#if CUDALAB_SM90A_DEVICE
  constexpr int kBlockM = Tiles::kBlockM, kBlockN = Tiles::kBlockN, kStages = Tiles::kStages;
  constexpr int kATileBytes = Tiles::kATileBytes;
  using Storage = SharedStorage<Tiles>;
  extern __shared__ std::uint8_t dynamic_shared[];
  const std::uint32_t shared = aligned_shared_base(dynamic_shared);
  const TmaPipeline<kStages, Tiles::kStageBytes> pipeline(shared + offsetof(Storage, ring),
                                                          shared + offsetof(Storage, barriers));
  const std::uint32_t staging = shared + offsetof(Storage, staging);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  pipeline.init(Tiles::kPingPong ? 1 : Tiles::kConsumers);  // the warpgroups that release each slot
  if constexpr (Tiles::kSplit) {
    if (threadIdx.x == 0) {
      mbarrier_init(shared + offsetof(Storage, reduce.full), 128);
      mbarrier_init(shared + offsetof(Storage, reduce.free), 128);
    }
  }
  const int unit = schedule.claim();
  __syncthreads();

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
      schedule.for_each(unit, [&](const GemmWork& work) {
        const TileCoord at = work.at;
        produce(pipeline, ring, work.k_tiles, [&](std::uint32_t stage, std::uint32_t barrier, int i) {
          const int kt = work.kt0 + i;
          load_operand<kBlockM, kAMnMajor>(stage, &a_map, barrier, kt * kBlockK, at.m * kBlockM,
                                           at.batch * p.batch_step_a);
          load_operand<kBlockN, kBMnMajor>(stage + kATileBytes, &b_map, barrier, kt * kBlockK, at.n * kBlockN,
                                           at.batch * p.batch_step_b);
          if (kt == prefetch_kt)
            prefetch_old_c<T, kBlockM, kBlockN>(prefetch_map, p.out, at.m * kBlockM, at.n * kBlockN,
                                                at.batch * p.batch_step_c);
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
    RingPosition<kStages> ring;
    int item = 0, handed = 0;  // work items seen; hand-overs of split k-steps made
    schedule.for_each(unit, [&](const GemmWork& work) {
      if constexpr (Tiles::kPingPong) {  // the other warpgroup's item: its slots passed over
        if (item++ % 2 != consumer) {
          for (int kt = 0; kt < work.k_tiles; ++kt) ring.advance();
          return;
        }
      }
      const TileCoord at = work.at;
      float acc[kBlockN / 2] = {};
      // GemmArgs::a_row_sums: every tile adds its A tiles' rows over k beside the wgmmas (the
      // k-loop's visit), a warpgroup its 64 rows (of its k-steps, where the small tiles split them),
      // tile column j those of the k-tiles kt with kt % tiles_n == j: each column carries an equal
      // share of the shared memory reads (add_column_row_sums adds the columns). With the sums, every
      // warp's reads of a slot must precede its release, which the leader alone signals (its own
      // wgmma wait covers the wgmmas, not the other warps' loads): `summed` (the k-tile last visited,
      // the next released) makes release_read wait for them.
      constexpr bool kRowSums = kAMnMajor && (kWholeTiles<Schedule> || kStreamK<Schedule>);
      const bool row_sums = kRowSums && p.a_row_sums != nullptr;
      float sums[8] = {};
      bool summed = false;
      // The loop's next k-tile to sum, counted rather than divided for: a division in the k-loop
      // delays the next k-tile's wgmmas, which the small tiles' short k-tiles cannot hide.
      int next_summed = row_sums ? ((at.n - work.kt0) % p.tiles_n + p.tiles_n) % p.tiles_n : -1;
      const auto visit_rows = [&](auto first_step, int kt, std::uint32_t a_tile) {
        if constexpr (kRowSums) {
          constexpr int kFirst = decltype(first_step)::value, kSteps = Tiles::kSplit ? 2 : kBlockK / 16;
          summed = kt == next_summed;
          if (summed) {
            next_summed += p.tiles_n;
            add_mn_major_rows<T, kFirst, kSteps>(sums, a_tile);
          }
        }
      };
      const auto visit_a = [&](int kt, std::uint32_t a_tile) {
        visit_rows(std::integral_constant<int, 0>{}, kt, a_tile);
      };
      const auto release_read = [&](int stage) {
        if (summed) named_barrier_sync(epilogue_barrier(consumer), 128);
        release(stage);
      };
      if constexpr (Tiles::kSplit) {
        if (consumer == 0) {
          consumer_k_loop<T, kAMnMajor, kBMnMajor, kATileBytes, 0, 2>(acc, work.k_tiles, pipeline, ring, 0,
                                                                      release_read, visit_a);
        } else {
          consumer_k_loop<T, kAMnMajor, kBMnMajor, kATileBytes, 2, 2>(
              acc, work.k_tiles, pipeline, ring, 0, release_read,
              [&](int kt, std::uint32_t a_tile) { visit_rows(std::integral_constant<int, 2>{}, kt, a_tile); });
        }
        hand_over_partial_sums(acc, sums, row_sums, consumer, shared + offsetof(Storage, reduce),
                               shared + offsetof(Storage, reduce.full), shared + offsetof(Storage, reduce.free),
                               handed++);
        if (consumer == 1) return;
      } else if constexpr (Tiles::kPingPong) {
        // Turns at the ring: a warpgroup waits on its slots only once the other has waited on all of
        // its item's, so it never waits a whole round of the ring ahead (a slot's barrier tells
        // phases apart by parity alone).
        if (!work.first) named_barrier_sync(kTurnBarrier + consumer, 256);
        consumer_k_loop<T, kAMnMajor, kBMnMajor, kATileBytes>(acc, work.k_tiles, pipeline, ring, 0, release_read,
                                                              visit_a);
        if (work.more) named_barrier_arrive(kTurnBarrier + 1 - consumer, 256);
      } else {
        consumer_k_loop<T, kAMnMajor, kBMnMajor, kATileBytes>(acc, work.k_tiles, pipeline, ring,
                                                              consumer * 64 * kRowBytes, release_read, visit_a);
      }
      const int row0 = at.m * kBlockM + (kBlockM == 64 ? 0 : 64 * consumer), col0 = at.n * kBlockN;
      if constexpr (kRowSums && kStreamK<Schedule>) {  // ahead of the partial tile's flag
        if (row_sums && work.role == StreamKRole::publish) schedule.publish_row_sums(sums, work.unit, consumer);
      }
      if (!schedule.finish(acc, work, consumer, p, row0, col0, shared + offsetof(Storage, ring))) return;
      if constexpr (kRowSums) {
        if constexpr (kStreamK<Schedule>) {
          if (row_sums && work.role == StreamKRole::owner) schedule.add_peer_row_sums(sums, work, consumer);
        }
        if (row_sums && p.tiles_n == 1) store_mn_major_row_sums<T>(sums, p.a_row_sums, row0, p.out.m);
        if (row_sums && p.tiles_n > 1)
          add_column_row_sums<T>(sums, p, at.n, static_cast<std::int64_t>(p.tiles_m) * kBlockM, row0);
      }
      store_accumulators<kTmaStore, !kAMnMajor>(at_offset(p.out, at.batch * p.stride_c), acc, &c_map,
                                                staging + consumer * kStagingBytes, row0, col0,
                                                at.batch * p.batch_step_c, consumer, &aux_map);
    });
    if (kTmaStore && leader) bulk_wait_all();  // the staging buffers must outlive their last stores
  }
#else
  __trap();  // a device pass without sm_90a code: the build must target sm_90a (CUDA_ARCHITECTURES 90a)
#endif
}

}  // namespace
#endif  // CUDALAB_SM90A

template <typename Tiles>
std::string persistent_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper::wgmma_limits(shape, compute_capability);
  return why.empty() ? hopper::tile_count_limits(shape, Tiles::kBlockM, Tiles::kBlockN) : why;
}

// How a launch shares k between CTAs: not at all (every item a whole tile), split-K (parts of each
// tile's k, added by a second kernel; the small tiles) or stream-K (the large tiles).
enum class KSharing { none, split_k, stream_k };

#if CUDALAB_SM90A
// The kernel for the operands' layouts and C's store, on `schedule`, over `grid` CTAs.
// kTmaStorable: false for a schedule whose epilogue never stores C (split-K), so no TMA-store
// kernel is built for it.
template <typename T, typename Tiles, bool kTmaStorable, typename Schedule>
void launch_on(const hopper::WgmmaLaunch<T>& launch, const GemmArgs<T>& args, bool tma_store, const Schedule& schedule,
               int grid, cudaStream_t stream) {
  auto* kernel = with_flags(
      [](auto a_mn_major, auto b_mn_major, auto tma_store_c) {
        return wgmma_persistent_kernel < T, Tiles, a_mn_major, b_mn_major, decltype(tma_store_c)::value && kTmaStorable,
               Schedule > ;
      },
      args.a_transposed, !args.b_transposed, tma_store);
  constexpr int kSharedBytes = shared_storage_bytes<SharedStorage<Tiles>>();
  hopper::set_shared_memory(kernel, kSharedBytes);
  kernel<<<grid, Tiles::kThreads, kSharedBytes, stream>>>(launch.a_map, launch.b_map, launch.c_map, launch.aux_map,
                                                          launch.params, schedule);
  CUDALAB_CHECK_LAUNCH();
}
#endif

template <typename T, typename Tiles>
void launch_persistent(const GemmArgs<T>& args, const char* name, cudaStream_t stream,
                       KSharing sharing = KSharing::none) {
  require_limits(name, persistent_limits<Tiles>(shape_of(args), current_gpu().compute_capability));
#if CUDALAB_SM90A
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  const int sm_count = current_gpu().sm_count;
  const std::int64_t tiles =
      args.batch * ceil_div<std::int64_t>(args.m, Tiles::kBlockM) * ceil_div<std::int64_t>(args.n, Tiles::kBlockN);
  const auto k_tiles = static_cast<int>(ceil_div<std::int64_t>(args.k, hopper::kBlockK));
  // Split k where the tiles leave SMs idle (split_k_for). The small tiles only (the large ones'
  // kernels have no partial-sum store).
  const SplitK split = sharing == KSharing::split_k && std::is_same_v<Tiles, SmallTiles>
                           ? split_k_for(tiles, k_tiles, sm_count)
                           : SplitK{1, k_tiles, nullptr};
  const bool splitting = split.splits > 1;
  CUDALAB_REQUIRE(args.a_row_sums == nullptr || (args.a_transposed && !splitting && !Tiles::kPingPong),
                  std::string(name) + ": sums of A's rows need A stored k x m and tiles whose k is not split");
  const bool tma_store = !splitting && c_storable_by_tma(args);
  hopper::WgmmaLaunch<T> launch = hopper::prepare_launch(args, name, Tiles::kBlockM, Tiles::kBlockN, Tiles::kBlockM,
                                                         Tiles::kBlockN, tma_store ? 64 : 0);
  StreamOrderedWorkspace scratch(stream);  // partial sums, handed back on the stream afterwards
  auto& p = launch.params;
  // Where the tile columns share the sums of A's rows (add_column_row_sums): each column's sums,
  // carved first from the launch's one reservation, and a count per 16 rows, zeroed beside the
  // stream-K flags where there are some.
  const std::size_t sum_rows = static_cast<std::size_t>(p.tiles_m) * Tiles::kBlockM;
  const bool column_sums = args.a_row_sums != nullptr && p.tiles_n > 1;
  const std::size_t column_bytes = column_sums ? sum_rows * p.tiles_n * sizeof(float) : 0;
  const std::size_t count_bytes = column_sums ? sum_rows / 16 * sizeof(unsigned) : 0;
  if constexpr (std::is_same_v<Tiles, LargeTiles>) {
    // k = 0 (whole tiles of no k-steps) and plans of 2^31 stream-K iterations or more (the plan's
    // 32-bit arithmetic) take the persistent schedule below, whose whole tiles already fill every
    // SM many times over.
    const bool planned = sharing == KSharing::stream_k && k_tiles > 0 && tiles <= 0x7fffffff;
    const int units = static_cast<int>(std::min<std::int64_t>(tiles * k_tiles, sm_count));
    const StreamKPlan plan =
        planned ? stream_k_plan(static_cast<int>(tiles), k_tiles, units, 2 * 4 < k_tiles ? 4 : 0) : StreamKPlan{};
    if (planned && plan.fits_32_bits()) {
      // One unit per SM, at most one per k-step of the work; all but the last waves' tiles whole
      // (stream_k_plan); boundaries kept 4 k-steps from tile edges where tiles are long enough.
      // Scratch: a partial tile per unit and warpgroup (and its sums of A's rows), then the flags and
      // the ticket, zeroed here.
      using Schedule = StreamKSchedule<kGroupM, LargeTiles::kBlockN>;
      Schedule schedule;
      schedule.plan = plan;
      schedule.tiles_m = p.tiles_m;
      schedule.tiles_n = p.tiles_n;
      const std::size_t slot_bytes = static_cast<std::size_t>(units) * 2 * Schedule::kSlotFloats * sizeof(float);
      const std::size_t row_sum_bytes =
          args.a_row_sums != nullptr ? static_cast<std::size_t>(units) * 2 * 8 * 128 * sizeof(float) : 0;
      const std::size_t flag_bytes = (static_cast<std::size_t>(tiles) * 2 + 1) * sizeof(unsigned);
      auto* base = static_cast<std::uint8_t*>(
          scratch.reserve(column_bytes + slot_bytes + row_sum_bytes + count_bytes + flag_bytes));
      if (column_sums) p.row_sum_columns = reinterpret_cast<float*>(base);
      base += column_bytes;
      schedule.slots = reinterpret_cast<float*>(base);
      schedule.row_sum_slots = row_sum_bytes != 0 ? reinterpret_cast<float*>(base + slot_bytes) : nullptr;
      auto* counts = reinterpret_cast<unsigned*>(base + slot_bytes + row_sum_bytes);
      if (column_sums) p.row_sum_counts = counts;
      schedule.flags = counts + count_bytes / sizeof(unsigned);
      schedule.ticket = schedule.flags + 2 * tiles;
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(counts, 0, count_bytes + flag_bytes, stream));
      launch_on<T, Tiles, true>(launch, args, tma_store, schedule, units, stream);
      return;
    }
  }
  const int grid = static_cast<int>(std::min<std::int64_t>(tiles * split.splits, sm_count));
  if (!splitting) {
    if (column_sums) {
      auto* base = static_cast<std::uint8_t*>(scratch.reserve(column_bytes + count_bytes));
      p.row_sum_columns = reinterpret_cast<float*>(base);
      p.row_sum_counts = reinterpret_cast<unsigned*>(base + column_bytes);
      CUDALAB_CUDA_CHECK(cudaMemsetAsync(p.row_sum_counts, 0, count_bytes, stream));
    }
    const PersistentSchedule<kGroupM, false> schedule{p.tiles_m, p.tiles_n, static_cast<int>(tiles), k_tiles, split};
    launch_on<T, Tiles, true>(launch, args, tma_store, schedule, grid, stream);
    return;
  }
  if constexpr (std::is_same_v<Tiles, SmallTiles>) {
    const auto bytes = static_cast<std::size_t>(split.splits) * static_cast<std::size_t>(args.batch) *
                       static_cast<std::size_t>(args.m) * static_cast<std::size_t>(args.n) * sizeof(float);
    SplitK parts = split;
    parts.partial = static_cast<float*>(scratch.reserve(bytes));
    const PersistentSchedule<kGroupM, true> schedule{p.tiles_m, p.tiles_n, static_cast<int>(tiles), k_tiles, parts};
    launch_on<T, Tiles, false>(launch, args, false, schedule, grid, stream);
    add_partial_sums(parts.partial, parts.splits, p.out, p.stride_c, args.batch, stream);
  }
#else
  (void)name, (void)stream, (void)sharing;
#endif
}

std::string wgmma_persistent_limits(const GemmShape& shape, int compute_capability) {
  return persistent_limits<LargeTiles>(shape, compute_capability);
}

std::string wgmma_small_limits(const GemmShape& shape, int compute_capability) {
  return persistent_limits<SmallTiles>(shape, compute_capability);
}

template <typename T>
void wgmma_persistent(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, LargeTiles>(args, "wgmma_persistent", stream);
}

std::string wgmma_mid_limits(const GemmShape& shape, int compute_capability) {
  return persistent_limits<MidTiles>(shape, compute_capability);
}

template <typename T>
void wgmma_mid(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, MidTiles>(args, "wgmma_mid", stream);
}

std::string wgmma_pingpong_limits(const GemmShape& shape, int compute_capability) {
  return persistent_limits<PingPongTiles>(shape, compute_capability);
}

template <typename T>
void wgmma_pingpong(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, PingPongTiles>(args, "wgmma_pingpong", stream);
}

template <typename T>
void wgmma_small(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, SmallTiles>(args, "wgmma_small", stream);
}

template <typename T>
void wgmma_small_splitk(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, SmallTiles>(args, "wgmma_small_splitk", stream, KSharing::split_k);
}

template <typename T>
void wgmma_streamk(const GemmArgs<T>& args, cudaStream_t stream) {
  launch_persistent<T, LargeTiles>(args, "wgmma_streamk", stream, KSharing::stream_k);
}

template void wgmma_streamk<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_streamk<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_pingpong<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_pingpong<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_mid<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_mid<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_small<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_small_splitk<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_small_splitk<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_small<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);
template void wgmma_persistent<__half>(const GemmArgs<__half>&, cudaStream_t);
template void wgmma_persistent<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
