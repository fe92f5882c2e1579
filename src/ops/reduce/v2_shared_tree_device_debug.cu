// The tutorial's racy filter-free reduction built with -G (device debug: no optimisation, every
// shared-memory access kept in program order), as the tutorial ran it when it found the race
// "right by luck". Its own CMake target compiles this file alone with -G (src/ops/reduce/CMakeLists.txt).
#include "ops/reduce/shared_tree.cuh"

namespace cudalab::reduce_variants {

template <typename T>
void shared_no_filter_device_debug(const ReduceArgs<T>& args, cudaStream_t stream) {
  launch<T, Step::no_filter>(args, stream);
}

template void shared_no_filter_device_debug<std::int32_t>(const ReduceArgs<std::int32_t>&, cudaStream_t);

}  // namespace cudalab::reduce_variants
