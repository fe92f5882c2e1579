// Matrix multiply: FP32 on CUDA cores; BF16 and FP16 on tensor cores; single or strided batches;
// FP8 (e4m3) into BF16 on Hopper.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "cudalab/activations.hpp"
#include "cudalab/elements.hpp"

namespace cudalab {

// The element types of the tensor-core GEMM (T below; FP32 has its own calls); any other fails to
// compile.
#define CUDALAB_GEMM_TENSOR_CORE_ELEMENTS(X, a, b) X(__nv_bfloat16, a, b) X(__half, a, b)
using GemmTensorCoreElements = CUDALAB_ELEMENT_LIST(CUDALAB_GEMM_TENSOR_CORE_ELEMENTS);

enum class Layout { row_major, column_major };
// How an operand is stored. For B: no: k x n (ldb >= n); yes: n x k (ldb >= k), so the product is
// A B^T, the layout of nn.Linear's x @ W.T. For A: no: m x k (lda >= k); yes: k x m (lda >= m), so
// the product is A^T B, the layout of a weight's gradient dy^T x.
enum class Transpose { no, yes };

// C = alpha * A * B + beta * C in FP32 (FFMA, no TF32), asynchronously on `stream`. A is m x k,
// B is k x n, C is m x n, all row-major with leading dimensions (row pitches, in elements)
// lda >= k, ldb >= n, ldc >= n. Any m, n, k >= 0 and any alignment: whole 16-byte-aligned tiles
// take the unpredicated path, the rest a predicated one. beta == 0 never reads C (it may hold
// NaN); k == 0 gives C = beta * C; m == 0 or n == 0 does nothing. C must not overlap A or B.
// Each result is a sum of k products in an order fixed per shape: |error| <= about
// (k + 3) 2^-24 (|alpha| |A||B| + |beta| |C|) element-wise, deterministic run to run. Outputs of
// fewer tiles than the GPU has SMs split k over up to 8 blocks per tile, whose partial sums (at most
// 8 m n floats) come from the stream-ordered allocator and are added in a fixed order.
// Throws cudalab::Error (invalid_argument) for negative sizes, leading dimensions below the row
// length, null pointers with non-zero sizes, pointers not aligned to 4 bytes (their element), m
// beyond 65535 * 64 rows, or `layout` other than
// row_major (pass the transposed problem instead: column-major C = A B is row-major C^T = B^T A^T).
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, float beta, float* c, std::int64_t ldc, cudaStream_t stream = nullptr,
          Layout layout = Layout::row_major);

// C = alpha * op(A) * op(B) + beta * C with BF16 or FP16 A, B and C (row-major storage), products
// accumulated in FP32 on tensor cores, alpha and beta applied in FP32, the result rounded to nearest
// into C. op(A) is A (m x k, lda >= k) or, with transpose_a == Transpose::yes, A^T for A stored
// k x m (lda >= m); op(B) is B (k x n, ldb >= n) or, with transpose_b == Transpose::yes, B^T for B
// stored n x k (ldb >= k). The four layouts cover a Linear layer's three products with no copy:
// y = x W^T (transpose_b), dx = dy W (neither), dW = dy^T x (transpose_a). Any m, n, k >= 0 and
// leading dimensions; the kernel is chosen by GPU, layout and shape (large outputs on Hopper: wgmma
// with TMA where the row pitches are multiples of 8 elements and the pointers 16-byte aligned; small
// outputs and batches of small matrices: 64x64 mma.sync tiles; otherwise larger mma.sync tiles, which
// take A as m x k only). beta == 0 never reads C; k == 0 gives C = beta * C. Each result is within
// about (k + 3) 2^-23 (|alpha| |op(A)||op(B)| + |beta| |C|) of the exact value before its final
// rounding to the element type. Needs compute capability 8.0 or newer. Throws cudalab::Error
// (invalid_argument) for negative sizes, leading dimensions below the row length, null pointers with
// non-zero sizes, pointers not aligned to the element size, sizes beyond the grid's reach, or an
// older GPU.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, T* c, std::int64_t ldc, cudaStream_t stream = nullptr,
          Transpose transpose_b = Transpose::no, Transpose transpose_a = Transpose::no);

// Scratch of the call above: on Hopper, a large product whose A or B has a row pitch of no multiple
// of 8 elements or an address off 16 bytes runs on 16-byte-pitched copies of those operands (about a
// copy's time, against 2-2.5x the product's on tiles that take any alignment); the copies come from
// the stream-ordered allocator, or from the caller's `workspace` below. gemm_workspace_bytes is the
// size the call with these sizes, pointers and layouts needs on the current GPU: 0 where it makes no
// copies.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
std::size_t gemm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t lda,
                                 const T* b, std::int64_t ldb, const T* c, std::int64_t ldc,
                                 Transpose transpose_b = Transpose::no, Transpose transpose_a = Transpose::no);
// The same product with the caller's scratch: `workspace` holds at least gemm_workspace_bytes(...)
// bytes of device memory, 16-byte aligned, which the call may use until its work on `stream` ends;
// less is an invalid_argument error.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, T* c, std::int64_t ldc, void* workspace, std::size_t workspace_bytes,
          cudaStream_t stream, Transpose transpose_b = Transpose::no, Transpose transpose_a = Transpose::no);

// D = alpha * op(A) * op(B) + beta * C with C read where it lies and the result written to D
// (ldd >= n): C's rows ldc apart (ldc >= n), or ldc = 0 for one row of n values added to every row
// (nn.Linear's bias, broadcast); c == d with ldc == ldd is the in-place product above. beta == 0
// never reads C (it may be null). On Hopper the tile kernels read C in their epilogue, so a bias
// costs no pass of its own; elsewhere D is filled with C first (one copy). The same rules, errors
// and scratch (gemm_workspace_bytes with D's pointer and ldd) as the calls above, and D must not
// overlap C unless it is C.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b,
          std::int64_t ldb, float beta, const T* c, std::int64_t ldc, T* d, std::int64_t ldd, void* workspace,
          std::size_t workspace_bytes, cudaStream_t stream, Transpose transpose_b = Transpose::no,
          Transpose transpose_a = Transpose::no);

// A Linear layer's product and activation in one call: D = act(alpha * op(A) * op(B) + beta * C),
// C read as the call above reads it (ldc = 0: a bias row). When `derivative` is not null, the
// activation's derivative at v = alpha * op(A) * op(B) + beta * C, act'(v), is stored there too
// (m x n, rows ldd apart, rounded to T): what the backward below multiplies by, so the backward
// evaluates no activation. On Hopper, where the product runs on the tile kernels with D's rows
// 16-byte aligned and A stored m x k, act and act' run in their epilogue from the fp32 v (no pass
// of their own); elsewhere D = v is stored first and a second pass applies them to the rounded v.
// Activations and their accuracy as bias_act's (activations.hpp). Same rules, errors and scratch
// (gemm_workspace_bytes with D's pointer and ldd) as the calls above; `derivative` must be aligned
// to its elements and overlap neither D nor C; an activation outside the enum is an
// invalid_argument error.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm_activation(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                     const T* b, std::int64_t ldb, float beta, const T* c, std::int64_t ldc, T* d, std::int64_t ldd,
                     Activation activation, T* derivative, void* workspace, std::size_t workspace_bytes,
                     cudaStream_t stream, Transpose transpose_b = Transpose::no, Transpose transpose_a = Transpose::no);

// Its backward through the activation, fused into the product that makes the activation's output
// gradient: D = alpha * op(A) * op(B) * G element-wise, G the forward's derivative (m x n, rows
// ld_derivative apart), and, when `bias_gradient` is not null, bias_gradient[j] = the sum over the
// rows of D[., j] (n values: the bias's gradient), summed in fp32 from the unrounded values in a
// fixed order (the same bits on every run) and rounded once. For an MLP, y = W2 act(W1 x + b1):
// with A = dy and B = W2 it gives the gradient at W1 x + b1 and b1's gradient in one call. On
// Hopper's tile kernels (as above, G 16-byte aligned with rows a multiple of 8 elements apart) the
// product by G and the column sums run in the epilogue; elsewhere in a second pass over D.
// `workspace` holds at least gemm_activation_backward_workspace_bytes(...) bytes (16-byte
// aligned): the column sums of each 16 rows, then the product's own scratch. D must not overlap
// G. Errors as gemm_activation's.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
std::size_t gemm_activation_backward_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                                                     std::int64_t lda, const T* b, std::int64_t ldb, const T* d,
                                                     std::int64_t ldd, Transpose transpose_b = Transpose::no,
                                                     Transpose transpose_a = Transpose::no);
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm_activation_backward(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                              const T* b, std::int64_t ldb, const T* derivative, std::int64_t ld_derivative, T* d,
                              std::int64_t ldd, T* bias_gradient, void* workspace, std::size_t workspace_bytes,
                              cudaStream_t stream, Transpose transpose_b = Transpose::no,
                              Transpose transpose_a = Transpose::no);

// A Linear layer's weight gradient and its bias's gradient in one call (cuBLASLt's BGRADA epilogue,
// whose sums run over the product's k): D = alpha * Aᵀ * B for A the layer's output gradient dy,
// stored k x m (k tokens, m outputs; dense, rows m apart), and B its input x, stored k x n (rows ldb
// apart), and bias_gradient[i] = the sum of A's column i (its k values: dy's column sums), added in
// fp32 in a fixed order (the same bits on every run), rounded once and not scaled by alpha. On
// Hopper's persistent kernels (large, mid and small tiles, stream-K: where the library takes them,
// A's and B's rows on 128-byte lines) the consumer warpgroups add their A tiles' rows from shared
// memory while their products run, each tile column a share of the k-tiles, so A is read once for
// both; elsewhere a column-sum pass over A follows the product. `workspace` holds at least
// gemm_weight_gradient_workspace_bytes(...) bytes (16-byte aligned device memory): the pass's
// scratch, then the product's. Sizes may be 0 (k == 0: D = 0 and zeros for bias_gradient). Errors
// as gemm's, and bias_gradient null (m > 0), misaligned or overlapping A or D.
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
std::size_t gemm_weight_gradient_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
                                                 std::int64_t ldb, const T* d, std::int64_t ldd);
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm_weight_gradient(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a, const T* b,
                          std::int64_t ldb, T* d, std::int64_t ldd, T* bias_gradient, void* workspace,
                          std::size_t workspace_bytes, cudaStream_t stream);

// The same product for `batch` independent matrices: matrix z of A starts at a + z * stride_a
// (likewise B and C; strides in elements, and C's matrices must not overlap). Same rules and
// errors as the single-matrix calls above; the FP32 one takes A as m x k and B as k x n.
void gemm_batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                  std::int64_t lda, std::int64_t stride_a, const float* b, std::int64_t ldb, std::int64_t stride_b,
                  float beta, float* c, std::int64_t ldc, std::int64_t stride_c, cudaStream_t stream = nullptr);
template <typename T, typename = RequireElement<T, GemmTensorCoreElements>>
void gemm_batched(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a,
                  std::int64_t lda, std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b,
                  float beta, T* c, std::int64_t ldc, std::int64_t stride_c, cudaStream_t stream = nullptr,
                  Transpose transpose_b = Transpose::no, Transpose transpose_a = Transpose::no);

// FP8 on Hopper tensor cores: C = alpha * scale_a * scale_b * A B^T with e4m3 A (m x k, lda >= k)
// and B (n x k, ldb >= k: an nn.Linear weight as stored), both row-major, into bf16 C (m x n, ldc >=
// n), asynchronously on `stream`. scale_a and scale_b are device pointers to one float each (the
// dequantization scales of the inputs, as torch._scaled_mm takes them), or null for 1. The products
// accumulate in fp32, promoted out of the tensor cores every 128 of k (their FP8 sums keep about 14
// significant bits); each result is rounded once to bf16. k == 0 gives C = 0; m == 0 or n == 0 does
// nothing. A and B must be 16-byte aligned with lda and ldb multiples of 16 (TMA's rules); C must
// not overlap them. Throws cudalab::Error: invalid_argument for negative sizes, leading dimensions
// below a row, null or misaligned pointers, or overlap; unsupported off Hopper (compute capability
// 9.0) or in a build without sm_90a code; cuda when a launch fails.
void gemm_fp8(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const __nv_fp8_e4m3* a, std::int64_t lda,
              const __nv_fp8_e4m3* b, std::int64_t ldb, __nv_bfloat16* c, std::int64_t ldc,
              const float* scale_a = nullptr, const float* scale_b = nullptr, cudaStream_t stream = nullptr);

}  // namespace cudalab
