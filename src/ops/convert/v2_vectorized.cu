// Rung `vectorized`: 16-byte vectors and pairwise conversions, a resident grid striding over chunks of one
// 16-byte output vector. Fixes: rung `one_per_thread`'s narrow accesses and a quarter as many conversion
// instructions when narrowing (one F2FP packs two floats); block scheduling is paid once per
// resident block. Narrowing reads a chunk's 8 floats as two adjacent 16-byte vectors (the second
// load finds its sectors already fetched by the first) and writes one; widening reads 4 16-bit
// values as one 8-byte access and writes one 16-byte vector, so both instructions are
// warp-contiguous. Widening 8 values per lane instead (one 16-byte load, two adjacent 16-byte
// stores) moved 2.16-2.25 TB/s against Thrust's 2.80-2.84 (H100, 2^24 and 2^28): each store
// instruction wrote every other 16 bytes of the warp's span. The 4-element layout for narrowing
// too (one 16-byte load, one 8-byte store per lane) measured slower, not faster: 2.93-2.94 against
// 2.97 TB/s at 2^28 and 3.17 against 3.26 at 2^24 (commit a26c927, reverted), so the half-used
// load instructions are not what holds narrowing at 0.95x Thrust. Costs: a scalar head and tail (by the
// grid's first threads) and an alignment search on the host; pointers whose phases never meet go
// to rung `one_per_thread`.
#include <algorithm>
#include <cstdint>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "ops/convert/convert.cuh"
#include "ops/convert/variants.hpp"

namespace cudalab::convert_variants {
namespace {

constexpr int kBlockSize = 256;

// A chunk is the elements of one 16-byte output vector: 8 when narrowing, 4 when widening.
template <typename To>
constexpr int kChunk = 16 / static_cast<int>(sizeof(To));
// The alignment a chunk's input needs: 16 bytes (two float4s) narrowing, 8 (four halves) widening.
template <typename From, typename To>
constexpr int kInputAlignment = kChunk<To>* static_cast<int>(sizeof(From)) >= 16 ? 16 : 8;

// Converts the chunk at x into y (y 16-byte aligned, x aligned to kInputAlignment).
template <typename From, typename To>
__device__ __forceinline__ void convert_chunk(const From* x, To* y) {
  constexpr int kPairs = kChunk<To> / 2;
  using Out = Vector16<Pair<To>>;
  static_assert(Out::kCount == kPairs, "one output vector per chunk");
  Pair<From> in[kPairs];
  if constexpr (sizeof(From) == 4) {  // two 16-byte loads of float2 pairs
    using In = Vector16<Pair<From>>;
#pragma unroll
    for (int v = 0; v < kPairs / In::kCount; ++v) {
      const In part = load_vector16(reinterpret_cast<const Pair<From>*>(x) + v * In::kCount);
#pragma unroll
      for (int p = 0; p < In::kCount; ++p) in[v * In::kCount + p] = part[p];
    }
  } else {  // one 8-byte load of two 16-bit pairs
    static_assert(kPairs * sizeof(Pair<From>) == sizeof(uint2), "4 widened values per chunk");
    const uint2 raw = *reinterpret_cast<const uint2*>(x);
    *reinterpret_cast<uint2*>(in) = raw;
  }
  Out out;
#pragma unroll
  for (int p = 0; p < kPairs; ++p) out[p] = Conversion<From, To>::two(in[p]);
  store_vector16(reinterpret_cast<Pair<To>*>(y), out);
}

// Elements [head, head + chunks * kChunk) in chunks, by every thread, striding; the `head`
// elements before them and the `tail` after them one by one, by the grid's first threads.
template <typename From, typename To>
__global__ void convert_vectorized_kernel(const From* __restrict__ x, To* __restrict__ y, int head, std::int64_t chunks,
                                          int tail) {
  const std::int64_t thread = global_thread_index();
  const std::int64_t stride = global_thread_count();
  for (std::int64_t c = thread; c < chunks; c += stride) {
    const std::int64_t i = head + c * kChunk<To>;
    convert_chunk(x + i, y + i);
  }
  if (thread < head + tail) {
    const std::int64_t i = thread < head ? thread : chunks * kChunk<To> + thread;
    y[i] = Conversion<From, To>::one(x[i]);
  }
}

// The first index at which x and y are aligned for a chunk, or -1. Both advance a multiple of
// their alignment every chunk, so if no index below one chunk is aligned, none is.
template <typename From, typename To>
int aligned_start(const From* x, const To* y) {
  for (int i = 0; i < kChunk<To>; ++i)
    if (reinterpret_cast<std::uintptr_t>(x + i) % kInputAlignment<From, To> == 0 && is_aligned16(y + i)) return i;
  return -1;
}

// Launches the chunked kernel; false (nothing launched) when the pointers never share a 16-byte
// boundary.
template <typename From, typename To>
bool try_launch(const From* x, To* y, std::int64_t n, cudaStream_t stream) {
  const int start = aligned_start(x, y);
  if (start < 0) return false;
  const int head = static_cast<int>(std::min<std::int64_t>(start, n));
  const std::int64_t chunks = (n - head) / kChunk<To>;
  const int tail = static_cast<int>(n - head - chunks * kChunk<To>);
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
