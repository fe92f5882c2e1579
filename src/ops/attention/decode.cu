// Decode attention's rungs (variants.hpp): the few new tokens of each sequence against its key-value
// cache. Causal attention is aligned bottom-right: token t of n new ones of a sequence of length L
// sits at position L - n + t and sees the keys up to it.
//
// split_mma (flash-decoding) runs a block of 4 warps per (key split, kv head, sequence) holding every
// query that reads the kv head: the group's heads times the new tokens, packed as the 16 rows of one
// m16 tile (row = token * group + head in the group), so K and V cross from memory once per kv
// head. The block walks its split's key tiles of 64 (K and V in a three-stage cp.async ring in
// swizzled shared memory); warp w takes keys 16 w .. 16 w + 15 of each tile with its own running
// max, sum and O, and the four are merged through shared memory at the end. With one split the
// block writes O and the log-sum-exp; with several, each split writes its normalized O in fp32 and
// its log-sum-exp, and attention_decode_combine_kernel weights the splits by exp(lse); on Hopper
// it is launched as a programmatic dependent of the split kernel, so its launch overlaps the split
// kernel's last blocks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/workspace.hpp"
#include "cudalab/error.hpp"
#include "ops/attention/mma_kernel.cuh"

namespace cudalab::attention_variants {
namespace {

constexpr int kDecodeWarps = 4, kDecodeThreads = 32 * kDecodeWarps;
constexpr int kDecodeKeys = 16 * kDecodeWarps;  // keys a tile: 16 a warp
constexpr int kDecodeRows = 16;                 // packed query rows: one m16 tile
constexpr int kMaxSplits = 64;
constexpr int kMinSplitKeys = 128;  // two tiles
// K and V tiles in flight: three stages ran 1-8% faster than two (H200), at the same two blocks an SM.
constexpr int kStages = 3;

template <int kHeadDim>
constexpr std::size_t decode_shared_bytes() {
  return static_cast<std::size_t>(kDecodeRows + kStages * 2 * kDecodeKeys) * kHeadDim * kElementBytes;
}

// A query row per block (batch, head, token): warp w takes keys w, w + 4, ..., each lane the
// dimensions lane + 32 i (head_dim up to 32 kNaiveDims), a shuffle tree sums the dot product, and
// each warp keeps its own running max, sum and O; the four merge through shared memory.
constexpr int kNaiveDims = 8;

template <typename T>
__global__ void __launch_bounds__(kDecodeThreads) attention_decode_naive_kernel(const DecodeArgs<T> p) {
  __shared__ float maxima[kDecodeWarps], sums[kDecodeWarps];
  __shared__ float outputs[kDecodeWarps][32 * kNaiveDims];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t row = blockIdx.x, dim = p.head_dim;
  const std::int64_t token = row % p.tokens, head = row / p.tokens % p.heads, batch = row / (p.tokens * p.heads);
  const std::int64_t kv_head = head / (p.heads / p.kv_heads);
  const std::int64_t length = min(static_cast<std::int64_t>(p.lengths[batch]), p.cache);
  const KeyWindow window = key_window(p.cache, p.causal, p.window_left, p.window_right);
  const std::int64_t position = length - p.tokens + token;
  const std::int64_t first = window.first_key(position), keys = window.key_end(position, length);
  float q[kNaiveDims], o[kNaiveDims] = {};
#pragma unroll
  for (int i = 0; i < kNaiveDims; ++i) {
    const std::int64_t d = lane + 32 * i;
    q[i] = d < dim ? to_float(p.q[row * dim + d]) : 0.0f;
  }
  float max = -INFINITY, sum = 0.0f;
  for (std::int64_t key = first + warp; key < keys; key += kDecodeWarps) {
    const std::int64_t at = p.key_offset(batch, kv_head, key);
    const T *const k = p.k + at, *const v = p.v + at;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kNaiveDims; ++i) {
      const std::int64_t d = lane + 32 * i;
      if (d < dim) dot += q[i] * to_float(k[d]);
    }
    for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
    const float score = dot * p.scale, new_max = fmaxf(max, score);
    const float correction = expf(max - new_max), weight = expf(score - new_max);
    sum = sum * correction + weight;
#pragma unroll
    for (int i = 0; i < kNaiveDims; ++i) {
      const std::int64_t d = lane + 32 * i;
      o[i] = o[i] * correction + (d < dim ? weight * to_float(v[d]) : 0.0f);
    }
    max = new_max;
  }
  if (lane == 0) {
    maxima[warp] = max;
    sums[warp] = sum;
  }
#pragma unroll
  for (int i = 0; i < kNaiveDims; ++i) outputs[warp][lane + 32 * i] = o[i];
  __syncthreads();
  float row_max = -INFINITY;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) row_max = fmaxf(row_max, maxima[w]);
  float weights[kDecodeWarps], total = 0.0f;
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    weights[w] = maxima[w] == -INFINITY ? 0.0f : expf(maxima[w] - row_max);
    total += weights[w] * sums[w];
  }
  for (std::int64_t d = threadIdx.x; d < dim; d += kDecodeThreads) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) acc += weights[w] * outputs[w][d];
    p.o[row * dim + d] = from_float<T>(total > 0.0f ? acc / total : 0.0f);
  }
  if (threadIdx.x == 0 && p.lse != nullptr) p.lse[row] = total > 0.0f ? row_max + logf(total) : -INFINITY;
}

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kDecodeThreads)
    attention_decode_kernel(const DecodeArgs<T> p, float* partial_o, float* partial_lse) {
#if CUDALAB_TENSOR_CORE_SM80
  constexpr int kRowChunks = kHeadDim / kChunkElements;
  constexpr int kDimSteps = kHeadDim / 16, kDimTiles = kHeadDim / 8;
  constexpr std::uint32_t kTileBytes = kDecodeKeys * kHeadDim * kElementBytes;
  extern __shared__ uint4 shared_words[];
  const std::uint32_t q_tile = shared_address(shared_words);
  const std::uint32_t kv_tiles = q_tile + kDecodeRows * kHeadDim * kElementBytes;  // stage s: K, then V
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int split = static_cast<int>(blockIdx.x);
  const std::int64_t kv_head = blockIdx.y, batch = blockIdx.z;
  const std::int64_t group = p.heads / p.kv_heads;
  const int rows = static_cast<int>(group * p.tokens);
  const std::int64_t length = min(static_cast<std::int64_t>(p.lengths[batch]), p.cache);
  // The key tiles the sequence's queries see: from the first key a window lets the earliest query
  // (position length - tokens) see, to the sequence's end; split evenly.
  const KeyWindow window = key_window(p.cache, p.causal, p.window_left, p.window_right);
  const int first_tile = static_cast<int>(window.first_key(length - p.tokens) / kDecodeKeys);
  const int tiles = static_cast<int>(ceil_div<std::int64_t>(length, kDecodeKeys));
  const int per_split = static_cast<int>(ceil_div<std::int64_t>(max(tiles - first_tile, 0), gridDim.x));
  const int tile_lo = min(first_tile + split * per_split, tiles), tile_hi = min(tile_lo + per_split, tiles);

  // Q's packed rows; rows past the group's queries read as zeros.
  for (int c = static_cast<int>(threadIdx.x); c < kDecodeRows * kRowChunks; c += kDecodeThreads) {
    const int row = c / kRowChunks, chunk = c % kRowChunks;
    const bool inside = row < rows;
    const std::int64_t token = row / group, head = kv_head * group + row % group;
    const T* source =
        inside ? p.q + ((batch * p.heads + head) * p.tokens + token) * kHeadDim + chunk * kChunkElements : p.q;
    cp_async16(q_tile + kElementBytes * swizzle<kRowChunks>(row, chunk), source, inside ? 16 : 0);
  }
  // A tile's 64 keys lie in one page (decode_split_page_limits): its rows from the page's first
  // key on, those past the sequence's length zero-filled.
  const auto load_tile = [&](int tile, int stage) {
    const std::uint32_t k_tile = kv_tiles + 2 * stage * kTileBytes;
    const std::int64_t key0 = static_cast<std::int64_t>(tile) * kDecodeKeys;
    const std::int64_t first = p.block_table != nullptr ? key0 - key0 % p.page_size : 0;
    const std::int64_t at = p.key_offset(batch, kv_head, first);
    copy_rows_async<T, kDecodeKeys, kHeadDim, kDecodeThreads>(k_tile, p.k + at, key0 - first, length - first);
    copy_rows_async<T, kDecodeKeys, kHeadDim, kDecodeThreads>(k_tile + kTileBytes, p.v + at, key0 - first,
                                                              length - first);
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (tile_lo + s < tile_hi) load_tile(tile_lo + s, s);
    cp_async_commit();  // Q joins the first group
  }

  // The positions of the thread's two rows (g and g + 8); padding rows take the last query's (their
  // zero queries give finite scores, and they are never stored).
  std::int64_t position[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = lane / 4 + 8 * r;
    position[r] = row < rows ? length - p.tokens + row / group : length - 1;
  }
  const float exponent_scale = p.scale * kLog2e;
  std::uint32_t q_fragments[kDimSteps][1][4];
  float o[kDimTiles][4] = {};
  SoftmaxRows state;
  for (int tile = tile_lo; tile < tile_hi; ++tile) {
    const int step = tile - tile_lo, stage = step % kStages;
    cp_async_wait<kStages - 2>();  // this tile (and Q) landed
    __syncthreads();               // ... for every thread; and every warp is done with the last tile's stage
    if (tile + kStages - 1 < tile_hi) load_tile(tile + kStages - 1, (step + kStages - 1) % kStages);
    cp_async_commit();
    if (tile == tile_lo) {
#pragma unroll
      for (int ks = 0; ks < kDimSteps; ++ks) load_a_fragments<1, kRowChunks>(q_fragments[ks], q_tile, 0, ks);
    }
    const std::uint32_t k_tile = kv_tiles + 2 * stage * kTileBytes, v_tile = k_tile + kTileBytes;
    float s[2][4] = {};
#pragma unroll
    for (int ks = 0; ks < kDimSteps; ++ks) {
      std::uint32_t k_fragments[2][2];
      load_b_fragments<2, kRowChunks, true>(k_fragments, k_tile, 16 * warp, ks);
      mma_m16n8k16<T>(s[0], q_fragments[ks][0], k_fragments[0]);
      mma_m16n8k16<T>(s[1], q_fragments[ks][0], k_fragments[1]);
    }
    const std::int64_t key0 = static_cast<std::int64_t>(tile) * kDecodeKeys + 16 * warp;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::int64_t key = key0 + 8 * i + 2 * (lane % 4) + (e & 1);
        if (key >= length || !window.sees(position[e / 2], key)) s[i][e] = -INFINITY;
      }
    rescale_rows(o, online_softmax(s, state, exponent_scale));
    std::uint32_t p_fragment[4];
    pack_fragment<T>(p_fragment, s);
#pragma unroll
    for (int dj = 0; dj < kDimTiles / 2; ++dj) {
      std::uint32_t v_fragments[2][2];
      load_b_fragments<2, kRowChunks, false>(v_fragments, v_tile, 16 * dj, warp);
      mma_m16n8k16<T>(o[2 * dj], p_fragment, v_fragments[0]);
      mma_m16n8k16<T>(o[2 * dj + 1], p_fragment, v_fragments[1]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  // The four warps' states through shared memory (over the K and V tiles): each row's max and sum,
  // then O, in fp32.
  float* const merge =
      reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(shared_words) + kDecodeRows * kHeadDim * kElementBytes);
  float* const maxima = merge;                               // [warp][row]
  float* const sums = maxima + kDecodeWarps * kDecodeRows;   // [warp][row]
  float* const outputs = sums + kDecodeWarps * kDecodeRows;  // [warp][row][head_dim]
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = state.sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = lane / 4 + 8 * r;
    if (lane % 4 == 0) {
      maxima[warp * kDecodeRows + row] = state.max[r];
      sums[warp * kDecodeRows + row] = sum;
    }
#pragma unroll
    for (int i = 0; i < kDimTiles; ++i)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        outputs[(warp * kDecodeRows + row) * kHeadDim + 8 * i + 2 * (lane % 4) + e] = o[i][2 * r + e];
  }
  __syncthreads();
  for (int index = static_cast<int>(threadIdx.x); index < rows * kHeadDim; index += kDecodeThreads) {
    const int row = index / kHeadDim, d = index % kHeadDim;
    float max = -INFINITY;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) max = fmaxf(max, maxima[w * kDecodeRows + row]);
    float sum = 0.0f, acc = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) {
      const float m = maxima[w * kDecodeRows + row];
      const float weight = m == -INFINITY ? 0.0f : fast_exp2((m - max) * exponent_scale);
      sum += weight * sums[w * kDecodeRows + row];
      acc += weight * outputs[(w * kDecodeRows + row) * kHeadDim + d];
    }
    const float value = sum > 0.0f ? acc / sum : 0.0f;
    const float lse = sum > 0.0f ? max * p.scale + logf(sum) : -INFINITY;
    const std::int64_t token = row / group, head = kv_head * group + row % group;
    const std::int64_t out_row = (batch * p.heads + head) * p.tokens + token;
    if (gridDim.x == 1) {
      p.o[out_row * kHeadDim + d] = from_float<T>(value);
      if (d == 0 && p.lse != nullptr) p.lse[out_row] = lse;
    } else {
      const std::int64_t part_row = split * p.batch * p.heads * p.tokens + out_row;
      partial_o[part_row * kHeadDim + d] = value;
      if (d == 0) partial_lse[part_row] = lse;
    }
  }
#else
  __trap();
#endif  // CUDALAB_TENSOR_CORE_SM80
}

// One block per query row (batch, head, token): the splits' outputs weighted by exp(lse_s - max).
// Warp w sums splits w, w + 4, ..., each lane kHeadDim / 32 dimensions, so a warp has every load
// of a split in flight at once (one thread per dimension walking the splits in turn waited for each
// load: 9.7 us for 31 splits of 32 rows under ncu); the warps' sums meet in shared memory.
template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kDecodeThreads)
    attention_decode_combine_kernel(const DecodeArgs<T> p, const float* partial_o, const float* partial_lse,
                                    int splits) {
  constexpr int kLaneDims = kHeadDim / 32;
  __shared__ float weights[kMaxSplits];
  __shared__ float sums[kDecodeWarps][kHeadDim];
  __shared__ float total;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the split kernel's results are visible
#endif
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t row = blockIdx.x, rows = p.batch * p.heads * p.tokens;
  if (warp == 0) {
    float max = -INFINITY;
    for (int s = lane; s < splits; s += 32) max = fmaxf(max, partial_lse[s * rows + row]);
    for (int offset = 16; offset > 0; offset /= 2) max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, offset));
    float sum = 0.0f;
    for (int s = lane; s < splits; s += 32) {
      const float lse = partial_lse[s * rows + row];
      weights[s] = max == -INFINITY ? 0.0f : expf(lse - max);
      sum += weights[s];
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      total = sum;
      if (p.lse != nullptr) p.lse[row] = sum > 0.0f ? max + logf(sum) : -INFINITY;
    }
  }
  __syncthreads();
  float acc[kLaneDims] = {};
#pragma unroll 2
  for (int s = warp; s < splits; s += kDecodeWarps) {
    const float* split_row = partial_o + (s * rows + row) * kHeadDim;
#pragma unroll
    for (int i = 0; i < kLaneDims; ++i) acc[i] += weights[s] * split_row[lane + 32 * i];
  }
#pragma unroll
  for (int i = 0; i < kLaneDims; ++i) sums[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  for (int d = static_cast<int>(threadIdx.x); d < kHeadDim; d += kDecodeThreads) {
    float value = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w) value += sums[w][d];
    p.o[row * kHeadDim + d] = from_float<T>(total > 0.0f ? value / total : 0.0f);
  }
}

// The kernel for a head_dim, with its dynamic shared memory.
template <typename T>
struct DecodeKernel {
  void (*kernel)(DecodeArgs<T>, float*, float*);
  std::size_t shared;
};
template <typename T>
DecodeKernel<T> decode_kernel(std::int64_t head_dim) {
  if (head_dim == 64) return {attention_decode_kernel<T, 64>, decode_shared_bytes<64>()};
  return {attention_decode_kernel<T, 128>, decode_shared_bytes<128>()};
}

// Blocks of `k` resident on one SM (2 at head_dim 128 on an H100 or H200: registers and shared
// memory allow two).
template <typename T>
int resident_per_sm(const DecodeKernel<T>& k) {
  return resident_blocks_per_sm(reinterpret_cast<const void*>(k.kernel), kDecodeThreads, k.shared);
}

// Splits of each sequence's keys over `blocks` (batch * kv_heads) blocks, `resident` of which fit
// on the GPU at once: none when the blocks fill it; else the fewest (at most kMaxSplits, at least
// kMinSplitKeys keys each) whose blocks fill their last wave within 95% of the best split's. A
// block reads one tile at a time whatever its neighbours do, so throughput follows the blocks
// resident: a grid of 1.2 waves ran at 0.7x the speed of one of 0.97 (measured on an H200).
int decode_splits(std::int64_t blocks, std::int64_t cache, std::int64_t resident) {
  if (blocks >= resident) return 1;
  const std::int64_t most = std::min<std::int64_t>(kMaxSplits, std::max<std::int64_t>(1, cache / kMinSplitKeys));
  const auto filled = [&](std::int64_t s) {
    const std::int64_t total = blocks * s;
    return static_cast<double>(total) / static_cast<double>(ceil_div(total, resident) * resident);
  };
  double best = 0.0;
  for (std::int64_t s = 1; s <= most; ++s) best = std::max(best, filled(s));
  std::int64_t s = 1;
  while (filled(s) < 0.95 * best) ++s;
  return static_cast<int>(s);
}

// split_mma's kernel, splits and scratch for a problem on the current GPU.
template <typename T>
struct SplitPlan {
  DecodeKernel<T> kernel;
  int splits;
  std::size_t scratch_bytes;
};
template <typename T>
SplitPlan<T> split_plan(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens,
                        std::int64_t cache, std::int64_t head_dim) {
  const DecodeKernel<T> kernel = decode_kernel<T>(head_dim);
  const std::int64_t resident = static_cast<std::int64_t>(current_gpu().sm_count) * resident_per_sm(kernel);
  const int splits = decode_splits(batch * kv_heads, cache, resident);
  const std::int64_t rows = batch * heads * tokens;
  return {kernel, splits, splits > 1 ? static_cast<std::size_t>(splits * rows * (head_dim + 1)) * sizeof(float) : 0};
}

}  // namespace

std::string decode_naive_limits(std::int64_t head_dim) {
  return head_dim <= 32 * kNaiveDims ? "" : "head_dim must be at most " + std::to_string(32 * kNaiveDims);
}

std::string decode_split_page_limits(std::int64_t page_size) {
  return page_size % kDecodeKeys == 0 ? ""
                                      : "pages must hold a multiple of " + std::to_string(kDecodeKeys) +
                                            " keys (split_mma's tiles), got " + std::to_string(page_size);
}

std::string decode_split_limits(std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens, std::int64_t head_dim,
                                int compute_capability) {
  if (compute_capability < 80) return "needs compute capability 8.0 or newer (mma.sync on bf16/fp16)";
  if (head_dim != 64 && head_dim != 128) return "head_dim must be 64 or 128";
  if (kv_heads <= 0 || heads % kv_heads != 0) return "heads must be a multiple of kv_heads";
  if (heads / kv_heads * tokens > kDecodeRows)
    return "(heads / kv_heads) * tokens must be at most 16 (one m16 tile of packed queries)";
  return "";
}

std::size_t decode_workspace_bytes(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, std::int64_t tokens,
                                   std::int64_t cache, std::int64_t head_dim) {
  if (batch * heads * tokens == 0 || kv_heads <= 0) return 0;
  // The scratch depends on the element type's kernel only through its occupancy, which bf16 and fp16 share.
  return split_plan<__nv_bfloat16>(batch, heads, kv_heads, tokens, cache, head_dim).scratch_bytes;
}

template <typename T>
void decode_naive(const DecodeArgs<T>& args, cudaStream_t stream) {
  const std::string why = decode_naive_limits(args.head_dim);
  CUDALAB_REQUIRE(why.empty(), "attention_decode naive: " + why);
  const std::int64_t rows = args.batch * args.heads * args.tokens;
  if (rows == 0) return;
  attention_decode_naive_kernel<T><<<static_cast<unsigned>(rows), kDecodeThreads, 0, stream>>>(args);
  CUDALAB_CHECK_LAUNCH();
}

template <typename T>
void decode_split_mma(const DecodeArgs<T>& args, cudaStream_t stream) {
  const std::string why =
      decode_split_limits(args.heads, args.kv_heads, args.tokens, args.head_dim, current_gpu().compute_capability);
  CUDALAB_REQUIRE(why.empty(), "attention_decode split_mma: " + why);
  const std::int64_t rows = args.batch * args.heads * args.tokens;
  if (rows == 0) return;
  const SplitPlan<T> plan =
      split_plan<T>(args.batch, args.heads, args.kv_heads, args.tokens, args.cache, args.head_dim);
  float *partial_o = nullptr, *partial_lse = nullptr;  // the splits' outputs and log-sum-exps
  if (plan.splits > 1) {
    partial_o = static_cast<float*>(workspace_of(args, plan.scratch_bytes, "attention_decode split_mma"));
    partial_lse = partial_o + plan.splits * rows * args.head_dim;
  }
  const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(args.kv_heads),
                  static_cast<unsigned>(args.batch));
  plan.kernel.kernel<<<grid, kDecodeThreads, plan.kernel.shared, stream>>>(args, partial_o, partial_lse);
  CUDALAB_CHECK_LAUNCH();
  if (plan.splits > 1) {
    cudaLaunchAttribute dependent[1] = {};
    dependent[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    dependent[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(rows));
    config.blockDim = dim3(kDecodeThreads);
    config.stream = stream;
    config.attrs = dependent;
    config.numAttrs = current_gpu().compute_capability >= 90 ? 1 : 0;
    const auto combine =
        args.head_dim == 64 ? attention_decode_combine_kernel<T, 64> : attention_decode_combine_kernel<T, 128>;
    CUDALAB_CUDA_CHECK(cudaLaunchKernelEx(&config, combine, args, static_cast<const float*>(partial_o),
                                          static_cast<const float*>(partial_lse), plan.splits));
  }
}

template void decode_naive<float>(const DecodeArgs<float>&, cudaStream_t);
template void decode_naive<__half>(const DecodeArgs<__half>&, cudaStream_t);
template void decode_naive<__nv_bfloat16>(const DecodeArgs<__nv_bfloat16>&, cudaStream_t);
template void decode_split_mma<__half>(const DecodeArgs<__half>&, cudaStream_t);
template void decode_split_mma<__nv_bfloat16>(const DecodeArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
