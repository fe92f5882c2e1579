#include <cub/device/device_select.cuh>

#include "cudalab/error.hpp"
#include "ops/scan/variants.hpp"
#include "ops/select/variants.hpp"

namespace cudalab::select_variants {
namespace {

struct AtLeast {
  std::int32_t threshold;
  __device__ bool operator()(const std::int32_t& x) const { return selected(x, threshold); }
};

// CUB's DeviceSelect::If takes a 64-bit item count and writes *count itself, 0 for n == 0. With a
// null `temp` it only sets `bytes` (its size query); otherwise it selects.
void run(void* temp, std::size_t& bytes, const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  CUDALAB_CUDA_CHECK(
      cub::DeviceSelect::If(temp, bytes, args.in, args.out, args.count, args.n, AtLeast{args.threshold}, stream));
}

}  // namespace

std::size_t cub_device_select_workspace_bytes(const SelectArgs<std::int32_t>& args) {
  std::size_t bytes = 0;
  run(nullptr, bytes, args, nullptr);
  return bytes;
}

void cub_device_select(const SelectArgs<std::int32_t>& args, cudaStream_t stream) {
  std::size_t bytes = cub_device_select_workspace_bytes(args);
  run(workspace_of(args, bytes, "select cub"), bytes, args, stream);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace cudalab::select_variants
