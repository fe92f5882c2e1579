// The normalization ladders: LayerNorm and RMSNorm over the last dimension of a [rows, features]
// row-major tensor, forward and backward, in fp32, bf16 and fp16 with fp32 arithmetic inside.
// One argument struct per direction serves both norms (`norm` says which); the library entry
// (norms.cu), the registry (register.cpp) and a PyTorch binding fill the same structs.
//
//   LayerNorm: mean = sum(x) / F, var = sum((x - mean)^2) / F (biased, as torch.nn.LayerNorm),
//              rstd = 1 / sqrt(var + eps), y = (x - mean) * rstd * gamma + beta
//   RMSNorm:   rstd = 1 / sqrt(sum(x^2) / F + eps), y = x * rstd * gamma (as torch.nn.RMSNorm)
//
// Every kernel but the broken tutorial one computes LayerNorm's statistics shifted by the row's
// first element p (d = x - p, then mean = p + sum(d) / F and var = sum((d - mean_d)^2) / F): a
// row at 1e4 + noise keeps the noise's digits in fp32, where sum(x) / F alone is off by up to
// half an ulp of 1e4 (2^-11), which y = (x - mean) * rstd magnifies to ~1e-3 relative error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace cudalab::norms_variants {

enum class Norm { layer, rms };

// The widest rows the register-holding rungs take (elements of any dtype: rows are held as fp32):
// one block per row up to kBlockRowMax (kBlockRowMaxElementLoads for rows that do not start on
// 16-byte boundaries); the fused backward, which holds x and dy, up to kFusedBackwardRowMax; a
// cluster of up to kMaxClusterSize CTAs per row, each holding as much as one block.
inline constexpr std::int64_t kBlockRowMax = 32768;
inline constexpr std::int64_t kBlockRowMaxElementLoads = 16384;
inline constexpr std::int64_t kFusedBackwardRowMax = 16384;
inline constexpr int kMaxClusterSize = 8;

// Forward. x and y are rows x features, gamma and beta features long, mean and rstd rows long
// (fp32). beta and mean are LayerNorm's only (null for RMSNorm); mean and rstd may be null (not
// written). Device pointers aligned to their element; kernels take 16-byte vectors where every
// row starts on a 16-byte boundary and fall back to element accesses where not. Only the CUB
// baseline uses a workspace (cub_unfused_workspace_bytes). With `residual` (the add_ forms of a
// pre-norm block) the row normalized is h = x + residual, summed in fp32 and rounded to T, and h
// is written to residual_out; only rungs `vector_registers` and `add_unfused` read them.
template <typename T>
struct NormForwardArgs {
  using Element = T;
  Norm norm = Norm::layer;
  const T* x = nullptr;
  const T* gamma = nullptr;
  const T* beta = nullptr;
  T* y = nullptr;
  float* mean = nullptr;
  float* rstd = nullptr;
  const T* residual = nullptr;
  T* residual_out = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  float eps = 1e-5f;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Backward, from what autograd saves: x, dy, gamma, and the forward's mean (LayerNorm) and rstd.
// Writes dx (rows x features), dgamma and, for LayerNorm, dbeta (features each). dgamma and dbeta
// are fp32 column sums over rows, each summed in a fixed order (the same bits on every run) and
// rounded once to T. `workspace` holds backward_workspace_bytes(norm, rows, features) bytes.
// `dresidual` (the add_ forms; null: none) is added to dx: the gradient h = x + residual gets from
// its other use, the residual stream, so dx is both x's and the residual's gradient.
template <typename T>
struct NormBackwardArgs {
  using Element = T;
  Norm norm = Norm::layer;
  const T* x = nullptr;
  const T* dy = nullptr;
  const T* gamma = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const T* dresidual = nullptr;
  T* dx = nullptr;
  T* dgamma = nullptr;
  T* dbeta = nullptr;
  std::int64_t rows = 0;
  std::int64_t features = 0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// ---- limits: "" when a rung runs the shape, else one sentence why not (limits.cpp) ----

// Every rung: a row has fewer than 2^31 features and, for the forward, at least one (an empty
// row has no mean); rows x features fits in 63 bits.
std::string forward_shape_limits(std::int64_t rows, std::int64_t features);
std::string backward_shape_limits(std::int64_t rows, std::int64_t features);

// ---- forward rungs ----

// The tutorial's LayerNorm as written: a 256-thread block per row, statistics accumulated with
// shared-memory atomicAdds into shared_mean / shared_var, which are never zeroed. BROKEN on
// purpose. Writes mean and rstd (the tutorial computes them and drops them). LayerNorm only.
template <typename T>
void tutorial_unzeroed(const NormForwardArgs<T>& args, cudaStream_t stream);
// The same kernel with the shared sums zeroed and the statistics shifted by the row's first
// element; still three reads of the row, a 256-thread block per row whatever the width.
template <typename T>
void tutorial_fixed(const NormForwardArgs<T>& args, cudaStream_t stream);
std::string tutorial_limits(std::int64_t rows, std::int64_t features);

// One warp per row, warp-shuffle sums, element loads, three passes over the row.
template <typename T>
void warp_per_row(const NormForwardArgs<T>& args, cudaStream_t stream);
std::string warp_per_row_limits(std::int64_t features);
// One 512-thread block per row, block sums (shuffles, then one value per warp in shared memory),
// element loads, three passes over the row.
template <typename T>
void block_per_row(const NormForwardArgs<T>& args, cudaStream_t stream);
// 16-byte vector loads, the row read once and held in registers: a warp per row up to 1024
// features, a block of 128-1024 threads up to 32768 (16384 for rows not on 16-byte boundaries,
// which take element loads).
template <typename T>
void vector_registers(const NormForwardArgs<T>& args, cudaStream_t stream);
std::string vector_registers_limits(std::int64_t features, bool vector_aligned);
// Whether every row of a [rows, features] tensor of `element_size`-byte elements starts on a
// 16-byte boundary when the tensor does (features a multiple of 16 bytes).
inline bool rows_vector_aligned(std::int64_t features, std::size_t element_size) {
  return features % static_cast<std::int64_t>(16 / element_size) == 0;
}
// Hopper thread-block clusters: one row split over up to 8 CTAs (up to 8192, 16384 or 32768
// features each, in registers; 16384 with element loads), partial sums exchanged through
// distributed shared memory; one read of x.
template <typename T>
void cluster(const NormForwardArgs<T>& args, cudaStream_t stream);
std::string cluster_limits(std::int64_t features, bool vector_aligned, int compute_capability);

// The unfused vendor-library baseline: cub::DeviceSegmentedReduce per statistic (LayerNorm: the
// shifted sum, then the squared deviations; RMSNorm: the squares), then cub::DeviceFor for y:
// each step a separate library call and a separate pass over x. Its scratch is CUB's.
// Its workspace: two fp32 sums per row and CUB's temporary storage (the size query needs a GPU).
template <typename T>
void cub_unfused(const NormForwardArgs<T>& args, cudaStream_t stream);
template <typename T>
std::size_t cub_unfused_workspace_bytes(Norm norm, std::int64_t rows, std::int64_t features);

// The add_ forms' unfused baseline, as separate framework ops run them: out = x + residual in one
// pass (add_elements), then the fastest plain forward rung over the sum, which reads it again.
template <typename T>
void add_unfused(const NormForwardArgs<T>& args, cudaStream_t stream);
// out[i] = a[i] + b[i] for count elements, summed in fp32 and rounded to T; out may be a.
template <typename T>
void add_elements(const T* a, const T* b, T* out, std::int64_t count, cudaStream_t stream);
// The plain forward (no residual) on the rung the library takes for the shape (norms.cu).
template <typename T>
void fastest_forward(const NormForwardArgs<T>& args, cudaStream_t stream);

// ---- backward rungs ----

// Separate kernels, several reads: dx by a block per row (two passes over x and dy), then the
// column sums dgamma / dbeta by a kernel reading x and dy again into per-chunk partial sums, then
// the partials summed per column.
template <typename T>
void backward_unfused(const NormBackwardArgs<T>& args, cudaStream_t stream);
// Fused: a resident grid of row groups (a warp per row up to 1024 features, a block up to
// 16384); each group holds x and dy of its row in registers (16-byte loads, one read), writes dx
// and adds dy * xhat and dy into its CTA's column partials in shared memory; then the partials
// summed per column.
template <typename T>
void backward_fused(const NormBackwardArgs<T>& args, cudaStream_t stream);
std::string backward_fused_limits(std::int64_t features);
// Fused, several rows a CTA: `fused`'s arithmetic with each thread's column sums in its own words
// of shared memory across every row its group takes, the next row loaded before the current one's
// dx goes out, and one row of partials a CTA (two an SM) instead of one a row group. Vector-aligned rows of 32 to
// 512 16-byte vectors only.
template <typename T>
void backward_rows(const NormBackwardArgs<T>& args, cudaStream_t stream);
std::string backward_rows_limits(std::int64_t features, std::size_t element_bytes, bool vector_aligned);
// Fused, rows staged: each thread copies its vectors of x, dy (and dresidual) and its row's
// statistics into its own slots of a shared-memory ring with cp.async, two rows ahead of the one it
// works on; its column sums stay in registers across its group's rows; one row of partials a CTA.
// Vector-aligned rows of at most 2048 16-byte vectors (16384 features in 16-bit types, 8192 in f32).
template <typename T>
void backward_staged(const NormBackwardArgs<T>& args, cudaStream_t stream);
std::string backward_staged_limits(std::int64_t features, std::size_t element_bytes, bool vector_aligned);

// Scratch either backward rung needs: per-chunk fp32 column partials, one array per output.
std::size_t backward_workspace_bytes(Norm norm, std::int64_t rows, std::int64_t features);
// How many partial rows the workspace holds (the backward rungs' grids never exceed it).
std::int64_t backward_partial_count(std::int64_t rows, std::int64_t features);

// Shared by both backward rungs, one launch: dgamma[c] = the sum over p < count of
// partials[p * features + c], and dbeta (unless null) the same of the partials `stride` rows
// further, in the fixed order of core/column_sums.cuh, rounded once to T (zeros when count is 0).
template <typename T>
void sum_column_partials(const float* partials, std::int64_t stride, std::int64_t count, std::int64_t features,
                         T* dgamma, T* dbeta, cudaStream_t stream);

}  // namespace cudalab::norms_variants
