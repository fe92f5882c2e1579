// The scan (prefix sum) ladder: one launcher per technique, each templated on the element type
// (int32 and fp32) and taking the op's argument struct. out[i] = x[0] + ... + x[i] (inclusive) or
// x[0] + ... + x[i-1] (exclusive, out[0] = 0); int32 sums wrap around (two's complement), as CUB's
// do. Every launcher enqueues on `stream`, does nothing for n == 0, and accepts out == in (an
// in-place scan). The library entry (scan.cu) and the registry (register.cpp) fill the same struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "core/workspace.hpp"
#include "cudalab/error.hpp"

namespace cudalab::scan_variants {

enum class ScanKind { inclusive, exclusive };

// A scan of n elements from `in` to `out` (device pointers, any alignment; out may equal in).
// `workspace` is device scratch of `workspace_bytes` bytes, 16-byte aligned, of at least what the
// launcher's *_workspace_bytes function gives for these arguments (none for the one-block scans);
// a launcher that needs some throws invalid_argument when it holds less.
template <typename T>
struct ScanArgs {
  using Element = T;
  const T* in = nullptr;
  T* out = nullptr;
  std::int64_t n = 0;
  ScanKind kind = ScanKind::inclusive;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// ---- one block -----------------------------------------------------------------------------------
// The textbook kernels scan what one block holds; for larger n they throw invalid_argument.
inline constexpr std::int64_t kHillisSteeleMaxItems = 1024;
inline constexpr std::int64_t kBlellochMaxItems = 2048;

// Hillis-Steele: one element per thread, log2(n) steps, each adding the element `offset` to the
// left through a double-buffered shared array. Fixes: the sequential loop becomes log2(n) parallel
// steps. Costs: n*log2(n) additions instead of n (not work-efficient), a barrier per step.
template <typename T>
void hillis_steele(const ScanArgs<T>& args, cudaStream_t stream);

// Blelloch: an up-sweep builds a reduction tree in shared memory, a down-sweep turns it into the
// exclusive prefix; two elements per thread. Fixes: 2n additions, work-efficient like the
// sequential loop. Costs: twice the steps (and barriers) of Hillis-Steele, half the threads idle at
// the top of the tree, and tree strides that pile accesses onto a few shared-memory banks.
template <typename T>
void blelloch(const ScanArgs<T>& args, cudaStream_t stream);

// Blelloch with one padding word per 32 (index + index/32). Fixes: the n-way bank conflicts of the
// power-of-two tree strides. Costs: 3% more shared memory and an index computation per access.
template <typename T>
void blelloch_padded(const ScanArgs<T>& args, cudaStream_t stream);

// ---- whole array ---------------------------------------------------------------------------------
// Scan-then-propagate: every block scans its tile with the padded Blelloch scan and writes the
// tile's total; the totals are scanned the same way (recursively); a third kernel adds each tile's
// offset to its elements. Fixes: any n, all SMs busy. Costs: 4n memory traffic (the output is
// written, then read and written again) against the 2n minimum, and a launch per level.
template <typename T>
void scan_then_propagate(const ScanArgs<T>& args, cudaStream_t stream);

// Scan-then-propagate with Hillis-Steele block scans: the same structure with the
// work-inefficient block scan, so the pair measures claim C21 on a large input.
template <typename T>
void scan_then_propagate_hillis_steele(const ScanArgs<T>& args, cudaStream_t stream);

// Workspace of the two: the tile sums of every level.
template <typename T>
std::size_t scan_then_propagate_workspace_bytes(const ScanArgs<T>& args);
template <typename T>
std::size_t scan_then_propagate_hillis_steele_workspace_bytes(const ScanArgs<T>& args);

// Reduce-then-scan: a first pass only sums each tile (reads n), the tile sums are scanned
// (recursively), and a second pass scans each tile seeded with its prefix (reads n, writes n).
// Tiles of 3072 elements in 16-byte vector loads, scanned in registers with warp shuffles. Fixes:
// 3n traffic instead of 4n; no shared-memory tree. Costs: the input is read twice.
template <typename T>
void reduce_then_scan(const ScanArgs<T>& args, cudaStream_t stream);

// Workspace of reduce_then_scan: the tile sums of every level.
template <typename T>
std::size_t reduce_then_scan_workspace_bytes(const ScanArgs<T>& args);

// Single-pass scan with decoupled look-back (Merrill and Garland): each tile publishes its total
// as soon as it has it and its inclusive prefix once known, in one 64-bit word (status + value);
// a tile finds its prefix by one warp reading the words of up to 32 predecessors at a time. Tiles
// are numbered in the order blocks start (an atomic counter), so a tile waits only on tiles that
// are already running. Tiles of 4096 elements, in the register layout of reduce_then_scan.
// Fixes: 2n traffic, the minimum, in one launch. Costs: a zeroed tile-status array per launch and
// a serial dependency between neighbouring tiles (hidden by the look-back).
template <typename T>
void decoupled_lookback(const ScanArgs<T>& args, cudaStream_t stream);

// Workspace of decoupled_lookback for n elements, either kind and type: a tile counter and one
// status word per tile (the library's scan_workspace_bytes).
std::size_t decoupled_lookback_workspace_bytes(std::int64_t n);

// Baseline: cub::DeviceScan::InclusiveSum / ExclusiveSum (CCCL), its temporary storage in the
// workspace, so a benchmark that keeps the workspace times the scan alone.
template <typename T>
void cub_device_scan(const ScanArgs<T>& args, cudaStream_t stream);

// CUB's temporary storage for these arguments, from CUB's own size query (no GPU work).
template <typename T>
std::size_t cub_device_scan_workspace_bytes(const ScanArgs<T>& args);

}  // namespace cudalab::scan_variants
