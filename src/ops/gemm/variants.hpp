// The matrix-multiply ladder on CUDA cores: C = alpha * A * B + beta * C, row-major, any M, N, K
// and any leading dimensions (lda >= K, ldb >= N, ldc >= N). Every launcher takes the op's
// argument struct, enqueues on `stream` and handles partial tiles; beta == 0 never reads C (BLAS
// semantics: C may hold NaN then). The library entry (gemm.cu) and the registry (register.cpp)
// fill the same struct. The FP32 kernels here take A as M x K and B as K x N, and only the pipelined
// family takes strided batches; the tensor-core ladder (tensor_core_variants.hpp) takes both layouts
// of B and strided batches on every rung, and A stored K x M on the rungs that say so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace cudalab::gemm_variants {

// What the epilogue does beyond alpha and beta, on the Hopper tile rungs with a TMA-stored C and
// A stored m x k (the library runs the rest as a second pass: tensor_core_gemm.cu). With v = alpha
// acc + beta C:
//   kActivation  C = act(v) (`activation`, a cudalab::Activation's value), and act'(v) to
//                `derivative` (rows ldc apart) unless it is null: what the backward multiplies by;
//   kGradient    C = alpha acc * G element-wise, G read from c_in (rows ldc_in apart; beta must be
//                0), and, unless `strip_sums` is null, each 16-row strip's column sums of those fp32
//                values to strip_sums[(row / 16) * n + col]: a dense ceil(m / 16) x n matrix, summed
//                once more for a bias's gradient.
enum class FusedKind : int { kNone = 0, kActivation = 1, kGradient = 2 };
template <typename T>
struct FusedEpilogue {
  FusedKind kind = FusedKind::kNone;
  int activation = 0;
  T* derivative = nullptr;
  float* strip_sums = nullptr;
};

// Element is the dtype of A, B and C; alpha and beta are the fp32 scalars of the epilogue, which
// runs in fp32 whatever the element type.
template <typename T>
struct GemmArgs {
  using Element = T;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const T* a = nullptr;
  std::int64_t lda = 0;
  const T* b = nullptr;
  std::int64_t ldb = 0;
  float beta = 0.0f;
  T* c = nullptr;
  std::int64_t ldc = 0;
  // Where beta's C is read when not from c itself (null: in place): rows ldc_in apart, 0 for one row
  // read by every row (a bias). Single matrices on the Hopper tile rungs only (wgmma_persistent,
  // wgmma_cluster, wgmma_mid, wgmma_small); the library fills c from it for the others.
  const T* c_in = nullptr;
  std::int64_t ldc_in = 0;
  // B stored N x K (row j holds column j of the K x N operand, ldb >= K): C = alpha A B^T + beta C,
  // the layout of x @ W.T in nn.Linear. False: B is K x N (ldb >= N).
  bool b_transposed = false;
  // A stored K x M (row p holds column p of the M x K operand, lda >= M): C = alpha A^T op(B) + beta
  // C, the layout of a weight's gradient dy^T x. False: A is M x K (lda >= K). Only the tensor-core
  // ladder takes it.
  bool a_transposed = false;
  // Strided batch: matrix z of A starts at a + z * stride_a (likewise B, C); z in [0, batch).
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  FusedEpilogue<T> fused;  // single products only
  // Unless null: the sums over k of A's rows (m values, in T: a Linear's bias gradient beside its
  // weight gradient, gemm_weight_gradient), for an A stored k x m (a_transposed) of a single
  // product. Only the persistent Hopper rungs fill it (sums_a_rows in tensor_core_gemm.cu).
  T* a_row_sums = nullptr;
};

// One thread per output; threadIdx.x walks rows, so a warp reads A down a column (strided) and
// writes C strided.
void naive(const GemmArgs<float>& args, cudaStream_t stream);
// One thread per output; threadIdx.x walks columns: a warp reads B and writes C in contiguous rows.
void coalesced(const GemmArgs<float>& args, cudaStream_t stream);
// The tutorial's shared-memory tiles (one output per thread up to 32x32; the 64x64 tile gives each
// thread four rows, since a block holds at most 1024 threads). `kPadded` adds one column to each
// tile. Built for <8, false>, <16, false>, <32, false>, <32, true> and <64, false>.
template <int kTile, bool kPadded>
void shared_tile(const GemmArgs<float>& args, cudaStream_t stream);
// 64x64 block tile, BK = 8, each thread 8 outputs down a column.
void blocktile_1d(const GemmArgs<float>& args, cudaStream_t stream);
// 128x128 block tile, BK = 8, each thread an 8x8 block of outputs, scalar loads.
void blocktile_2d(const GemmArgs<float>& args, cudaStream_t stream);

// The cp.async kernel family: A's tile stored transposed (k-major) in shared memory so a thread
// reads its rows as float4s, B's tile copied with 16-byte cp.async, `stages` tiles in flight.
// Unlike the kernels above it takes strided batches (grid z); B must be K x N (b_transposed is
// refused).
struct PipelineConfig {
  int bm, bn, bk;   // block tile
  int rm, rn;       // each thread owns rm x rn sub-blocks of 4x4 outputs
  int stages;       // shared-memory buffers (1: copy, wait, compute)
  bool warp_tiled;  // lanes of a warp share a compact 16*rm x 32*rn tile (else: thread-contiguous 4rm x 4rn)
  // K slices per output tile (grid z): each slice stores fp32 partial tiles to scratch from the
  // stream-ordered allocator, a second kernel adds them in slice order and applies alpha, beta.
  int split_k = 1;
  std::string name() const;  // e.g. "128x128x8_8x8_s2_warp", "64x64x16_4x8_s3_warp_k4"
  bool operator==(const PipelineConfig& other) const;
};
using PipelinedLauncher = void (*)(const GemmArgs<float>&, cudaStream_t);
// Every configuration built into the library.
const std::vector<PipelineConfig>& pipeline_configs();
// The launcher of `config`, which picks the unpredicated or the predicated kernel per call; throws
// cudalab::Error (invalid_argument) for a configuration that is not built.
PipelinedLauncher pipelined_launcher(const PipelineConfig& config);
void launch_pipelined(const PipelineConfig& config, const GemmArgs<float>& args, cudaStream_t stream);
// True when the shape and alignment let `config` take its unpredicated path (whole tiles,
// 16-byte aligned rows and batch strides of B, and of C unless split-K writes C).
bool takes_fast_path(const PipelineConfig& config, const GemmArgs<float>& args);

// The library's choice for an m x n x k product on a GPU of `compute_capability` with `sm_count`
// SMs (see gemm.cu for the measurements and the split-K rule behind it).
PipelineConfig tuned_config(int compute_capability, int sm_count, std::int64_t m, std::int64_t n, std::int64_t k,
                            std::int64_t batch = 1);

}  // namespace cudalab::gemm_variants
