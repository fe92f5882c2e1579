// The stream compaction ladder: copy the elements of in[0, n) that satisfy x >= threshold to out,
// keeping their order, and write how many there are to *count (int64, on the device). One
// launcher per technique, each taking the op's argument struct and enqueuing on `stream`; n == 0
// writes *count = 0. Only the first *count elements of out are written. The library entry
// (select.cu) and the registry (register.cpp) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::select_variants {

// The predicate, one comparison: a threshold selects none, some or all of a value range, which is
// how the registry's problems reach 0%, ~50% and 100% selectivity on the same input.
__host__ __device__ inline bool selected(std::int32_t x, std::int32_t threshold) { return x >= threshold; }

// A selection of in[0, n) into out (room for n elements, not overlapping in) and *count; device
// pointers. `workspace` is device scratch of `workspace_bytes` bytes, 16-byte aligned, of at least
// what the launcher's *_workspace_bytes function gives for these arguments; a launcher throws
// invalid_argument when it holds less.
template <typename T>
struct SelectArgs {
  using Element = T;
  const T* in = nullptr;
  std::int64_t n = 0;
  T threshold = 0;
  T* out = nullptr;
  std::int64_t* count = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// Three passes, the textbook method: a flags pass writes 1 or 0 per element, the scan ladder's
// decoupled look-back scan turns the flags into output positions in place, and a scatter pass
// re-reads the input and the positions and writes each selected element to its position.
// Fixes: any n split over every SM, built from a scan that already exists. Costs: about 6n
// memory traffic (the flags are written, read and written by the scan, read again) against
// the 2n-at-most minimum, and three launches; 32-bit positions, so n < 2^31.
void three_pass(const SelectArgs<std::int32_t>& args, cudaStream_t stream);

// Workspace of three_pass: the flags (n int32) and the scan's own status words.
std::size_t three_pass_workspace_bytes(const SelectArgs<std::int32_t>& args);

// Single pass on the decoupled look-back: each 4096-element tile is read once in 16-byte vectors,
// its predicate evaluated in registers, its kept count scanned within the block (a bit mask and a
// popcount per 4 elements, warp shuffles across lanes), its prefix of counts found by the
// look-back, and its kept elements written straight from registers to their positions.
// Fixes: the input read once and only the kept elements written, in one launch. Costs: a zeroed
// status array per launch, the look-back's chain between neighbouring tiles, and scattered 4-byte
// stores (a warp's store instruction writes only the lanes whose element is kept, spread over a
// row's span of the output).
void decoupled_lookback(const SelectArgs<std::int32_t>& args, cudaStream_t stream);

// decoupled_lookback on 8192-element tiles, with each tile's kept elements first packed into
// shared memory at their rank within the tile (while the look-back is under way), then copied out
// by consecutive threads to consecutive addresses. Fixes: every store instruction writes a
// contiguous run of the output with all lanes active; the packing overlaps the look-back's wait.
// Costs: 32 KiB of shared memory per block and a shared-memory write and read per kept element.
void decoupled_lookback_staged(const SelectArgs<std::int32_t>& args, cudaStream_t stream);

// Workspace of the two for n elements: a tile counter and one status word per tile of each one's
// shape (decoupled_lookback_staged's is the library's select_workspace_bytes).
std::size_t decoupled_lookback_workspace_bytes(std::int64_t n);
std::size_t decoupled_lookback_staged_workspace_bytes(std::int64_t n);

// Baseline: cub::DeviceSelect::If (CCCL) with the same predicate, its temporary storage in the
// workspace, so a benchmark that keeps the workspace times the selection alone.
void cub_device_select(const SelectArgs<std::int32_t>& args, cudaStream_t stream);

// CUB's temporary storage for these arguments, from CUB's own size query (no GPU work).
std::size_t cub_device_select_workspace_bytes(const SelectArgs<std::int32_t>& args);

}  // namespace cudalab::select_variants
