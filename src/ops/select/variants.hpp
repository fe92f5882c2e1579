// The stream compaction ladder: copy the elements of in[0, n) that satisfy x >= threshold to out,
// keeping their order, and write how many there are to *count (int64, on the device). One
// launcher per technique, each taking device pointers and enqueuing on `stream`; out must hold n
// elements and not overlap in; n == 0 writes *count = 0. Only the first *count elements of out
// are written. The library entry (select.cu) and the registry (register.cu) call these.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/workspace.hpp"

namespace cudalab::select_variants {

// The predicate, one comparison: a threshold selects none, some or all of a value range, which is
// how the registry's ops reach 0%, ~50% and 100% selectivity on the same input.
__host__ __device__ inline bool selected(std::int32_t x, std::int32_t threshold) { return x >= threshold; }

using Launcher = void (*)(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                          std::int64_t* count, Workspace& workspace, cudaStream_t stream);

// Three passes, the textbook method: a flags pass writes 1 or 0 per element, the scan ladder's
// decoupled look-back scan turns the flags into output positions in place, and a scatter pass
// re-reads the input and the positions and writes each selected element to its position.
// Fixes: any n split over every SM, built from a scan that already exists. Costs: about 6n
// memory traffic (the flags are written, read and written by the scan, read again) against
// the 2n-at-most minimum, and three launches; 32-bit positions, so n < 2^31.
void three_pass(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out, std::int64_t* count,
                Workspace& workspace, cudaStream_t stream);

// Single pass on the decoupled look-back: each 4096-element tile is read once in 16-byte vectors,
// its predicate evaluated in registers, its kept count scanned within the block (a bit mask and a
// popcount per 4 elements, warp shuffles across lanes), its prefix of counts found by the
// look-back, and its kept elements written straight from registers to their positions.
// Fixes: the input read once and only the kept elements written, in one launch. Costs: a zeroed
// status array per launch, the look-back's chain between neighbouring tiles, and scattered 4-byte
// stores (a warp's store instruction writes only the lanes whose element is kept, spread over a
// row's span of the output).
void decoupled_lookback(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                        std::int64_t* count, Workspace& workspace, cudaStream_t stream);

// decoupled_lookback on 8192-element tiles, with each tile's kept elements first packed into
// shared memory at their rank within the tile (while the look-back is under way), then copied out
// by consecutive threads to consecutive addresses. Fixes: every store instruction writes a
// contiguous run of the output with all lanes active; the packing overlaps the look-back's wait.
// Costs: 32 KiB of shared memory per block and a shared-memory write and read per kept element.
void decoupled_lookback_staged(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                               std::int64_t* count, Workspace& workspace, cudaStream_t stream);

// Workspace the decoupled_lookback launchers reserve for n elements (the library's caller-buffer
// path): a tile counter and one status word per tile.
std::size_t decoupled_lookback_workspace_bytes(std::int64_t n);

// Baseline: cub::DeviceSelect::If (CCCL) with the same predicate. Its temporary storage comes from
// `workspace`, so a benchmark that keeps the workspace times the selection alone.
void cub_device_select(const std::int32_t* in, std::int64_t n, std::int32_t threshold, std::int32_t* out,
                       std::int64_t* count, Workspace& workspace, cudaStream_t stream);

}  // namespace cudalab::select_variants
