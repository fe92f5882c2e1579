// cudalab::gemm and cudalab::gemm_batched for BF16 and FP16: argument checks, then the fastest
// tensor-core rung that takes the shape on this GPU (measurements in the comment of pick_rung).
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

constexpr int kHopper = 90;  // the compute capability of the wgmma rungs

// The big-tile Hopper rung for a shape that already passed its limits: the cluster one from six
// waves of 128x256 tiles, the persistent one below (see pick_rung).
template <typename T>
void run_big_hopper_rung(const v::GemmArgs<T>& args, std::int64_t big_tiles, int sm_count, cudaStream_t stream) {
  if (big_tiles >= 6 * std::int64_t{sm_count} && v::wgmma_cluster_limits(v::shape_of(args), kHopper).empty())
    return v::wgmma_cluster(args, stream);
  v::wgmma_persistent(args, stream);
}

// A shape the TMA rungs take but for A's or B's pitch or address (rows that do not start on
// 16-byte boundaries, as at 4095 x 4097 x 4093): the misaligned operands copied into a
// stream-ordered buffer of 16-byte pitches (cudaMemcpy2DAsync, about a copy's time), then the
// big-tile rung on the copies; C is written where it lies. False, with nothing run, where the
// buffer cannot be had (the caller takes an any-alignment rung instead). On an H200 that shape
// took 1.23 ms on mma_swizzled, against cuBLAS's 0.89 and 0.185 ms for 4096^3 on wgmma_persistent.
template <typename T>
bool run_on_aligned_copies(const v::GemmArgs<T>& args, std::int64_t big_tiles, int sm_count, cudaStream_t stream) {
  const auto round8 = [](std::int64_t x) { return (x + 7) / 8 * 8; };
  const std::int64_t a_rows = args.a_transposed ? args.k : args.m, a_cols = args.a_transposed ? args.m : args.k;
  const std::int64_t b_rows = args.b_transposed ? args.n : args.k, b_cols = args.b_transposed ? args.k : args.n;
  const bool copy_a = args.lda % 8 != 0 || !is_aligned16(args.a);
  const bool copy_b = args.ldb % 8 != 0 || !is_aligned16(args.b);
  v::GemmArgs<T> aligned = args;
  if (copy_a) aligned.lda = round8(a_cols);
  if (copy_b) aligned.ldb = round8(b_cols);
  if (!v::wgmma_persistent_limits(v::shape_of(aligned), kHopper).empty()) return false;
  const std::size_t a_elements = copy_a ? static_cast<std::size_t>(a_rows * aligned.lda) : 0;
  const std::size_t b_elements = copy_b ? static_cast<std::size_t>(b_rows * aligned.ldb) : 0;
  StreamOrderedWorkspace scratch(stream);  // handed back on the stream after the product
  void* buffer = nullptr;
  try {
    buffer = scratch.reserve((a_elements + b_elements) * sizeof(T));
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::out_of_memory) throw;
    (void)cudaGetLastError();  // the failed allocation's error; nothing was enqueued
    return false;
  }
  T* a_copy = static_cast<T*>(buffer);
  T* b_copy = a_copy + a_elements;  // a_elements is a multiple of 8: 16-byte aligned
  const auto copy = [&](T* to, std::int64_t to_ld, const T* from, std::int64_t from_ld, std::int64_t rows,
                        std::int64_t cols) {
    CUDALAB_CUDA_CHECK(cudaMemcpy2DAsync(to, to_ld * sizeof(T), from, from_ld * sizeof(T), cols * sizeof(T), rows,
                                         cudaMemcpyDeviceToDevice, stream));
  };
  if (copy_a) {
    copy(a_copy, aligned.lda, args.a, args.lda, a_rows, a_cols);
    aligned.a = a_copy;
  }
  if (copy_b) {
    copy(b_copy, aligned.ldb, args.b, args.ldb, b_rows, b_cols);
    aligned.b = b_copy;
  }
  run_big_hopper_rung(aligned, big_tiles, sm_count, stream);
  return true;
}

// The choice, from the H100 measurements in docs/gemm-tensor-cores.md (bf16, same process as
// cuBLAS): the big-tile rungs (128x256 tiles, a deep pipeline) need about half a wave of those
// tiles and a k long enough to fill the pipeline: at 2048^3 (128 tiles) wgmma_persistent ran
// 543 TFLOP/s against mma_small's 229, while at 1024^3 (32 tiles) mma_small took 15.8 us against
// 18.2, at 8192x1x8192 68 us against 139, and on batches of 64^3-256x256x64 (k <= 128) 1.0-1.02x
// cuBLAS's time against persistent's 2.6-4.7x. Below that line, on Hopper with k >= 256,
// wgmma_small's 64x128 tiles (1024^3: 10.8 us against mma_small's 16.0 and persistent's 18.2;
// 256x4096x4096: 22.0 against 46.9 and 45.8; 1x8192x8192: 55.6 against 68.1; 1000^3: 16.7 against
// 19.6); with k <= 128 (the batches) the 64x64 tiles of mma_small (1.3-1.7x faster than
// wgmma_small there), which also take any alignment. Above it, on Hopper: wgmma_cluster from 6 waves of tiles up
// (8192^3, 7.8 waves: 786.2 against persistent's 777.8 TFLOP/s in bf16, 749.8 against 741.6 in fp16; B as N x K
// 785.9/785.6 and 751.9/747.7), wgmma_persistent below (4096^3, 3.9 waves: cluster 0.5-1% behind; 2048^3: 4% behind);
// mma_pipelined on other GPUs; mma_swizzled for rows that are not 16-byte multiples (4095x4097x4093: 111 TFLOP/s
// against mma_small's 85; on Hopper such rows are now copied to 16-byte pitches for the TMA rungs,
// run_on_aligned_copies). The cp.async and TMA rungs also need A, B and C 16-byte aligned besides the pitches their
// limits check; mma_swizzled and mma_small take anything. A stored k x m (transpose_a) runs where a rung takes it:
// wgmma_cluster, wgmma_persistent and wgmma_small on Hopper, mma_small otherwise (the other rungs' limits refuse it).
// A decode step (one product, m <= 8 against B stored N x K) is a read of B: decode_gemv, on any GPU (on an H200
// wgmma_small took 21-22 us at m = 1-8 against a 4096 x 4096 weight, where cuBLAS took 15).
template <typename T>
void pick_rung(const v::GemmArgs<T>& args, cudaStream_t stream) {
  const v::GemmShape shape = v::shape_of(args);
  const CurrentGpu gpu = current_gpu();
  const int cc = gpu.compute_capability;
  const std::int64_t big_tiles = args.batch * ((args.m + 127) / 128) * ((args.n + 255) / 256);
  const bool big = 2 * big_tiles >= gpu.sm_count && args.k >= 256 && args.m >= 64 && args.n >= 128;
  const bool aligned = is_aligned16(args.a) && is_aligned16(args.b) && is_aligned16(args.c);
  if (args.batch == 1 && is_aligned16(args.a) && is_aligned16(args.b) && v::decode_gemv_limits(shape, cc).empty())
    return v::decode_gemv(args, stream);
  if (big && aligned && v::wgmma_persistent_limits(shape, cc).empty())
    return run_big_hopper_rung(args, big_tiles, gpu.sm_count, stream);
  if (big && cc == kHopper && args.batch == 1 && is_aligned16(args.c) &&
      run_on_aligned_copies(args, big_tiles, gpu.sm_count, stream))
    return;
  if (big && aligned && v::mma_pipelined_limits(shape, cc).empty()) return v::mma_pipelined(args, stream);
  if (big && v::mma_swizzled_limits(shape, cc).empty()) return v::mma_swizzled(args, stream);
  if (!big && aligned && args.k >= 256 && v::wgmma_small_limits(shape, cc).empty()) return v::wgmma_small(args, stream);
  const std::string why = v::mma_small_limits(shape, cc);
  CUDALAB_REQUIRE(why.empty(), "gemm: " + why);
  v::mma_small(args, stream);
}

template <typename T>
void run(v::GemmArgs<T> args, cudaStream_t stream) {
  validate_gemm_args(args);
  if (args.m == 0 || args.n == 0 || args.batch == 0) return;
  if (args.batch == 1) args.stride_a = args.stride_b = args.stride_c = 0;
  pick_rung(args, stream);
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
  template void gemm_batched(std::int64_t, std::int64_t, std::int64_t, std::int64_t, float, const T*, std::int64_t,   \
                             std::int64_t, const T*, std::int64_t, std::int64_t, float, T*, std::int64_t,             \
                             std::int64_t, cudaStream_t, Transpose, Transpose);
CUDALAB_GEMM_TENSOR_CORE_ELEMENTS(CUDALAB_GEMM_ENTRIES, , )

}  // namespace cudalab
