#include <cub/device/device_select.cuh>

#include "cudalab/error.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::select_variants {
namespace {

struct AtLeast {
  std::int32_t threshold;
  __device__ bool operator()(const std::int32_t& x) const { return selected(x, threshold); }
};

}  // namespace

// CUB's DeviceSelect::If takes a 64-bit item count and writes *count itself, 0 for n == 0.
void cub_device_select(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                       std::int64_t* count, Workspace& workspace, cudaStream_t stream) {
  std::size_t bytes = 0;
  CUDALAB_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, in, out, count, n, AtLeast{threshold}, stream));
  CUDALAB_CUDA_CHECK(
      cub::DeviceSelect::If(workspace.reserve(bytes), bytes, in, out, count, n, AtLeast{threshold}, stream));
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::select_variants
