// Steps 7-10: the cp.async kernel family.
// - vectorized (1 stage): B's tile arrives by 16-byte copies; A's tile is stored transposed
//   (k-major, rows padded by 4 floats) so a thread reads 4 consecutive rows of A as one float4;
//   the inner loop does 2 * (rm + rn) shared loads of 16 bytes per 16 * rm * rn FMAs.
// - double buffered (2+ stages): the copy of tile k+1 is in flight while tile k is multiplied;
//   one barrier per tile.
// - warp tiled: a warp's lanes own a compact 16*rm x 32*rn patch (4 x 8 lanes, each 4x4 sub-blocks
//   repeated every 16 rows / 32 columns), so a warp's float4 reads of B touch 8 distinct 16-byte
//   words (one shared-memory wavefront) instead of 16 spread over 512 bytes.
// Partial tiles take a predicated path: element copies that zero-fill outside the matrix.
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
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
  static_assert(!kWarpTiled || (kBm % (16 * kRm) == 0 && kBn % (32 * kRn) == 0), "warp tile does not divide");
};

// Where this thread's copies start: A element (row0 + tid / kBk, tid % kBk) and B chunk
// (tid / (kBn/4), 4 * (tid % (kBn/4))) of tile 0; copy i is kThreads elements (chunks) further on,
// i.e. a fixed number of rows down, so one pointer and one row step per operand suffice (64-bit
// address math per copy would cost registers the accumulators need).
struct CopyCursor {
  const float* a;
  const float* b;
  std::int64_t a_step, b_step;  // rows between copy i and i + 1, in elements
};

template <class T, int kBm, int kBn, int kBk, bool kEdge>
__device__ __forceinline__ void load_stage(float* stage, const GemmArgs<float>& p, const CopyCursor& cursor,
                                           std::int64_t row0, std::int64_t col0, std::int64_t k0) {
  float* a_tile = stage;                      // [k][m], stride kStrideA
  float* b_tile = stage + kBk * T::kStrideA;  // [k][n]
#pragma unroll
  for (int i = 0; i < T::kALoads; ++i) {
    const int e = i * T::kThreads + threadIdx.x;  // consecutive threads: consecutive k of one row
    const int m = e / kBk, k = e % kBk;
    if constexpr (kEdge) {
      const bool valid = row0 + m < p.m && k0 + k < p.k;
      copy4_async(&a_tile[k * T::kStrideA + m], valid ? &p.a[(row0 + m) * p.lda + k0 + k] : p.a, valid);
    } else {
      copy4_async(&a_tile[k * T::kStrideA + m], cursor.a + i * cursor.a_step + k0, true);
    }
  }
#pragma unroll
  for (int i = 0; i < T::kBLoads; ++i) {
    const int chunk = i * T::kThreads + threadIdx.x;
    const int k = chunk / (kBn / 4), n = chunk % (kBn / 4) * 4;
    float* dst = &b_tile[k * kBn + n];
    if constexpr (kEdge) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool valid = k0 + k < p.k && col0 + n + j < p.n;
        copy4_async(dst + j, valid ? &p.b[(k0 + k) * p.ldb + col0 + n + j] : p.b, valid);
      }
    } else {
      copy16_async(dst, cursor.b + i * cursor.b_step + k0 * p.ldb);
    }
  }
}

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled, bool kEdge>
__global__ void __launch_bounds__(Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>::kThreads,
                                  Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>::kMinBlocks)
    pipelined_kernel(GemmArgs<float> p) {
  using T = Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>;
  extern __shared__ float4 shared_words[];
  float* shared = reinterpret_cast<float*>(shared_words);
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * kBm;
  const std::int64_t col0 = static_cast<std::int64_t>(blockIdx.x) * kBn;

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

  static_assert(T::kThreads % kBk == 0 && T::kThreads % (kBn / 4) == 0, "copies must repeat whole rows");
  CopyCursor cursor{};
  if constexpr (!kEdge) {
    cursor.a = p.a + (row0 + threadIdx.x / kBk) * p.lda + threadIdx.x % kBk;
    cursor.b = p.b + (threadIdx.x / (kBn / 4)) * p.ldb + col0 + threadIdx.x % (kBn / 4) * 4;
    cursor.a_step = T::kThreads / kBk * p.lda;
    cursor.b_step = T::kThreads / (kBn / 4) * p.ldb;
  }

  float acc[4 * kRm][4 * kRn] = {};
  const std::int64_t tiles = ceil_div<std::int64_t>(p.k, kBk);
  auto stage_at = [&](std::int64_t tile) { return shared + (tile % kStages) * T::kStageFloats; };

  // Prologue: the first kStages - 1 tiles in flight (an empty group keeps the count uniform).
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_stage<T, kBm, kBn, kBk, kEdge>(stage_at(s), p, cursor, row0, col0, s * kBk);
    commit_copies();
  }
  for (std::int64_t tile = 0; tile < tiles; ++tile) {
    if constexpr (kStages == 1) {
      load_stage<T, kBm, kBn, kBk, kEdge>(shared, p, cursor, row0, col0, tile * kBk);
      commit_copies();
      wait_copies<0>();
      __syncthreads();
    } else {
      wait_copies<kStages - 2>();  // tile `tile` has landed
      // Every thread is past the previous tile's multiply, so its buffer may be refilled.
      __syncthreads();
      const std::int64_t next = tile + kStages - 1;
      if (next < tiles) load_stage<T, kBm, kBn, kBk, kEdge>(stage_at(next), p, cursor, row0, col0, next * kBk);
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

#pragma unroll
  for (int i = 0; i < 4 * kRm; ++i) {
    const std::int64_t m = row0 + first_row + i / 4 * row_step + i % 4;
#pragma unroll
    for (int c = 0; c < kRn; ++c) {
      const std::int64_t n = col0 + first_col + c * col_step;
      const float quad[4] = {acc[i][4 * c], acc[i][4 * c + 1], acc[i][4 * c + 2], acc[i][4 * c + 3]};
      if constexpr (kEdge) {
        if (m >= p.m) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (n + j < p.n) blend_store(&p.c[m * p.ldc + n + j], p.alpha, p.beta, quad[j]);
      } else {
        blend_store4(&p.c[m * p.ldc + n], p.alpha, p.beta, quad);
      }
    }
  }
}

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled>
void launch_instance(const GemmArgs<float>& args, bool fast, cudaStream_t stream) {
  using T = Tiling<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>;
  auto* kernel = fast ? pipelined_kernel<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, false>
                      : pipelined_kernel<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled, true>;
  // Above 48 KiB a kernel must opt in; the attribute is per device, so set it on every launch
  // (a host-side call, no synchronization).
  if (T::kSharedBytes > 48 * 1024)
    CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes));
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kBn)),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.m, kBm)));
  kernel<<<grid, T::kThreads, T::kSharedBytes, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

// One configuration's launcher: a plain function, so a variant binds it like any other step.
template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled>
void launch_config(const GemmArgs<float>& args, cudaStream_t stream) {
  if (args.m == 0 || args.n == 0) return;
  const PipelineConfig config{kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled};
  launch_instance<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>(args, takes_fast_path(config, args), stream);
}

struct Entry {
  PipelineConfig config;
  PipelinedLauncher launch;
};

template <int kBm, int kBn, int kBk, int kRm, int kRn, int kStages, bool kWarpTiled>
Entry entry() {
  return {{kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled}, launch_config<kBm, kBn, kBk, kRm, kRn, kStages, kWarpTiled>};
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> list = {
      entry<128, 128, 8, 2, 2, 1, false>(),  // vectorized
      entry<128, 128, 8, 2, 2, 2, false>(),  // double buffered
      entry<128, 128, 8, 2, 2, 1, true>(),   // warp tiled, single buffer (double buffering's gain, C28)
      entry<128, 128, 8, 2, 2, 2, true>(),   // warp tiled
      entry<128, 128, 8, 2, 2, 3, true>(),  entry<128, 128, 16, 2, 2, 2, true>(), entry<128, 128, 16, 2, 2, 3, true>(),
      entry<128, 256, 8, 2, 4, 2, true>(),  entry<128, 256, 16, 2, 4, 3, true>(), entry<128, 256, 8, 2, 4, 3, true>(),
      entry<128, 256, 16, 2, 4, 2, true>(), entry<256, 128, 8, 4, 2, 2, true>(),  entry<64, 128, 16, 2, 2, 3, true>(),
      entry<128, 64, 16, 2, 2, 3, true>(),  entry<64, 64, 16, 1, 2, 3, true>(),
  };
  return list;
}

bool same(const PipelineConfig& x, const PipelineConfig& y) {
  return x.bm == y.bm && x.bn == y.bn && x.bk == y.bk && x.rm == y.rm && x.rn == y.rn && x.stages == y.stages &&
         x.warp_tiled == y.warp_tiled;
}

}  // namespace

std::string PipelineConfig::name() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_" + std::to_string(4 * rm) + "x" +
         std::to_string(4 * rn) + "_s" + std::to_string(stages) + (warp_tiled ? "_warp" : "_thread");
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
  return args.m % config.bm == 0 && args.n % config.bn == 0 && args.k % config.bk == 0 && args.ldb % 4 == 0 &&
         args.ldc % 4 == 0 && is_aligned16(args.b) && is_aligned16(args.c);
}

PipelinedLauncher pipelined_launcher(const PipelineConfig& config) {
  for (const Entry& e : entries())
    if (same(e.config, config)) return e.launch;
  CUDALAB_REQUIRE(false, "pipelined_launcher: no kernel built for configuration " + config.name());
  return nullptr;
}

void launch_pipelined(const PipelineConfig& config, const GemmArgs<float>& args, cudaStream_t stream) {
  pipelined_launcher(config)(args, stream);
}

}  // namespace cudalab::gemm_variants
