// Rung 2: 16-byte vectors on both sides and pairwise conversions, a resident grid striding over
// 8-element chunks. Fixes: rung 1's narrow accesses (each lane now moves 16 bytes of the 16-bit
// type and 32 of fp32 per chunk) and a quarter as many conversion instructions when narrowing
// (one F2FP packs two floats); block scheduling is paid once per resident block. Costs: a scalar
// head and tail (at most 7 elements each, by the grid's first threads) and an alignment search on
// the host; pointers whose 16-byte phases never meet go to rung 1. A lane's two fp32 vectors are
// adjacent, so each of the two load instructions touches every other 16 bytes of the warp's 1 KiB:
// the second finds its sectors already fetched by the first.
#include <algorithm>
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "ops/convert/convert.cuh"
#include "ops/convert/variants.hpp"

namespace cudalab::convert_variants {
namespace {

constexpr int kBlockSize = 256;
constexpr int kChunk = 8;  // elements: one 16-byte vector of the 16-bit type, two of fp32
constexpr int kPairs = kChunk / 2;

// Converts the chunk at x into y, both 16-byte aligned: its pairs travel as 16-byte vectors of
// pairs (two float2 or four half2 each) and are converted one pair at a time.
template <typename From, typename To>
__device__ __forceinline__ void convert_chunk(const From* x, To* y) {
  using In = Vector16<Pair<From>>;
  using Out = Vector16<Pair<To>>;
  In in[kPairs / In::kCount];
  Out out[kPairs / Out::kCount];
#pragma unroll
  for (int v = 0; v < kPairs / In::kCount; ++v)
    in[v] = load_vector16(reinterpret_cast<const Pair<From>*>(x) + v * In::kCount);
#pragma unroll
  for (int p = 0; p < kPairs; ++p)
    out[p / Out::kCount][p % Out::kCount] = Conversion<From, To>::two(in[p / In::kCount][p % In::kCount]);
#pragma unroll
  for (int v = 0; v < kPairs / Out::kCount; ++v)
    store_vector16(reinterpret_cast<Pair<To>*>(y) + v * Out::kCount, out[v]);
}

// Elements [head, head + chunks * kChunk) in chunks, by every thread, striding; the `head`
// elements before them and the `tail` after them one by one, by the grid's first threads.
template <typename From, typename To>
__global__ void convert_vectorized_kernel(const From* __restrict__ x, To* __restrict__ y, int head, std::int64_t chunks,
                                          int tail) {
  const std::int64_t thread = global_thread_index();
  const std::int64_t stride = global_thread_count();
  for (std::int64_t c = thread; c < chunks; c += stride) {
    const std::int64_t i = head + c * kChunk;
    convert_chunk(x + i, y + i);
  }
  if (thread < head + tail) {
    const std::int64_t i = thread < head ? thread : chunks * kChunk + thread;
    y[i] = Conversion<From, To>::one(x[i]);
  }
}

// The first index at which x and y are both 16-byte aligned, or -1. Both advance a multiple of 16
// bytes every 8 elements, so if no index below 8 is aligned, none is.
template <typename From, typename To>
int aligned_start(const From* x, const To* y) {
  for (int i = 0; i < kChunk; ++i)
    if (is_aligned16(x + i) && is_aligned16(y + i)) return i;
  return -1;
}

// Launches the chunked kernel; false (nothing launched) when the pointers never share a 16-byte
// boundary.
template <typename From, typename To>
bool try_launch(const From* x, To* y, std::int64_t n, cudaStream_t stream) {
  const int start = aligned_start(x, y);
  if (start < 0) return false;
  const int head = static_cast<int>(std::min<std::int64_t>(start, n));
  const std::int64_t chunks = (n - head) / kChunk;
  const int tail = static_cast<int>(n - head - chunks * kChunk);
  const int blocks = resident_grid_size(convert_vectorized_kernel<From, To>, kBlockSize, chunks);
  convert_vectorized_kernel<<<blocks, kBlockSize, 0, stream>>>(x, y, head, chunks, tail);
  CUDALAB_CHECK_LAUNCH();
  return true;
}

}  // namespace

template <typename T>
void vectorized(const ConvertArgs<T>& args, cudaStream_t stream) {
  if (args.n == 0) return;
  const bool launched = args.direction == ConvertDirection::narrow
                            ? try_launch(args.f32_in, args.half_out, args.n, stream)
                            : try_launch(args.half_in, args.f32_out, args.n, stream);
  if (!launched) one_per_thread(args, stream);
}

template void vectorized<__half>(const ConvertArgs<__half>&, cudaStream_t);
template void vectorized<__nv_bfloat16>(const ConvertArgs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cudalab::convert_variants
