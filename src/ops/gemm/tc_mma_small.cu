// Tensor-core rung `mma_small`: mma_swizzled's and mma_pipelined's mma.sync/ldmatrix/swizzle core cut down for small,
// batched and few-tile problems, which are memory-bound: the kernel has to stream A, B and C (read and written) at the
// copy rate, and the big-tile rungs cannot. A 128-thread block computes a 64x64 tile of C (4 warps of 32x32: 2x4
// m16n8k16 products per 16 of k) with k in tiles of 64, so a 64x64x64 matrix is one k tile (A and B tiles 8 KiB each).
// Shared memory is sized per launch to the k tiles that exist, up to 3 cp.async stages: with k <= 64 a block takes 24
// KiB (C's tile included) and 64 registers, so 8 blocks (32 warps) share an SM; k <= 128 takes 40 KiB (5 blocks).
// Longer k refills the stages in the main loop (56 KiB, up to 111 registers, 4 blocks). C's tile is fetched by cp.async
// in the same group as the first k tile, so the read of C overlaps A's and B's instead of following the main loop. The
// epilogue blends the accumulators into that tile in shared memory (4-byte pairs, conflict-free through the swizzle),
// then each row of 64 outputs leaves as 128 contiguous bytes of 16-byte stores. The grid is 1-D over batch x row tiles
// x column tiles, so any batch fits. A and B come in either layout (A as M x K or K x M, B as K x N
// or N x K), each tile copied as stored. Operands whose rows or batch strides are not 16-byte
// multiples take the same pipeline with rung `mma_swizzled`'s copy through registers (zero-filling element
// loads) instead of cp.async, so every shape runs.
// Fixes, relative to mma_swizzled and mma_pipelined: no work wasted on 64x64 matrices (a 128x128 tile computes 4x the
// outputs), 4-8x the blocks per SM to keep enough bytes in flight, no pipeline to fill, and C read
// and written in full 128-byte lines.
// Costs: a 32x32 warp tile reads 4 ldmatrix.x4 per 8 mma.sync, so large compute-bound shapes are
// capped well below rung `mma_pipelined` and the Hopper rungs; unaligned operands copy synchronously.
// Its measured speed, beside cuBLAS's: docs/gemm-tensor-cores.md.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {
namespace {

constexpr int kBlock = 64;  // the block's tile is kBlock x kBlock of C, k in steps of kBlock
constexpr int kStages = 3;
constexpr int kWarpsM = 2, kWarpsN = 2;  // warp tile 32 x 32
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlock / kWarpsM, kWarpN = kBlock / kWarpsN;
constexpr int kMTiles = kWarpM / 16, kNTiles = kWarpN / 8;
constexpr int kRowChunks = kBlock / kChunkElements;  // every tile (A, B in either layout, C) has 128-byte rows
constexpr int kTileElements = kBlock * kBlock;
constexpr int kTileBytes = kTileElements * kElementBytes;
constexpr int kStageBytes = 2 * kTileBytes;  // A's tile, then B's
// Shared memory: C's tile, then the stages.
constexpr int kMaxSharedBytes = kTileBytes + kStages * kStageBytes;
static_assert(kMaxSharedBytes <= 99 * 1024, "fits the opt-in shared memory of every sm_80+ GPU");

__host__ __device__ constexpr int tile_offset(int row, int chunk) { return swizzle<kRowChunks>(row, chunk); }

// Stores the first `count` of 8 elements to `destination`: one 16-byte store when the chunk is whole
// and `vector` says C's chunks are 16-byte aligned.
template <typename T>
__device__ __forceinline__ void store_chunk(T* destination, const uint4& value, int count, bool vector) {
  if (vector && count == kChunkElements) {
    *reinterpret_cast<uint4*>(destination) = value;
    return;
  }
  const std::uint32_t words[4] = {value.x, value.y, value.z, value.w};
  auto* element = reinterpret_cast<unsigned short*>(destination);
#pragma unroll
  for (int e = 0; e < kChunkElements; ++e)
    if (e < count) element[e] = static_cast<unsigned short>(words[e / 2] >> (16 * (e % 2)));
}

// Where a block's tile of C lies: column tiles fastest, then row tiles, then the batch, so a
// matrix's blocks run side by side and share its A and B tiles in L2.
template <typename T>
struct BlockPosition {
  std::int64_t z, row0, col0;
  T* c;                  // the tile's first output
  int rows_in, cols_in;  // of the tile's rows and columns, how many lie inside C
};
template <typename T>
__device__ __forceinline__ BlockPosition<T> block_position(const GemmArgs<T>& p, unsigned tiles_n, unsigned tiles_m) {
  const unsigned col_tile = blockIdx.x % tiles_n, rest = blockIdx.x / tiles_n;
  BlockPosition<T> at;
  at.z = rest / tiles_m;
  at.row0 = static_cast<std::int64_t>(rest % tiles_m) * kBlock;
  at.col0 = static_cast<std::int64_t>(col_tile) * kBlock;
  at.c = p.c + at.z * p.stride_c + at.row0 * p.ldc + at.col0;
  at.rows_in = static_cast<int>(min(p.m - at.row0, static_cast<std::int64_t>(kBlock)));
  at.cols_in = static_cast<int>(min(p.n - at.col0, static_cast<std::int64_t>(kBlock)));
  return at;
}

// kAsync: A and B by cp.async (their chunks are 16-byte aligned); else through registers. kRefill:
// k has more tiles than stages, so the main loop refills them. Without refills the kernel fits 64
// registers (8 blocks per SM); with them it needs more, but 3 stages hold an SM to 4 blocks anyway.
// A's tile keeps A's layout (64 x 64 either way): M x K, or K x M when kATransposed, whose fragments
// ldmatrix.trans reads.
template <typename T, bool kATransposed, bool kBTransposed, bool kAsync, bool kRefill>
__global__ void __launch_bounds__(kThreads, kAsync && !kRefill ? 8 : 4)
    mma_small_kernel(GemmArgs<T> p, unsigned tiles_n, unsigned tiles_m, bool vector_a, bool vector_b, bool vector_c) {
#if CUDALAB_TENSOR_CORE_SM80
  extern __shared__ uint4 shared_words[];
  T* const c_tile = reinterpret_cast<T*>(shared_words);
  const std::uint32_t shared = shared_address(shared_words);

  const BlockPosition<T> at = block_position(p, tiles_n, tiles_m);
  const T* a = p.a + at.z * p.stride_a;
  const T* b = p.b + at.z * p.stride_b;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_row = warp / kWarpsN * kWarpM, warp_col = warp % kWarpsN * kWarpN;
  // k tiles fit an int: k above 2^37 would not fit a GPU's memory.
  const int tiles = static_cast<int>(ceil_div<std::int64_t>(p.k, kBlock));

  const auto place = [](int row, int chunk) { return tile_offset(row, chunk); };
  BlockCopy<T, kBlock, kBlock, kBlock, kThreads, kBTransposed, kATransposed> copy(p, a, b, at.row0, at.col0);
  const auto copy_tile = [&](int stage) {
    const int offset = kTileBytes + stage * kStageBytes;
    if constexpr (kAsync) {
      copy.copy_async(shared + offset, shared + offset + kTileBytes, p);
    } else {
      T* a_tile = c_tile + offset / kElementBytes;
      copy.copy_through_registers(a_tile, a_tile + kTileElements, p, vector_a, vector_b, place, place);
    }
  };
  using CCopy = TileCopy<T, kBlock, kRowChunks, kThreads>;
  const auto load_c = [&] {
    const CCopy c_copy(at.c, p.ldc);
    if (vector_c) {
      c_copy.copy_async(shared, at.rows_in, at.cols_in, p.c);
    } else {
      uint4 staged[CCopy::kPerThread];
      c_copy.load(staged, at.rows_in, at.cols_in, false);
      c_copy.store(c_tile, staged, place);
    }
  };

  // Prologue: one group per stage, empty past the last k tile, so "tile t has landed" is always "at
  // most kStages - 1 groups pending". C joins the first group: the epilogue needs it last anyway.
#pragma unroll
  for (int s = 0; s < kStages; ++s) {
    if (s < tiles) copy_tile(s);
    if (s == 0 && p.beta != 0.0f) load_c();
    cp_async_commit();
  }

  // Grouped by the 16 columns one B ldmatrix.x4 covers, so B's fragments are loaded one group at a
  // time (fewer live registers).
  float acc[kNTiles / 2][kMTiles][2][4] = {};
  int stage = 0;
  for (int tile = 0; tile < tiles; ++tile) {
    cp_async_wait<kStages - 1>();
    __syncthreads();
    const std::uint32_t a_stage = shared + kTileBytes + stage * kStageBytes;
#pragma unroll 1
    for (int ks = 0; ks < kBlock / 16; ++ks) {
      std::uint32_t a_fragments[kMTiles][4];
      load_a_fragments<kMTiles, kRowChunks, kATransposed>(a_fragments, a_stage, warp_row, ks);
#pragma unroll
      for (int j = 0; j < kNTiles / 2; ++j) {
        std::uint32_t b_fragments[2][2];
        load_b_fragments<2, kRowChunks, kBTransposed>(b_fragments, a_stage + kTileBytes, warp_col + 16 * j, ks);
        warp_mma<T>(acc[j], a_fragments, b_fragments);
      }
    }
    if (kRefill && tile + kStages < tiles) {
      __syncthreads();  // every warp is done with this stage before it is refilled
      copy_tile(stage);
    }
    cp_async_commit();
    stage = stage == kStages - 1 ? 0 : stage + 1;
  }

  // Epilogue: blend into C's tile in place (each pair belongs to one thread; the swizzle keeps a
  // warp's 8 rows x 4 pairs in 32 distinct banks), then store it row by row.
  cp_async_wait<0>();
  __syncthreads();  // C's tile has landed (k == 0 has no main loop to wait for it)
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNTiles; ++ni)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = warp_row + 16 * mi + lane / 4 + 8 * h, col = warp_col + 8 * ni + 2 * (lane % 4);
        T* pair = c_tile + tile_offset(row, col / kChunkElements) + col % kChunkElements;
        blend_store2(pair, pair, p.alpha, p.beta, acc[ni / 2][mi][ni % 2][2 * h], acc[ni / 2][mi][ni % 2][2 * h + 1]);
      }
  __syncthreads();
  const BlockPosition<T> out = block_position(p, tiles_n, tiles_m);
  const int chunk = CCopy::chunk();
  const int count = min(max(out.cols_in - chunk * kChunkElements, 0), kChunkElements);
#pragma unroll
  for (int i = 0; i < CCopy::kPerThread; ++i) {
    const int row = CCopy::row() + i * CCopy::kRowStep;
    if (row < out.rows_in && count > 0)
      store_chunk(out.c + row * p.ldc + chunk * kChunkElements,
                  *reinterpret_cast<const uint4*>(c_tile + tile_offset(row, chunk)), count, vector_c);
  }
#else
  __trap();
#endif
}

template <typename T, bool kATransposed, bool kBTransposed>
auto* pick_kernel(bool async, bool refill) {
  if (!async) return mma_small_kernel<T, kATransposed, kBTransposed, false, true>;
  return refill ? mma_small_kernel<T, kATransposed, kBTransposed, true, true>
                : mma_small_kernel<T, kATransposed, kBTransposed, true, false>;
}

}  // namespace

std::string mma_small_limits(const GemmShape& shape, int compute_capability) {
  if (compute_capability < 80)
    return "needs compute capability 8.0 or newer (BF16 mma.sync, cp.async); this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  constexpr std::int64_t kMaxBlocks = 0x7fffffffLL;  // the grid's x dimension
  const std::int64_t tiles_m = ceil_div<std::int64_t>(shape.m, kBlock),
                     tiles_n = ceil_div<std::int64_t>(shape.n, kBlock);
  if (tiles_m > kMaxBlocks || tiles_n > kMaxBlocks / std::max<std::int64_t>(tiles_m, 1) ||
      shape.batch > kMaxBlocks / std::max<std::int64_t>(tiles_m * tiles_n, 1))
    return "batch x ceil(m/64) x ceil(n/64) above 2^31 - 1 (the blocks of the grid's x dimension)";
  return "";
}

template <typename T>
void mma_small(const GemmArgs<T>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  require_limits("mma_small", mma_small_limits(shape_of(args), current_gpu().compute_capability));
  const std::int64_t tiles_m = ceil_div<std::int64_t>(args.m, kBlock), tiles_n = ceil_div<std::int64_t>(args.n, kBlock);
  const bool vector_a = chunks_aligned(args.a, args.lda, args.batch, args.stride_a);
  const bool vector_b = chunks_aligned(args.b, args.ldb, args.batch, args.stride_b);
  const bool vector_c = chunks_aligned(args.c, args.ldc, args.batch, args.stride_c);
  const bool async = args.k == 0 || (vector_a && vector_b);
  const std::int64_t tiles = ceil_div<std::int64_t>(args.k, kBlock);
  const int shared_bytes = kTileBytes + static_cast<int>(std::min<std::int64_t>(tiles, kStages)) * kStageBytes;
  auto* kernel =
      with_flags([&](auto a_transposed,
                     auto b_transposed) { return pick_kernel<T, a_transposed, b_transposed>(async, tiles > kStages); },
                 args.a_transposed, args.b_transposed);
  // Above 48 KiB a kernel must opt in; the carveout hint asks for the shared memory of 8 blocks per
  // SM rather than a larger L1.
  set_dynamic_shared_memory(reinterpret_cast<const void*>(kernel), static_cast<std::size_t>(shared_bytes), true);
  const auto blocks = static_cast<unsigned>(args.batch * tiles_m * tiles_n);
  kernel<<<blocks, kThreads, shared_bytes, stream>>>(args, static_cast<unsigned>(tiles_n),
                                                     static_cast<unsigned>(tiles_m), vector_a, vector_b, vector_c);
  CUDALAB_CHECK_LAUNCH();
}

template void mma_small<__half>(const GemmArgs<__half>&, cudaStream_t);
template void mma_small<__nv_bfloat16>(const GemmArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::gemm_variants
