// The pieces the reduction kernels share: block size, workspace layout, 16-byte vector types and
// the host loop that runs passes until one value is left.
#pragma once

#include <cstdint>
#include <functional>

#include "core/launch.cuh"
#include "cudalab/error.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab::reduce_variants {

inline constexpr int kBlockSize = 256;

// Workspace: [ticket counters, padded to 256 B][partials A][partials B], each partial buffer large
// enough for one value per block of the first pass, ceil(n / kBlockSize). The counters are zero on
// entry and every launcher leaves them zero; CUB's temporary storage starts past them.
template <typename T>
struct Workspace {
  unsigned* counters;
  T* partials_a;
  T* partials_b;
};

inline std::int64_t partial_capacity(std::int64_t n) { return ceil_div<std::int64_t>(n > 0 ? n : 1, kBlockSize); }

template <typename T>
std::size_t own_workspace_bytes(std::int64_t n) {
  return counter_bytes(n) + 2 * static_cast<std::size_t>(partial_capacity(n)) * sizeof(T);
}

template <typename T>
Workspace<T> carve(void* workspace, std::int64_t n) {
  auto* bytes = static_cast<unsigned char*>(workspace);
  T* a = reinterpret_cast<T*>(bytes + counter_bytes(n));
  return {reinterpret_cast<unsigned*>(bytes), a, a + partial_capacity(n)};
}

template <typename T>
struct Vec4;
template <>
struct Vec4<float> {
  using type = float4;
};
template <>
struct Vec4<std::int32_t> {
  using type = int4;
};

template <typename Acc, typename V>
__device__ __forceinline__ Acc sum4(const V& v) {
  return (static_cast<Acc>(v.x) + static_cast<Acc>(v.y)) + (static_cast<Acc>(v.z) + static_cast<Acc>(v.w));
}

// Reduces in passes: pass(source, count, destination, blocks, stream) turns `count` values into
// `blocks` = blocks_for(count) partial sums; passes repeat on the partials (ping-pong between the
// two workspace buffers) until a pass has one block, which writes straight into `out`.
template <typename T, typename Source, typename BlocksFor, typename Pass>
void reduce_in_passes(Source in, std::int64_t n, T* out, const Workspace<T>& ws, BlocksFor blocks_for, Pass pass,
                      cudaStream_t stream) {
  if (n == 0) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(T), stream));
    return;
  }
  T* next = ws.partials_a;
  std::int64_t count = n;
  std::int64_t blocks = blocks_for(count);
  pass(in, count, blocks == 1 ? out : next, blocks, stream);
  while (blocks > 1) {
    T* source = next;
    next = source == ws.partials_a ? ws.partials_b : ws.partials_a;
    count = blocks;
    blocks = blocks_for(count);
    pass(source, count, blocks == 1 ? out : next, blocks, stream);
  }
}

inline unsigned grid_of(std::int64_t blocks) {
  CUDALAB_REQUIRE(blocks <= 0x7fffffff, "reduce: the input needs more than 2^31-1 blocks");
  return static_cast<unsigned>(blocks);
}

}  // namespace cudalab::reduce_variants
