// Steps 7-10: the cp.async kernel family.
// - vectorized (1 stage): B's tile arrives by 16-byte copies; A's tile is stored transposed
//   (k-major, rows padded by 4 floats) so a thread reads 4 consecutive rows of A as one float4;
//   the inner loop does 2 * (rm + rn) shared loads of 16 bytes per 16 * rm * rn FMAs.
// - double buffered (2+ stages): the copy of tile k+1 is in flight while tile k is multiplied;
//   one barrier per tile.
// - warp tiled: a warp's lanes own a compact 16*rm x 32*rn patch (4 x 8 lanes, each 4x4 sub-blocks
//   repeated every 16 rows / 32 columns), so a warp's float4 reads of B touch 8 distinct 16-byte
//   words (one shared-memory wavefront) instead of 16 spread over 512 bytes.
// - split-K (`_kS` configurations): an output that makes fewer tiles than the GPU has SMs leaves
//   SMs idle, or runs one 4-warp block per SM that cannot hide its latencies (1000^3 in 64x128
//   tiles: 128 blocks on 132 SMs). Grid z also splits K into S slices; each block writes its fp32
//   partial tile to stream-ordered scratch and a second kernel adds the S slices in slice order
//   (deterministic) and applies alpha and beta. Costs S * m * n * 8 bytes of extra traffic, one
//   more launch and an allocation per call.
// - small tiles (32x64, 64x32): 4x more blocks than 64x128 for the same output, at 4x8 outputs
//   per thread (3 shared loads per 32 FMAs instead of 4 per 64) and twice the L2 reads per FMA.
// Grid z also walks a strided batch. Partial tiles take a predicated path: element copies that
// zero-fill outside the matrix. Both paths copy through one cursor per thread that moves a tile
// along K per load, so the predicated path does no 64-bit address math per copy: on sm_90 no
// kernel spills (before it, the predicated 64x128x16, 128x64x16 and 128x128x16 kernels did).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/gemm/epilogue.cuh"
#include "ops/gemm/variants.hpp"

namespace cudalab::gemm_variants {
namespace {

__device__ __forceinline__ void copy4_async(float* shared, const float* global, bool valid) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  // src-size 0 writes a zero and reads nothing.
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(address), "l"(global), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void copy16_async(float* shared, const float* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled>
struct Tiling {
  static constexpr int kThreads = kBm * kBn / (16 * kRm * kRn);
  // Up to 8x8 outputs per thread, ask for 128 registers or fewer so two 256-thread blocks share an
  // SM (16 warps to hide latency); 8x16 and 16x8 tiles need the whole register file of one block.
  static constexpr int kMinBlocks = kRm * kRn <= 4 ? 65536 / (kThreads * 128) : 1;
  static constexpr int kStrideA = kBm + 4;  // keeps float4 alignment, spreads the transposed stores
  static constexpr int kStageFloats = kBk * kStrideA + kBk * kBn;
  static constexpr int kSharedBytes = kStages * kStageFloats * static_cast<int>(sizeof(float));
  static constexpr int kALoads = kBm * kBk / kThreads;      // 4-byte copies per thread
  static constexpr int kBLoads = kBk * kBn / 4 / kThreads;  // 16-byte chunks per thread
  static_assert(kBm * kBk % kThreads == 0 && kBk * kBn / 4 % kThreads == 0, "tile not divisible by threads");
  static_assert(kThreads % kBk == 0 && kThreads % (kBn / 4) == 0, "copies must repeat whole rows");
  static_assert(!kWarpTiled || (kBm % (16 * kRm) == 0 && kBn % (32 * kRn) == 0), "warp tile does not divide");
};

// This thread's first copy of the next K tile to load: A element (row0 + tid / kBk, k0 + tid % kBk)
// and B chunk (k0 + tid / (kBn/4), col0 + 4 * (tid % (kBn/4))) of its matrix, k0 the tile's first
// K. Copy i is kThreads elements (chunks) further on, i.e. a fixed number of rows down, so one
// pointer and one row step per operand suffice, and each tile moves the pointers by a constant
// (64-bit address math per copy would cost registers the accumulators need). The predicated path
// also keeps the K left from k0 on, the rows of A left from the first copy's row and the columns
// of B left from its chunk's first column (clamped to the tile).
struct CopyCursor {
  const float* a;
  const float* b;
  std::int64_t a_step, b_step;  // rows between copy i and i + 1, in elements
  std::int64_t k_left;
  int a_rows, b_columns;
};

template <class T, int kBm, int kBn, int kBk, bool kEdge>
__device__ __forceinline__ CopyCursor copy_cursor(const GemmArgs<float>& p, int matrix, std::int64_t row0,
                                                  std::int64_t col0, std::int64_t k_begin) {
  constexpr int kChunksAcross = kBn / 4;
  const int a_row = threadIdx.x / kBk, b_row = threadIdx.x / kChunksAcross;
  const int b_column = threadIdx.x % kChunksAcross * 4;
  CopyCursor cursor;
  cursor.a = p.a + matrix * p.stride_a + (row0 + a_row) * p.lda + k_begin + threadIdx.x % kBk;
  cursor.b = p.b + matrix * p.stride_b + (k_begin + b_row) * p.ldb + col0 + b_column;
  cursor.a_step = T::kThreads / kBk * p.lda;
  cursor.b_step = T::kThreads / kChunksAcross * p.ldb;
  cursor.k_left = p.k - k_begin;
  cursor.a_rows = kEdge ? static_cast<int>(min(p.m - row0 - a_row, std::int64_t{kBm})) : kBm;
  cursor.b_columns = kEdge ? static_cast<int>(min(p.n - col0 - b_column, std::int64_t{4})) : 4;
  return cursor;
}

// Copies the cursor's tile into `stage` and moves the cursor to the next one: a block loads its
// tiles in order, once each. The predicated path zero-fills what lies outside the matrix; its
// skipped copies name p.a or p.b (valid addresses) and read nothing.
template <class T, int kBm, int kBn, int kBk, bool kEdge>
__device__ __forceinline__ void load_stage(float* stage, const GemmArgs<float>& p, CopyCursor& cursor) {
  // Copy i lands kThreads / kBk rows of A (columns of the transposed tile) and kThreads / (kBn/4)
  // rows of B after copy 0.
  const int a_k = threadIdx.x % kBk, b_k = threadIdx.x / (kBn / 4);
  float* a_tile = stage + a_k * T::kStrideA + threadIdx.x / kBk;                        // [k][m], stride kStrideA
  float* b_tile = stage + kBk * T::kStrideA + b_k * kBn + threadIdx.x % (kBn / 4) * 4;  // [k][n]
#pragma unroll
  for (int i = 0; i < T::kALoads; ++i) {
    float* dst = a_tile + i * (T::kThreads / kBk);
    const float* source = cursor.a + i * cursor.a_step;
    if constexpr (kEdge) {
      const bool valid = i * (T::kThreads / kBk) < cursor.a_rows && a_k < cursor.k_left;
      copy4_async(dst, valid ? source : p.a, valid);
    } else {
      copy4_async(dst, source, true);
    }
  }
#pragma unroll
  for (int i = 0; i < T::kBLoads; ++i) {
    constexpr int kRowsPerCopy = T::kThreads / (kBn / 4);
    float* dst = b_tile + i * kRowsPerCopy * kBn;
    const float* source = cursor.b + i * cursor.b_step;
    if constexpr (kEdge) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool valid = i * kRowsPerCopy + b_k < cursor.k_left && j < cursor.b_columns;
        copy4_async(dst + j, valid ? source + j : p.b, valid);
      }
    } else {
      copy16_async(dst, source);
    }
  }
  cursor.a += kBk;
  cursor.b += kBk * p.ldb;
  cursor.k_left -= kBk;
}

// blockIdx.z = matrix * split_k + slice (kPartial), else the matrix. kPartial: the block multiplies
// its K slice only and stores the raw sums as a whole tile of `partial`, laid out
// [batch * split_k][gridDim.y * kBm][gridDim.x * kBn] so the stores need no predicates; else it
// blends alpha and beta into C.
template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled, bool kEdge, bool kPartial>
__global__ void __launch_bounds__(Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>::kThreads,
                                  Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>::kMinBlocks)
    pipelined_kernel(const GemmArgs<float> p, float* partial, int split_k) {
  using T = Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>;
  extern __shared__ float4 shared_words[];
  float* shared = reinterpret_cast<float*>(shared_words);
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBm;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBn;
  const int splits = kPartial ? split_k : 1;
  const int slice = static_cast<int>(blockIdx.z) % splits;
  const int matrix = static_cast<int>(blockIdx.z) / splits;

  // This thread's outputs: rows first_row + r * row_step + (0..3), columns likewise.
  int first_row, first_col, row_step, col_step;
  if constexpr (kWarpTiled) {
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    constexpr int kWarpRows = 16 * kRm, kWarpCols = 32 * kRn, kWarpsAcross = kBn / kWarpCols;
    first_row = warp / kWarpsAcross * kWarpRows + lane / 8 * 4;
    first_col = warp % kWarpsAcross * kWarpCols + lane % 8 * 4;
    row_step = 16;
    col_step = 32;
  } else {
    constexpr int kThreadsAcross = kBn / (4 * kRn);
    first_row = threadIdx.x / kThreadsAcross * 4 * kRm;
    first_col = threadIdx.x % kThreadsAcross * 4 * kRn;
    row_step = 4;
    col_step = 4;
  }

  // This slice's K tiles: a balanced share of all of them, so slices differ by at most one tile;
  // only the last slice ends at k, and only its last tile may be partial (the predicated path's
  // k_left covers it). A slice gets no tile when K has fewer tiles than slices: it stores zeros.
  const std::int64_t k_tiles = ceil_div<std::int64_t>(p.k, kBk);
  const std::int64_t first_tile = k_tiles * slice / splits;
  const std::int64_t tiles = k_tiles * (slice + 1) / splits - first_tile;
  CopyCursor cursor = copy_cursor<T, kBm, kBn, kBk, kEdge>(p, matrix, row0, col0, first_tile * kBk);

  float acc[4 * kRm][4 * kRn] = {};
  auto stage_at = [&](std::int64_t tile) { return shared + (tile % kStages) * T::kStageFloats; };

  // Prologue: the first kStages - 1 tiles in flight (an empty group keeps the count uniform).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_stage<T, kBm, kBn, kBk, kEdge>(stage_at(s), p, cursor);
    commit_copies();
  }
  for (std::int64_t tile = 0; tile < tiles; ++tile) {
    if constexpr (kStages == 1) {
      load_stage<T, kBm, kBn, kBk, kEdge>(shared, p, cursor);
      commit_copies();
      wait_copies<0>();
      __syncthreads();
    } else {
      wait_copies<kStages - 2>();  // tile `tile` has landed
      // Every thread is past the previous tile's multiply, so its buffer may be refilled.
      __syncthreads();
      const std::int64_t next = tile + kStages - 1;
      if (next < tiles) load_stage<T, kBm, kBn, kBk, kEdge>(stage_at(next), p, cursor);
      commit_copies();
    }
    const float* a_tile = stage_at(tile);
    const float* b_tile = a_tile + kBk * T::kStrideA;
#pragma unroll
    for (int k = 0; k < kBk; ++k) {
      float a_frag[4 * kRm], b_frag[4 * kRn];
#pragma unroll
      for (int r = 0; r < kRm; ++r)
        *reinterpret_cast<float4*>(&a_frag[4 * r]) =
            *reinterpret_cast<const float4*>(&a_tile[k * T::kStrideA + first_row + r * row_step]);
#pragma unroll
      for (int c = 0; c < kRn; ++c)
        *reinterpret_cast<float4*>(&b_frag[4 * c]) =
            *reinterpret_cast<const float4*>(&b_tile[k * kBn + first_col + c * col_step]);
#pragma unroll
      for (int i = 0; i < 4 * kRm; ++i)
#pragma unroll
        for (int j = 0; j < 4 * kRn; ++j) acc[i][j] = fmaf(a_frag[i], b_frag[j], acc[i][j]);
    }
    if constexpr (kStages == 1) __syncthreads();
  }

  if constexpr (kPartial) {
    const std::int64_t pitch = static_cast<std::int64_t>(gridDim.x) * kBn;
    float* out = partial + (static_cast<std::int64_t>(blockIdx.z) * gridDim.y * kBm + row0 + first_row) * pitch + col0 +
                 first_col;
#pragma unroll
    for (int i = 0; i < 4 * kRm; ++i)
#pragma unroll
      for (int c = 0; c < kRn; ++c)
        *reinterpret_cast<float4*>(&out[(i / 4 * row_step + i % 4) * pitch + c * col_step]) =
            make_float4(acc[i][4 * c], acc[i][4 * c + 1], acc[i][4 * c + 2], acc[i][4 * c + 3]);
  } else {
    // This thread's first output, and how many rows and columns of C lie from it on. blockIdx.z
    // rather than `matrix`, which would then stay in a register through the main loop (measured:
    // the 128x128x8 single-stage kernels spill).
    float* c = p.c + static_cast<std::int64_t>(blockIdx.z) * p.stride_c + (row0 + first_row) * p.ldc + col0 + first_col;
    const std::int64_t rows_left = p.m - row0 - first_row, columns_left = p.n - col0 - first_col;
#pragma unroll
    for (int i = 0; i < 4 * kRm; ++i) {
      const int m = i / 4 * row_step + i % 4;
#pragma unroll
      for (int j = 0; j < kRn; ++j) {
        const int n = j * col_step;
        const float quad[4] = {acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]};
        if constexpr (kEdge) {
          if (m >= rows_left) continue;
#pragma unroll
          for (int q = 0; q < 4; ++q)
            if (n + q < columns_left) blend_store(&c[m * p.ldc + n + q], p.alpha, p.beta, quad[q]);
        } else {
          blend_store4(&c[m * p.ldc + n], p.alpha, p.beta, quad);
        }
      }
    }
  }
}

// C = alpha * (sum of the split_k partial tiles, added in slice order) + beta * C: one thread per
// element, or per 4 adjacent elements (kVector: n, ldc and C's rows allow float4 stores).
// partial[(matrix * split_k + slice) * slice_floats + row * pitch + column].
template <bool kVector>
__global__ void split_k_reduce_kernel(GemmArgs<float> p, const float* partial, int split_k, std::int64_t slice_floats,
                                      std::int64_t pitch) {
  constexpr int kWidth = kVector ? 4 : 1;
  const std::int64_t per_row = p.n / kWidth;
  const std::int64_t item = global_thread_index();
  if (item >= p.m * per_row) return;
  const std::int64_t row = item / per_row, col = item % per_row * kWidth;
  const std::int64_t matrix = blockIdx.y;
  const float* source = partial + matrix * split_k * slice_floats + row * pitch + col;
  float* c = p.c + matrix * p.stride_c + row * p.ldc + col;
  if constexpr (kVector) {
    float4 sum = *reinterpret_cast<const float4*>(source);
#pragma unroll 4
    for (int s = 1; s < split_k; ++s) {
      const float4 x = *reinterpret_cast<const float4*>(source + s * slice_floats);
      sum = make_float4(sum.x + x.x, sum.y + x.y, sum.z + x.z, sum.w + x.w);
    }
    const float quad[4] = {sum.x, sum.y, sum.z, sum.w};
    blend_store4(c, p.alpha, p.beta, quad);
  } else {
    float sum = *source;
#pragma unroll 4
    for (int s = 1; s < split_k; ++s) sum += source[s * slice_floats];
    blend_store(c, p.alpha, p.beta, sum);
  }
}

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled, bool kPartial>
void launch_instance(const GemmArgs<float>& args, bool fast, float* partial, int split_k, cudaStream_t stream) {
  using T = Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>;
  auto* kernel = fast ? pipelined_kernel<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, false, kPartial>
                      : pipelined_kernel<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, true, kPartial>;
  // Above 48 KiB a kernel must opt in; the attribute is per device, so set it on every launch
  // (a host-side call, no synchronization).
  if (T::kSharedBytes > 48 * 1024)
    CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kBn)),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.m, kBm)),
                  static_cast<unsigned>(args.batch * split_k));
  kernel<<<grid, T::kThreads, T::kSharedBytes, stream>>>(args, partial, split_k);
  CUDALAB_CHECK_LAUNCH();
}

void launch_split_k_reduce(const GemmArgs<float>& args, const float* partial, int split_k, std::int64_t rows,
                           std::int64_t pitch, cudaStream_t stream) {
  constexpr int kBlock = 256;
  const bool vector =
      args.n % 4 == 0 && args.ldc % 4 == 0 && is_aligned16(args.c) && (args.batch == 1 || args.stride_c % 4 == 0);
  const std::int64_t items = args.m * (vector ? args.n / 4 : args.n);
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(items, kBlock)), static_cast<unsigned>(args.batch));
  auto* kernel = vector ? split_k_reduce_kernel<true> : split_k_reduce_kernel<false>;
  kernel<<<grid, kBlock, 0, stream>>>(args, partial, split_k, rows * pitch, pitch);
  CUDALAB_CHECK_LAUNCH();
}

// One configuration's launcher: a plain function, so a variant binds it like any other step.
template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled, int kSplitK>
void launch_config(const GemmArgs<float>& args, cudaStream_t stream) {
  const PipelineConfig config{kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, kSplitK};
  CUDALAB_REQUIRE(!args.a_transposed && !args.b_transposed,
                  "gemm " + config.name() + ": the FP32 kernels take A as M x K and B as K x N, not transposed");
  CUDALAB_REQUIRE(args.batch >= 0, "gemm " + config.name() + ": negative batch " + std::to_string(args.batch));
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  const std::int64_t row_tiles = ceil_div<std::int64_t>(args.m, kBm), col_tiles = ceil_div<std::int64_t>(args.n, kBn);
  CUDALAB_REQUIRE(row_tiles <= 65535, "gemm " + config.name() + ": m=" + std::to_string(args.m) + " needs " +
                                          std::to_string(row_tiles) + " row tiles, above the grid's 65535");
  CUDALAB_REQUIRE(args.batch * kSplitK <= 65535, "gemm " + config.name() + ": batch " + std::to_string(args.batch) +
                                                     " times split " + std::to_string(kSplitK) +
                                                     " exceeds the grid's 65535");
  const bool fast = takes_fast_path(config, args);
  if constexpr (kSplitK == 1) {
    launch_instance<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, false>(args, fast, nullptr, 1, stream);
  } else {
    // The launcher's signature has no workspace: the partial tiles come from the stream-ordered
    // allocator and go back on the stream after the reduce kernel.
    const std::int64_t rows = row_tiles * kBm, pitch = col_tiles * kBn;
    StreamOrderedWorkspace workspace(stream);
    auto* partial = static_cast<float*>(
        workspace.reserve(static_cast<std::size_t>(args.batch * kSplitK * rows * pitch) * sizeof(float)));
    launch_instance<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, true>(args, fast, partial, kSplitK, stream);
    launch_split_k_reduce(args, partial, kSplitK, rows, pitch, stream);
  }
}

struct Entry {
  PipelineConfig config;
  PipelinedLauncher launch;
};

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled, int kSplitK = 1>
Entry entry() {
  return {{kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, kSplitK},
          launch_config<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, kSplitK>};
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> list = {
      entry<128, 128, 8, 2, 2, 1, false>(),  // vectorized
      entry<128, 128, 8, 2, 2, 2, false>(),  // double buffered
      entry<128, 128, 8, 2, 2, 1, true>(),   // warp tiled, single buffer (double buffering's gain, C28)
      entry<128, 128, 8, 2, 2, 2, true>(),   // warp tiled
      entry<128, 128, 8, 2, 2, 3, true>(),
      entry<128, 128, 16, 2, 2, 2, true>(),
      entry<128, 128, 16, 2, 2, 3, true>(),
      entry<128, 256, 8, 2, 4, 2, true>(),
      entry<128, 256, 16, 2, 4, 3, true>(),
      entry<128, 256, 8, 2, 4, 3, true>(),
      entry<128, 256, 16, 2, 4, 2, true>(),
      entry<256, 128, 8, 4, 2, 2, true>(),
      entry<64, 128, 16, 2, 2, 3, true>(),
      entry<128, 64, 16, 2, 2, 3, true>(),
      entry<64, 64, 16, 1, 2, 3, true>(),
      // Small tiles: 2-warp blocks, 4x more of them than 64x128 tiles for the same output.
      entry<32, 64, 16, 1, 2, 3, true>(),
      entry<64, 32, 16, 2, 1, 3, true>(),
      // Split-K for outputs of fewer tiles than SMs (tuned_config): the tuned tiles, and 32x64.
      entry<64, 128, 16, 2, 2, 3, true, 2>(),
      entry<64, 128, 16, 2, 2, 3, true, 4>(),
      entry<64, 64, 16, 1, 2, 3, true, 2>(),
      entry<64, 64, 16, 1, 2, 3, true, 4>(),
      entry<64, 64, 16, 1, 2, 3, true, 8>(),
      entry<32, 64, 16, 1, 2, 3, true, 2>(),
  };
  return list;
}

}  // namespace

bool PipelineConfig::operator==(const PipelineConfig& other) const {
  return bm == other.bm && bn == other.bn && bk == other.bk && rm == other.rm && rn == other.rn &&
         stages == other.stages && warp_tiled == other.warp_tiled && split_k == other.split_k;
}

std::string PipelineConfig::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_" + std::to_string(4 * rm) + "x" +
         std::to_string(4 * rn) + "_s" + std::to_string(stages) + (warp_tiled ? "_warp" : "_thread") +
         (split_k > 1 ? "_k" + std::to_string(split_k) : "");
}

const std::vector<PipelineConfig>& pipeline_configs() {
  static const std::vector<PipelineConfig> configs = [] {
    std::vector<PipelineConfig> list;
    for (const Entry& e : entries()) list.push_back(e.config);
    return list;
  }();
  return configs;
}

bool takes_fast_path(const PipelineConfig& config, const GemmArgs<float>& args) {
  const bool batched = args.batch > 1;
  const bool whole_tiles = args.m % config.bm == 0 && args.n % config.bn == 0 && args.k % config.bk == 0;
  const bool b_aligned = args.ldb % 4 == 0 && is_aligned16(args.b) && (!batched || args.stride_b % 4 == 0);
  // Split-K stores its tiles to its own scratch; the reduce kernel picks its own C access.
  const bool c_aligned =
      config.split_k > 1 || (args.ldc % 4 == 0 && is_aligned16(args.c) && (!batched || args.stride_c % 4 == 0));
  return whole_tiles && b_aligned && c_aligned;
}

PipelinedLauncher pipelined_launcher(const PipelineConfig& config) {
  for (const Entry& e : entries())
    if (e.config == config) return e.launch;
  CUDALAB_REQUIRE(false, "pipelined_launcher: no kernel built for configuration " + config.name());
  return nullptr;
}

void launch_pipelined(const PipelineConfig& config, const GemmArgs<float>& args, cudaStream_t stream) {
  pipelined_launcher(config)(args, stream);
}

}  // namespace cudalab::gemm_variants
