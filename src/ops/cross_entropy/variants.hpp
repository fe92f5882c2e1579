// The cross-entropy ladder's argument structs and launchers (the formulas:
// include/cudalab/cross_entropy.hpp). The library entry (cross_entropy.cpp) and the registry
// (register.cpp) fill the same structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace cudalab::cross_entropy_variants {

template <typename T>
struct CrossEntropyArgs {
  using Element = T;
  const T* logits = nullptr;
  const std::int64_t* target = nullptr;
  float* loss = nullptr;
  float* lse = nullptr;
  T* dlogits = nullptr;               // null: loss and lse only
  const float* grad_scale = nullptr;  // device; null: 1
  std::int64_t rows = 0, vocab = 0;
  std::int64_t ignore_index = -100;
  float label_smoothing = 0.0f;
  float z_loss = 0.0f;        // the weight of lse^2 in the loss
  float softcap = 0.0f;       // > 0: the logits taken as softcap * tanh(x / softcap); the baseline takes 0 only
  void* workspace = nullptr;  // the baseline's: workspace_bytes(rows, vocab)
};

template <typename T>
struct CrossEntropyBackwardArgs {
  using Element = T;
  const T* logits = nullptr;
  const std::int64_t* target = nullptr;
  const float* lse = nullptr;
  const float* dloss = nullptr;  // device; row i's at i * dloss_stride
  std::int64_t dloss_stride = 0;
  T* dlogits = nullptr;
  std::int64_t rows = 0, vocab = 0;
  std::int64_t ignore_index = -100;
  float label_smoothing = 0.0f;
  float z_loss = 0.0f;        // the weight of lse^2 in the loss
  float softcap = 0.0f;       // > 0: the logits taken as softcap * tanh(x / softcap); the baseline takes 0 only
  void* workspace = nullptr;  // the baseline's: workspace_bytes(rows, vocab)
};

// One block of 512 threads per row, element loads: an online (max, sum) pass over the row, then,
// with dlogits, a second pass that writes the gradient.
template <typename T>
void online_scalar(const CrossEntropyArgs<T>& args, cudaStream_t stream);
// The same with 16-byte loads and stores over each row's 16-byte body (element accesses for the
// few elements before and after it, or everywhere where dlogits lies differently from the logits).
template <typename T>
void online_vectorized(const CrossEntropyArgs<T>& args, cudaStream_t stream);
// One block of 1024 threads per SM walking the rows, 16-byte accesses as online_vectorized's: the
// rows in flight fit in L2, so the gradient pass re-reads them from there.
template <typename T>
void persistent(const CrossEntropyArgs<T>& args, cudaStream_t stream);
// online_vectorized's blocks of 512 threads, as many as fit at once, each keeping the row it reads
// in shared memory for the gradient's pass: the logits read from memory once. Rows of at most
// kResidentRowBytes (vocab x element bytes), and what the GPU's shared memory holds beside 2 KiB.
inline constexpr std::size_t kResidentRowBytes = std::size_t{200} << 10;
template <typename T>
void resident(const CrossEntropyArgs<T>& args, cudaStream_t stream);
std::string resident_limits(std::int64_t vocab, std::size_t element_bytes, std::size_t shared_memory_optin);
// One 1024-thread block an SM with two row buffers: the next row's body arrives by cp.async while
// this row's passes read the other. Rows of which two fit the block's shared memory beside 2 KiB;
// the gradient's rows as far from a 16-byte boundary as the logits' (bodies_match).
template <typename T>
void pipelined(const CrossEntropyArgs<T>& args, cudaStream_t stream);
std::string pipelined_limits(std::int64_t vocab, std::size_t element_bytes, std::size_t shared_memory_optin);
// One row buffer's bytes: the row, up to 16 bytes of alignment, whole 16-byte vectors.
std::int64_t pipelined_buffer_bytes(std::int64_t vocab, std::size_t element_bytes);

// Rows past one SM's shared memory (Hopper): a cluster of cluster_ctas(vocab) CTAs a row (2 up to
// kMaxClusterCtas), each keeping kClusterShareBytes or less of the row's 16-byte body in shared
// memory for the gradient's pass; the row's statistics, smoothed sum and target logit exchanged
// through distributed shared memory. The gradient's rows as far from a 16-byte boundary as the
// logits' (bodies_match).
inline constexpr int kClusterThreads = 256;
inline constexpr int kMaxClusterCtas = 8;
inline constexpr std::int64_t kClusterShareBytes = std::int64_t{64} << 10;
template <typename T>
void cluster(const CrossEntropyArgs<T>& args, cudaStream_t stream);
int cluster_ctas(std::int64_t vocab, std::size_t element_bytes);
std::string cluster_limits(std::int64_t vocab, std::size_t element_bytes, int compute_capability);
// The library call's rung, chosen by measurement (docs/cross_entropy.md, "The library's choice"):
// - rows too wide for two resident blocks an SM (16-bit vocabularies past 57,000, f32 past
//   28,500), no softcap, on compute capability 9.0 (where it was measured): cluster where every SM
//   has three rows or more, or half a row or less (a decoding batch: the row's shares spread over
//   SMs that persistent leaves idle); on an H200 1.02-1.36x the best other rung there in bf16,
//   1.20-1.44x in f32. Between those, and with a softcap (its tanh makes the 256-thread CTAs wait
//   on issue: 0.74x online_vectorized), the rule below;
// - where every SM has two rows or more (one row's loads overlap another's reductions), resident
//   if two of its blocks fit an SM's shared memory (on an H100 in bf16, 1.02-1.07x
//   online_vectorized at 4096-8192 rows of 32000-50304), else online_vectorized; persistent below
//   (on an H200 in bf16, 4096 rows of 32000 took 177 against 235 us, 64 rows of 128256 31.5
//   against 27.1 us).
enum class LibraryRung { resident, online_vectorized, persistent, cluster };
struct RowsAndGpu {
  std::int64_t rows, vocab;
  std::size_t element_bytes;
  bool capped;        // softcap > 0
  bool bodies_match;  // the gradient's rows as far from a 16-byte boundary as the logits'
  int sm_count, compute_capability;
  std::size_t shared_memory_optin;
};
LibraryRung library_rung(const RowsAndGpu& c);
template <typename T>
void library_choice(const CrossEntropyArgs<T>& args, cudaStream_t stream);

// The gradient from lse in one pass, laid out as `persistent`.
template <typename T>
void backward_persistent(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream);
// The backward as one flat array of rows x vocab: 16-byte vectors, two a thread loaded together,
// over a grid that fills the GPU, rows starting anywhere in a vector (one division a vector). The
// gradient must lie as far from a 16-byte boundary as the logits (bodies_match).
template <typename T>
void backward_flat(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream);

// x[i] *= *scale for i < n unless *scale is 1 (the library's cross_entropy_scale_gradient).
template <typename T>
void scale_gradient(T* x, std::int64_t n, const float* scale, cudaStream_t stream);

// The baseline: the passes eager PyTorch runs, each over memory, with the [rows, vocab]
// intermediate in an fp32 workspace of workspace_bytes(rows, vocab). Forward: log_softmax into the
// workspace, the loss picked and summed from it, then (for the gradient) exp of it less the smoothed
// target. Backward: the loss's gradient spread over the classes into the workspace (nll_loss's
// backward), then log_softmax's backward from it.
inline constexpr char kPlainOnly[] = "takes no z-loss or softcap (eager's passes of plain cross-entropy)";
inline std::size_t workspace_bytes(std::int64_t rows, std::int64_t vocab) {
  return static_cast<std::size_t>(rows * vocab) * sizeof(float);
}
template <typename T>
void unfused(const CrossEntropyArgs<T>& args, cudaStream_t stream);
template <typename T>
void backward_unfused(const CrossEntropyBackwardArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::cross_entropy_variants
