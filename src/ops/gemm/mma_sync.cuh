// Pieces the BF16/FP16 tensor-core rungs 1-4 (tensor_core_variants.hpp) share: the PTX wrappers of
// rungs 3-4 (ldmatrix, mma.sync m16n8k16, cp.async), the XOR swizzle of their shared tiles, the
// 16-byte chunk copies of A and B tiles (rungs 2-4), the epilogues that blend accumulators into C
// (rungs 1-4) and the host-side limits every rung shares.
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
#include <string>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

// BF16 WMMA fragments, mma.sync with BF16 inputs and cp.async exist from sm_80. A build for an
// older GPU compiles the kernels as traps; the *_limits functions refuse such a GPU before launch.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define CUDALAB_TENSOR_CORE_SM80 1
#else
#define CUDALAB_TENSOR_CORE_SM80 0
#endif

namespace cudalab::gemm_variants {

constexpr int kChunkElements = 8;  // one 16-byte chunk of a 16-bit element type
constexpr int kElementBytes = 2;

// The architecture and the grid: x walks column tiles of `block_n`, y row tiles of `block_m`, z the
// batch.
inline std::string tensor_core_common_limits(const GemmShape& shape, int compute_capability, int block_m, int block_n) {
  if (compute_capability < 80)
    return "needs compute capability 8.0 or newer (BF16 WMMA/mma.sync, cp.async); this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  if (shape.batch > 65535) return "batch above 65535 (the batch is the grid's z dimension)";
  if (ceil_div<std::int64_t>(shape.m, block_m) > 65535)
    return "m above " + std::to_string(65535LL * block_m) + " (row tiles are the grid's y dimension)";
  if (ceil_div<std::int64_t>(shape.n, block_n) > 0x7fffffffLL) return "n too large for the grid's x dimension";
  return "";
}

// That grid, for a launch whose shape passed tensor_core_common_limits.
template <typename T>
dim3 tile_grid(const GemmArgs<T>& args, int block_m, int block_n) {
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, block_n)),
              static_cast<unsigned>(ceil_div<std::int64_t>(args.m, block_m)), static_cast<unsigned>(args.batch));
}

// The launcher's check: `name`'s limits on this device, as an invalid_argument error.
inline void require_limits(const char* name, const std::string& why) {
  CUDALAB_REQUIRE(why.empty(), std::string(name) + ": " + why);
}

// True when C's pairs (c[2j], c[2j+1]) of every matrix of the batch may be stored as one 4-byte word.
template <typename T>
bool c_pairs_aligned(const GemmArgs<T>& args) {
  return reinterpret_cast<std::uintptr_t>(args.c) % 4 == 0 && args.ldc % 2 == 0 &&
         (args.batch == 1 || args.stride_c % 2 == 0);
}

// True when every 8-element chunk at a multiple-of-8 column of an operand (rows `ld` apart, matrices
// `stride` apart) is 16-byte aligned.
template <typename T>
bool chunks_aligned(const T* base, std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  return is_aligned16(base) && ld % kChunkElements == 0 && (batch == 1 || stride % kChunkElements == 0);
}

// Where the outputs go (filled on the host, read by the epilogues): C of one matrix of the batch, its size, the
// scalars, and whether pairs (c[2j], c[2j+1]) may be stored as one 4-byte word (c_pairs_aligned).
template <typename T>
struct OutputMatrix {
  T* c;
  std::int64_t ldc, m, n;
  float alpha, beta;
  bool pairs;
};

// ---------------------------------------------------------------------------------------------
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

// The row and chunk whose address `lane` hands ldmatrix.x4 for A's 16x16 block at k-step `ks` (16
// columns): matrices rows 0-7 and 8-15 at k 0-7, then at k 8-15, which are a0..a3.
__host__ __device__ constexpr RowChunk a_fragment_source(int lane, int ks) { return {lane % 16, 2 * ks + lane / 16}; }

// The same for B's 16 columns n 0-15 (two n8 tiles) at k-step `ks`, matrices in the order b0, b1 of
// n 0-7, then b0, b1 of n 8-15. Stored N x K (rows along n): plain ldmatrix. Stored K x N (rows
// along k): ldmatrix.trans, chunk 0 or 1 of the 16 columns.
template <bool kBTransposed>
__host__ __device__ constexpr RowChunk b_fragment_source(int lane, int ks) {
  if (kBTransposed) return {lane / 16 * 8 + lane % 8, 2 * ks + lane / 8 % 2};
  return {16 * ks + lane % 16, lane / 16};
}

// ---------------------------------------------------------------------------------------------
// Device side.
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

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// 8 elements from `source`, of which the first `count` exist; the rest read as zero. One 16-byte
// load when the chunk is whole and `vector` says the operand's chunks are 16-byte aligned.
__device__ __forceinline__ uint4 load_chunk(const void* source, int count, bool vector) {
  if (vector && count == kChunkElements) return *static_cast<const uint4*>(source);
  const auto* element = static_cast<const unsigned short*>(source);
  unsigned short bits[kChunkElements];
#pragma unroll
  for (int e = 0; e < kChunkElements; ++e) bits[e] = e < count ? element[e] : 0;  // 0x0000 is +0 in f16 and bf16
  uint4 out;
  out.x = bits[0] | static_cast<unsigned>(bits[1]) << 16;
  out.y = bits[2] | static_cast<unsigned>(bits[3]) << 16;
  out.z = bits[4] | static_cast<unsigned>(bits[5]) << 16;
  out.w = bits[6] | static_cast<unsigned>(bits[7]) << 16;
  return out;
}

// One thread's share of copying a kRows x kRowChunks-chunk tile of an operand, k tile after k tile.
// Thread t takes chunk t % kRowChunks of rows t / kRowChunks + i * kRowStep (consecutive threads
// read consecutive chunks of a row); its chunks share one column, so only the row test differs
// between them, and one swizzle pattern (kRowStep is a multiple of 8).
template <typename T, int kRows, int kRowChunks, int kThreads>
class TileCopy {
 public:
  static constexpr int kRowStep = kThreads / kRowChunks;
  static constexpr int kPerThread = kRows / kRowStep;
  static_assert(kThreads % kRowChunks == 0 && kRows % kRowStep == 0, "the tile's chunks split evenly over the threads");
  static_assert(kRowStep % 8 == 0, "a thread's chunks share one swizzle pattern");

  // `origin`: the tile's first element in the first k tile; `ld`: the operand's leading dimension.
  __device__ TileCopy(const T* origin, std::int64_t ld)
      : source_(origin + row() * ld + chunk() * kChunkElements), step_(kRowStep * ld) {}

  __device__ static int row() { return static_cast<int>(threadIdx.x) / kRowChunks; }
  __device__ static int chunk() { return static_cast<int>(threadIdx.x) % kRowChunks; }

  // Rungs 2-3, through registers: every load is issued before the first store. `rows_in` and
  // `cols_in`: how many of the tile's rows and columns lie inside the matrix.
  __device__ void load(uint4 (&staged)[kPerThread], int rows_in, int cols_in, bool vector) const {
    const int count = chunk_count(cols_in);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
      staged[i] = load_chunk(source_ + i * step_, row() + i * kRowStep < rows_in ? count : 0, vector);
  }
  // `offset(row, chunk)`: where a chunk goes in the shared tile, in elements.
  template <typename Offset>
  __device__ void store(T* tile, const uint4 (&staged)[kPerThread], Offset offset) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
      *reinterpret_cast<uint4*>(tile + offset(row() + i * kRowStep, chunk())) = staged[i];
  }

  // Rung 4: cp.async into the swizzled tile at shared address `tile`. A chunk partly or wholly past
  // the matrix reads only its elements inside (src-size) and is zero-filled; a chunk wholly past it
  // names `inside`, any element of the operand, as its (unread) source. Sources must be 16-byte
  // aligned.
  __device__ void copy_async(std::uint32_t tile, int rows_in, int cols_in, const T* inside) const {
    const int count = chunk_count(cols_in);
    const std::uint32_t first = tile + kElementBytes * swizzle<kRowChunks>(row(), chunk());
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int n = row() + i * kRowStep < rows_in ? count : 0;
      cp_async16(first + i * kRowStep * kRowChunks * 16, n > 0 ? source_ + i * step_ : inside, n * kElementBytes);
    }
  }

  __device__ void advance(std::int64_t elements) { source_ += elements; }

 private:
  __device__ static int chunk_count(int cols_in) {
    return min(max(cols_in - chunk() * kChunkElements, 0), kChunkElements);
  }
  const T* source_;    // this thread's chunk 0 in the current k tile
  std::int64_t step_;  // elements between this thread's chunks
};

// One thread's part of copying a block's A tile (kBlockM x kBlockK) and B tile (kBlockK x kBlockN,
// or kBlockN x kBlockK when B is N x K), k tile after k tile, in order.
template <typename T, int kBlockM, int kBlockN, int kBlockK, int kThreads, bool kBTransposed>
class BlockCopy {
 public:
  static constexpr int kKChunks = kBlockK / kChunkElements, kNChunks = kBlockN / kChunkElements;
  using ACopy = TileCopy<T, kBlockM, kKChunks, kThreads>;
  using BCopy = std::conditional_t<kBTransposed, TileCopy<T, kBlockN, kKChunks, kThreads>,
                                   TileCopy<T, kBlockK, kNChunks, kThreads>>;

  // `a`, `b`: this matrix of the batch; (row0, col0): the block's first output.
  __device__ BlockCopy(const GemmArgs<T>& p, const T* a, const T* b, std::int64_t row0, std::int64_t col0)
      : a_(a + row0 * p.lda, p.lda),
        b_(kBTransposed ? b + col0 * p.ldb : b + col0, p.ldb),
        k_left_(p.k),
        m_in_(static_cast<int>(min(p.m - row0, static_cast<std::int64_t>(kBlockM)))),
        n_in_(static_cast<int>(min(p.n - col0, static_cast<std::int64_t>(kBlockN)))) {}

  // Rung 4: the next k tile by cp.async into swizzled tiles at shared addresses a_tile, b_tile.
  __device__ void copy_async(std::uint32_t a_tile, std::uint32_t b_tile, const GemmArgs<T>& p) {
    const int k_in = static_cast<int>(min(k_left_, static_cast<std::int64_t>(kBlockK)));
    a_.copy_async(a_tile, m_in_, k_in, p.a);
    if constexpr (kBTransposed) {
      b_.copy_async(b_tile, n_in_, k_in, p.b);
    } else {
      b_.copy_async(b_tile, k_in, n_in_, p.b);
    }
    next(p);
  }

  // Rungs 2-3: the next k tile through registers; a_offset / b_offset(row, chunk) place chunks.
  template <typename AOffset, typename BOffset>
  __device__ void copy_through_registers(T* a_tile, T* b_tile, const GemmArgs<T>& p, bool vector_a, bool vector_b,
                                         AOffset a_offset, BOffset b_offset) {
    const int k_in = static_cast<int>(min(k_left_, static_cast<std::int64_t>(kBlockK)));
    uint4 a_staged[ACopy::kPerThread], b_staged[BCopy::kPerThread];
    a_.load(a_staged, m_in_, k_in, vector_a);
    if constexpr (kBTransposed) {
      b_.load(b_staged, n_in_, k_in, vector_b);
    } else {
      b_.load(b_staged, k_in, n_in_, vector_b);
    }
    a_.store(a_tile, a_staged, a_offset);
    b_.store(b_tile, b_staged, b_offset);
    next(p);
  }

 private:
  __device__ void next(const GemmArgs<T>& p) {
    a_.advance(kBlockK);
    b_.advance(kBTransposed ? kBlockK : kBlockK * p.ldb);
    k_left_ -= kBlockK;
  }
  ACopy a_;
  BCopy b_;
  std::int64_t k_left_;  // columns of A (rows of B) from the next k tile on
  int m_in_, n_in_;      // rows of A, columns of C inside the matrix
};

// A's fragments for k-step `ks` of a warp whose rows start at `warp_row` of a swizzled tile at shared
// address `tile` (rows of kRowChunks chunks): kMTiles blocks of 16 rows. Moving 16 rows down keeps
// the swizzle pattern, so the blocks differ by constant offsets.
template <int kMTiles, int kRowChunks>
__device__ __forceinline__ void load_a_fragments(std::uint32_t (&a)[kMTiles][4], std::uint32_t tile, int warp_row,
                                                 int ks) {
  const RowChunk at = a_fragment_source(static_cast<int>(threadIdx.x) % 32, ks);
  const std::uint32_t first = tile + kElementBytes * swizzle<kRowChunks>(warp_row + at.row, at.chunk);
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) ldmatrix_x4(a[mi], first + mi * 16 * kRowChunks * 16);
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

// Outputs (row, col) and (row, col + 1), col even; whatever lies outside C is dropped.
template <typename T>
__device__ __forceinline__ void store_output_pair(const OutputMatrix<T>& out, std::int64_t row, std::int64_t col,
                                                  float v0, float v1) {
  if (row >= out.m) return;
  T* c = out.c + row * out.ldc + col;
  if (out.pairs && col + 1 < out.n) {
    blend_store2(c, out.alpha, out.beta, v0, v1);
  } else {
    if (col < out.n) blend_store(c, out.alpha, out.beta, v0);
    if (col + 1 < out.n) blend_store(c + 1, out.alpha, out.beta, v1);
  }
}

// mma.sync accumulators of a warp whose outputs start at (row0, col0): kMTiles x kNTiles tiles of
// 16x8, straight from registers (C fragment layout: c0, c1 at row g, c2, c3 at row g + 8).
template <typename T, int kMTiles, int kNTiles>
__device__ __forceinline__ void store_mma_accumulators(const OutputMatrix<T>& out,
                                                       const float (&acc)[kMTiles][kNTiles][4], std::int64_t row0,
                                                       std::int64_t col0) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
    const std::int64_t row = row0 + 16 * mi + lane / 4;
#pragma unroll
    for (int ni = 0; ni < kNTiles; ++ni) {
      const std::int64_t col = col0 + 8 * ni + 2 * (lane % 4);
      store_output_pair(out, row, col, acc[mi][ni][0], acc[mi][ni][1]);
      store_output_pair(out, row + 8, col, acc[mi][ni][2], acc[mi][ni][3]);
    }
  }
}

using WmmaAccumulator = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

// A WMMA accumulator (its register layout is unspecified) whose 16x16 outputs start at (row0,
// col0), through `scratch`: this warp's 256 floats of shared memory, 32-byte aligned. Lane l writes
// row l / 2, columns 8 (l % 2) .. + 7.
template <typename T>
__device__ __forceinline__ void store_wmma_accumulator(const OutputMatrix<T>& out, const WmmaAccumulator& acc,
                                                       float* scratch, std::int64_t row0, std::int64_t col0) {
  nvcuda::wmma::store_matrix_sync(scratch, acc, 16, nvcuda::wmma::mem_row_major);
  __syncwarp();
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int row = lane / 2, col = lane % 2 * 8;
#pragma unroll
  for (int j = 0; j < 8; j += 2)
    store_output_pair(out, row0 + row, col0 + col + j, scratch[16 * row + col + j], scratch[16 * row + col + j + 1]);
  __syncwarp();  // the scratch is rewritten by the next accumulator
}

#endif  // CUDALAB_TENSOR_CORE_SM80

}  // namespace cudalab::gemm_variants
