// The histogram ladder: one launcher per technique, each templated on the sample type (8-bit
// samples into 256 bins, 16-bit samples into `bins` bins over [0, bins), samples >= bins not
// counted) and taking the op's argument struct. Every launcher zeroes the counts and counts the n
// samples on `stream`; n == 0 leaves the counts zero. The library entry (histogram.cpp) and the
// registry (register.cu) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::histogram_variants {

// Most bins the shared-memory variants hold for 16-bit samples: 4096 32-bit counters are 16 KiB,
// so two sub-histograms per block still leave room for several blocks on an SM.
inline constexpr int kMaxSharedBins = 4096;

// counts[b] = number of the n samples equal to b, for b < bins. Byte samples take bins == 256;
// 16-bit samples 1 <= bins <= 65536 (global_atomics, cub) or <= kMaxSharedBins (the shared-memory
// variants). `samples` is aligned to its element size; counts holds `bins` words.
template <typename T>
struct HistogramArgs {
  using Element = T;
  const T* samples = nullptr;
  std::int64_t n = 0;
  std::uint32_t* counts = nullptr;
  int bins = 0;
  // cub_histogram's temporary storage, cub_histogram_workspace_bytes<T>(n, bins) bytes; the other
  // variants need none.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// One global atomicAdd per sample, straight into the counts. Fixes nothing; it is the textbook
// kernel. Costs: every sample is an L2 atomic, and samples with equal values serialize on one
// address (all-one-value input is the worst case). 16-bit samples take any bins up to 65536.
template <typename T>
void global_atomics(const HistogramArgs<T>& args, cudaStream_t stream);

// One histogram per block in shared memory, merged into the counts with one global atomic per
// non-empty bin per block. Fixes: the L2 atomic traffic (shared atomics are SM-local and cheap).
// Costs: a zero and a merge per block; samples of one warp that hit one bank or one bin still
// serialize in the shared-memory pipe.
template <typename T>
void shared_privatized(const HistogramArgs<T>& args, cudaStream_t stream);

// The tutorial's hint: several sub-histograms per block (one per warp for bytes, two per block for
// 4096 bins), so warps do not add to the same counters. Costs: more shared memory to zero and
// merge. A warp still uses one copy, so conflicts inside a warp, the ones the hardware
// serializes, are untouched: on an H100 it times the same as one copy per block.
template <typename T>
void sub_histograms(const HistogramArgs<T>& args, cudaStream_t stream);

// Sub-histograms plus warp aggregation: __match_any_sync groups the lanes holding the same key and
// one lane adds the group's size. Fixes: same-address serialization, where the hardware does not
// already merge a warp's same-address lanes itself (an H100 does: there it is slower even on
// all-one-value input). Costs: a match instruction per sample, slow next to the atomic it saves
// on uniform input, where groups are mostly of one lane.
template <typename T>
void warp_aggregated(const HistogramArgs<T>& args, cudaStream_t stream);

// Sub-histograms fed by 16-byte loads: each thread counts 16 bytes (or 8 16-bit samples) per load.
// Fixes: the load instruction count and the bytes per request, so the memory system can stream.
// Costs: a head and tail for arrays not 16-byte aligned. With loads no longer the limit, the
// shared atomics are: on an H100 the times imply about 8 distinct-address atomic lanes per clock
// per SM, short of the ~12 bytes per clock per SM that DRAM delivers (lanes of a warp on one
// address are merged, so all-one-value input runs faster, at 91% of the read roofline).
template <typename T>
void vectorized(const HistogramArgs<T>& args, cudaStream_t stream);

// Bytes only. 16-byte loads, and each thread owns a column of 16-bit counters packed two to a
// word, laid out so a warp's 32 lanes always touch 32 different banks whatever their keys: no bank
// conflicts and no two lanes on one address, on uniform and on all-one-value input alike. The
// adds are shared atomics with no result (red.shared) so that they never wait on each other.
// Costs: 64 KiB of shared memory per 128-thread block (12 warps per SM), a merge of 128 columns
// per block, a merge-and-clear before any 16-bit counter could overflow; and on an H100 it does
// not pay, because the atomic unit's rate, not bank conflicts, was what limited `vectorized`.
void lane_columns(const HistogramArgs<std::uint8_t>& args, cudaStream_t stream);

// Baseline: cub::DeviceHistogram::HistogramEven with levels 0..bins (it zeroes the counts itself).
// Its temporary storage is args.workspace, sized by CUB's own size query below, so a launch times
// only the histogram.
template <typename T>
std::size_t cub_histogram_workspace_bytes(std::int64_t n, int bins);
template <typename T>
void cub_histogram(const HistogramArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::histogram_variants
