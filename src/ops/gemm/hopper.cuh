// What the GEMM's Hopper (sm_90a) rungs, wgmma_tma to wgmma_cluster (tensor_core_variants.hpp), share beyond
// core/hopper.cuh: the host-side limits, the L2-ordered tile order of the persistent rungs, launch parameters and
// tensor maps of A, B and C, MN-major operand tiles, the k-loop of a consumer warpgroup, and the two
// epilogues (straight from registers; through swizzled shared memory and TMA stores, with the old
// C prefetched into L2 and loaded into registers in one batch).
//
// Tiles (core/hopper.cuh says how TMA and wgmma see them). One k-tile is 64 elements = one 128-byte
// row.
//   A stored m x k (K-major, wgmma's natural layout): a box of 64 k x kBlockM rows; row r is row
//     m0 + r of A.
//   A stored k x m (a_transposed, MN-major): kBlockM / 64 boxes of 64 m x 64 k, box j at j * 8 KiB;
//     row r of a box is row k0 + r of A, its 128 bytes columns m0 + 64 j .. + 63. A consumer
//     warpgroup's 64 rows of the tile are one box, at the same offset as its 64 K-major rows.
//   B stored n x k (b_transposed, K-major): a box of 64 k x kBlockN rows.
//   B stored k x n (MN-major): kBlockN / 64 boxes of 64 n x 64 k, box j at j * 8 KiB (the
//     descriptor's LBO); row r of a box is row k0 + r of B, its 128 bytes columns n0 + 64 j .. + 63.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/hopper.cuh"
#include "core/hopper/pipeline.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/bias_act/activation.cuh"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants::hopper {

using namespace ::cudalab::hopper;

// ---------------------------------------------------------------------------------------------
// Host side: limits.

// Why TMA cannot describe the operands of `shape` ("" when it can): a tensor map's strides between
// rows and between matrices must be multiples of 16 bytes. A and B are never read when the output
// is empty or k == 0.
inline std::string tma_limits(const GemmShape& shape) {
  if (shape.m == 0 || shape.n == 0 || shape.k == 0 || shape.batch == 0) return "";
  const auto pitch = [](const char* name, std::int64_t value) {
    return std::string(name) + " must be a multiple of 8 elements (TMA needs 16-byte aligned strides); it is " +
           std::to_string(value);
  };
  if (std::max({shape.m, shape.n, shape.k}) > 0x7fffffffLL - 256)
    return "m, n and k must stay below 2^31 - 256 (TMA box coordinates are 32-bit)";
  if (shape.lda % 8 != 0) return pitch("lda", shape.lda);
  if (shape.ldb % 8 != 0) return pitch("ldb", shape.ldb);
  if (shape.batch > 1 && shape.stride_a % 8 != 0) return pitch("stride_a", shape.stride_a);
  if (shape.batch > 1 && shape.stride_b % 8 != 0) return pitch("stride_b", shape.stride_b);
  return "";
}

// What every Hopper rung needs first: this build's sm_90a code and a compute capability 9.0 GPU.
inline std::string hopper_limits(int compute_capability) {
#if CUDALAB_SM90A
  if (compute_capability != 90)
    return "wgmma and TMA need compute capability 9.0 (Hopper); this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  return "";
#else
  (void)compute_capability;
  return kNotBuilt;
#endif
}

// And the 16-bit rungs' operands as TMA can describe them.
inline std::string wgmma_limits(const GemmShape& shape, int compute_capability) {
  const std::string why = hopper_limits(compute_capability);
  return why.empty() ? tma_limits(shape) : why;
}

// The persistent rungs number every tile of the batch with one int.
inline std::string tile_count_limits(const GemmShape& shape, int block_m, int block_n) {
  const std::int64_t tiles =
      shape.batch * ceil_div<std::int64_t>(shape.m, block_m) * ceil_div<std::int64_t>(shape.n, block_n);
  if (tiles > 0x7fffffffLL)
    return "more than 2^31 - 1 output tiles of " + std::to_string(block_m) + " x " + std::to_string(block_n);
  return "";
}

// ---------------------------------------------------------------------------------------------
// L2-ordered tile order (host and device, so it can be checked off the GPU).

struct TileCoord {
  int m, n, batch;  // tile row, tile column, matrix of the batch
};

// Tile `index` of `batch` grids of tiles_m x tiles_n tiles: matrix by matrix, bands of `group`
// tile rows, each band walked column by column (down the band, then the next column). The tiles a
// persistent grid runs at one time are consecutive indices, so they share B's column panels and
// the band's `group` row panels of A: each panel is fetched from DRAM about once per wave.
__host__ __device__ constexpr TileCoord grouped_tile(int index, int tiles_m, int tiles_n, int group) {
  const int per_matrix = tiles_m * tiles_n;
  const int batch = index / per_matrix;
  int rest = index - batch * per_matrix;
  const int per_band = group * tiles_n;
  const int band = rest / per_band;
  rest -= band * per_band;
  const int first_row = band * group;
  const int rows = tiles_m - first_row < group ? tiles_m - first_row : group;
  return {first_row + rest % rows, rest / rows, batch};
}

// ---------------------------------------------------------------------------------------------
// MN-major operand tiles.

constexpr std::uint32_t kMnBoxBytes = kBlockK * kRowBytes;  // one 64 (m or n) x 64 k box of an MN-major tile

// k-step kk of an MN-major tile of 64-column boxes kMnBoxBytes apart.
__host__ __device__ constexpr std::uint64_t mn_major_descriptor(std::uint32_t tile, int kk) {
  return descriptor(tile + 16 * kRowBytes * kk, kMnBoxBytes, kAtomBytes);
}

static_assert(mn_major_descriptor(0x400, 1) == 0x40000040020000C0ull, "MN-major descriptor encoding: LBO 8 KiB");

#if CUDALAB_SM90A

// ---------------------------------------------------------------------------------------------
// Host side: launch parameters.

// What a kernel needs besides its tensor maps.
template <typename T>
struct WgmmaParams {
  OutputMatrix<T> out;  // C of matrix 0 of the batch, m, n, ldc, alpha, beta, 4-byte pair stores
  std::int64_t stride_c;
  int k_tiles;  // ceil(k / 64): the last k-tile's columns past k arrive as zeros from TMA
  int tiles_m, tiles_n, batch;
  int batch_step_a, batch_step_b, batch_step_c;  // a TMA matrix coordinate is z * step (0: one shared matrix)
  T* a_row_sums;  // GemmArgs::a_row_sums: null, or m sums of A's rows over k (an MN-major A)
  // With a_row_sums and tiles_n > 1 (add_column_row_sums): each tile column's sums of its share of
  // the k-tiles, column j's rows at row_sum_columns + j * tiles_m * block_m, and an arrival count per
  // 16 rows, zeroed before the launch.
  float* row_sum_columns;
  unsigned* row_sum_counts;
};

template <typename T>
struct WgmmaLaunch {
  CUtensorMap a_map, b_map, c_map;  // all-zero where unused (k == 0; no TMA store)
  // A fused epilogue's other matrix (all-zero without one): where a kActivation stores the
  // activation's derivative, or the G a kGradient reads (the producer prefetches it into L2).
  CUtensorMap aux_map;
  WgmmaParams<T> params;
};

// Tensor maps and parameters of one launch. `a_box_rows` rows of a K-major A (m x k) and
// `b_box_rows` rows of a K-major B (n x k) per box; MN-major operands move in 64 x 64 boxes. `c_box_rows` > 0 asks for
// a map of C in boxes of c_box_rows x 64 (the caller checked c_storable_by_tma). A and B must be 16-byte aligned (TMA's
// global address).
template <typename T>
WgmmaLaunch<T> prepare_launch(const GemmArgs<T>& args, const char* name, int block_m, int block_n, int a_box_rows,
                              int b_box_rows, int c_box_rows) {
  WgmmaLaunch<T> launch{};
  WgmmaParams<T>& p = launch.params;
  // C read from c_in where given (the library passes one only 4-byte aligned with an even ldc_in).
  const bool in_place = args.c_in == nullptr;
  p.out = {args.c,
           args.ldc,
           args.m,
           args.n,
           args.alpha,
           args.beta,
           c_pairs_aligned(args),
           in_place ? args.c : args.c_in,
           in_place ? args.ldc : args.ldc_in};
  p.out.fused = args.fused;
  p.stride_c = args.batch > 1 ? args.stride_c : 0;
  p.k_tiles = static_cast<int>(ceil_div<std::int64_t>(args.k, kBlockK));
  p.tiles_m = static_cast<int>(ceil_div<std::int64_t>(args.m, block_m));
  p.tiles_n = static_cast<int>(ceil_div<std::int64_t>(args.n, block_n));
  p.batch = static_cast<int>(args.batch);
  p.batch_step_a = args.batch > 1 && args.stride_a != 0;
  p.batch_step_b = args.batch > 1 && args.stride_b != 0;
  p.batch_step_c = args.batch > 1 && args.stride_c != 0;
  p.a_row_sums = args.a_row_sums;
  CUDALAB_REQUIRE(args.c != nullptr, std::string(name) + ": C is null");
  if (args.k > 0) {
    CUDALAB_REQUIRE(is_aligned16(args.a) && is_aligned16(args.b),
                    std::string(name) + ": A and B must be 16-byte aligned (TMA)");
    launch.a_map = args.a_transposed
                       ? make_tensor_map(args.a, args.k, args.m, args.lda, args.batch, args.stride_a, kBlockK)
                       : make_tensor_map(args.a, args.m, args.k, args.lda, args.batch, args.stride_a, a_box_rows);
    launch.b_map = args.b_transposed
                       ? make_tensor_map(args.b, args.n, args.k, args.ldb, args.batch, args.stride_b, b_box_rows)
                       : make_tensor_map(args.b, args.k, args.n, args.ldb, args.batch, args.stride_b, kBlockK);
  }
  if (c_box_rows > 0)
    launch.c_map =
        make_tensor_map(static_cast<const T*>(args.c), args.m, args.n, args.ldc, args.batch, args.stride_c, c_box_rows);
  if (c_box_rows > 0 && args.fused.kind == FusedKind::kActivation && args.fused.derivative != nullptr)
    launch.aux_map =
        make_tensor_map(static_cast<const T*>(args.fused.derivative), args.m, args.n, args.ldc, 1, 0, c_box_rows);
  if (c_box_rows > 0 && args.fused.kind == FusedKind::kGradient)
    launch.aux_map = make_tensor_map(args.c_in, args.m, args.n, args.ldc_in, 1, 0, c_box_rows);
  return launch;
}

// The launch of the rungs that give each CTA one output tile (wgmma_tma, wgmma_specialized): a grid
// of tiles_n x tiles_m x batch CTAs, B's layout picking the kernel.
template <int kBlockM, int kBlockN, int kThreads, int kSharedBytes, typename T, typename Kernel>
void launch_tile_per_cta(const GemmArgs<T>& args, const char* name, Kernel* k_major_b, Kernel* mn_major_b,
                         cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  const WgmmaLaunch<T> launch = prepare_launch(args, name, kBlockM, kBlockN, kBlockM, kBlockN, 0);
  Kernel* kernel = args.b_transposed ? k_major_b : mn_major_b;
  set_shared_memory(kernel, kSharedBytes);
  const dim3 grid(launch.params.tiles_n, launch.params.tiles_m, launch.params.batch);
  kernel<<<grid, kThreads, kSharedBytes, stream>>>(launch.a_map, launch.b_map, launch.params);
  CUDALAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// Device side: loads and the k-loop.

// Rows [n0, n0 + kColumns) of op(A) (m) or columns of op(B) (n) at k-tile k0 into `tile`: one
// K-major box of kColumns rows, or kColumns / 64 MN-major boxes of 64 x 64, kMnBoxBytes apart. A
// non-zero `cta_mask` multicasts.
template <int kColumns, bool kMnMajor>
__device__ __forceinline__ void load_operand(std::uint32_t tile, const CUtensorMap* map, std::uint32_t barrier, int k0,
                                             int n0, int z, std::uint16_t cta_mask = 0) {
  static_assert(kColumns % kBlockK == 0 && kColumns <= 256, "whole 64-column boxes, at most 256 rows per box");
  if constexpr (kMnMajor) {
#pragma unroll
    for (int j = 0; j < kColumns / kBlockK; ++j) {
      if (cta_mask != 0) {
        tma_load_multicast(tile + j * kMnBoxBytes, map, barrier, n0 + j * kBlockK, k0, z, cta_mask);
      } else {
        tma_load(tile + j * kMnBoxBytes, map, barrier, n0 + j * kBlockK, k0, z);
      }
    }
  } else if (cta_mask != 0) {
    tma_load_multicast(tile, map, barrier, k0, n0, z, cta_mask);
  } else {
    tma_load(tile, map, barrier, k0, n0, z);
  }
}

// wgmma's view of k-step kk of an operand tile at `tile` (for A: a warpgroup's 64 rows).
template <bool kMnMajor>
__device__ __forceinline__ std::uint64_t operand_descriptor(std::uint32_t tile, int kk) {
  return kMnMajor ? mn_major_descriptor(tile, kk) : k_major_descriptor(tile, kk);
}

// One k-tile (4 k-steps of 16) for a warpgroup: its 64 rows of A at `a_tile` times the B tile, issued
// as one committed group; or only its k-steps [kFirstStep, kFirstStep + kSteps), when warpgroups
// split each k-tile between them.
template <typename T, bool kAMnMajor, bool kBMnMajor, int kFirstStep = 0, int kSteps = kBlockK / 16, int kRegisters>
__device__ __forceinline__ void mma_k_tile(float (&acc)[kRegisters], std::uint32_t a_tile, std::uint32_t b_tile) {
  static_assert(kFirstStep >= 0 && kSteps > 0 && kFirstStep + kSteps <= kBlockK / 16, "k-steps of one k-tile");
  wgmma_fence();
#pragma unroll
  for (int kk = kFirstStep; kk < kFirstStep + kSteps; ++kk)
    wgmma_m64k16<T, kAMnMajor, kBMnMajor>(acc, operand_descriptor<kAMnMajor>(a_tile, kk),
                                          operand_descriptor<kBMnMajor>(b_tile, kk));
  wgmma_commit();
}

// What a k-loop does with each of its A tiles besides the products: nothing.
struct NoATileVisit {
  __device__ __forceinline__ void operator()(int, std::uint32_t) const {}
};

// A consumer warpgroup's k-loop over `k_tiles` slots of the pipeline (each slot's A tile first, B
// at kATileBytes). One group stays in flight: after the group of k-tile kt is issued, the wait for
// kt - 1 lets release(stage of kt - 1) hand that slot back to the producer. `ring` continues across
// calls (persistent kernels). kFirstStep and kSteps pick this warpgroup's k-steps of each k-tile
// (all four by default); a_offset, its rows of the A tile. visit_a(kt, this warpgroup's A tile) runs
// while the tile's wgmmas do, before its slot is released.
template <typename T, bool kAMnMajor, bool kBMnMajor, int kATileBytes, int kFirstStep = 0, int kSteps = kBlockK / 16,
          int kStages, int kSlotBytes, int kRegisters, typename Release, typename VisitA = NoATileVisit>
__device__ __forceinline__ void consumer_k_loop(float (&acc)[kRegisters], int k_tiles,
                                                const TmaPipeline<kStages, kSlotBytes>& pipeline,
                                                RingPosition<kStages>& ring, std::uint32_t a_offset, Release&& release,
                                                VisitA&& visit_a = VisitA{}) {
  // Pins the accumulators' initial values before the loop: left to itself the compiler re-creates
  // them on the k_tiles == 0 path, and ptxas then sees non-wgmma writes reaching the final wait and
  // serializes every wgmma (C7515).
  fence_accumulators(acc);
  int previous = 0;
  for (int kt = 0; kt < k_tiles; ++kt) {
    pipeline.consumer_wait(ring);
    const std::uint32_t stage = pipeline.slot(ring.stage);
    mma_k_tile<T, kAMnMajor, kBMnMajor, kFirstStep, kSteps>(acc, stage + a_offset, stage + kATileBytes);
    wgmma_wait<1>();
    if (kt > 0) release(previous);
    visit_a(kt, stage + a_offset);  // beside this k-tile's wgmmas, still in flight
    previous = ring.stage;
    ring.advance();
  }
  wgmma_wait<0>();
  fence_accumulators(acc);
  if (k_tiles > 0) release(previous);
}

// ---------------------------------------------------------------------------------------------
// Device side: epilogues. `out` is the C of this tile's matrix; the caller's 128 threads form one
// warpgroup whose 64 x N accumulators (N = 2 * kRegisters) start at (row0, col0).

// Straight from registers: each thread writes its pairs, predicated on C's bounds (scalar stores
// where pairs are not 4-byte aligned).
template <typename T, int kRegisters>
__device__ __forceinline__ void store_accumulators_direct(const OutputMatrix<T>& out, const float (&acc)[kRegisters],
                                                          std::int64_t row0, std::int64_t col0) {
  const int t = static_cast<int>(threadIdx.x) % 128, lane = t % 32;
  const std::int64_t row = row0 + 16 * (t / 32) + lane / 4;
  const std::int64_t col = col0 + 2 * (lane % 4);
#pragma unroll
  for (int i = 0; i < kRegisters / 4; ++i) {
    store_output_pair(out, row, col + 8 * i, acc[4 * i], acc[4 * i + 1]);
    store_output_pair(out, row + 8, col + 8 * i, acc[4 * i + 2], acc[4 * i + 3]);
  }
}

// Two adjacent elements of C packed in a 32-bit word, widened.
template <typename T>
__device__ __forceinline__ float2 unpack_pair(std::uint32_t bits) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return make_float2(__uint_as_float(bits << 16), __uint_as_float(bits & 0xFFFF0000u));
  } else {
    return make_float2(__half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xFFFFu))),
                       __half2float(__ushort_as_half(static_cast<unsigned short>(bits >> 16))));
  }
}

// A warpgroup's running sums over k of its 64 rows of an MN-major A tile at `box` (64 k-rows of
// 128 bytes, 128-byte swizzled as TMA lays them out: m-chunk c of k-row r in 16-byte slot c ^ r % 8),
// over the k-rows of k-steps kFirstStep .. + kSteps (16 each). Warp w owns m-chunks 2 w and 2 w + 1
// (8 rows of A each), lane l chunk 2 w + l % 2 and k-rows l / 2 + 16 j: one 16-byte load per k-step
// a thread, four slots a bank group per instruction (no more wavefronts than its 512 bytes need),
// and the 16 lanes of a chunk all in one warp. sums[e]: row 8 chunk + e of the warpgroup's 64. TMA
// fills rows past m and k-rows past k with zeros.
template <typename T, int kFirstStep = 0, int kSteps = kBlockK / 16>
__device__ __forceinline__ void add_mn_major_rows(float (&sums)[8], std::uint32_t box) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int chunk = 2 * (static_cast<int>(threadIdx.x) % 128 / 32) + lane % 2;
#pragma unroll
  for (int j = kFirstStep; j < kFirstStep + kSteps; ++j) {
    const int row = lane / 2 + 16 * j;
    std::uint32_t word[4];
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(word[0]), "=r"(word[1]), "=r"(word[2]), "=r"(word[3])
                 : "r"(box + row * kRowBytes + ((chunk ^ (row % 8)) << 4)));
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float2 pair = unpack_pair<T>(word[q]);
      sums[2 * q] += pair.x;
      sums[2 * q + 1] += pair.y;
    }
  }
}

// The warpgroup's 64 row sums (add_mn_major_rows) added across each chunk's 16 lanes in a fixed
// order: after it lanes 0 and 1 of warp w hold rows 16 w .. + 8 and 16 w + 8 .. + 8.
__device__ __forceinline__ void add_chunk_lanes(float (&sums)[8]) {
#pragma unroll
  for (int e = 0; e < 8; ++e)
#pragma unroll
    for (int step = 2; step < 32; step *= 2) sums[e] += __shfl_xor_sync(0xffffffffu, sums[e], step);
}

// The warpgroup's 64 row sums stored, rounded once, at sums_out[row0 ..] (rows at m and past are
// not written).
template <typename T>
__device__ __forceinline__ void store_mn_major_row_sums(float (&sums)[8], T* sums_out, std::int64_t row0,
                                                        std::int64_t m) {
  add_chunk_lanes(sums);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (lane >= 2) return;
  const std::int64_t first = row0 + 8 * (2 * (static_cast<int>(threadIdx.x) % 128 / 32) + lane);
#pragma unroll
  for (int e = 0; e < 8; ++e)
    if (first + e < m) sums_out[first + e] = from_float<T>(sums[e]);
}

// Where the tile columns share the sums (WgmmaParams::row_sum_columns): the warpgroup's 64 row sums
// of its column's k-tiles stored as that column's, then per warp (16 rows) an arrival counted; the
// warp that arrives last adds the columns in order and stores the sums rounded once, so the bits do
// not depend on which column finished last. The count is lane 0's acquire-release add between two
// warp barriers, as the stream-K flags hand over partial tiles.
template <typename T>
__device__ __forceinline__ void add_column_row_sums(float (&sums)[8], const WgmmaParams<T>& p, int column,
                                                    std::int64_t pitch, std::int64_t row0) {
  add_chunk_lanes(sums);
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) % 128 / 32;
  const std::int64_t rows = row0 + 16 * warp;
  if (lane < 2) {
#pragma unroll
    for (int e = 0; e < 8; ++e) p.row_sum_columns[column * pitch + rows + 8 * lane + e] = sums[e];
  }
  __syncwarp();
  unsigned before = 0;
  if (lane == 0) {
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\n"
                 : "=r"(before)
                 : "l"(p.row_sum_counts + rows / 16)
                 : "memory");
  }
  before = __shfl_sync(0xffffffffu, before, 0);
  __syncwarp();  // lane 0's acquire ordered before every lane's reads
  if (before != static_cast<unsigned>(p.tiles_n) - 1 || lane >= 16 || rows + lane >= p.out.m) return;
  float total = 0.0f;
  for (int j = 0; j < p.tiles_n; ++j) total += __ldcg(p.row_sum_columns + j * pitch + rows + lane);
  p.a_row_sums[rows + lane] = from_float<T>(total);
}

// The 32-bit word at global `pointer` when `in_bounds`, else 0: a predicated load, never a branch.
// Volatile, so a batch of them stays in program order ahead of the epilogue's shared stores and
// barriers, all in flight at once.
__device__ __forceinline__ std::uint32_t load_word_if(const void* pointer, bool in_bounds) {
  std::uint32_t word = 0;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %2, 0;\n"
      "@p ld.global.b32 %0, [%1];\n"
      "}\n"
      : "+r"(word)
      : "l"(pointer), "r"(static_cast<int>(in_bounds)));
  return word;
}

// The old C under a warpgroup's accumulators at (row0, col0), for beta != 0: old[2 i + h] packs the
// pair of acc[4 i + 2 h] and acc[4 i + 2 h + 1], zero where the pair lies outside C (n is even, so
// a pair lies wholly inside or outside). Boxes [first_box, first_box + boxes) of 64 columns; all of
// them by default, every load issued before the first is used (box 0's first): a tile waits for one
// memory latency, not one per pair.
template <typename T, int kRegisters>
__device__ __forceinline__ void load_old_pairs(const OutputMatrix<T>& out, int row0, int col0,
                                               std::uint32_t (&old)[kRegisters / 2], int first_box = 0,
                                               int boxes = kRegisters / 32) {
  const int t = static_cast<int>(threadIdx.x) % 128, lane = t % 32;
  const std::int64_t row = static_cast<std::int64_t>(row0) + 16 * (t / 32) + lane / 4;
  const std::int64_t col = static_cast<std::int64_t>(col0) + 2 * (lane % 4);
  const int rows_left = static_cast<int>(out.m - row), columns_left = static_cast<int>(out.n - col);
  const T* pairs = out.old + row * out.ldold + col;
#pragma unroll
  for (int i = 0; i < kRegisters / 4; ++i) {
    if (i < 8 * first_box || i >= 8 * (first_box + boxes)) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half)
      old[2 * i + half] =
          load_word_if(pairs + 8 * half * out.ldold + 8 * i, 8 * half < rows_left && 8 * i + 1 < columns_left);
  }
}

// The GEMM rungs' named barriers (0 is __syncthreads): one per storing consumer warpgroup for its
// epilogue's boxes, one per consumer warpgroup for stream-K's partial tiles (kStreamKBarrier +
// consumer), one for both before an owner reuses the ring, and one per consumer warpgroup for its
// turn at the ring (ping-pong tiles).
enum NamedBarrier : int {
  kEpilogueBarrier = 1,
  kStreamKBarrier = 5,
  kStreamKRingBarrier = 7,
  kTurnBarrier = 8  // the ping-pong tiles: consumer warpgroup c's turn at kTurnBarrier + c
};

// The epilogue barrier of consumer warpgroup `consumer` (0 or 1).
__device__ __forceinline__ int epilogue_barrier(int consumer) { return kEpilogueBarrier + consumer; }

constexpr std::uint32_t kStoreBoxBytes = 64 * kRowBytes;     // 64 rows x 64 columns of C, 128-byte swizzled
constexpr std::uint32_t kStagingBytes = 2 * kStoreBoxBytes;  // per consumer warpgroup: two boxes

// How many k-tiles before a tile's last one its producer asks L2 for the tile's old C (beta != 0),
// so that load_old_pairs hits L2: about 8 to 12 k-tiles (5 to 9 us at full rate) ahead of the
// epilogue, enough for DRAM to deliver every block's 64 KiB, too little for L2 to evict them.
constexpr int kOldCPrefetchKTiles = 8;

// The producer's L2 prefetch of the old C of a kRows x kColumns tile at (row0, col0) of matrix z,
// in the 64 x 64 boxes of `c_map`: those that start inside C (TMA skips the parts outside).
template <typename T, int kRows, int kColumns>
__device__ __forceinline__ void prefetch_old_c(const CUtensorMap* c_map, const OutputMatrix<T>& out, int row0, int col0,
                                               int z) {
#pragma unroll
  for (int r = 0; r < kRows; r += 64) {
#pragma unroll
    for (int c = 0; c < kColumns; c += 64) {
      if (row0 + r < out.m && col0 + c < out.n) tma_prefetch_l2(c_map, col0 + c, row0 + r, z);
    }
  }
}

// What write_box makes of an accumulator pair: the plain blend (kBlend: with the old pair) or a fused
// epilogue (FusedEpilogue): the activation Act, with its derivative (kDerivative) or without, or
// the product with a given G. A kActivation blends whenever beta != 0 (its old pairs are zeros
// otherwise).
struct PlainBox {};
template <typename Act, bool kDerivative>
struct ActivationBox {
  using Activation = Act;
  static constexpr bool kSlopes = kDerivative;
};
struct GradientBox {};
template <typename Box>
inline constexpr bool kActivationBox = false;
template <typename Act, bool kDerivative>
inline constexpr bool kActivationBox<ActivationBox<Act, kDerivative>> = true;
template <typename Box>
inline constexpr bool kGradientBox = std::is_same_v<Box, GradientBox>;

// A warp's column sums of half a box, chunks first_chunk .. + 3: sums[2 c + h] holds this thread's
// two rows of column pair member h of chunk first_chunk + c; the 8 lanes that share lane % 4 hold
// the warp's 16 rows. A reduce-scatter over those lanes (xor 16, 8, 4: 7 shuffles where a butterfly
// per value took 24) leaves lane l the whole sum of value g = l / 4, which it stores at `strip` +
// 8 (first_chunk + g / 2) + g % 2 (when `store`: the strip inside C, the column inside it).
__device__ __forceinline__ void store_column_sums(const float (&sums)[8], float* strip, bool store, int columns_left,
                                                  int first_chunk) {
  const int g = static_cast<int>(threadIdx.x) % 32 / 4;
  const bool a_high = g & 4, b_high = g & 2, c_high = g & 1;
  float a[4], b[2];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float keep = a_high ? sums[4 + i] : sums[i], give = a_high ? sums[i] : sums[4 + i];
    a[i] = keep + __shfl_xor_sync(0xffffffffu, give, 16);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const float keep = b_high ? a[2 + i] : a[i], give = b_high ? a[i] : a[2 + i];
    b[i] = keep + __shfl_xor_sync(0xffffffffu, give, 8);
  }
  const float keep = c_high ? b[1] : b[0], give = c_high ? b[0] : b[1];
  const float sum = keep + __shfl_xor_sync(0xffffffffu, give, 4);
  const int column = 8 * (first_chunk + g / 2) + g % 2;
  if (store && column < columns_left) strip[column] = sum;
}

// Box j (columns 64 j .. + 63) of a warpgroup's accumulators at (row0, col0), made into outputs as
// Box says (blended with the old pairs when kBlend), into the 128-byte swizzled `buffer` by
// stmatrix (stmatrix_swizzled_rows: 4 instructions a thread where 4-byte stores took 16). One
// instance per kind, so beta == 0 runs no blending instructions and a plain product none of a
// fused epilogue's. A fused kActivation also writes its derivative's pairs into `derivative_buffer`
// (when out.fused.derivative is set); a kGradient stores its warp's 16-row column sums.
template <typename T, typename Box, bool kBlend, int kRegisters>
__device__ __forceinline__ void write_box(const OutputMatrix<T>& out, const float (&acc)[kRegisters],
                                          const std::uint32_t (&old)[kRegisters / 2], std::uint32_t buffer, int j,
                                          int row0, int col0, std::uint32_t derivative_buffer = 0) {
  const int t = static_cast<int>(threadIdx.x) % 128, lane = t % 32;
  const int col = col0 + 64 * j + 2 * (lane % 4);
  std::uint32_t pairs[2][8];   // [half][chunk]: rows lane / 4 + 8 half of the warp's 16, n8 tile chunk of the box
  std::uint32_t slopes[2][8];  // kActivationBox: the activation's derivative at those pairs, likewise
  float sums[8];               // kGradientBox: [2 (chunk % 4) + h], the pair's columns over the thread's two rows
  const std::int64_t strip_row = static_cast<std::int64_t>(row0) + 16 * (t / 32);
#pragma unroll
  for (int chunk = 0; chunk < 8; ++chunk) {
    const int i = 8 * j + chunk;
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float a0 = acc[4 * i + 2 * half], a1 = acc[4 * i + 2 * half + 1];
      float v0 = out.alpha * a0, v1 = out.alpha * a1;
      if constexpr (kBlend) {
        const float2 pair = unpack_pair<T>(old[2 * i + half]);
        v0 = fmaf(out.alpha, a0, out.beta * pair.x);
        v1 = fmaf(out.alpha, a1, out.beta * pair.y);
      }
      if constexpr (kActivationBox<Box>) {
        using Act = typename Box::Activation;
        if constexpr (Box::kSlopes) {
          float g0, g1;
          v0 = Act::forward_and_derivative(v0, g0);
          v1 = Act::forward_and_derivative(v1, g1);
          slopes[half][chunk] = pack_pair<T>(g0, g1);
        } else {
          v0 = Act::forward(v0);
          v1 = Act::forward(v1);
        }
      } else if constexpr (kGradientBox<Box>) {
        const float2 g = unpack_pair<T>(old[2 * i + half]);
        v0 *= g.x;
        v1 *= g.y;
        sum0 += v0;
        sum1 += v1;
      }
      pairs[half][chunk] = pack_pair<T>(v0, v1);
    }
    if constexpr (kGradientBox<Box>) {
      sums[2 * (chunk % 4)] = sum0;
      sums[2 * (chunk % 4) + 1] = sum1;
      // Rows outside C add zeros: TMA filled their rows of A, and load_old_pairs their z, with zeros.
      if (chunk % 4 == 3)
        store_column_sums(sums, out.fused.strip_sums + (strip_row / 16) * out.n + col,
                          out.fused.strip_sums != nullptr && strip_row < out.m, static_cast<int>(out.n - col),
                          chunk - 3);
    }
  }
  stmatrix_swizzled_rows(pairs, buffer, kStoreBoxBytes, 16 * (t / 32), t % 32);
  if constexpr (kActivationBox<Box>) {
    if constexpr (Box::kSlopes)
      stmatrix_swizzled_rows(slopes, derivative_buffer, kStoreBoxBytes, 16 * (t / 32), t % 32);
  }
}

// Through shared memory and TMA stores, 64 columns at a time: box j goes to staging buffer j % 2;
// its store then overlaps the writes of box j + 1 and, for the last boxes, the next tile's k-loop.
// One named barrier per box: just before it the leader (thread 0 of the warpgroup) waits until the
// stores issued so far have read their buffers, so after it box j is complete and buffer (j + 1) % 2
// is free (across tiles as well: box 0 follows box 3, whose barrier freed buffer 0). TMA clips what
// lies outside C. C must be storable by TMA (c_storable_by_tma). `load_old` loads the old pairs
// (the old C for beta != 0, G for a kGradient) into registers before the first box
// (load_old_pairs). `barrier_id` is this warpgroup's named barrier (epilogue_barrier); the leader
// must bulk_wait_all before the block exits.
template <typename T, typename Box, bool kBlend, int kRegisters>
__device__ __forceinline__ void store_boxes_tma(const OutputMatrix<T>& out, const float (&acc)[kRegisters],
                                                const CUtensorMap* c_map, std::uint32_t staging, int row0, int col0,
                                                int z, int barrier_id, bool load_old) {
  static_assert(kRegisters / 32 % 2 == 0, "an even count of boxes: the next tile's box 0 reuses buffer 0");
  const int t = static_cast<int>(threadIdx.x) % 128;
  std::uint32_t old[kRegisters / 2];
  if (load_old) {
    load_old_pairs<T, kRegisters>(out, row0, col0, old);
  } else {
#pragma unroll
    for (int i = 0; i < kRegisters / 2; ++i) old[i] = 0;  // read only by a kBlend box with beta == 0
  }
#pragma unroll
  for (int j = 0; j < kRegisters / 32; ++j) {
    const std::uint32_t buffer = staging + (j % 2) * kStoreBoxBytes;
    write_box<T, Box, kBlend>(out, acc, old, buffer, j, row0, col0);
    fence_async_shared();
    if (t == 0) bulk_wait_read<0>();
    named_barrier_sync(barrier_id, 128);
    const int col = col0 + 64 * j;
    if (t == 0 && row0 < out.m && col < out.n) {
      tma_store(c_map, buffer, col, row0, z);
      bulk_commit();
    }
  }
}

// A kActivation's boxes with the derivative kept: box j's outputs into staging buffer 0 and the
// derivative into buffer 1, stored by TMA through c_map and aux_map. Both
// buffers hold one box, so the leader waits for every store issued before to have read its buffer
// ahead of each box's writes (a barrier hands that on), and again before the box's stores. The
// boxes run as a loop, not unrolled: each turn writes the first 32 accumulators and moves the rest
// down by a box (96 register moves). Unrolled, the four boxes were about 3,000 instructions run
// once a tile, and the warps waited for instruction fetches on a third of their samples there (ncu,
// 8192 x 1024 x 4096 with tanh GELU); the loop's body is fetched once and runs four times.
template <typename T, typename Act, int kRegisters>
__device__ __forceinline__ void store_activation_boxes_tma(const OutputMatrix<T>& out, const float (&tile)[kRegisters],
                                                           const CUtensorMap* c_map, const CUtensorMap* aux_map,
                                                           std::uint32_t staging, int row0, int col0, int z,
                                                           int barrier_id) {
  constexpr int kBox = 32;  // a box's accumulators a thread: 64 columns of its 16-row strip
  const int t = static_cast<int>(threadIdx.x) % 128;
  float acc[kRegisters];
#pragma unroll
  for (int i = 0; i < kRegisters; ++i) acc[i] = tile[i];
#pragma unroll 1
  for (int j = 0; j < kRegisters / kBox; ++j) {
    const int col = col0 + 64 * j;
    std::uint32_t old[kBox / 2];
#pragma unroll
    for (int i = 0; i < kBox / 2; ++i) old[i] = 0;
    if (out.beta != 0.0f) load_old_pairs<T, kBox>(out, row0, col, old);  // in flight during the wait
    if (t == 0) bulk_wait_read<0>();
    named_barrier_sync(barrier_id, 128);
    float box[kBox];
#pragma unroll
    for (int i = 0; i < kBox; ++i) box[i] = acc[i];
    write_box<T, ActivationBox<Act, true>, true>(out, box, old, staging, 0, row0, col, staging + kStoreBoxBytes);
#pragma unroll
    for (int i = 0; i + kBox < kRegisters; ++i) acc[i] = acc[i + kBox];
    fence_async_shared();
    named_barrier_sync(barrier_id, 128);
    if (t == 0 && row0 < out.m && col < out.n) {
      tma_store(c_map, staging, col, row0, z);
      tma_store(aux_map, staging + kStoreBoxBytes, col, row0, z);
      bulk_commit();
    }
  }
}

// The activation functor of `activation` (a cudalab::Activation value), for a 16-bit C.
template <typename Visit>
__device__ __forceinline__ void with_activation_functor(int activation, Visit&& visit) {
  switch (activation) {
    case static_cast<int>(Activation::relu): visit(bias_act_variants::Relu{}); return;
    case static_cast<int>(Activation::gelu_tanh): visit(bias_act_variants::GeluTanh{}); return;
    case static_cast<int>(Activation::silu): visit(bias_act_variants::Silu{}); return;
    default: visit(bias_act_variants::GeluErf<true>{}); return;
  }
}

// store_boxes_tma for out's epilogue: the plain blend (kFused false: a kernel built without the
// fused epilogues) or the fused epilogue `out.fused` names.
template <bool kFused, typename T, int kRegisters>
__device__ __forceinline__ void store_accumulators_tma(const OutputMatrix<T>& out, const float (&acc)[kRegisters],
                                                       const CUtensorMap* c_map, const CUtensorMap* aux_map,
                                                       std::uint32_t staging, int row0, int col0, int z,
                                                       int barrier_id) {
  const bool blend = out.beta != 0.0f;
  if constexpr (kFused) {
    if (out.fused.kind == FusedKind::kActivation) {
      // Without a derivative to store, the plain epilogue's two buffers in turn.
      with_activation_functor(out.fused.activation, [&](auto act) {
        if (out.fused.derivative == nullptr) {
          store_boxes_tma<T, ActivationBox<decltype(act), false>, true>(out, acc, c_map, staging, row0, col0, z,
                                                                        barrier_id, blend);
        } else {
          store_activation_boxes_tma<T, decltype(act)>(out, acc, c_map, aux_map, staging, row0, col0, z, barrier_id);
        }
      });
      return;
    }
    if (out.fused.kind == FusedKind::kGradient) {
      store_boxes_tma<T, GradientBox, false>(out, acc, c_map, staging, row0, col0, z, barrier_id, true);
      return;
    }
  }
  if (blend) {
    store_boxes_tma<T, PlainBox, true>(out, acc, c_map, staging, row0, col0, z, barrier_id, true);
  } else {
    store_boxes_tma<T, PlainBox, false>(out, acc, c_map, staging, row0, col0, z, barrier_id, false);
  }
}

// A consumer warpgroup's accumulators into C: through shared memory and TMA stores (kTmaStore:
// C's rows allow it, `staging` is the warpgroup's buffer; kFused: with the fused epilogues built in,
// aux_map theirs) or straight from registers.
template <bool kTmaStore, bool kFused = false, typename T, int kRegisters>
__device__ __forceinline__ void store_accumulators(const OutputMatrix<T>& out, const float (&acc)[kRegisters],
                                                   const CUtensorMap* c_map, std::uint32_t staging, int row0, int col0,
                                                   int z, int consumer, const CUtensorMap* aux_map = nullptr) {
  if constexpr (kTmaStore) {
    store_accumulators_tma<kFused>(out, acc, c_map, aux_map, staging, row0, col0, z, epilogue_barrier(consumer));
  } else {
    store_accumulators_direct(out, acc, row0, col0);
  }
}

#endif  // CUDALAB_SM90A

}  // namespace cudalab::gemm_variants::hopper
