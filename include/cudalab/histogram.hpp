// Histograms of integer samples: counts[b] = number of samples equal to b, bins of width 1 over
// [0, bins), as cub::DeviceHistogram::HistogramEven computes with levels 0, 1, ..., bins.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab {

// One bin per byte value.
inline constexpr int kByteHistogramBins = 256;
// The most bins a 16-bit histogram can have: one per sample value.
inline constexpr int kMaxHistogramBins = 65536;

// Counts the n bytes at `samples` into counts[0..255], on `stream`, asynchronously. Every bin is
// written (zeroed first), so counts need not be initialised; n == 0 leaves all 256 bins 0.
// Counts are 32-bit: a bin that receives 2^32 or more samples (possible only for n >= 2^32)
// holds its count modulo 2^32, as a uint32 CUB histogram would. Any alignment of `samples`.
// Needs no workspace. Throws cudalab::Error (invalid_argument for n < 0 or a null pointer;
// cuda when a launch fails).
void histogram_even(const std::uint8_t* samples, std::int64_t n, std::uint32_t* counts, cudaStream_t stream = nullptr);

// Counts the n 16-bit samples into counts[0..bins-1], 1 <= bins <= 65536; samples >= bins are not
// counted (as HistogramEven skips samples outside [lower, upper)). Up to 4096 bins the counts are
// privatized in shared memory; above that each sample is a global atomic on the counts, which
// stay in L2. Otherwise as above: zeroed first, n == 0 gives all zeros, counts modulo 2^32,
// `samples` 2-byte aligned at least, no workspace.
void histogram_even(const std::uint16_t* samples, std::int64_t n, std::uint32_t* counts, int bins,
                    cudaStream_t stream = nullptr);

}  // namespace cudalab
