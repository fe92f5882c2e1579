// cudalab::gemm and cudalab::gemm_batched for BF16 and FP16: argument checks, then the fastest
// tensor-core rung that takes the shape on this GPU (library_choice.cpp says which, and why).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/arguments.hpp"
#include "core/column_sums.cuh"
#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/activations.hpp"
#include "cudalab/error.hpp"
#include "cudalab/gemm.hpp"
#include "ops/bias_act/activation.cuh"
#include "ops/gemm/arguments.hpp"
#include "ops/gemm/mma_sync.cuh"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab {
namespace {

namespace v = gemm_variants;

template <typename T>
v::OperandAlignment alignment_of(const v::GemmArgs<T>& args) {
  return {is_aligned16(args.a), is_aligned16(args.b), is_aligned16(args.c)};
}

// The rung `rung` names, on `args` (a fused epilogue the rung lacks as a second pass: run_unfused).
template <typename T>
void run_rung(v::LibraryRung rung, const v::GemmArgs<T>& args, Workspace& workspace, cudaStream_t stream);

// The elements of the line-pitched copies of A and B that aligned_copies makes (0 for an
// operand it leaves).
struct CopiedElements {
  std::size_t a, b;
};
template <typename T>
CopiedElements copied_elements(const v::GemmArgs<T>& args, v::OperandAlignment alignment) {
  const v::GemmShape copied = v::with_aligned_pitches(v::shape_of(args), alignment);
  const bool copy_a = copied.lda != args.lda || !alignment.a, copy_b = copied.ldb != args.ldb || !alignment.b;
  const std::int64_t a_rows = args.a_transposed ? args.k : args.m, b_rows = args.b_transposed ? args.n : args.k;
  return {copy_a ? static_cast<std::size_t>(a_rows * copied.lda) : 0,
          copy_b ? static_cast<std::size_t>(b_rows * copied.ldb) : 0};
}

// The misaligned A or B copied into scratch whose rows start on 128-byte lines (cudaMemcpy2DAsync, a copy's
// time), then the rung the copies get; C is written where it lies. Where the stream-ordered
// allocator has no memory for the scratch, the rung the shape gets without copies.
template <typename T>
void run_on_aligned_copies(const v::GemmArgs<T>& args, v::OperandAlignment alignment, const CurrentGpu& gpu,
                           Workspace& workspace, cudaStream_t stream) {
  const v::GemmShape copied = v::with_aligned_pitches(v::shape_of(args), alignment);
  const CopiedElements elements = copied_elements(args, alignment);
  void* buffer = nullptr;
  try {
    buffer = workspace.reserve((elements.a + elements.b) * sizeof(T));
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::out_of_memory) throw;
    (void)cudaGetLastError();  // the failed allocation's error; nothing was enqueued
    return run_rung(v::library_rung(v::shape_of(args), alignment, gpu.compute_capability, gpu.sm_count, false), args,
                    workspace, stream);
  }
  v::GemmArgs<T> aligned = args;
  T* a_copy = static_cast<T*>(buffer);
  T* b_copy = a_copy + elements.a;  // a multiple of 8 elements: 16-byte aligned
  const auto copy = [&](T* to, std::int64_t to_ld, const T* from, std::int64_t from_ld, std::int64_t rows,
                        std::int64_t cols) {
    CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(to, to_ld * sizeof(T), from, from_ld * sizeof(T), cols * sizeof(T), rows,
                                         cudaMemcpyDeviceToDevice, stream));
  };
  if (elements.a != 0) {
    copy(a_copy, copied.lda, args.a, args.lda, args.a_transposed ? args.k : args.m,
         args.a_transposed ? args.m : args.k);
    aligned.a = a_copy, aligned.lda = copied.lda;
  }
  if (elements.b != 0) {
    copy(b_copy, copied.ldb, args.b, args.ldb, args.b_transposed ? args.n : args.k,
         args.b_transposed ? args.k : args.n);
    aligned.b = b_copy, aligned.ldb = copied.ldb;
  }
  const v::OperandAlignment now{true, true, alignment.c};
  run_rung(v::library_rung(v::shape_of(aligned), now, gpu.compute_capability, gpu.sm_count, false), aligned, workspace,
           stream);
}

// Row r of C (c_in, rows ldc_in apart; 0: one row for all) into row r of D (args.c).
template <typename T>
__global__ void broadcast_row_kernel(const T* __restrict__ row, T* __restrict__ d, std::int64_t ldd, std::int64_t m,
                                     std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < m * n; i += global_thread_count()) {
    const std::int64_t r = i / n;
    d[r * ldd + (i - r * n)] = row[i - r * n];
  }
}

// `args` as a rung that reads C in place takes them: where C is read from elsewhere (c_in), D filled
// with it first (one copy; a broadcast for a bias row).
template <typename T>
v::GemmArgs<T> in_place(v::GemmArgs<T> args, cudaStream_t stream) {
  if (args.c_in != nullptr && args.beta != 0.0f) {
    if (args.ldc_in == 0) {
      constexpr int kThreads = 256;
      broadcast_row_kernel<T>
          <<<resident_grid_size(broadcast_row_kernel<T>, kThreads, args.m * args.n), kThreads, 0, stream>>>(
              args.c_in, args.c, args.ldc, args.m, args.n);
      CUDALAB_CHECK_LAUNCH();
    } else {
      CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(args.c, args.ldc * sizeof(T), args.c_in, args.ldc_in * sizeof(T),
                                           args.n * sizeof(T), args.m, cudaMemcpyDeviceToDevice, stream));
    }
  }
  args.c_in = nullptr;
  return args;
}

// `args` as the Hopper tile rungs take them: C read where it lies when it starts on a 4-byte
// boundary with an even pitch (their epilogues load pairs), else in_place.
template <typename T>
v::GemmArgs<T> for_hopper_epilogue(const v::GemmArgs<T>& args, cudaStream_t stream) {
  const bool pairs = reinterpret_cast<std::uintptr_t>(args.c_in) % 4 == 0 && args.ldc_in % 2 == 0;
  return args.c_in == nullptr || pairs ? args : in_place(args, stream);
}

// Whether `rung` applies args.fused in its own epilogue: the Hopper tile rungs storing C by TMA, A
// stored m x k (their kernels with the fused epilogues built in), and the derivative or G as TMA
// takes them (16-byte aligned; G's rows a multiple of 8 elements apart).
template <typename T>
bool fuses_epilogue(v::LibraryRung rung, const v::GemmArgs<T>& args) {
  const bool tile_rung = rung == v::LibraryRung::wgmma_cluster || rung == v::LibraryRung::wgmma_persistent ||
                         rung == v::LibraryRung::wgmma_mid || rung == v::LibraryRung::wgmma_streamk ||
                         rung == v::LibraryRung::wgmma_small || rung == v::LibraryRung::wgmma_pingpong;
  const bool g_by_tma = args.fused.kind != v::FusedKind::kGradient || (is_aligned16(args.c_in) && args.ldc_in % 8 == 0);
  return tile_rung && !args.a_transposed && v::c_storable_by_tma(args) && g_by_tma &&
         is_aligned16(args.fused.derivative);
}

// The unfused epilogues' second pass over D (the plain product), its rows blockIdx.y and up,
// gridDim.y apart. kActivation: d = act(d), and act'(d) to `derivative` (rows ldd apart) unless
// null. kGradient: d *= g (rows ldg apart) over a strip of 16 rows a thread, with the strip's
// column sum to strip_sums (when not null).
template <typename T, typename Act, v::FusedKind kKind>
__global__ void second_pass_kernel(T* d, std::int64_t ldd, T* derivative, const T* g, std::int64_t ldg, std::int64_t m,
                                   std::int64_t n, float* strip_sums) {
  const std::int64_t col = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (col >= n) return;
  const std::int64_t rows_per_item = kKind == v::FusedKind::kGradient ? 16 : 1;
  for (std::int64_t item = blockIdx.y; item * rows_per_item < m; item += gridDim.y) {
    float sum = 0.0f;
    for (std::int64_t row = item * rows_per_item; row < m && row < (item + 1) * rows_per_item; ++row) {
      const float v = v::to_float(d[row * ldd + col]);
      float value;
      if constexpr (kKind == v::FusedKind::kActivation) {
        if (derivative != nullptr) {
          float slope;
          value = Act::forward_and_derivative(v, slope);
          derivative[row * ldd + col] = v::from_float<T>(slope);
        } else {
          value = Act::forward(v);
        }
      } else {
        value = v * v::to_float(g[row * ldg + col]);
        sum += value;
      }
      d[row * ldd + col] = v::from_float<T>(value);
    }
    if (kKind == v::FusedKind::kGradient && strip_sums != nullptr) strip_sums[item * n + col] = sum;
  }
}

// A fused epilogue on a rung without it: the plain product into D (alpha op(A) op(B) + beta C for
// an activation, alpha op(A) op(B) for a gradient), then second_pass_kernel.
template <typename T>
void run_unfused(v::LibraryRung rung, const v::GemmArgs<T>& args, Workspace& workspace, cudaStream_t stream) {
  v::GemmArgs<T> plain = args;
  plain.fused = {};
  const bool gradient = args.fused.kind == v::FusedKind::kGradient;
  if (gradient) {
    plain.c_in = nullptr;
    plain.beta = 0.0f;
  }
  run_rung(rung, plain, workspace, stream);
  constexpr int kThreads = 128;
  constexpr std::int64_t kMostRows = 65535;
  const std::int64_t items = gradient ? ceil_div<std::int64_t>(args.m, 16) : args.m;
  const dim3 grid(static_cast<unsigned>(ceil_div<std::int64_t>(args.n, kThreads)),
                  static_cast<unsigned>(std::min(items, kMostRows)));
  if (gradient) {
    // No activation: Relu stands in for the template's Act, which this kind never calls.
    second_pass_kernel<T, bias_act_variants::Relu, v::FusedKind::kGradient><<<grid, kThreads, 0, stream>>>(
        args.c, args.ldc, nullptr, args.c_in, args.ldc_in, args.m, args.n, args.fused.strip_sums);
    CUDALAB_CHECK_LAUNCH();
    return;
  }
  bias_act_variants::with_activation<T>(static_cast<Activation>(args.fused.activation), [&](auto act) {
    second_pass_kernel<T, decltype(act), v::FusedKind::kActivation>
        <<<grid, kThreads, 0, stream>>>(args.c, args.ldc, args.fused.derivative, nullptr, 0, args.m, args.n, nullptr);
    CUDALAB_CHECK_LAUNCH();
  });
}

// Whether `rung` adds A's rows over k beside its k-loop (GemmArgs::a_row_sums): the persistent
// rungs (large, mid and small tiles, stream-K), an A stored k x m, a single product.
template <typename T>
bool sums_a_rows(v::LibraryRung rung, const v::GemmArgs<T>& args) {
  const bool persistent = rung == v::LibraryRung::wgmma_persistent || rung == v::LibraryRung::wgmma_mid ||
                          rung == v::LibraryRung::wgmma_small || rung == v::LibraryRung::wgmma_streamk;
  return persistent && args.a_transposed && args.batch == 1 && args.k > 0;
}

template <typename T>
void run_rung(v::LibraryRung rung, const v::GemmArgs<T>& args, Workspace& workspace, cudaStream_t stream) {
  CUDALAB_REQUIRE(args.a_row_sums == nullptr || sums_a_rows(rung, args),
                  "cudalab::gemm: sums of A's rows are made on the persistent rungs only, for A stored k x m");
  if (args.fused.kind != v::FusedKind::kNone && rung != v::LibraryRung::aligned_copies && !fuses_epilogue(rung, args))
    return run_unfused(rung, args, workspace, stream);
  switch (rung) {
    case v::LibraryRung::decode_gemv: return v::decode_gemv(in_place(args, stream), stream);
    case v::LibraryRung::decode_mma: return v::decode_mma(in_place(args, stream), stream);
    case v::LibraryRung::decode_wgmma: return v::decode_wgmma(args, stream);  // reads c_in where it lies
    case v::LibraryRung::wgmma_cluster: return v::wgmma_cluster(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_persistent: return v::wgmma_persistent(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_mid: return v::wgmma_mid(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_pingpong: return v::wgmma_pingpong(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_streamk: return v::wgmma_streamk(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::aligned_copies:
      return run_on_aligned_copies(args, alignment_of(args), current_gpu(), workspace, stream);
    case v::LibraryRung::mma_pipelined: return v::mma_pipelined(in_place(args, stream), stream);
    case v::LibraryRung::mma_swizzled: return v::mma_swizzled(in_place(args, stream), stream);
    case v::LibraryRung::wgmma_small: return v::wgmma_small(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::mma_small: return v::mma_small(in_place(args, stream), stream);
  }
}

// The rung the library takes for `args` on the current GPU.
template <typename T>
v::LibraryRung rung_for(const v::GemmArgs<T>& args) {
  const CurrentGpu gpu = current_gpu();
  const v::GemmShape shape = v::shape_of(args);
  return v::epilogue_rung(v::library_rung(shape, alignment_of(args), gpu.compute_capability, gpu.sm_count), shape,
                          args.beta != 0.0f, args.fused.kind != v::FusedKind::kNone, gpu.compute_capability);
}

template <typename T>
void run(v::GemmArgs<T> args, Workspace& workspace, cudaStream_t stream) {
  validate_gemm_args(args);
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.batch == 1) args.stride_a = args.stride_b = args.stride_c = 0;
  run_rung(rung_for(args), args, workspace, stream);
}

template <typename T>
void run(const v::GemmArgs<T>& args, cudaStream_t stream) {
  StreamOrderedWorkspace workspace(stream);  // handed back on the stream after the product
  run(args, workspace, stream);
}

// Whether the m x n matrices at x (rows ldx apart; 0: one row read by all) and y (ldy) share no byte.
template <typename T>
bool disjoint(const T* x, std::int64_t ldx, const T* y, std::int64_t ldy, std::int64_t m, std::int64_t n) {
  if (m == 0 || n == 0) return true;
  const auto at = [](const T* p) { return reinterpret_cast<std::uintptr_t>(p); };
  const auto end = [&](const T* p, std::int64_t ld) {
    return at(p) + static_cast<std::uintptr_t>((m - 1) * ld + n) * sizeof(T);
  };
  return end(x, ldx) <= at(y) || end(y, ldy) <= at(x);
}

// `args` (D as args.c) with beta's C read from `c` (rows ldc apart; 0: one row for every row, a
// bias), checked; C == D (ldc == ldd) is the in-place product.
template <typename T>
v::GemmArgs<T> with_c(v::GemmArgs<T> args, const T* c, std::int64_t ldc, const char* call) {
  if (args.beta == 0.0f || (c == args.c && ldc == args.ldc)) return args;
  const std::string name = call;
  const bool work = args.m > 0 && args.n > 0;
  CUDALAB_REQUIRE(!work || c != nullptr, name + ": C is null (beta != 0 reads it)");
  CUDALAB_REQUIRE(ldc == 0 || ldc >= args.n, name + ": ldc=" + std::to_string(ldc) + " is below n=" +
                                                 std::to_string(args.n) + " (0: one row of C for every row)");
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(c) % sizeof(T) == 0, name + ": C is not aligned to its elements");
  CUDALAB_REQUIRE(disjoint(c, ldc, args.c, args.ldc, args.m, args.n),
                  name + ": D must not overlap C (unless it is C, ldc == ldd)");
  args.c_in = c, args.ldc_in = ldc;
  return args;
}

void require_activation(Activation activation, const char* call) {
  CUDALAB_REQUIRE(is_activation(static_cast<long long>(activation)),
                  std::string(call) + ": activation must be " + activation_values() + ", got " +
                      std::to_string(static_cast<long long>(activation)));
}

// Bytes of a gradient's strip sums: a ceil(m / 16) x n fp32 matrix, in 256-byte units.
std::size_t strip_sum_bytes(std::int64_t m, std::int64_t n) {
  if (m <= 0 || n <= 0) return 0;
  const auto bytes = static_cast<std::size_t>(ceil_div<std::int64_t>(m, 16) * n) * sizeof(float);
  return (bytes + 255) / 256 * 256;
}

template <typename T>
v::GemmArgs<T> make_args(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a,
                         std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b,
                         float beta, T* c, std::int64_t ldc, std::int64_t stride_c, Transpose transpose_b,
                         Transpose transpose_a) {
  v::GemmArgs<T> args;
  args.m = m, args.n = n, args.k = k, args.alpha = alpha, args.beta = beta;
  args.a = a, args.lda = lda, args.b = b, args.ldb = ldb, args.c = c, args.ldc = ldc;
  args.b_transposed = transpose_b == Transpose::yes;
  args.a_transposed = transpose_a == Transpose::yes;
  args.batch = batch, args.stride_a = stride_a, args.stride_b = stride_b, args.stride_c = stride_c;
  return args;
}

}  // namespace

template <typename T, typename>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, T* c, std::int64_t ldc, cudaStream_t stream, Transpose transpose_b,
          Transpose transpose_a) {
  run(make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, transpose_b, transpose_a), stream);
}

template <typename T, typename>
std::size_t gemm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
                                 const T* b, std::int64_t ldb, const T* c, std::int64_t ldc, Transpose transpose_b,
                                 Transpose transpose_a) {
  const v::GemmArgs<T> args =
      make_args(1, m, n, k, 1.0f, a, lda, 0, b, ldb, 0, 0.0f, const_cast<T*>(c), ldc, 0, transpose_b, transpose_a);
  validate_gemm_args(args);
  if (m == 0 || n == 0) return 0;
  const CurrentGpu gpu = current_gpu();
  const v::OperandAlignment alignment = alignment_of(args);
  if (v::library_rung(v::shape_of(args), alignment, gpu.compute_capability, gpu.sm_count) !=
      v::LibraryRung::aligned_copies)
    return 0;
  const CopiedElements elements = copied_elements(args, alignment);
  return (elements.a + elements.b) * sizeof(T);
}

template <typename T, typename>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, T* c, std::int64_t ldc, void* workspace, std::size_t workspace_bytes,
          cudaStream_t stream, Transpose transpose_b, Transpose transpose_a) {
  CallerWorkspace scratch(workspace, workspace_bytes, "cudalab::gemm", "cudalab::gemm_workspace_bytes");
  run(make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, transpose_b, transpose_a), scratch, stream);
}

template <typename T, typename>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, const T* c, std::int64_t ldc, T* d, std::int64_t ldd, void* workspace,
          std::size_t workspace_bytes, cudaStream_t stream, Transpose transpose_b, Transpose transpose_a) {
  CallerWorkspace scratch(workspace, workspace_bytes, "cudalab::gemm", "cudalab::gemm_workspace_bytes");
  run(with_c(make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, d, ldd, 0, transpose_b, transpose_a), c, ldc,
             "gemm"),
      scratch, stream);
}

template <typename T, typename>
void gemm_activation(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                     const T* b, std::int64_t ldb, float beta, const T* c, std::int64_t ldc, T* d, std::int64_t ldd,
                     Activation activation, T* derivative, void* workspace, std::size_t workspace_bytes,
                     cudaStream_t stream, Transpose transpose_b, Transpose transpose_a) {
  require_activation(activation, "gemm_activation");
  v::GemmArgs<T> args =
      with_c(make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, d, ldd, 0, transpose_b, transpose_a), c, ldc,
             "gemm_activation");
  if (derivative != nullptr) {
    CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(derivative) % sizeof(T) == 0,
                    "gemm_activation: derivative is not aligned to its elements");
    CUDALAB_REQUIRE(disjoint(derivative, ldd, d, ldd, m, n), "gemm_activation: derivative must not overlap D");
    CUDALAB_REQUIRE(beta == 0.0f || disjoint(derivative, ldd, c, ldc, m, n),
                    "gemm_activation: derivative must not overlap C");
  }
  args.fused = {v::FusedKind::kActivation, static_cast<int>(activation), derivative, nullptr};
  CallerWorkspace scratch(workspace, workspace_bytes, "cudalab::gemm_activation", "cudalab::gemm_workspace_bytes");
  run(args, scratch, stream);
}

template <typename T, typename>
std::size_t gemm_activation_backward_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                                                     std::int64_t lda, const T* b, std::int64_t ldb, const T* d,
                                                     std::int64_t ldd, Transpose transpose_b, Transpose transpose_a) {
  return strip_sum_bytes(m, n) + gemm_workspace_bytes(m, n, k, a, lda, b, ldb, d, ldd, transpose_b, transpose_a);
}

template <typename T, typename>
void gemm_activation_backward(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                              const T* b, std::int64_t ldb, const T* derivative, std::int64_t ld_derivative, T* d,
                              std::int64_t ldd, T* bias_gradient, void* workspace, std::size_t workspace_bytes,
                              cudaStream_t stream, Transpose transpose_b, Transpose transpose_a) {
  const bool work = m > 0 && n > 0;
  CUDALAB_REQUIRE(!work || derivative != nullptr, "gemm_activation_backward: derivative is null");
  CUDALAB_REQUIRE(!work || ld_derivative >= n, "gemm_activation_backward: ld_derivative=" +
                                                   std::to_string(ld_derivative) + " is below n=" + std::to_string(n));
  CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(derivative) % sizeof(T) == 0,
                  "gemm_activation_backward: derivative is not aligned to its elements");
  CUDALAB_REQUIRE(!work || disjoint(derivative, ld_derivative, d, ldd, m, n),
                  "gemm_activation_backward: D must not overlap derivative");
  CUDALAB_REQUIRE(
      n == 0 || bias_gradient == nullptr || reinterpret_cast<std::uintptr_t>(bias_gradient) % sizeof(T) == 0,
      "gemm_activation_backward: bias_gradient is not aligned to its elements");
  v::GemmArgs<T> args = make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, 0.0f, d, ldd, 0, transpose_b, transpose_a);
  args.c_in = derivative, args.ldc_in = ld_derivative;
  const std::size_t strips = bias_gradient != nullptr ? strip_sum_bytes(m, n) : 0;
  CUDALAB_REQUIRE(strips == 0 || (workspace != nullptr && workspace_bytes >= strips),
                  "cudalab::gemm_activation_backward: the workspace holds " + std::to_string(workspace_bytes) +
                      " bytes, the call needs at least " + std::to_string(strips) +
                      " (see cudalab::gemm_activation_backward_workspace_bytes)");
  auto* strip_sums = static_cast<float*>(workspace);
  args.fused = {v::FusedKind::kGradient, 0, nullptr, strips != 0 ? strip_sums : nullptr};
  CallerWorkspace scratch(strips != 0 ? static_cast<std::uint8_t*>(workspace) + strips : workspace,
                          workspace_bytes - strips, "cudalab::gemm_activation_backward",
                          "cudalab::gemm_activation_backward_workspace_bytes");
  run(args, scratch, stream);
  // The strips' sums added in a fixed order (m == 0: no strips, zeros).
  if (bias_gradient != nullptr && n > 0)
    launch_column_partials_sum(strip_sums, ceil_div<std::int64_t>(m, 16), n, bias_gradient, stream);
}

// Bytes of the column-sum pass's scratch for A stored k x m (a bias gradient summed apart), in
// 256-byte units.
std::size_t a_column_sum_bytes(std::int64_t k, std::int64_t m) {
  if (k <= 0 || m <= 0) return 0;
  return (bias_act_backward_workspace_bytes(k, m) + 255) / 256 * 256;
}

template <typename T, typename>
std::size_t gemm_weight_gradient_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
                                                 std::int64_t ldb, const T* d, std::int64_t ldd) {
  return a_column_sum_bytes(k, m) +
         gemm_workspace_bytes(m, n, k, a, std::max<std::int64_t>(m, 1), b, ldb, d, ldd, Transpose::no, Transpose::yes);
}

template <typename T, typename>
void gemm_weight_gradient(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, const T* b,
                          std::int64_t ldb, T* d, std::int64_t ldd, T* bias_gradient, void* workspace,
                          std::size_t workspace_bytes, cudaStream_t stream) {
  constexpr const char* call = "gemm_weight_gradient";
  v::GemmArgs<T> args = make_args(1, m, n, k, alpha, a, std::max<std::int64_t>(m, 1), 0, b, ldb, 0, 0.0f, d, ldd, 0,
                                  Transpose::no, Transpose::yes);
  validate_gemm_args(args);
  const std::int64_t d_span = m == 0 || n == 0 ? 0 : (m - 1) * ldd + n;
  const std::int64_t b_span = k == 0 || n == 0 ? 0 : (k - 1) * ldb + n;
  require_arrays(call, {{a, checked_product(call, "k * m", {k, m}), sizeof(T), "A"}, {b, b_span, sizeof(T), "B"}},
                 {{bias_gradient, m, sizeof(T), "bias_gradient"}, {d, d_span, sizeof(T), "D"}});
  const std::size_t sum_bytes = a_column_sum_bytes(k, m);
  CUDALAB_REQUIRE(sum_bytes == 0 || (workspace != nullptr && workspace_bytes >= sum_bytes),
                  std::string("cudalab::") + call + ": the workspace holds " + std::to_string(workspace_bytes) +
                      " bytes, the call needs at least " + std::to_string(sum_bytes) +
                      " (see cudalab::gemm_weight_gradient_workspace_bytes)");
  CallerWorkspace scratch(sum_bytes != 0 ? static_cast<std::uint8_t*>(workspace) + sum_bytes : workspace,
                          workspace_bytes - sum_bytes, "cudalab::gemm_weight_gradient",
                          "cudalab::gemm_weight_gradient_workspace_bytes");
  if (m == 0) return;  // no rows of D, no sums
  if (n > 0 && k > 0) {
    const v::LibraryRung rung = rung_for(args);
    if (sums_a_rows(rung, args)) {  // the product's own k-loop adds A's rows
      args.a_row_sums = bias_gradient;
      run_rung(rung, args, scratch, stream);
      return;
    }
  }
  run(args, scratch, stream);
  cudalab::bias_gradient(a, bias_gradient, k, m, workspace, sum_bytes, stream);  // k == 0: zeros
}

template <typename T, typename>
void gemm_batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b,
                  float beta, T* c, std::int64_t ldc, std::int64_t stride_c, cudaStream_t stream, Transpose transpose_b,
                  Transpose transpose_a) {
  run(make_args(batch, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, transpose_b,
                transpose_a),
      stream);
}

#define CUDALAB_GEMM_ENTRIES(T, x, y)                                                                                 \
  template void gemm(std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t, const T*, std::int64_t, \
                     float, T*, std::int64_t, cudaStream_t, Transpose, Transpose);                                    \
  template std::size_t gemm_workspace_bytes(std::int64_t, std::int64_t, std::int64_t, const T*, std::int64_t,         \
                                            const T*, std::int64_t, const T*, std::int64_t, Transpose, Transpose);    \
  template void gemm(std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t, const T*, std::int64_t, \
                     float, T*, std::int64_t, void*, std::size_t, cudaStream_t, Transpose, Transpose);                \
  template void gemm(std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t, const T*, std::int64_t, \
                     float, const T*, std::int64_t, T*, std::int64_t, void*, std::size_t, cudaStream_t, Transpose,    \
                     Transpose);                                                                                      \
  template void gemm_activation(std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t, const T*,    \
                                std::int64_t, float, const T*, std::int64_t, T*, std::int64_t, Activation, T*, void*, \
                                std::size_t, cudaStream_t, Transpose, Transpose);                                     \
  template std::size_t gemm_activation_backward_workspace_bytes(std::int64_t, std::int64_t, std::int64_t, const T*,   \
                                                                std::int64_t, const T*, std::int64_t, const T*,       \
                                                                std::int64_t, Transpose, Transpose);                  \
  template void gemm_activation_backward(std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t,     \
                                         const T*, std::int64_t, const T*, std::int64_t, T*, std::int64_t, T*, void*, \
                                         std::size_t, cudaStream_t, Transpose, Transpose);                            \
  template std::size_t gemm_weight_gradient_workspace_bytes(std::int64_t, std::int64_t, std::int64_t, const T*,       \
                                                            const T*, std::int64_t, const T*, std::int64_t);          \
  template void gemm_weight_gradient(std::int64_t, std::int64_t, std::int64_t, float, const T*, const T*,             \
                                     std::int64_t, T*, std::int64_t, T*, void*, std::size_t, cudaStream_t);           \
  template void gemm_batched(std::int64_t, std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t,   \
                             std::int64_t, const T*, std::int64_t, std::int64_t, float, T*, std::int64_t,             \
                             std::int64_t, cudaStream_t, Transpose, Transpose);
CUDALAB_GEMM_TENSOR_CORE_ELEMENTS(CUDALAB_GEMM_ENTRIES, , )

}  // namespace cudalab
