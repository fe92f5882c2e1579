// cudalab::gemm and cudalab::gemm_batched for BF16 and FP16: argument checks, then the fastest
// tensor-core rung that takes the shape on this GPU (library_choice.cpp says which, and why).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "cudalab/gemm.hpp"
#include "ops/gemm/arguments.hpp"
#include "ops/gemm/tensor_core_variants.hpp"

namespace cudalab {
namespace {

namespace v = gemm_variants;

template <typename T>
v::OperandAlignment alignment_of(const v::GemmArgs<T>& args) {
  return {is_aligned16(args.a), is_aligned16(args.b), is_aligned16(args.c)};
}

// The rung `rung` names, on `args`.
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

template <typename T>
void run_rung(v::LibraryRung rung, const v::GemmArgs<T>& args, Workspace& workspace, cudaStream_t stream) {
  switch (rung) {
    case v::LibraryRung::decode_gemv: return v::decode_gemv(in_place(args, stream), stream);
    case v::LibraryRung::decode_mma: return v::decode_mma(in_place(args, stream), stream);
    case v::LibraryRung::decode_wgmma: return v::decode_wgmma(args, stream);  // reads c_in where it lies
    case v::LibraryRung::wgmma_cluster: return v::wgmma_cluster(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_persistent: return v::wgmma_persistent(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_mid: return v::wgmma_mid(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::wgmma_streamk: return v::wgmma_streamk(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::aligned_copies:
      return run_on_aligned_copies(args, alignment_of(args), current_gpu(), workspace, stream);
    case v::LibraryRung::mma_pipelined: return v::mma_pipelined(in_place(args, stream), stream);
    case v::LibraryRung::mma_swizzled: return v::mma_swizzled(in_place(args, stream), stream);
    case v::LibraryRung::wgmma_small: return v::wgmma_small(for_hopper_epilogue(args, stream), stream);
    case v::LibraryRung::mma_small: return v::mma_small(in_place(args, stream), stream);
  }
}

template <typename T>
void run(v::GemmArgs<T> args, Workspace& workspace, cudaStream_t stream) {
  validate_gemm_args(args);
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.batch == 1) args.stride_a = args.stride_b = args.stride_c = 0;
  const CurrentGpu gpu = current_gpu();
  run_rung(v::library_rung(v::shape_of(args), alignment_of(args), gpu.compute_capability, gpu.sm_count), args,
           workspace, stream);
}

template <typename T>
void run(const v::GemmArgs<T>& args, cudaStream_t stream) {
  StreamOrderedWorkspace workspace(stream);  // handed back on the stream after the product
  run(args, workspace, stream);
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
  v::GemmArgs<T> args = make_args(1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, d, ldd, 0, transpose_b, transpose_a);
  if (beta != 0.0f && !(c == d && ldc == ldd)) {
    const bool work = m > 0 && n > 0;
    CUDALAB_REQUIRE(!work || c != nullptr, "gemm: C is null (beta != 0 reads it)");
    CUDALAB_REQUIRE(ldc == 0 || ldc >= n, "gemm: ldc=" + std::to_string(ldc) + " is below n=" + std::to_string(n) +
                                              " (0: one row of C for every row)");
    CUDALAB_REQUIRE(reinterpret_cast<std::uintptr_t>(c) % sizeof(T) == 0, "gemm: C is not aligned to its elements");
    if (work) {
      const auto at = [](const T* x) { return reinterpret_cast<std::uintptr_t>(x); };
      const std::uintptr_t c_end = at(c) + static_cast<std::uintptr_t>((m - 1) * ldc + n) * sizeof(T);
      const std::uintptr_t d_end = at(d) + static_cast<std::uintptr_t>((m - 1) * ldd + n) * sizeof(T);
      CUDALAB_REQUIRE(c_end <= at(d) || d_end <= at(c), "gemm: D must not overlap C (unless it is C, ldc == ldd)");
    }
    args.c_in = c, args.ldc_in = ldc;
  }
  CallerWorkspace scratch(workspace, workspace_bytes, "cudalab::gemm", "cudalab::gemm_workspace_bytes");
  run(args, scratch, stream);
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
  template void gemm_batched(std::int64_t, std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t,   \
                             std::int64_t, const T*, std::int64_t, std::int64_t, float, T*, std::int64_t,             \
                             std::int64_t, cudaStream_t, Transpose, Transpose);
CUDALAB_GEMM_TENSOR_CORE_ELEMENTS(CUDALAB_GEMM_ENTRIES, , )

}  // namespace cudalab
