// One tile per block, no loop: every block sums a tile of consecutive elements with a few 16-byte
// loads per thread, so the grid has as many blocks as tiles and the hardware hands them out in
// address order. The whole GPU then streams through memory as one front, where a
// resident grid-stride loop (v3) spreads its blocks' requests over a window as wide as the grid
// and visits more DRAM pages at once; on the H100 that is worth about 4% (docs/reduce.md).
#include <cstdint>

#include "core/row_reduce.cuh"
#include "ops/reduce/last_block.cuh"
#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {
namespace {

// 16-byte loads per thread, all issued before the first add. The atomic kernel's blocks are as
// short as can be (two loads: 2048 elements a block, fastest in a 2/4/8 sweep on the H100). The
// deterministic kernel's blocks each wait for a fence and a ticket before they exit, about half a
// microsecond that holds the block's slot on the SM; with 8 loads (8192 elements) there are a
// quarter as many blocks to pay it: 406 us at 2 loads, 342 us at 8, for 2^28 floats.
constexpr int kAtomicTileVectors = 2;
constexpr int kDeterministicTileVectors = 8;

template <int Vectors>
constexpr std::int64_t tile_elements() {
  return std::int64_t{kBlockSize} * Vectors * 4;  // four 4-byte elements to a 16-byte vector
}

template <int Vectors>
std::int64_t tile_blocks(std::int64_t n) {
  return n == 0 ? 0 : ceil_div<std::int64_t>(n, tile_elements<Vectors>());
}

// Sum of this thread's share of tile blockIdx.x of the aligned body; block 0 also takes the
// unaligned head and the tail past the last whole vector (at most 3 elements each).
template <typename T, typename Acc, int Vectors>
__device__ __forceinline__ Acc thread_sum_tile(const T* in, std::int64_t n, int head) {
  using V = Vector16<T>;
  const T* body = in + head;  // 16-byte aligned
  const std::int64_t vectors = (n - head) / V::kCount;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * (kBlockSize * Vectors) + threadIdx.x;
  Acc sum{};
  if (first + (Vectors - 1) * kBlockSize < vectors) {
    V x[Vectors];
#pragma unroll
    for (int u = 0; u < Vectors; ++u) x[u] = load_vector16(body + (first + u * kBlockSize) * V::kCount);
#pragma unroll
    for (int u = 0; u < Vectors; ++u) sum += vector_sum<Acc>(x[u]);
  } else {
#pragma unroll
    for (int u = 0; u < Vectors; ++u)
      if (first + u * kBlockSize < vectors)
        sum += vector_sum<Acc>(load_vector16(body + (first + u * kBlockSize) * V::kCount));
  }
  if (blockIdx.x == 0) {
    if (threadIdx.x < head) sum += static_cast<Acc>(in[threadIdx.x]);
    const std::int64_t tail = head + vectors * V::kCount + threadIdx.x;
    if (tail < n) sum += static_cast<Acc>(in[tail]);
  }
  return sum;
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kBlockSize)
    reduce_tile_atomic_kernel(const T* in, std::int64_t n, int head, Acc* out) {
  __shared__ Acc scratch[kBlockSize / kWarpSize];
  const Acc sum = block_sum<kBlockSize>(thread_sum_tile<T, Acc, kAtomicTileVectors>(in, n, head), scratch);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

// Deterministic finish in two levels, all in the one launch: the last block of each group of
// kBlockSize tiles adds the group's partials (one per thread, in index order), and the last group
// to finish adds the groups' sums. A single level would leave one block to add n / 8192 partials
// (32768 at 2^28), 128 dependent L2 reads per thread.
// counters[0] counts groups, counters[1 + g] the blocks of group g.
template <typename T, typename Acc>
__global__ void __launch_bounds__(kBlockSize)
    reduce_tile_deterministic_kernel(const T* in, std::int64_t n, int head, Acc* tile_sums, Acc* group_sums,
                                     unsigned* counters, Acc* out) {
  __shared__ Acc scratch[kBlockSize / kWarpSize];
  const Acc sum = block_sum<kBlockSize>(thread_sum_tile<T, Acc, kDeterministicTileVectors>(in, n, head), scratch);
  if (gridDim.x == 1) {  // a lone tile needs no ticket (n <= 8192)
    if (threadIdx.x == 0) *out = sum;
    return;
  }
  const unsigned group = blockIdx.x / kBlockSize;
  const unsigned groups = ceil_div<unsigned>(gridDim.x, kBlockSize);
  const unsigned group_first = group * kBlockSize;
  const unsigned group_blocks = min(static_cast<unsigned>(kBlockSize), gridDim.x - group_first);
  if (!publish_and_check_last(sum, &tile_sums[blockIdx.x], &counters[1 + group], group_blocks)) return;

  Acc group_sum = threadIdx.x < group_blocks ? __ldcg(&tile_sums[group_first + threadIdx.x]) : Acc{};
  group_sum = block_sum<kBlockSize>(group_sum, scratch);
  if (groups == 1) {  // a lone group is the total (n <= 2^21)
    if (threadIdx.x == 0) *out = group_sum;
    return;
  }
  if (!publish_and_check_last(group_sum, &group_sums[group], &counters[0], groups)) return;

  Acc total{};
  for (unsigned g = threadIdx.x; g < groups; g += kBlockSize) total += __ldcg(&group_sums[g]);
  total = block_sum<kBlockSize>(total, scratch);
  if (threadIdx.x == 0) *out = total;
}

template <typename T, typename Acc>
void launch_tile_atomic(const T* in, std::int64_t n, Acc* out, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(Acc), stream));
  if (n == 0) return;
  const unsigned blocks = grid_of(tile_blocks<kAtomicTileVectors>(n));
  reduce_tile_atomic_kernel<T, Acc><<<blocks, kBlockSize, 0, stream>>>(in, n, head_elements(in, n), out);
  CUDALAB_CHECK_LAUNCH();
}

// `args` names the workspace; in and out are passed apart because int32 sums are carried in
// uint32 and out is then read as such.
template <typename T, typename Acc, typename Args>
void launch_tile_deterministic(const Args& args, const T* in, std::int64_t n, Acc* out, cudaStream_t stream) {
  if (n == 0) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(Acc), stream));
    return;
  }
  const WorkspaceLayout<Acc> ws = carve<Acc>(args);
  const unsigned blocks = grid_of(tile_blocks<kDeterministicTileVectors>(n));
  reduce_tile_deterministic_kernel<T, Acc>
      <<<blocks, kBlockSize, 0, stream>>>(in, n, head_elements(in, n), ws.partials_a, ws.partials_b, ws.counters, out);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

// One counter for the whole grid, then one per group of kBlockSize deterministic tile blocks.
std::size_t counter_bytes(std::int64_t n) {
  const std::int64_t groups = ceil_div<std::int64_t>(tile_blocks<kDeterministicTileVectors>(n > 0 ? n : 1), kBlockSize);
  const std::int64_t words = 1 + groups;
  return static_cast<std::size_t>(ceil_div<std::int64_t>(words * 4, 256) * 256);
}

// int32 sums are carried in uint32 (same bits, defined wrap-around): *out is read as such.
template <typename T>
void tile_atomic(const ReduceArgs<T>& args, cudaStream_t stream) {
  launch_tile_atomic(args.in, args.n, reinterpret_cast<accumulator_t<T>*>(args.out), stream);
}

template <typename T>
void tile_deterministic(const ReduceArgs<T>& args, cudaStream_t stream) {
  launch_tile_deterministic(args, args.in, args.n, reinterpret_cast<accumulator_t<T>*>(args.out), stream);
}

void tile_atomic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream) {
  launch_tile_atomic(args.in, args.n, args.out, stream);
}

void tile_deterministic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream) {
  launch_tile_deterministic(args, args.in, args.n, args.out, stream);
}

template void tile_atomic<float>(const ReduceArgs<float>&, cudaStream_t);
template void tile_atomic<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);
template void tile_deterministic<float>(const ReduceArgs<float>&, cudaStream_t);
template void tile_deterministic<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);

}  // namespace cudalab::reduce_variants
