#include <cub/device/device_histogram.cuh>

#include "cudalab/error.hpp"
#include "cudalab/histogram.hpp"
#include "ops/histogram/variants.hpp"

namespace cudalab::histogram_variants {
namespace {

// HistogramEven with bins + 1 levels 0, 1, ..., bins: one bin per value. `temp` == nullptr asks
// for the temporary storage size only.
template <typename Key>
std::size_t histogram_even(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, void* temp,
                           std::size_t temp_bytes, cudaStream_t stream) {
  const cudaError_t status =
      cub::DeviceHistogram::HistogramEven(temp, temp_bytes, samples, counts, bins + 1, 0, bins, n, stream);
  if (status != cudaSuccess)
    throw Error(ErrorKind::library, std::string("cub::DeviceHistogram::HistogramEven: ") + cudaGetErrorString(status),
                __FILE__, __LINE__);
  return temp_bytes;
}

template <typename Key>
void run(const Key* samples, std::int64_t n, std::uint32_t* counts, int bins, void* temp, std::size_t temp_bytes,
         cudaStream_t stream) {
  CUDALAB_REQUIRE(temp != nullptr || temp_bytes == 0, "cub histogram: no temporary storage given");
  histogram_even(samples, n, counts, bins, temp, temp_bytes, stream);
  CUDALAB_CHECK_LAUNCH();
}

}  // namespace

std::size_t cub_histogram_temp_bytes(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts) {
  return histogram_even(samples, n, counts, kByteHistogramBins, nullptr, 0, nullptr);
}

std::size_t cub_histogram_temp_bytes(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins) {
  return histogram_even(samples, n, counts, bins, nullptr, 0, nullptr);
}

void cub_histogram(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, void* temp,
                   std::size_t temp_bytes, cudaStream_t stream) {
  run(samples, n, counts, kByteHistogramBins, temp, temp_bytes, stream);
}

void cub_histogram(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins, void* temp,
                   std::size_t temp_bytes, cudaStream_t stream) {
  run(samples, n, counts, bins, temp, temp_bytes, stream);
}

}  // namespace cudalab::histogram_variants
