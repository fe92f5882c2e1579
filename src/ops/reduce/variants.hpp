// The reduction ladder (sum): seed 002's global-memory in-place kernels, seed 000's seven
// shared-memory steps, two modern kernels and CUB. Every launcher is instantiated for float and
// int32 and enqueues on `stream`: the sum of in[0, n) lands in *out (device memory); n == 0
// writes 0. `workspace` is device memory of at least workspace_bytes<T>(n) bytes whose first
// counter_bytes(n) bytes (ticket counters) are zero on entry (a fresh workspace must be zeroed
// once); every launcher leaves them zero.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::reduce_variants {

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

template <typename T>
std::size_t workspace_bytes(std::int64_t n);

// ---- seed 002: in place in global memory, a host loop of passes "while grid > 1" ---------------
// These overwrite `data` (a copy of the input that the caller restores before each run).

// The filter `tid % (2*stride) == 0` picks the threads that add; the modulo is the slow part.
template <typename T>
void global_modulo(T* data, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// The correct fix: the same filter as a mask, `(tid & (2*stride - 1)) == 0`, valid because stride
// is a power of two. (Removing the filter instead, the seed's "fix", is a race: see below.)
template <typename T>
void global_mask(T* data, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

// BROKEN ON PURPOSE (claim C17): seed 002's filter-free loop, where every thread adds its
// neighbour and so reads an element another thread may be writing in the same step. Run on a
// shared-memory tile so compute-sanitizer's racecheck, which watches shared memory, can see it.
template <typename T>
void shared_no_filter(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

// ---- seed 000: the seven shared-memory steps ---------------------------------------------------
// 1. Interleaved addressing, `tid % (2*s) == 0`: divergent warps, most threads idle.
template <typename T>
void interleaved_divergent(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 2. Interleaved with a strided index `2*s*tid`: no divergence, but 2-way and worse bank conflicts.
template <typename T>
void interleaved_strided(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 3. Sequential addressing, `tid < s` adds tid + s: conflict-free, still half the threads idle at once.
template <typename T>
void sequential(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 4. First add during the global load: each thread loads two elements, half the blocks.
template <typename T>
void first_add_on_load(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 5. The last warp unrolled with register shuffles (not the old `volatile` shared-memory trick,
//    which independent thread scheduling since Volta no longer makes safe).
template <typename T>
void unrolled_last_warp(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 6. The whole tree unrolled at compile time (block size a template parameter).
template <typename T>
void complete_unroll(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// 7. Several elements per thread: a resident-size grid strides through the input, then one tree.
template <typename T>
void multiple_per_thread(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

// ---- modern --------------------------------------------------------------------------------------
// Grid-stride 16-byte loads, warp-shuffle and block sums, one atomicAdd per block into *out
// (zeroed first). Float results vary in the last bits from run to run: atomics add in any order.
template <typename T>
void shuffle_atomic(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// Single pass, deterministic: 16-byte loads with four independent accumulators per thread, block
// partials, and the last block to finish (found with one atomic ticket) adds the partials.
template <typename T>
void single_pass(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

// One 2048-element tile per block and no loop (a grid of n / 2048 blocks): blocks start in address
// order, so the whole GPU streams through memory as one front. Fixes the few percent the resident
// grid-stride loop above loses to DRAM page locality; costs a block launch per 8 KiB.
template <typename T>
void tile_atomic(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);
// As tile_atomic with 8192-element tiles, deterministic in one launch: the last block of each group
// of 256 adds the group's partials, the last group adds the groups' sums, both in index order.
template <typename T>
void tile_deterministic(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

// Bytes of ticket counters at the start of the workspace.
std::size_t counter_bytes(std::int64_t n);

// ---- fp32 inputs summed in double -------------------------------------------------------------
// The same two kernels carrying the sum in double: the result's error no longer grows with n at
// fp32 precision, for the cost of double adds (cheap here: the kernel is memory bound). The
// workspace must be workspace_bytes_f64(n).
void shuffle_atomic_f64(const float* in, std::int64_t n, double* out, void* workspace, cudaStream_t stream);
void single_pass_f64(const float* in, std::int64_t n, double* out, void* workspace, cudaStream_t stream);
void tile_atomic_f64(const float* in, std::int64_t n, double* out, void* workspace, cudaStream_t stream);
void tile_deterministic_f64(const float* in, std::int64_t n, double* out, void* workspace, cudaStream_t stream);
void cub_sum_f64(const float* in, std::int64_t n, double* out, void* workspace, cudaStream_t stream);
std::size_t workspace_bytes_f64(std::int64_t n);

// ---- baseline ------------------------------------------------------------------------------------
template <typename T>
void cub_sum(const T* in, std::int64_t n, T* out, void* workspace, cudaStream_t stream);

}  // namespace cudalab::reduce_variants
