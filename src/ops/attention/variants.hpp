// The attention ladder: O = softmax(scale * Q K^T [+ causal mask]) V and the rows' log-sum-exp L,
// for Q [batch, heads, seq, head_dim], K and V [batch, kv_heads, seq, head_dim] (heads a multiple of
// kv_heads: query head h reads kv head h / (heads / kv_heads)), O like Q, L [batch, heads, seq] in
// fp32 (natural log: L = max + log(sum exp(s - max)) of the scaled scores s). Every rung accumulates
// in fp32; the 16-bit rungs round P to the input type before P V, as FlashAttention does.
// Each launcher is templated on the element type and takes AttentionArgs; the library entry
// (attention.cu) and the registry (register.cpp) fill the same struct. The `*_limits` functions say,
// in one sentence, why a rung cannot run a problem ("" when it can).
//
// The rungs and what each fixes:
//   naive           S = scale Q K^T materialized in fp32 (workspace batch*heads*seq^2 floats), a
//                   softmax kernel over S's rows, O = P V: three kernels, O(seq^2) memory.
//   tutorial        the zero-to-hero tutorial's flashAttentionForward as written: one thread per
//                   query row, the V update left a comment, O and L never written (broken on
//                   purpose; the harness shows it failing).
//   tutorial_fixed  the same kernel completed: online softmax per query row (running max and sum,
//                   O rescaled), K and V tiles in shared memory, fp32 arithmetic; O and L written.
//   tiled           FlashAttention-2's work split on CUDA cores: a block per query tile, warps over
//                   query rows, K/V tiles in shared memory, scores and P V in registers.
//   mma             tensor cores: Q K^T and P V with mma.sync m16n8k16 from ldmatrix, P kept in
//                   registers as the A operand of P V, exp2 with the scale folded in.
//   mma_pipelined   mma plus cp.async double-buffered K/V tiles and causal tiles above the
//                   diagonal skipped entirely.
//   wgmma           Hopper: wgmma from shared memory, K/V by TMA from a producer warpgroup into
//                   mbarrier rings, two consumer warpgroups each overlapping its softmax with the
//                   P V of the previous tile (FlashAttention-3's intra-warpgroup overlap).
//   wgmma_pingpong  wgmma plus FlashAttention-3's ping-pong: the consumers take turns at the
//                   tensor cores, one's softmax under the other's GEMMs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "core/workspace.hpp"
#include "cudalab/attention.hpp"
#include "cudalab/error.hpp"

namespace cudalab::attention_variants {

// Dense row-major tensors: Q, O [batch, heads, seq, head_dim]; K, V [batch, kv_heads, seq,
// head_dim]; L [batch, heads, seq]. O and L overlap no input. `scale` multiplies the scores
// (1/sqrt(head_dim) by default); `causal` masks key j > query i.
// Whether `s` is the default (all 0): dense rows.
inline bool is_dense(const AttentionStrides& s) { return s.batch == 0 && s.head == 0 && s.row == 0; }
// `s`, or the dense strides of [batch, heads, seq, head_dim] where `s` is the default.
inline AttentionStrides resolved(const AttentionStrides& s, std::int64_t heads, std::int64_t seq,
                                 std::int64_t head_dim) {
  return is_dense(s) ? AttentionStrides{heads * seq * head_dim, seq * head_dim, head_dim} : s;
}

// Whether every stride of `layout` is a multiple of 8 elements (16 bytes of bf16 or fp16: TMA's
// and the 16-byte stores' rule); the default strides are taken as dense rows of head_dim 64 or 128.
inline bool strides_in_vectors(const AttentionLayout& layout) {
  for (const AttentionStrides* s :
       {&layout.q, &layout.k, &layout.v, &layout.o, &layout.d_o, &layout.dq, &layout.dk, &layout.dv})
    if (s->batch % 8 != 0 || s->head % 8 != 0 || s->row % 8 != 0) return false;
  return true;
}

// The keys each query sees, the one mask every rung applies: query i sees key j when
// i - left <= j <= i + right (and j < seq). An unbounded side holds seq, which never binds. Index is
// int64 everywhere but in kernels whose limits keep seq below 2^31, which hold it in 32 bits.
template <typename Index>
struct BasicKeyWindow {
  Index left = 0, right = 0;
  // As differences, which stay within Index where a sum of two positions might not.
  __host__ __device__ bool sees(Index query, Index key) const { return query - key <= left && key - query <= right; }
  // The first key any of the queries from `query` on sees, and past the last key the queries up to
  // `last_query` see (keys below seq).
  __host__ __device__ Index first_key(Index query) const { return query > left ? query - left : 0; }
  __host__ __device__ Index key_end(Index last_query, Index seq) const {
    return seq - last_query > right ? last_query + right + 1 : seq;
  }
  // The same from the keys' side: the first query that sees a key from `key` on, and past the last
  // query that sees a key up to `last_key`.
  __host__ __device__ Index first_query(Index key) const { return key > right ? key - right : 0; }
  __host__ __device__ Index query_end(Index last_key, Index seq) const {
    return seq - last_key > left ? last_key + left + 1 : seq;
  }
};
using KeyWindow = BasicKeyWindow<std::int64_t>;

// The window of a problem of `seq` keys: window_left and window_right as AttentionOptions gives
// them (-1 unbounded), causal bounding the right side by 0.
__host__ __device__ inline KeyWindow key_window(std::int64_t seq, bool causal, std::int64_t window_left,
                                                std::int64_t window_right) {
  return {window_left < 0 || window_left > seq ? seq : window_left, causal ? 0
                                                                    : window_right < 0 || window_right > seq
                                                                        ? seq
                                                                        : window_right};
}
template <typename Args>
__host__ __device__ KeyWindow key_window(const Args& args) {
  return key_window(args.seq, args.causal, args.window_left, args.window_right);
}
// Whether the window hides any key of a problem of `seq` keys beyond what causal hides.
inline bool window_binds(std::int64_t seq, bool causal, std::int64_t window_left, std::int64_t window_right) {
  const KeyWindow w = key_window(seq, causal, window_left, window_right);
  return w.left < seq - 1 || (!causal && w.right < seq - 1);
}
template <typename Args>
bool window_binds(const Args& args) {
  return window_binds(args.seq, args.causal, args.window_left, args.window_right);
}

// Variable-length batches (FlashAttention's varlen form), where cu_seqlens_q is set: the arrays hold
// batch 1 of `seq` query rows and `keys` key rows, and sequence b is query rows cu_seqlens_q[b] ..
// cu_seqlens_q[b + 1] - 1 (of q, o, L, and dO and dQ) and key rows cu_seqlens_k[b] .. (of k, v, dK
// and dV), at most max_seqlen_q and max_seqlen_k of each. Positions are aligned at the sequence's
// end (FlashAttention's bottom-right): query row i of a sequence sits at i + keys - queries of it,
// and the causal mask and a window apply to that position. Only the Hopper kernels take it.
struct VarlenRows {
  const std::int32_t* cu_seqlens_q = nullptr;  // device int32 [sequences + 1]; null: not variable-length
  const std::int32_t* cu_seqlens_k = nullptr;
  std::int64_t sequences = 0, keys = 0, max_seqlen_q = 0, max_seqlen_k = 0;
  bool on() const { return cu_seqlens_q != nullptr; }
};

template <typename T>
struct AttentionArgs {
  using Element = T;
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  T* o = nullptr;
  float* lse = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  float scale = 0.0f;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;  // AttentionOptions': -1 unbounded
  // Where q's, k's, v's and o's rows lie: dense (the default) for every rung but wgmma and
  // wgmma_pingpong, the only ones that take other layouts (the library gives the others dense copies).
  AttentionLayout layout;
  VarlenRows varlen;          // wgmma_pingpong only
  void* workspace = nullptr;  // naive only: naive_workspace_bytes(batch, heads, seq)
  std::size_t workspace_bytes = 0;
};

// The backward's arguments: Q, K, V, O, dO and L as the forward's (O and L from it), dQ like Q,
// dK and dV like K and V (each kv head's gradient summed over the query heads that read it).
template <typename T>
struct AttentionBackwardArgs {
  using Element = T;
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* o = nullptr;
  const T* d_o = nullptr;
  const float* lse = nullptr;
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  float scale = 0.0f;
  bool causal = false;
  std::int64_t window_left = -1, window_right = -1;  // AttentionOptions': -1 unbounded
  // Where each array's rows lie: dense (the default) for every rung but wgmma_backward.
  AttentionLayout layout;
  VarlenRows varlen;           // wgmma_backward only
  bool deterministic = false;  // dQ's sums in a fixed order: wgmma_backward (not with varlen), naive_backward
  void* workspace = nullptr;   // naive_backward only: naive_backward_workspace_bytes(batch, heads, seq)
  std::size_t workspace_bytes = 0;
};

// What a rung's limits depend on.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  std::size_t element_size = 0;  // sizeof(T)
  int compute_capability = 0;    // major * 10 + minor
  bool windowed = false;         // a sliding window that binds (window_binds)
};
template <typename Args>
AttentionShape shape_of(const Args& args, int compute_capability) {
  return {args.batch,         args.heads,        args.kv_heads, args.seq, args.head_dim, sizeof(typename Args::Element),
          compute_capability, window_binds(args)};
}

// What every launcher checks before its kernels, for rung `name` whose limits gave `why`: false
// for an empty problem (nothing to launch); otherwise throws invalid_argument unless the limits
// pass, heads is a multiple of kv_heads and the workspace holds `needed` bytes, and returns true.
template <typename Args>
bool ready_to_launch(const char* name, const std::string& why, const Args& args, std::size_t needed) {
  if (args.batch == 0 || args.heads == 0 || args.seq == 0 || args.head_dim == 0) return false;
  CUDALAB_REQUIRE(why.empty(), std::string(name) + ": " + why);
  CUDALAB_REQUIRE(args.kv_heads > 0 && args.heads % args.kv_heads == 0,
                  std::string(name) + ": heads must be a multiple of kv_heads");
  workspace_of(args, needed, name);
  return true;
}

// The scores of every (batch, head) in fp32: batch * heads * seq^2 * 4 bytes.
std::size_t naive_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq);

template <typename T>
void naive(const AttentionArgs<T>& args, cudaStream_t stream);
std::string naive_limits(const AttentionShape& shape);

template <typename T>
void tutorial(const AttentionArgs<T>& args, cudaStream_t stream);
template <typename T>
void tutorial_fixed(const AttentionArgs<T>& args, cudaStream_t stream);
std::string tutorial_limits(const AttentionShape& shape);

template <typename T>
void tiled(const AttentionArgs<T>& args, cudaStream_t stream);
std::string tiled_limits(const AttentionShape& shape);

// Tensor-core rungs: bf16 and fp16 only.
template <typename T>
void mma(const AttentionArgs<T>& args, cudaStream_t stream);
template <typename T>
void mma_pipelined(const AttentionArgs<T>& args, cudaStream_t stream);
std::string mma_limits(const AttentionShape& shape);

// Hopper rungs (sm_90a builds, compute capability 9.0): bf16 and fp16, head_dim a multiple of 8 up
// to 256 (the backward's: 64 and 128).
template <typename T>
void wgmma(const AttentionArgs<T>& args, cudaStream_t stream);
template <typename T>
void wgmma_pingpong(const AttentionArgs<T>& args, cudaStream_t stream);
std::string wgmma_limits(const AttentionShape& shape);
// Whether wgmma_pingpong runs a dense batch without a window on its persistent form (one block an
// SM walking 128-row blocks) rather than a block a row block: always without a mask, and under one
// up to seq 8192, past which its rounds no longer pair long row blocks with short ones (measured
// in wgmma_kernel.cuh's launcher).
constexpr std::int64_t kPersistentCausalSeq = 8192;
inline bool wgmma_forward_persistent(std::int64_t seq, bool causal) { return !causal || seq <= kPersistentCausalSeq; }

// Backward rungs.
// P and dS of every (batch, head) in fp32: 2 * batch * heads * seq^2 * 4 bytes.
std::size_t naive_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq);
template <typename T>
void naive_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream);
std::string naive_backward_limits(const AttentionShape& shape);

// The width of the fused backward rungs' dQ accumulator rows: head_dim rounded up to the kernel
// build it runs on (64 or 128; head_dim itself past 128, which no fused rung takes).
constexpr std::int64_t dq_accumulator_columns(std::int64_t head_dim) {
  return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : head_dim;
}
// The fused rungs' workspace: dQ's fp32 accumulator (batch * heads * seq * dq_accumulator_columns
// floats) and D_i (batch * heads * seq).
std::size_t mma_backward_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq,
                                         std::int64_t head_dim);
template <typename T>
void mma_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream);
// With deterministic dQ (wgmma_backward), the workspace's counters after D: one for each consumer's
// part of each 64-row query tile of each (batch, head).
inline std::size_t dq_order_bytes(std::int64_t batch, std::int64_t heads, std::int64_t seq) {
  return static_cast<std::size_t>(batch * heads * ((seq + 63) / 64) * 2) * sizeof(unsigned);
}
std::string mma_backward_limits(const AttentionShape& shape);

// Hopper (sm_90a builds, compute capability 9.0): the mma rung's algorithm on wgmma and TMA, the
// same workspace (mma_backward_workspace_bytes).
template <typename T>
void wgmma_backward(const AttentionBackwardArgs<T>& args, cudaStream_t stream);
std::string wgmma_backward_limits(const AttentionShape& shape);

// Decode attention (decode.cu): `tokens` new queries of each sequence (q and o dense [batch, heads,
// tokens, head_dim]) against its cache (k and v dense [batch, kv_heads, cache, head_dim]), of which
// sequence b's first min(lengths[b], cache) rows are its keys; query t sits at position
// lengths[b] - tokens + t, and a causal query sees the keys up to it (and, with a window, only
// those within it of the position: KeyWindow over the cache). lse [batch, heads, tokens] fp32. Rungs:
//   naive      a block per query row on CUDA cores: each warp takes every fourth key, its lanes a
//              dot product's dimensions and a shuffle tree, online softmax; K and V cross from
//              memory once per query head and token.
//   split_mma  flash-decoding on mma.sync: a block per (key split, kv head, sequence) holds every
//              query that reads the kv head (the group's heads times the tokens, packed as one m16
//              tile), so K and V cross once per kv head; the splits' partial results are combined
//              by a second kernel weighted by their log-sum-exps.
template <typename T>
struct DecodeArgs {
  using Element = T;
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const std::int32_t* lengths = nullptr;
  T* o = nullptr;
  float* lse = nullptr;
  std::int64_t batch = 0, heads = 0, kv_heads = 0, tokens = 0, cache = 0, head_dim = 0;
  float scale = 0.0f;
  bool causal = true;
  // A sliding window (AttentionOptions', -1 unbounded) about each query's position in its sequence.
  std::int64_t window_left = -1, window_right = -1;
  // A paged cache, when block_table is not null: k and v hold pages [pages, kv_heads, page_size,
  // head_dim], and key j of sequence b lies in page block_table[b * (cache / page_size) + j /
  // page_size] (cache a multiple of page_size).
  const std::int32_t* block_table = nullptr;
  std::int64_t page_size = 0;
  void* workspace = nullptr;  // split_mma: decode_workspace_bytes
  std::size_t workspace_bytes = 0;

  // Where key `key` of (batch, kv_head) starts in k (and v).
  __host__ __device__ std::int64_t key_offset(std::int64_t batch_index, std::int64_t kv_head, std::int64_t key) const {
    if (block_table == nullptr) return ((batch_index * kv_heads + kv_head) * cache + key) * head_dim;
    const std::int64_t page = block_table[batch_index * (cache / page_size) + key / page_size];
    return ((page * kv_heads + kv_head) * page_size + key % page_size) * head_dim;
  }
};
std::string decode_naive_limits(std::int64_t head_dim);
// split_mma takes pages of a multiple of its 64-key tiles.
std::string decode_split_page_limits(std::int64_t page_size);
std::string decode_split_limits(std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens, std::int64_t head_dim,
                                int compute_capability);
// split_mma's scratch for the splits' fp32 outputs and log-sum-exps on the current GPU (0 with one split).
std::size_t decode_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens,
                                   std::int64_t cache, std::int64_t head_dim);
template <typename T>
void decode_naive(const DecodeArgs<T>& args, cudaStream_t stream);
template <typename T>
void decode_split_mma(const DecodeArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::attention_variants
