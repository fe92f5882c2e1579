#include <string>

#include <cub/device/device_histogram.cuh>

#include "cudalab/error.hpp"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

// HistogramEven with bins + 1 levels 0, 1, ..., bins: one bin per value. `temp` == nullptr asks
// for the temporary storage size only (written to temp_bytes).
template <typename T>
void histogram_even(const T* samples, std::int64_t n, std::uint32_t* counts, int bins, void* temp,
                    std::size_t& temp_bytes, cudaStream_t stream) {
  const cudaError_t status =
      cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, bins + 1, 0, bins, n, stream);
  if (status != cudaSuccess)
    throw Error(ErrorKind::library, std::string("cub::DeviceHistogram::HistogramEven: ") + cudaGetErrorString(status),
                __FILE__, __LINE__);
}

}  // namespace

template <typename T>
std::size_t cub_histogram_workspace_bytes(std::int64_t n, int bins) {
  std::size_t bytes = 0;
  histogram_even<T>(nullptr, n, nullptr, bins, nullptr, bytes, nullptr);
  return bytes;
}

template <typename T>
void cub_histogram(const HistogramArgs<T>& args, cudaStream_t stream) {
  // A null temp pointer would make the call a size query that counts nothing.
  CUDALAB_REQUIRE(args.workspace != nullptr,
                  "cub histogram: no workspace given (cub_histogram_workspace_bytes sizes it)");
  // CUB checks that workspace_bytes covers what it needs and fails otherwise.
  std::size_t bytes = args.workspace_bytes;
  histogram_even(args.samples, args.n, args.counts, args.bins, args.workspace, bytes, stream);
  CUDALAB_CHECK_LAUNCH();
}

template std::size_t cub_histogram_workspace_bytes<std::uint8_t>(std::int64_t, int);
template std::size_t cub_histogram_workspace_bytes<std::uint16_t>(std::int64_t, int);
template void cub_histogram<std::uint8_t>(const HistogramArgs<std::uint8_t>&, cudaStream_t);
template void cub_histogram<std::uint16_t>(const HistogramArgs<std::uint16_t>&, cudaStream_t);

}  // namespace cudalab::histogram_variants
