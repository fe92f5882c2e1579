// The mma.sync building blocks the 16-bit tensor-core kernels share (the GEMM's rungs wmma_global to mma_pipelined, the
// attention rungs): PTX wrappers for ldmatrix, mma.sync m16n8k16 and cp.async, the XOR swizzle of
// shared tiles whose rows are 16-byte chunks, and the warp-level fragment loads built on them.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16" figures), with g = lane / 4 and t = lane % 4:
//   A 16x16 (row): a0 = (g, 2t..2t+1), a1 = (g + 8, 2t..), a2 = (g, 2t+8..), a3 = (g + 8, 2t+8..)
//   B 16x8 (col):  b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//   C 16x8 (f32):  c0, c1 = (g, 2t), (g, 2t+1); c2, c3 = (g + 8, 2t), (g + 8, 2t+1)
// ldmatrix.x4 gives lane l, from 8x8 matrix j (row addresses from lanes 8j..8j+7), the pair at row
// l / 4, columns 2(l % 4)..+1, i.e. exactly a0 / b0's pattern; .trans gives the pair at column l / 4,
// rows 2(l % 4)..+1, which is b0's pattern when the stored rows run along k.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// BF16 WMMA fragments, mma.sync with BF16 inputs and cp.async exist from sm_80. A build for an
// older GPU compiles the kernels as traps; the *_limits functions refuse such a GPU before launch.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define CUDALAB_TENSOR_CORE_SM80 1
#else
#define CUDALAB_TENSOR_CORE_SM80 0
#endif

namespace cudalab {

constexpr int kChunkElements = 8;  // one 16-byte chunk of a 16-bit element type
constexpr int kElementBytes = 2;

// Index functions (host and device, so they can be checked off the GPU).

// Element offset of 16-byte chunk `chunk` of row `row` in a tile whose rows are kRowChunks chunks
// long. The chunk index is XORed with a function of the row so that one logical chunk of any 8
// consecutive rows (8r..8r+7) lands in 8 different 16-byte bank groups: ldmatrix reads exactly
// that (8 row addresses per matrix) and is conflict-free, and so are 16-byte stores of 8 threads
// that write consecutive chunks. Rows shorter than 128 bytes pair up into 128-byte lines.
template <int kRowChunks>
__host__ __device__ constexpr int swizzle(int row, int chunk) {
  static_assert(kRowChunks == 4 || kRowChunks % 8 == 0, "rows of 64 bytes or of a multiple of 128 bytes");
  constexpr int kRowsPerLine = kRowChunks >= 8 ? 1 : 8 / kRowChunks;
  constexpr int kMask = kRowChunks >= 8 ? 7 : kRowChunks - 1;
  return (row * kRowChunks + (chunk ^ ((row / kRowsPerLine) & kMask))) * kChunkElements;
}

struct RowChunk {
  int row, chunk;
};

// The row and chunk whose address `lane` hands ldmatrix.x4 for A's 16x16 block at k-step `ks`:
// matrices rows 0-7 and 8-15 at k 0-7, then at k 8-15, which are a0..a3. Stored M x K (rows along
// m): plain ldmatrix, chunk 2 ks or 2 ks + 1. Stored K x M (kATransposed, rows along k):
// ldmatrix.trans, row 16 ks + 0-15, chunk 0 or 1 of the block's 16 rows of m.
template <bool kATransposed = false>
__host__ __device__ constexpr RowChunk a_fragment_source(int lane, int ks) {
  if (kATransposed) return {16 * ks + lane / 16 * 8 + lane % 8, lane / 8 % 2};
  return {lane % 16, 2 * ks + lane / 16};
}

// The same for B's 16 columns n 0-15 (two n8 tiles) at k-step `ks`, matrices in the order b0, b1 of
// n 0-7, then b0, b1 of n 8-15. Stored N x K (rows along n): plain ldmatrix. Stored K x N (rows
// along k): ldmatrix.trans, chunk 0 or 1 of the 16 columns.
template <bool kBTransposed>
__host__ __device__ constexpr RowChunk b_fragment_source(int lane, int ks) {
  if (kBTransposed) return {lane / 16 * 8 + lane % 8, 2 * ks + lane / 8 % 2};
  return {16 * ks + lane % 16, lane / 16};
}

// Two fp32 values rounded to T and packed in a 32-bit word, `lo` in the low half: an mma.sync A or B
// register, or a pair of adjacent outputs.
template <typename T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  } else {
    const __half2 pair = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&pair);
  }
}

#if CUDALAB_TENSOR_CORE_SM80

__device__ __forceinline__ std::uint32_t shared_address(const void* pointer) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// d += a * b for one 16x8x16 step, FP32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or f16 inputs");
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// 16 bytes global -> shared without registers; the first `source_bytes` (0..16) are read, the rest
// of the 16 zero-filled (0: nothing is read). L2 only (.cg): each tile is read once per block.
__device__ __forceinline__ void cp_async16(std::uint32_t destination, const void* source, int source_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(destination), "l"(source), "r"(source_bytes));
}

// 4 bytes global -> shared without registers, zero-filled when `source_bytes` is 0 (nothing read).
__device__ __forceinline__ void cp_async4(std::uint32_t destination, const void* source, int source_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(destination), "l"(source), "r"(source_bytes));
}

// One arrival on the mbarrier once this thread's cp.async copies so far have landed (.noinc: the
// barrier's arrival count includes it), so the copies complete with the barrier's phase.
__device__ __forceinline__ void cp_async_arrive_noinc(std::uint32_t barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(barrier) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// A's fragments for k-step `ks` of a warp whose rows start at `warp_row` (a multiple of 16) of a
// swizzled tile at shared address `tile` (rows of kRowChunks chunks): kMTiles blocks of 16 rows of
// m. The tile is M x K, or K x M when kATransposed.
template <int kMTiles, int kRowChunks, bool kATransposed = false>
__device__ __forceinline__ void load_a_fragments(std::uint32_t (&a)[kMTiles][4], std::uint32_t tile, int warp_row,
                                                 int ks) {
  const RowChunk at = a_fragment_source<kATransposed>(static_cast<int>(threadIdx.x) % 32, ks);
  if constexpr (kATransposed) {
    // 2 chunks (m) further per block: the XOR changes with the chunk, so each has its own address.
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi)
      ldmatrix_x4_trans(a[mi], tile + kElementBytes * swizzle<kRowChunks>(at.row, (warp_row + 16 * mi) / 8 + at.chunk));
  } else {
    // Moving 16 rows down keeps the swizzle pattern, so the blocks differ by constant offsets.
    const std::uint32_t first = tile + kElementBytes * swizzle<kRowChunks>(warp_row + at.row, at.chunk);
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi) ldmatrix_x4(a[mi], first + mi * 16 * kRowChunks * 16);
  }
}

// B's fragments for k-step `ks` of a warp whose columns start at `warp_col` (a multiple of 16):
// kNTiles tiles of 8 columns. The shared tile is N x K (kBTransposed) or K x N, swizzled, rows of
// kRowChunks chunks.
template <int kNTiles, int kRowChunks, bool kBTransposed>
__device__ __forceinline__ void load_b_fragments(std::uint32_t (&b)[kNTiles][2], std::uint32_t tile, int warp_col,
                                                 int ks) {
  static_assert(kNTiles % 2 == 0, "ldmatrix.x4 loads two n8 tiles");
  const RowChunk at = b_fragment_source<kBTransposed>(static_cast<int>(threadIdx.x) % 32, ks);
#pragma unroll
  for (int j = 0; j < kNTiles / 2; ++j) {
    std::uint32_t r[4];
    if constexpr (kBTransposed) {
      // 16 rows (n) further per j: constant offsets, as for A.
      ldmatrix_x4(r,
                  tile + kElementBytes * swizzle<kRowChunks>(warp_col + at.row, at.chunk) + j * 16 * kRowChunks * 16);
    } else {
      // 2 chunks (n) further per j: the XOR changes with the chunk, so each j has its own address.
      ldmatrix_x4_trans(r, tile + kElementBytes * swizzle<kRowChunks>(at.row, (warp_col + 16 * j) / 8 + at.chunk));
    }
    b[2 * j][0] = r[0];
    b[2 * j][1] = r[1];
    b[2 * j + 1][0] = r[2];
    b[2 * j + 1][1] = r[3];
  }
}

template <typename T, int kMTiles, int kNTiles>
__device__ __forceinline__ void warp_mma(float (&acc)[kMTiles][kNTiles][4], const std::uint32_t (&a)[kMTiles][4],
                                         const std::uint32_t (&b)[kNTiles][2]) {
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
    for (int ni = 0; ni < kNTiles; ++ni) mma_m16n8k16<T>(acc[mi][ni], a[mi], b[ni]);
}

#endif  // CUDALAB_TENSOR_CORE_SM80

}  // namespace cudalab
