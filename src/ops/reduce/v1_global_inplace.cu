// The tutorial's in-place ladder: each block reduces its 256 elements in place in global memory,
// thread 0 writes the block's sum to a partials buffer, and the host launches passes until one is
// left. (The tutorial wrote the partial to input[blockIdx.x], which another block may still be
// reading: a race between blocks; partials go to their own buffer here.)
#include "ops/reduce/multi_pass.cuh"

namespace cudalab::reduce_variants {
namespace {

template <typename T, bool UseModulo>
__global__ void __launch_bounds__(kBlockSize) reduce_global_inplace_kernel(T* data, std::int64_t n, T* partials) {
  using Acc = accumulator_t<T>;
  const unsigned tid = threadIdx.x;
  const std::int64_t i = global_thread_index();
  for (unsigned stride = 1; stride < blockDim.x; stride *= 2) {
    const bool adds = UseModulo ? tid % (2 * stride) == 0 : (tid & (2 * stride - 1)) == 0;
    if (adds && i + stride < n)
      data[i] = static_cast<T>(static_cast<Acc>(data[i]) + static_cast<Acc>(data[i + stride]));
    __syncthreads();  // global writes of this step are visible to the block's next step
  }
  if (tid == 0) partials[blockIdx.x] = data[i];
}

template <typename T, bool UseModulo>
void launch(const ReduceInPlaceArgs<T>& args, cudaStream_t stream) {
  reduce_in_passes<T>(
      args.data, args.n, args.out, carve<T>(args),
      [](std::int64_t count) { return ceil_div<std::int64_t>(count, kBlockSize); },
      [](T* source, std::int64_t count, T* destination, std::int64_t blocks, cudaStream_t s) {
        reduce_global_inplace_kernel<T, UseModulo><<<grid_of(blocks), kBlockSize, 0, s>>>(source, count, destination);
        CUDALAB_CHECK_LAUNCH();
      },
      stream);
}

}  // namespace

template <typename T>
void global_modulo(const ReduceInPlaceArgs<T>& args, cudaStream_t stream) {
  launch<T, true>(args, stream);
}

template <typename T>
void global_mask(const ReduceInPlaceArgs<T>& args, cudaStream_t stream) {
  launch<T, false>(args, stream);
}

template void global_modulo<float>(const ReduceInPlaceArgs<float>&, cudaStream_t);
template void global_modulo<std::int32_t>(const ReduceInPlaceArgs<std::int32_t>&, cudaStream_t);
template void global_mask<float>(const ReduceInPlaceArgs<float>&, cudaStream_t);
template void global_mask<std::int32_t>(const ReduceInPlaceArgs<std::int32_t>&, cudaStream_t);

}  // namespace cudalab::reduce_variants
