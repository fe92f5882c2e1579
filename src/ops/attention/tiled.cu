// Rung `tiled`: FlashAttention-2's work split (Dao 2023) on CUDA cores. A block of 4 warps takes
// 64 query rows of one (batch, head); each warp 16 of them. Q's tile stays in shared memory for the
// whole walk; K and V tiles of kBlockN keys pass through shared memory one at a time. Per tile, each
// warp computes its 16 x kBlockN scores in registers, updates the online softmax, and adds P V into
// an output accumulator held in registers; O and L are written once, at the end.
//
// A warp's 32 lanes are 4 row groups x 8 key groups: lane (r, k) holds the rows r, r + 4, r + 8,
// r + 12 of the warp, and
//   for S = Q K^T  the keys k, k + 8, ... of the tile (4 x kBlockN / 8 scores), from 16-byte shared
//                  loads: 4 Q vectors and kBlockN / 8 K vectors give 16 * kBlockN / 8 FMAs;
//   for softmax    a row's max and sum over its 8 key groups by xor shuffles (lanes 8r..8r+7);
//   for O += P V   the dimensions 4k..4k+3 of every 32 (4 x head_dim / 8 accumulators): P goes
//                  through a per-warp shared tile (the lane needs every key of its rows), V's
//                  rows are read as 16-byte vectors, 8 lanes covering 128 contiguous bytes.
// Shared rows of Q and K are padded by 4 floats, so the 8 lanes that read 8 different keys (or
// rows) at one dimension hit 8 different groups of 4 banks. The scale and log2(e) are folded into Q
// as it is staged (s comes out in base 2: p = exp2(s - m)); keys none of the block's rows sees
// (past its last row when causal, outside a sliding window) are never loaded, and the keys a row
// does not see (past seq, the causal diagonal, the window) get -inf. Causal
// blocks run last-tile first: they have the most keys, and would otherwise start last.
//
// Fixes, against tutorial_fixed: the output accumulator in registers instead of local memory, 64
// rows a block over 4 warps (K and V tiles reused by 64 rows), register tiles of 4 x 4 (or 4 x 8)
// scores per thread. Costs: still FP32 FMAs, at most ~1/2 of them fed by one 16-byte shared load
// each; 1-3 blocks per SM (68-142 KiB of shared memory a block). head_dim is padded to 64, 128 or
// 256 (the template's width); other widths waste the padding's arithmetic.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "core/warp.cuh"
#include "cudalab/error.hpp"
#include "ops/attention/variants.hpp"
#include "ops/softmax/softmax.cuh"

namespace cudalab::attention_variants {
namespace {

using softmax_variants::group_reduce;
using softmax_variants::MaxOf;
using softmax_variants::SumOf;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRowsPerWarp = 16;
constexpr int kBlockM = kWarps * kRowsPerWarp;  // query rows a block
constexpr int kRowGroups = 4;                   // lanes / key groups
constexpr int kKeyGroups = 8;                   // lanes sharing a row
constexpr int kRowsPerThread = kRowsPerWarp / kRowGroups;
constexpr int kPad = 4;  // floats after each shared row of Q, K and P
constexpr float kLn2 = 0.6931471805599453f;
constexpr std::int64_t kMaxHeadDim = 256;
constexpr std::int64_t kMaxGridY = 65535;
static_assert(kRowGroups * kKeyGroups == kWarpSize, "a warp is 4 row groups of 8 lanes");

// Keys a tile: 64 at head_dim 64 (3 blocks an SM on Hopper), 32 above (shared memory).
template <int kHeadDim>
inline constexpr int kBlockN = kHeadDim <= 64 ? 64 : 32;

template <int kHeadDim>
constexpr std::size_t shared_bytes() {
  constexpr int n = kBlockN<kHeadDim>;
  return sizeof(float) * static_cast<std::size_t>(kBlockM * (kHeadDim + kPad) + n * (kHeadDim + kPad) + n * kHeadDim +
                                                  kWarps * kRowsPerWarp * (n + kPad));
}

// The template width a head_dim runs at: 64, 128 or 256.
std::int64_t padded_head_dim(std::int64_t head_dim) { return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256; }

std::size_t shared_bytes_for(std::int64_t head_dim) {
  switch (padded_head_dim(head_dim)) {
    case 64: return shared_bytes<64>();
    case 128: return shared_bytes<128>();
    default: return shared_bytes<256>();
  }
}

// The most dynamic shared memory a block may opt in to, by compute capability (CUDA C++
// Programming Guide, technical specifications); 99 KiB, the least of the recent ones, when the
// capability is not listed.
std::size_t shared_memory_optin_bytes(int compute_capability) {
  switch (compute_capability) {
    case 70:
    case 72: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80:
    case 87: return 163 * 1024;
    case 90:
    case 100: return 227 * 1024;
    default: return 99 * 1024;
  }
}

// Rows [first, first + kRows) of a [seq, head_dim] matrix, times `multiplier`, into a shared tile
// of kRows x kHeadDim floats with row stride `stride`; rows at or past `end` and dimensions at or
// past head_dim are 0. `vectorized`: head_dim == kHeadDim and the matrix 16-byte aligned, so rows
// go in 16-byte loads.
template <int kRows, int kHeadDim, typename T>
__device__ __forceinline__ void load_tile(float* tile, int stride, const T* matrix, std::int64_t first,
                                          std::int64_t end, std::int64_t head_dim, float multiplier, bool vectorized) {
  if (vectorized) {
    constexpr int kVec = kVector16<T>;
    constexpr int kChunks = kHeadDim / kVec;  // 16-byte chunks a row
    for (int c = static_cast<int>(threadIdx.x); c < kRows * kChunks; c += kThreads) {
      const int row = c / kChunks, column = (c % kChunks) * kVec;
      float values[kVec];
      if (first + row < end) {
        load_floats<kVec>(matrix + (first + row) * kHeadDim + column, values);
      } else {
#pragma unroll
        for (int i = 0; i < kVec; ++i) values[i] = 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kVec; ++i) tile[row * stride + column + i] = values[i] * multiplier;
    }
  } else {
    for (int i = static_cast<int>(threadIdx.x); i < kRows * kHeadDim; i += kThreads) {
      const int row = i / kHeadDim, d = i % kHeadDim;
      tile[row * stride + d] =
          first + row < end && d < head_dim ? to_float(matrix[(first + row) * head_dim + d]) * multiplier : 0.0f;
    }
  }
}

__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float dot4(float4 a, float4 b) { return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w; }

template <typename T, int kHeadDim>
__global__ void __launch_bounds__(kThreads)
    attention_tiled_kernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,
                           float* __restrict__ lse, std::int64_t heads, std::int64_t heads_per_kv_head,
                           std::int64_t seq, std::int64_t head_dim, float score_scale, bool causal, KeyWindow window,
                           bool vectorized) {
  constexpr int kKeys = kBlockN<kHeadDim>;
  constexpr int kKeysPerThread = kKeys / kKeyGroups;
  constexpr int kDimChunks = kHeadDim / (4 * kKeyGroups);  // 4-float chunks of O a thread, 32 dims apart
  constexpr int kStride = kHeadDim + kPad;
  constexpr int kPStride = kKeys + kPad;
  extern __shared__ float4 tiled_shared[];                 // float4: 16-byte alignment for the vector reads
  float* q_tile = reinterpret_cast<float*>(tiled_shared);  // kBlockM x kStride, scaled to base 2
  float* k_tile = q_tile + kBlockM * kStride;              // kKeys x kStride
  float* v_tile = k_tile + kKeys * kStride;                // kKeys x kHeadDim
  float* p_tiles = v_tile + kKeys * kHeadDim;              // kWarps x kRowsPerWarp x kPStride

  const int warp = static_cast<int>(threadIdx.x) / kWarpSize, lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int row_group = lane / kKeyGroups, key_group = lane % kKeyGroups;
  const std::int64_t batch_head = blockIdx.x;
  const std::int64_t b = batch_head / heads, h = batch_head % heads;
  const std::int64_t kv_batch_head = b * (heads / heads_per_kv_head) + h / heads_per_kv_head;
  const std::int64_t tiles = ceil_div<std::int64_t>(seq, kBlockM);
  const std::int64_t tile = causal ? tiles - 1 - blockIdx.y : blockIdx.y;
  const std::int64_t q_start = tile * kBlockM;
  const T* k_head = k + kv_batch_head * seq * head_dim;
  const T* v_head = v + kv_batch_head * seq * head_dim;
  load_tile<kBlockM, kHeadDim>(q_tile, kStride, q + batch_head * seq * head_dim, q_start, seq, head_dim, score_scale,
                               vectorized);

  // This thread's rows within the block (warp * 16 + row_group + 4 r) and their queries.
  int local_row[kRowsPerThread];
  std::int64_t query[kRowsPerThread];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    local_row[r] = warp * kRowsPerWarp + row_group + kRowGroups * r;
    query[r] = q_start + local_row[r];
  }
  float m[kRowsPerThread], l[kRowsPerThread], acc[kRowsPerThread][kDimChunks * 4];
#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;  // this lane's keys only; the row's 8 lanes are added at the end
#pragma unroll
    for (int i = 0; i < kDimChunks * 4; ++i) acc[r][i] = 0.0f;
  }
  float* p_tile = p_tiles + warp * kRowsPerWarp * kPStride;

  // The keys any of the block's rows sees.
  const std::int64_t kv_end = window.key_end(q_start + kBlockM - 1, seq);
  for (std::int64_t kv_start = window.first_key(q_start); kv_start < kv_end; kv_start += kKeys) {
    __syncthreads();  // the previous tile's readers are done (the first time: nothing to wait for)
    load_tile<kKeys, kHeadDim>(k_tile, kStride, k_head, kv_start, seq, head_dim, 1.0f, vectorized);
    load_tile<kKeys, kHeadDim>(v_tile, kHeadDim, v_head, kv_start, seq, head_dim, 1.0f, vectorized);
    __syncthreads();

    float s[kRowsPerThread][kKeysPerThread] = {};
#pragma unroll 4
    for (int d = 0; d < kHeadDim; d += 4) {
      float4 qv[kRowsPerThread], kv[kKeysPerThread];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) qv[r] = load4(q_tile + local_row[r] * kStride + d);
#pragma unroll
      for (int c = 0; c < kKeysPerThread; ++c) kv[c] = load4(k_tile + (key_group + kKeyGroups * c) * kStride + d);
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r)
#pragma unroll
        for (int c = 0; c < kKeysPerThread; ++c) s[r][c] += dot4(qv[r], kv[c]);
    }

#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int c = 0; c < kKeysPerThread; ++c) {
        const std::int64_t key = kv_start + key_group + kKeyGroups * c;
        if (key >= seq || !window.sees(query[r], key)) s[r][c] = -INFINITY;
        tile_max = fmaxf(tile_max, s[r][c]);
      }
      const float m_new = fmaxf(m[r], group_reduce<kKeyGroups>(tile_max, MaxOf{}));
      // A row that has seen no key yet (a window starts past the tile) keeps m = -inf; 0 stands in
      // so that no (-inf) - (-inf) appears: its p and rescale are 0 either way.
      const float m_finite = m_new == -INFINITY ? 0.0f : m_new;
      const float rescale = exp2f(m[r] - m_finite);  // 0 the first time: exp2(-inf)
      l[r] *= rescale;
#pragma unroll
      for (int i = 0; i < kDimChunks * 4; ++i) acc[r][i] *= rescale;
#pragma unroll
      for (int c = 0; c < kKeysPerThread; ++c) {
        const float p = exp2f(s[r][c] - m_finite);
        l[r] += p;
        p_tile[(row_group + kRowGroups * r) * kPStride + key_group + kKeyGroups * c] = p;
      }
      m[r] = m_new;
    }
    __syncwarp();  // the warp's P tile is complete

#pragma unroll 2
    for (int key = 0; key < kKeys; key += 4) {
      float4 p[kRowsPerThread];
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) p[r] = load4(p_tile + (row_group + kRowGroups * r) * kPStride + key);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float* v_row = v_tile + (key + kk) * kHeadDim + key_group * 4;
#pragma unroll
        for (int e = 0; e < kDimChunks; ++e) {
          const float4 vv = load4(v_row + e * 4 * kKeyGroups);
#pragma unroll
          for (int r = 0; r < kRowsPerThread; ++r) {
            const float pr = kk == 0 ? p[r].x : kk == 1 ? p[r].y : kk == 2 ? p[r].z : p[r].w;
            acc[r][e * 4 + 0] += pr * vv.x;
            acc[r][e * 4 + 1] += pr * vv.y;
            acc[r][e * 4 + 2] += pr * vv.z;
            acc[r][e * 4 + 3] += pr * vv.w;
          }
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerThread; ++r) {
    const float row_sum = group_reduce<kKeyGroups>(l[r], SumOf{});
    if (query[r] >= seq) continue;
    const float inverse = 1.0f / row_sum;
    T* o_row = o + (batch_head * seq + query[r]) * head_dim;
#pragma unroll
    for (int e = 0; e < kDimChunks; ++e) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int d = e * 4 * kKeyGroups + key_group * 4 + i;
        if (d < head_dim) o_row[d] = from_float<T>(acc[r][e * 4 + i] * inverse);
      }
    }
    if (key_group == 0) lse[batch_head * seq + query[r]] = (m[r] + log2f(row_sum)) * kLn2;
  }
}

template <typename T, int kHeadDim>
void launch(const AttentionArgs<T>& args, cudaStream_t stream) {
  constexpr std::size_t kShared = shared_bytes<kHeadDim>();
  const std::size_t optin = shared_memory_optin();
  CUDALAB_REQUIRE(kShared <= optin, "attention tiled: head_dim " + std::to_string(args.head_dim) + " needs " +
                                        std::to_string(kShared) + " bytes of shared memory a block; this GPU allows " +
                                        std::to_string(optin));
  CUDALAB_CUDA_CHECK(cudaFuncSetAttribute(attention_tiled_kernel<T, kHeadDim>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kShared)));
  const bool vectorized =
      args.head_dim == kHeadDim && is_aligned16(args.q) && is_aligned16(args.k) && is_aligned16(args.v);
  const dim3 grid(static_cast<unsigned>(args.batch * args.heads),
                  static_cast<unsigned>(ceil_div<std::int64_t>(args.seq, kBlockM)));
  attention_tiled_kernel<T, kHeadDim><<<grid, kThreads, kShared, stream>>>(
      args.q, args.k, args.v, args.o, args.lse, args.heads, args.heads / args.kv_heads, args.seq, args.head_dim,
      args.scale * kLog2e, args.causal, key_window(args), vectorized);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::string tiled_limits(const AttentionShape& shape) {
  if (shape.head_dim > kMaxHeadDim)
    return "head_dim above 256: the output accumulator (4 rows x head_dim / 8 floats a thread) would spill";
  if (ceil_div<std::int64_t>(shape.seq, kBlockM) > kMaxGridY) return "seq above 65535 * 64 (grid y: query tiles)";
  if (shape.batch * shape.heads > 0x7fffffffLL) return "batch * heads above 2^31 - 1 (grid x)";
  const std::size_t shared = shared_bytes_for(shape.head_dim);
  if (shape.compute_capability > 0 && shared > shared_memory_optin_bytes(shape.compute_capability))
    return "head_dim " + std::to_string(shape.head_dim) + " needs " + std::to_string(shared / 1024) +
           " KiB of shared memory a block, more than compute capability " +
           std::to_string(shape.compute_capability / 10) + "." + std::to_string(shape.compute_capability % 10) +
           " allows";
  return "";
}

template <typename T>
void tiled(const AttentionArgs<T>& args, cudaStream_t stream) {
  if (args.batch == 0 || args.heads == 0 || args.seq == 0 || args.head_dim == 0) return;
  const std::string why = tiled_limits(shape_of(args, 0));
  CUDALAB_REQUIRE(why.empty(), "attention tiled: " + why);
  CUDALAB_REQUIRE(args.kv_heads > 0 && args.heads % args.kv_heads == 0,
                  "attention tiled: heads must be a multiple of kv_heads");
  switch (padded_head_dim(args.head_dim)) {
    case 64: launch<T, 64>(args, stream); break;
    case 128: launch<T, 128>(args, stream); break;
    default: launch<T, 256>(args, stream); break;
  }
}

template void tiled<float>(const AttentionArgs<float>&, cudaStream_t);
template void tiled<__half>(const AttentionArgs<__half>&, cudaStream_t);
template void tiled<__nv_bfloat16>(const AttentionArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::attention_variants
