// The reduction ladder (sum): the tutorial's global-memory in-place kernels, the classic seven
// shared-memory steps, two modern kernels and CUB. Every launcher takes the op's argument struct
// and enqueues on `stream`: the sum of in[0, n) lands in *out (device memory); n == 0 writes 0.
// The library entry (reduce.cpp) and the registry (register.cpp) fill the same structs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::reduce_variants {

// Sum of in[0, n) into *out. T is the input's element type, Out the result's (T, or double for
// fp32 inputs summed in double). `workspace` is device memory of at least workspace_bytes<T>(n)
// (workspace_bytes_f64(n) for the double sum) bytes whose first counter_bytes(n) bytes (ticket
// counters) are zero on entry; every launcher leaves them zero. Launchers that need no scratch
// ignore it.
template <typename T, typename Out = T>
struct ReduceArgs {
  using Element = T;
  using Result = Out;
  const T* in = nullptr;
  std::int64_t n = 0;
  Out* out = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// The same for the in-place tree, which overwrites its input `data` (the caller restores it
// before each run).
template <typename T>
struct ReduceInPlaceArgs {
  using Element = T;
  using Result = T;
  T* data = nullptr;
  std::int64_t n = 0;
  T* out = nullptr;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

// int32 sums wrap around (two's complement, as CUB's do); they are computed in uint32 because
// signed overflow is undefined behaviour in C++.
template <typename T>
struct Accumulator {
  using type = T;
};
template <>
struct Accumulator<std::int32_t> {
  using type = std::uint32_t;
};
template <typename T>
using accumulator_t = typename Accumulator<T>::type;

// Scratch every launcher of T accepts at n elements: the ticket counters, two partial-sum
// buffers and CUB's temporary storage (from CUB's own size query), whichever is larger.
template <typename T>
std::size_t workspace_bytes(std::int64_t n);
// The same for fp32 inputs summed in double.
std::size_t workspace_bytes_f64(std::int64_t n);
// Bytes of ticket counters at the start of the workspace: what must be zero on entry.
std::size_t counter_bytes(std::int64_t n);

// ---- in place in global memory, a host loop of passes "while grid > 1" -------------------------

// The filter `tid % (2*stride) == 0` picks the threads that add; the modulo is the slow part.
template <typename T>
void global_modulo(const ReduceInPlaceArgs<T>& args, cudaStream_t stream);
// The correct fix: the same filter as a mask, `(tid & (2*stride - 1)) == 0`, valid because stride
// is a power of two. (Removing the filter instead, the tutorial's "fix", is a race: see below.)
template <typename T>
void global_mask(const ReduceInPlaceArgs<T>& args, cudaStream_t stream);

// BROKEN ON PURPOSE (claim C17): the tutorial's filter-free loop, where every thread adds its
// neighbour and so reads an element another thread may be writing in the same step. Run on a
// shared-memory tile so compute-sanitizer's racecheck, which watches shared memory, can see it.
template <typename T>
void shared_no_filter(const ReduceArgs<T>& args, cudaStream_t stream);
// The same loop built with -G (int32 only), for the racy_device_debug experiment: the tutorial
// found the race hidden there.
template <typename T>
void shared_no_filter_device_debug(const ReduceArgs<T>& args, cudaStream_t stream);

// ---- the classic seven shared-memory steps -----------------------------------------------------
// 1. Interleaved addressing, `tid % (2*s) == 0`: divergent warps, most threads idle.
template <typename T>
void interleaved_divergent(const ReduceArgs<T>& args, cudaStream_t stream);
// 2. Interleaved with a strided index `2*s*tid`: no divergence, but 2-way and worse bank conflicts.
template <typename T>
void interleaved_strided(const ReduceArgs<T>& args, cudaStream_t stream);
// 3. Sequential addressing, `tid < s` adds tid + s: conflict-free, still half the threads idle at once.
template <typename T>
void sequential(const ReduceArgs<T>& args, cudaStream_t stream);
// 4. First add during the global load: each thread loads two elements, half the blocks.
template <typename T>
void first_add_on_load(const ReduceArgs<T>& args, cudaStream_t stream);
// 5. The last warp unrolled with register shuffles (not the old `volatile` shared-memory trick,
//    which independent thread scheduling since Volta no longer makes safe).
template <typename T>
void unrolled_last_warp(const ReduceArgs<T>& args, cudaStream_t stream);
// 6. The whole tree unrolled at compile time (block size a template parameter).
template <typename T>
void complete_unroll(const ReduceArgs<T>& args, cudaStream_t stream);
// 7. Several elements per thread: a resident-size grid strides through the input, then one tree.
template <typename T>
void multiple_per_thread(const ReduceArgs<T>& args, cudaStream_t stream);

// ---- modern --------------------------------------------------------------------------------------
// Grid-stride 16-byte loads, warp-shuffle and block sums, one atomicAdd per block into *out
// (zeroed first). Float results vary in the last bits from run to run: atomics add in any order.
// Needs no workspace.
template <typename T>
void shuffle_atomic(const ReduceArgs<T>& args, cudaStream_t stream);
// Single pass, deterministic: 16-byte loads with four independent accumulators per thread, block
// partials, and the last block to finish (found with one atomic ticket) adds the partials.
template <typename T>
void single_pass(const ReduceArgs<T>& args, cudaStream_t stream);

// One 2048-element tile per block and no loop (a grid of n / 2048 blocks): blocks start in address
// order, so the whole GPU streams through memory as one front. Fixes the few percent the resident
// grid-stride loop above loses to DRAM page locality; costs a block launch per 8 KiB. Needs no
// workspace.
template <typename T>
void tile_atomic(const ReduceArgs<T>& args, cudaStream_t stream);
// As tile_atomic with 8192-element tiles, deterministic in one launch: the last block of each group
// of 256 adds the group's partials, the last group adds the groups' sums, both in index order.
template <typename T>
void tile_deterministic(const ReduceArgs<T>& args, cudaStream_t stream);

// ---- fp32 inputs summed in double -------------------------------------------------------------
// The same kernels carrying the sum in double: the result's error no longer grows with n at fp32
// precision, for the cost of double adds (cheap here: the kernel is memory bound). The workspace
// must be workspace_bytes_f64(n).
void shuffle_atomic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream);
void single_pass_f64(const ReduceArgs<float, double>& args, cudaStream_t stream);
void tile_atomic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream);
void tile_deterministic_f64(const ReduceArgs<float, double>& args, cudaStream_t stream);
void cub_sum_f64(const ReduceArgs<float, double>& args, cudaStream_t stream);

// ---- baseline ------------------------------------------------------------------------------------
template <typename T>
void cub_sum(const ReduceArgs<T>& args, cudaStream_t stream);

}  // namespace cudalab::reduce_variants
