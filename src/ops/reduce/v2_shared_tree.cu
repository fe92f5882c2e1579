// The shared-memory tree steps of the ladder, one launcher each (shared_tree.cuh holds the kernel).
#include "ops/reduce/shared_tree.cuh"

namespace cudalab::reduce_variants {

#define CUDALAB_REDUCE_TREE_STEP(name, step)                         \
  template <typename T>                                              \
  void name(const ReduceArgs<T>& args, cudaStream_t stream) {        \
    launch<T, step>(args, stream);                                   \
  }                                                                  \
  template void name<float>(const ReduceArgs<float>&, cudaStream_t); \
  template void name<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);

CUDALAB_REDUCE_TREE_STEP(shared_no_filter, Step::no_filter)
CUDALAB_REDUCE_TREE_STEP(interleaved_divergent, Step::interleaved_divergent)
CUDALAB_REDUCE_TREE_STEP(interleaved_strided, Step::interleaved_strided)
CUDALAB_REDUCE_TREE_STEP(sequential, Step::sequential)
CUDALAB_REDUCE_TREE_STEP(first_add_on_load, Step::first_add_on_load)
CUDALAB_REDUCE_TREE_STEP(unrolled_last_warp, Step::unrolled_last_warp)
CUDALAB_REDUCE_TREE_STEP(complete_unroll, Step::complete_unroll)

#undef CUDALAB_REDUCE_TREE_STEP

}  // namespace cudalab::reduce_variants
