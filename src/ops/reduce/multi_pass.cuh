// The pieces the reduction kernels share: block size, workspace layout, the sum of a 16-byte
// vector and the host loop that runs passes until one value is left.
#pragma once

#include <cstdint>
#include <string>

#include "core/launch.cuh"
#include "core/vector.cuh"
#include "cudalab/error.hpp"
#include "ops/reduce/variants.hpp"

namespace cudalab::reduce_variants {

inline constexpr int kBlockSize = 256;

// Workspace: [ticket counters, padded to 256 B][partials A][partials B], each partial buffer large
// enough for one value per block of the first pass, ceil(n / kBlockSize). The counters are zero on
// entry and every launcher leaves them zero; CUB's temporary storage starts past them.
template <typename T>
struct WorkspaceLayout {
  unsigned* counters;
  T* partials_a;
  T* partials_b;
};

inline std::int64_t partial_capacity(std::int64_t n) { return ceil_div<std::int64_t>(n > 0 ? n : 1, kBlockSize); }

template <typename T>
std::size_t own_workspace_bytes(std::int64_t n) {
  return counter_bytes(n) + 2 * static_cast<std::size_t>(partial_capacity(n)) * sizeof(T);
}

// The counters and partials of T in `args`' workspace; throws when the workspace is too small
// for them (a caller that sized it by hand rather than with workspace_bytes).
template <typename T, typename Args>
WorkspaceLayout<T> carve(const Args& args) {
  const std::size_t needed = own_workspace_bytes<T>(args.n);
  CUDALAB_REQUIRE(args.workspace != nullptr && args.workspace_bytes >= needed,
                  "reduce: the workspace holds " + std::to_string(args.workspace_bytes) + " bytes, the launch needs " +
                      std::to_string(needed) + " (see reduce_variants::workspace_bytes)");
  auto* bytes = static_cast<unsigned char*>(args.workspace);
  T* a = reinterpret_cast<T*>(bytes + counter_bytes(args.n));
  return {reinterpret_cast<unsigned*>(bytes), a, a + partial_capacity(args.n)};
}

// Sum of a 16-byte vector's four elements, carried in Acc, in pairs: (x0 + x1) + (x2 + x3).
template <typename Acc, typename T>
__device__ __forceinline__ Acc vector_sum(const Vector16<T>& v) {
  static_assert(Vector16<T>::kCount == 4, "the reduction kernels read 4-byte elements, four to a vector");
  return (static_cast<Acc>(v[0]) + static_cast<Acc>(v[1])) + (static_cast<Acc>(v[2]) + static_cast<Acc>(v[3]));
}

// Reduces in passes: pass(source, count, destination, blocks, stream) turns `count` values into
// `blocks` = blocks_for(count) partial sums; passes repeat on the partials (ping-pong between the
// two workspace buffers) until a pass has one block, which writes straight into `out`.
template <typename T, typename Source, typename BlocksFor, typename Pass>
void reduce_in_passes(Source in, std::int64_t n, T* out, const WorkspaceLayout<T>& ws, BlocksFor blocks_for, Pass pass,
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
