// Pieces the BF16/FP16 tensor-core rungs wmma_global to mma_pipelined (tensor_core_variants.hpp) share beyond the
// mma.sync building blocks of core/mma_sync.cuh: the 16-byte chunk copies of A and B tiles (rungs
// 2-4), the epilogues that blend accumulators into C (those rungs) and the host-side limits every
// rung shares.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include "core/launch.cuh"
#include "core/mma_sync.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab::gemm_variants {

// What the rungs with one block per output tile share: the architecture, A as M x K (they stage A's
// tiles K-major only), and the grid: x walks column tiles of `block_n`, y row tiles of `block_m`, z
// the batch.
inline std::string tensor_core_common_limits(const GemmShape& shape, int compute_capability, int block_m, int block_n) {
  if (compute_capability < 80)
    return "needs compute capability 8.0 or newer (BF16 WMMA/mma.sync, cp.async); this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  if (shape.a_transposed)
    return "takes A as M x K only (transpose_a = 0); mma_small and the persistent wgmma rungs take A stored K x M";
  if (shape.batch > 65535) return "batch above 65535 (the batch is the grid's z dimension)";
  if (ceil_div<std::int64_t>(shape.m, block_m) > 65535)
    return "m above " + std::to_string(65535LL * block_m) + " (row tiles are the grid's y dimension)";
  if (ceil_div<std::int64_t>(shape.n, block_n) > 0x7fffffffLL) return "n too large for the grid's x dimension";
  return "";
}

// What the decode rungs share: a read of B stored N x K in 16-byte chunks along k, at most `max_rows`
// rows of A, a block per `columns` outputs of a row (the grid's x dimension), the batch along y.
inline std::string decode_limits(const GemmShape& shape, int compute_capability, std::int64_t max_rows,
                                 std::int64_t columns) {
  if (compute_capability < 80)
    return "needs compute capability 8.0 or newer (BF16 arithmetic); this GPU is " +
           std::to_string(compute_capability / 10) + "." + std::to_string(compute_capability % 10);
  if (shape.m > max_rows)
    return "m must be at most " + std::to_string(max_rows) + " (a decode batch's rows; more go to the tile rungs)";
  if (!shape.b_transposed || shape.a_transposed)
    return "takes A stored m x k and B stored n x k (transpose_b, nn.Linear's weight) only";
  if (shape.k % 8 != 0 || shape.lda % 8 != 0 || shape.ldb % 8 != 0)
    return "k, lda and ldb must be multiples of 8 (16-byte chunks along k)";
  if (shape.batch > 1 && (shape.stride_a % 8 != 0 || shape.stride_b % 8 != 0))
    return "stride_a and stride_b must be multiples of 8 (16-byte chunks)";
  if (ceil_div<std::int64_t>(shape.n, columns) > 0x7fffffffLL)
    return "ceil(n / " + std::to_string(columns) + ") above 2^31 - 1 (the blocks of the grid's x dimension)";
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

// True when C can be written by TMA stores: 16-byte aligned rows and matrices, and rows that end
// on a 16-byte boundary: a box across C's last column was clipped as if in 16-byte units, not
// elements (n = 131, ldc = 136: columns 131-135 of the padding written; H100, LibraryGemm test).
template <typename T>
bool c_storable_by_tma(const GemmArgs<T>& args) {
  return is_aligned16(args.c) && args.ldc % 8 == 0 && args.n % 8 == 0 && (args.batch == 1 || args.stride_c % 8 == 0);
}

// True when every 8-element chunk at a multiple-of-8 column of an operand (rows `ld` apart, matrices
// `stride` apart) is 16-byte aligned.
template <typename T>
bool chunks_aligned(const T* base, std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  return is_aligned16(base) && ld % kChunkElements == 0 && (batch == 1 || stride % kChunkElements == 0);
}

// Where the outputs go (filled on the host, read by the epilogues): C of one matrix of the batch, its size, the
// scalars, whether pairs (c[2j], c[2j+1]) may be stored as one 4-byte word (c_pairs_aligned), and where beta's C is
// read: `old` with rows ldold apart (ldold 0: one row for all, a bias), which is c itself in place (the in-place
// rungs' epilogues read c whatever old says; the Hopper rungs read old).
// The Hopper tile rungs' TMA-store epilogue also takes `fused` (GemmArgs::fused says what each
// field means); every other epilogue reads only the fields above it and leaves it kNone.
template <typename T>
struct OutputMatrix {
  T* c;
  std::int64_t ldc, m, n;
  float alpha, beta;
  bool pairs;
  const T* old;
  std::int64_t ldold;
  FusedEpilogue<T> fused{};
};

// `out` moved to the matrix `offset` elements on (a batch's matrix z): old moves with c where it is c.
template <typename T>
__host__ __device__ __forceinline__ OutputMatrix<T> at_offset(OutputMatrix<T> out, std::int64_t offset) {
  if (out.old == out.c) out.old += offset;
  out.c += offset;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Device side.
#if CUDALAB_TENSOR_CORE_SM80

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

  // wmma_shared and mma_swizzled, through registers: every load is issued before the first store. `rows_in` and
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

  // Rung `mma_pipelined`: cp.async into the swizzled tile at shared address `tile`. A chunk partly or wholly past
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

// One thread's part of copying a block's A tile (kBlockM x kBlockK, or kBlockK x kBlockM when A is
// K x M) and B tile (kBlockK x kBlockN, or kBlockN x kBlockK when B is N x K), k tile after k tile,
// in order. Each tile keeps the operand's own layout: rows of the tile are rows of the operand.
template <typename T, int kBlockM, int kBlockN, int kBlockK, int kThreads, bool kBTransposed, bool kATransposed = false>
class BlockCopy {
 public:
  static constexpr int kKChunks = kBlockK / kChunkElements, kNChunks = kBlockN / kChunkElements;
  static constexpr int kMChunks = kBlockM / kChunkElements;
  using ACopy = std::conditional_t<kATransposed, TileCopy<T, kBlockK, kMChunks, kThreads>,
                                   TileCopy<T, kBlockM, kKChunks, kThreads>>;
  using BCopy = std::conditional_t<kBTransposed, TileCopy<T, kBlockN, kKChunks, kThreads>,
                                   TileCopy<T, kBlockK, kNChunks, kThreads>>;

  // `a`, `b`: this matrix of the batch; (row0, col0): the block's first output.
  __device__ BlockCopy(const GemmArgs<T>& p, const T* a, const T* b, std::int64_t row0, std::int64_t col0)
      : a_(kATransposed ? a + row0 : a + row0 * p.lda, p.lda),
        b_(kBTransposed ? b + col0 * p.ldb : b + col0, p.ldb),
        k_left_(p.k),
        m_in_(static_cast<int>(min(p.m - row0, static_cast<std::int64_t>(kBlockM)))),
        n_in_(static_cast<int>(min(p.n - col0, static_cast<std::int64_t>(kBlockN)))) {}

  // Rung `mma_pipelined`: the next k tile by cp.async into swizzled tiles at shared addresses a_tile, b_tile.
  __device__ void copy_async(std::uint32_t a_tile, std::uint32_t b_tile, const GemmArgs<T>& p) {
    const int k_in = static_cast<int>(min(k_left_, static_cast<std::int64_t>(kBlockK)));
    if constexpr (kATransposed) {
      a_.copy_async(a_tile, k_in, m_in_, p.a);
    } else {
      a_.copy_async(a_tile, m_in_, k_in, p.a);
    }
    if constexpr (kBTransposed) {
      b_.copy_async(b_tile, n_in_, k_in, p.b);
    } else {
      b_.copy_async(b_tile, k_in, n_in_, p.b);
    }
    next(p);
  }

  // wmma_shared and mma_swizzled: the next k tile through registers; a_offset / b_offset(row, chunk) place chunks.
  template <typename AOffset, typename BOffset>
  __device__ void copy_through_registers(T* a_tile, T* b_tile, const GemmArgs<T>& p, bool vector_a, bool vector_b,
                                         AOffset a_offset, BOffset b_offset) {
    const int k_in = static_cast<int>(min(k_left_, static_cast<std::int64_t>(kBlockK)));
    uint4 a_staged[ACopy::kPerThread], b_staged[BCopy::kPerThread];
    if constexpr (kATransposed) {
      a_.load(a_staged, k_in, m_in_, vector_a);
    } else {
      a_.load(a_staged, m_in_, k_in, vector_a);
    }
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
    a_.advance(kATransposed ? kBlockK * p.lda : kBlockK);
    b_.advance(kBTransposed ? kBlockK : kBlockK * p.ldb);
    k_left_ -= kBlockK;
  }
  ACopy a_;
  BCopy b_;
  std::int64_t k_left_;  // columns of op(A) (rows of op(B)) from the next k tile on
  int m_in_, n_in_;      // rows of A, columns of C inside the matrix
};

// Outputs (row, col) and (row, col + 1), col even; whatever lies outside C is dropped.
template <typename T>
__device__ __forceinline__ void store_output_pair(const OutputMatrix<T>& out, std::int64_t row, std::int64_t col,
                                                  float v0, float v1) {
  if (row >= out.m) return;
  T* c = out.c + row * out.ldc + col;
  const T* old = out.old + row * out.ldold + col;
  if (out.pairs && col + 1 < out.n) {
    blend_store2(c, old, out.alpha, out.beta, v0, v1);
  } else {
    if (col < out.n) blend_store(c, old, out.alpha, out.beta, v0);
    if (col + 1 < out.n) blend_store(c + 1, old + 1, out.alpha, out.beta, v1);
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
