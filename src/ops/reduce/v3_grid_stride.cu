// Kernels in which each thread sums many elements before any cooperation: the classic ladder's
// step 7 and the modern kernels (16-byte loads, shuffles, one launch).
#include <cstdint>

#include "core/row_reduce.cuh"
#include "ops/reduce/last_block.cuh"
#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {
namespace {

// Step 7: scalar loads, a grid-stride sum per thread, then one block sum.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    reduce_multiple_per_thread_kernel(const T* in, std::int64_t n, T* partials) {
  using Acc = accumulator_t<T>;
  __shared__ Acc scratch[kBlockSize / kWarpSize];
  Acc sum{};
  const std::int64_t stride = global_thread_count();
  for (std::int64_t i = global_thread_index(); i < n; i += stride) sum += static_cast<Acc>(in[i]);
  sum = block_sum<kBlockSize>(sum, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = static_cast<T>(sum);
}

// Sum of this thread's share of in[0, n): 16-byte loads of the aligned body with four
// independent accumulators (four loads in flight per thread before the first add), plus the
// unaligned head and the tail, which at most a few threads touch. Acc is the type the sum is
// carried in (float, uint32 for wrapping int32, or double for fp32 inputs summed in double).
template <typename T, typename Acc>
__device__ __forceinline__ Acc thread_sum_vectorized(const T* in, std::int64_t n, int head) {
  using V = Vector16<T>;
  const std::int64_t thread = global_thread_index();
  const std::int64_t threads = global_thread_count();
  Acc sum{};
  if (thread < head) sum += static_cast<Acc>(in[thread]);
  const T* body = in + head;  // 16-byte aligned
  const std::int64_t vectors = (n - head) / V::kCount;
  Acc a0{}, a1{}, a2{}, a3{};
  std::int64_t v = thread;
  for (; v + 3 * threads < vectors; v += 4 * threads) {
    const V x0 = load_vector16(body + v * V::kCount);
    const V x1 = load_vector16(body + (v + threads) * V::kCount);
    const V x2 = load_vector16(body + (v + 2 * threads) * V::kCount);
    const V x3 = load_vector16(body + (v + 3 * threads) * V::kCount);
    a0 += vector_sum<Acc>(x0);
    a1 += vector_sum<Acc>(x1);
    a2 += vector_sum<Acc>(x2);
    a3 += vector_sum<Acc>(x3);
  }
  for (; v < vectors; v += threads) a0 += vector_sum<Acc>(load_vector16(body + v * V::kCount));
  const std::int64_t tail = head + vectors * V::kCount + thread;
  if (tail < n) sum += static_cast<Acc>(in[tail]);
  return sum + ((a0 + a1) + (a2 + a3));
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kBlockSize)
    reduce_shuffle_atomic_kernel(const T* in, std::int64_t n, int head, Acc* out) {
  __shared__ Acc scratch[kBlockSize / kWarpSize];
  const Acc sum = block_sum<kBlockSize>(thread_sum_vectorized<T, Acc>(in, n, head), scratch);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}

// Adds the block's threads' sums, publishes the block's partial, and lets the last block to
// finish add every partial in a fixed order: one launch, and the same bits every run.
template <typename Acc>
__device__ __forceinline__ void finish_in_last_block(Acc thread_sum, Acc* partials, unsigned* counter, Acc* out) {
  __shared__ Acc scratch[kBlockSize / kWarpSize];
  const Acc sum = block_sum<kBlockSize>(thread_sum, scratch);
  if (!publish_and_check_last(sum, &partials[blockIdx.x], counter, gridDim.x)) return;
  Acc total{};
#pragma unroll 8
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kBlockSize) total += __ldcg(&partials[b]);
  total = block_sum<kBlockSize>(total, scratch);
  if (threadIdx.x == 0) *out = total;
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kBlockSize)
    reduce_single_pass_kernel(const T* in, std::int64_t n, int head, Acc* partials, unsigned* counter, Acc* out) {
  finish_in_last_block(thread_sum_vectorized<T, Acc>(in, n, head), partials, counter, out);
}

template <typename Kernel>
std::int64_t resident_blocks(Kernel kernel, std::int64_t work) {
  return resident_grid_size(kernel, kBlockSize, work);
}

template <typename T, typename Acc>
void launch_shuffle_atomic(const T* in, std::int64_t n, Acc* out, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(Acc), stream));
  if (n == 0) return;
  const auto kernel = reduce_shuffle_atomic_kernel<T, Acc>;
  const unsigned blocks = grid_of(resident_blocks(kernel, ceil_div<std::int64_t>(n, 4)));
  kernel<<<blocks, kBlockSize, 0, stream>>>(in, n, head_elements(in, n), out);
  CUDALAB_CHECK_LAUNCH();
}

// `args` names the workspace; in and out are passed apart because int32 sums are carried in
// uint32 and out is then read as such.
template <typename T, typename Acc, typename Args>
void launch_single_pass(const Args& args, const T* in, std::int64_t n, Acc* out, cudaStream_t stream) {
  if (n == 0) {
    CUDALAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(Acc), stream));
    return;
  }
  const WorkspaceLayout<Acc> ws = carve<Acc>(args);
  const auto kernel = reduce_single_pass_kernel<T, Acc>;
  const unsigned blocks = grid_of(resident_blocks(kernel, ceil_div<std::int64_t>(n, 4)));
  kernel<<<blocks, kBlockSize, 0, stream>>>(in, n, head_elements(in, n), ws.partials_a, ws.counters, out);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void multiple_per_thread(const ReduceArgs<T>& args, cudaStream_t stream) {
  reduce_in_passes<T>(
      args.in, args.n, args.out, carve<T>(args),
      [](std::int64_t count) { return resident_blocks(reduce_multiple_per_thread_kernel<T>, count); },
      [](const T* source, std::int64_t count, T* destination, std::int64_t blocks, cudaStream_t s) {
        reduce_multiple_per_thread_kernel<T><<<grid_of(blocks), kBlockSize, 0, s>>>(source, count, destination);
        CUDALAB_CHECK_LAUNCH();
      },
      stream);
}

// int32 sums are carried in uint32 (same bits, defined wrap-around): *out is read as such.
template <typename T>
void shuffle_atomic(const ReduceArgs<T>& args, cudaStream_t stream) {
  launch_shuffle_atomic(args.in, args.n, reinterpret_cast<accumulator_t<T>*>(args.out), stream);
}

template <typename T>
void single_pass(const ReduceArgs<T>& args, cudaStream_t stream) {
  launch_single_pass(args, args.in, args.n, reinterpret_cast<accumulator_t<T>*>(args.out), stream);
}

void shuffle_atomic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream) {
  launch_shuffle_atomic(args.in, args.n, args.out, stream);
}

void single_pass_f64(const ReduceArgs<float, double>& args, cudaStream_t stream) {
  launch_single_pass(args, args.in, args.n, args.out, stream);
}

#define CUDALAB_REDUCE_INSTANTIATE(name)                             \
  template void name<float>(const ReduceArgs<float>&, cudaStream_t); \
  template void name<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);
CUDALAB_REDUCE_INSTANTIATE(multiple_per_thread)
CUDALAB_REDUCE_INSTANTIATE(shuffle_atomic)
CUDALAB_REDUCE_INSTANTIATE(single_pass)
#undef CUDALAB_REDUCE_INSTANTIATE

}  // namespace cudalab::reduce_variants
