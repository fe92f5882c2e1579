// Rung `tutorial`: the zero-to-hero tutorial's flashAttentionForward (tutorial 004, section 10.2), and the same
// kernel completed.
//
// `tutorial` (BROKEN on purpose) keeps the tutorial's kernel as it stands: a block per BLOCK_N = 32
// query rows of one (batch, head), the rows' Q tile and each key tile staged in shared memory, one
// thread per query row computing the tile's scores and their max. It stops there: the running
// statistics m_prev and l_prev start at 0 (not -inf) and are never updated, the new sum l_new is
// computed and dropped, the V update is a comment (V is never read; its tile is allocated and never
// filled), and neither O nor L is written. The harness poisons O and L before the launch, so the
// check sees every element unwritten. Kept to be shown failing; `tutorial_fixed` stands beside it.
// Changes from the tutorial's text, none of which touches the fault: the element type is a template
// parameter (loads widen to fp32), indices are 64-bit, K is read at the query head's kv head (the
// tutorial's K has one head per query head; with grouped-query attention its index would read past
// K), and the tutorial gives no launch configuration: BLOCK_N threads a block, the grid (query
// tiles, heads, batch) its blockIdx use implies, and 3 * BLOCK_N * head_dim floats of shared memory.
// Its per-thread o_acc[32 * 64] (8 KiB of local memory a thread, unused) is kept; the compiler
// removes it, and everything else, since nothing is stored.
//
// `tutorial_fixed` completes it with the same structure: one thread per query row, BLOCK_N rows a
// block, Q, K and V tiles of BLOCK_N rows in shared memory (fp32), and per key tile the online
// softmax (Milakov & Gimelshein 2018; FlashAttention's forward): the tile's scores are kept, the
// running max m grows to m_new, the sum l and the output accumulator o_acc are rescaled by
// exp(m - m_new) and take the tile's exp(s - m_new) and exp(s - m_new) * v. At the end O = o_acc / l
// and L = m + log(l). Fixes beside the missing half: m starts at -inf, the scale is args.scale (the
// tutorial divides by sqrt(D), which is only the default scale), causal rows stop at the diagonal
// (tiles past the block's last row are not loaded), kv heads are mapped, and Q's shared rows are
// padded to an odd stride (the tutorial's stride of D floats puts the 32 threads' reads of one
// column in one bank: a 32-way conflict). Costs, which rung `tiled` removes: o_acc[head_dim] is indexed by
// a runtime dimension, so it lives in local memory (L1, spilling to L2), each thread does head_dim
// FMAs per key serially, and 32 rows a block keep only one warp per block.
//
// Limits: head_dim <= 128, because o_acc is a fixed array of kMaxHeadDim = 128 floats (512 bytes of
// local memory a thread; a larger one would double it for every head_dim) and because the three
// fp32 tiles, 3 * 32 * 128 * 4 = 48 KiB at head_dim 128, stay near the default shared-memory size.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::attention_variants {
namespace {

constexpr int kBlockRows = 32;  // the tutorial's BLOCK_N: query rows a block, keys a tile, threads a block
constexpr std::int64_t kMaxHeadDim = 128;
constexpr std::int64_t kMaxGridYZ = 65535;

// ---- the tutorial's kernel (broken) --------------------------------------------------------------

template <typename T>
__global__ void attention_tutorial_kernel(T* output, const T* q, const T* k, const T* v, float* lse, std::int64_t heads,
                                          std::int64_t heads_per_kv_head, std::int64_t seq, std::int64_t head_dim,
                                          int block_n) {
  (void)output;  // never written: the V update below is a comment in the tutorial
  (void)v;
  (void)lse;
  const std::int64_t b = blockIdx.z;
  const std::int64_t h = blockIdx.y;
  const std::int64_t q_block = blockIdx.x;
  const std::int64_t q_start = q_block * block_n;
  const std::int64_t kv_head = b * (heads / heads_per_kv_head) + h / heads_per_kv_head;

  extern __shared__ float tutorial_shared[];
  float* q_tile = tutorial_shared;              // block_n x head_dim
  float* k_tile = q_tile + block_n * head_dim;  // block_n x head_dim
  float* v_tile = k_tile + block_n * head_dim;  // block_n x head_dim, never filled
  (void)v_tile;

  for (std::int64_t i = threadIdx.x; i < block_n * head_dim; i += blockDim.x) {
    const std::int64_t qi = i / head_dim, di = i % head_dim;
    const std::int64_t q_index = q_start + qi;
    q_tile[i] = q_index < seq ? to_float(q[((b * heads + h) * seq + q_index) * head_dim + di]) : 0.0f;
  }

  // The running statistics, one slot per row of the block (each thread uses its own), and the
  // output accumulator; all start at 0.
  float m_prev[32] = {};
  float l_prev[32] = {};
  float o_acc[32 * 64] = {};
  (void)o_acc;

  for (std::int64_t kv_block = 0; kv_block < (seq + block_n - 1) / block_n; ++kv_block) {
    const std::int64_t kv_start = kv_block * block_n;
    for (std::int64_t i = threadIdx.x; i < block_n * head_dim; i += blockDim.x) {
      const std::int64_t ki = i / head_dim, di = i % head_dim;
      const std::int64_t k_index = kv_start + ki;
      k_tile[i] = k_index < seq ? to_float(k[(kv_head * seq + k_index) * head_dim + di]) : 0.0f;
    }
    __syncthreads();

    // One thread per query row.
    const int tid = static_cast<int>(threadIdx.x);
    if (tid < block_n && q_start + tid < seq) {
      float m_new = m_prev[tid];
      for (int key = 0; key < block_n && kv_start + key < seq; ++key) {
        float dot = 0.0f;
        for (std::int64_t d = 0; d < head_dim; ++d) dot += q_tile[tid * head_dim + d] * k_tile[key * head_dim + d];
        dot /= sqrtf(static_cast<float>(head_dim));
        m_new = fmaxf(m_new, dot);
      }
      // The numerically stable softmax update.
      const float l_new = expf(m_prev[tid] - m_new) * l_prev[tid];
      (void)l_new;
      for (int key = 0; key < block_n && kv_start + key < seq; ++key) {
        // ... the weighted sum of V
      }
    }
    __syncthreads();
  }
}

// ---- the same kernel completed -------------------------------------------------------------------

// Q's shared rows: an odd stride, so the 32 threads' reads of one column (a dimension of 32 rows)
// fall in 32 different banks.
__host__ __device__ constexpr std::int64_t padded_stride(std::int64_t head_dim) { return head_dim | 1; }

__host__ __device__ constexpr std::size_t fixed_shared_bytes(std::int64_t head_dim) {
  return static_cast<std::size_t>(kBlockRows * (padded_stride(head_dim) + 2 * head_dim)) * sizeof(float);
}

// Rows [first, first + kBlockRows) of a [seq, head_dim] matrix into shared memory as fp32 with row
// stride `stride`; rows at or past `seq` (or `end`) are zero (they meet a probability of 0, where
// uninitialised memory could hold NaN).
template <typename T>
__device__ __forceinline__ void load_rows(float* tile, const T* matrix, std::int64_t first, std::int64_t end,
                                          std::int64_t head_dim, std::int64_t stride) {
  for (std::int64_t i = threadIdx.x; i < kBlockRows * head_dim; i += kBlockRows) {
    const std::int64_t row = i / head_dim, d = i % head_dim;
    tile[row * stride + d] = first + row < end ? to_float(matrix[(first + row) * head_dim + d]) : 0.0f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockRows)
    attention_tutorial_fixed_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                    T* __restrict__ o, float* __restrict__ lse, std::int64_t heads,
                                    std::int64_t heads_per_kv_head, std::int64_t seq, std::int64_t head_dim,
                                    float scale, bool causal) {
  extern __shared__ float fixed_shared[];
  const std::int64_t stride = padded_stride(head_dim);
  float* q_tile = fixed_shared;                    // kBlockRows x stride
  float* k_tile = q_tile + kBlockRows * stride;    // kBlockRows x head_dim
  float* v_tile = k_tile + kBlockRows * head_dim;  // kBlockRows x head_dim

  const std::int64_t b = blockIdx.z, h = blockIdx.y;
  const std::int64_t q_start = static_cast<std::int64_t>(blockIdx.x) * kBlockRows;
  const std::int64_t batch_head = b * heads + h;
  const std::int64_t kv_head = b * (heads / heads_per_kv_head) + h / heads_per_kv_head;
  const T* k_head = k + kv_head * seq * head_dim;
  const T* v_head = v + kv_head * seq * head_dim;
  load_rows(q_tile, q + batch_head * seq * head_dim, q_start, seq, head_dim, stride);

  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t query = q_start + tid;
  const float* q_row = q_tile + tid * stride;
  float m = -INFINITY, l = 0.0f;
  float o_acc[kMaxHeadDim];
  for (std::int64_t d = 0; d < head_dim; ++d) o_acc[d] = 0.0f;

  // Causal rows of this block see no key past its last row.
  const std::int64_t kv_end = causal ? std::min(seq, q_start + kBlockRows) : seq;
  for (std::int64_t kv_start = 0; kv_start < kv_end; kv_start += kBlockRows) {
    __syncthreads();  // the previous tile's readers are done (and Q's tile is written, the first time)
    load_rows(k_tile, k_head, kv_start, kv_end, head_dim, head_dim);
    load_rows(v_tile, v_head, kv_start, kv_end, head_dim, head_dim);
    __syncthreads();
    if (query >= seq) continue;
    // Keys [kv_start, kv_start + keys) are visible to this row.
    const std::int64_t row_end = causal ? std::min(kv_end, query + 1) : kv_end;
    const int keys = static_cast<int>(std::min<std::int64_t>(kBlockRows, row_end - kv_start));
    if (keys <= 0) continue;
    float s[kBlockRows];
    float tile_max = -INFINITY;
#pragma unroll
    for (int key = 0; key < kBlockRows; ++key) {
      if (key < keys) {
        float dot = 0.0f;
        for (std::int64_t d = 0; d < head_dim; ++d) dot += q_row[d] * k_tile[key * head_dim + d];
        s[key] = dot * scale;
        tile_max = fmaxf(tile_max, s[key]);
      }
    }
    const float m_new = fmaxf(m, tile_max);
    const float rescale = softmax_variants::exp_shifted(m, m_new);  // 0 the first time: exp(-inf)
    l *= rescale;
    for (std::int64_t d = 0; d < head_dim; ++d) o_acc[d] *= rescale;
#pragma unroll
    for (int key = 0; key < kBlockRows; ++key) {
      if (key < keys) {
        const float p = softmax_variants::exp_shifted(s[key], m_new);
        l += p;
        for (std::int64_t d = 0; d < head_dim; ++d) o_acc[d] += p * v_tile[key * head_dim + d];
      }
    }
    m = m_new;
  }
  if (query >= seq) return;
  const float inverse = 1.0f / l;
  T* o_row = o + (batch_head * seq + query) * head_dim;
  for (std::int64_t d = 0; d < head_dim; ++d) o_row[d] = from_float<T>(o_acc[d] * inverse);
  lse[batch_head * seq + query] = m + logf(l);
}

void require_launchable(const char* name, const AttentionShape& shape) {
  const std::string why = tutorial_limits(shape);
  CUDALAB_REQUIRE(why.empty(), std::string(name) + ": " + why);
  CUDALAB_REQUIRE(shape.kv_heads > 0 && shape.heads % shape.kv_heads == 0,
                  std::string(name) + ": heads must be a multiple of kv_heads");
}

dim3 tutorial_grid(const AttentionShape& shape) {
  return dim3(static_cast<unsigned>(ceil_div<std::int64_t>(shape.seq, kBlockRows)), static_cast<unsigned>(shape.heads),
              static_cast<unsigned>(shape.batch));
}

}  // namespace

std::string tutorial_limits(const AttentionShape& shape) {
  if (shape.head_dim > kMaxHeadDim)
    return "head_dim above 128: the per-thread accumulator o_acc holds 128 floats, and three 32-row fp32 tiles "
           "fill 48 KiB of shared memory at 128";
  if (shape.heads > kMaxGridYZ || shape.batch > kMaxGridYZ) return "heads or batch above 65535 (grid y and z)";
  if (ceil_div<std::int64_t>(shape.seq, kBlockRows) > 0x7fffffffLL) return "seq above 2^31 - 1 blocks of 32 rows";
  if (shape.windowed) return "the tutorial's kernel has no sliding window";
  return "";
}

template <typename T>
void tutorial(const AttentionArgs<T>& args, cudaStream_t stream) {
  if (args.batch == 0 || args.heads == 0 || args.seq == 0 || args.head_dim == 0) return;
  const AttentionShape shape = shape_of(args, 0);
  require_launchable("attention tutorial", shape);
  const auto shared = static_cast<std::size_t>(3 * kBlockRows * args.head_dim) * sizeof(float);
  attention_tutorial_kernel<T><<<tutorial_grid(shape), kBlockRows, shared, stream>>>(
      args.o, args.q, args.k, args.v, args.lse, args.heads, args.heads / args.kv_heads, args.seq, args.head_dim,
      kBlockRows);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void tutorial_fixed(const AttentionArgs<T>& args, cudaStream_t stream) {
  if (args.batch == 0 || args.heads == 0 || args.seq == 0 || args.head_dim == 0) return;
  const AttentionShape shape = shape_of(args, 0);
  require_launchable("attention tutorial_fixed", shape);
  const std::size_t shared = fixed_shared_bytes(args.head_dim);
  // 49,280 bytes at head_dim 128 (Q's padding): past the 48 KiB a block gets without asking.
  CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(attention_tutorial_fixed_kernel<T>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  attention_tutorial_fixed_kernel<T><<<tutorial_grid(shape), kBlockRows, shared, stream>>>(
      args.q, args.k, args.v, args.o, args.lse, args.heads, args.heads / args.kv_heads, args.seq, args.head_dim,
      args.scale, args.causal);
  CUDALAB_CHECK_LAUNCH();
}

template void tutorial<float>(const AttentionArgs<float>&, cudaStream_t);
template void tutorial<__half>(const AttentionArgs<__half>&, cudaStream_t);
template void tutorial<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);
template void tutorial_fixed<float>(const AttentionArgs<float>&, cudaStream_t);
template void tutorial_fixed<__half>(const AttentionArgs<__half>&, cudaStream_t);
template void tutorial_fixed<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
