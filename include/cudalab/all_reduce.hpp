// The sum of one array per GPU, left in every GPU's array, where each GPU is driven by its own
// process (one process per GPU, as torch.distributed runs them) on one host. Every process calls
// all_reduce_ipc on its GPU with the same count and epoch, its calls one after another on one
// stream. One kernel: its block b on every GPU owns the same elements of x; it copies them into
// half (epoch % 2) of this GPU's staging buffer, tells every GPU's block b so through their signal
// arrays, waits until every GPU's block b has told it the same, and writes into x the fp32 sum in
// GPU order of those elements of every GPU's half-buffer, read over NVLink or PCIe and rounded once
// to T (so every GPU holds the same bits). Calls alternate halves, so none waits for the peers to
// finish reading the last one: a GPU refills the half of call k only in call k + 2, after its
// call k + 1 saw every GPU arrive there, which a GPU does only after finishing call k.
// On three GPUs or more, from kAllReduceTwoShotBytes (all_reduce_ipc_two_shot), the same kernel
// runs in two shots: each GPU sums a gpus-th of the vectors from every GPU's half-buffer into x and
// over its own copy, and after a second barrier copies the rest of the sums from the GPUs that
// made them: 2 (gpus - 1) / gpus of the array over the links instead of gpus - 1 arrays, the same
// bits.
//
// buffers[g] and signals[g] are GPU g's staging buffer (buffer_bytes, the same on every GPU, a
// multiple of 32; count at most all_reduce_ipc_capacity) and signal array (kAllReduceSignalWords
// unsigned words, zeroed once when allocated): this process's own for g == rank, the others' opened
// by open_peer_buffer. `epoch` must be the same on every GPU for one call and exactly one more than
// the last call's (start at 1): the halves alternate with it. A GPU whose block has not arrived `timeout_seconds` after
// this GPU's did is taken as gone (its process failed): the kernel traps, and this process's next CUDA call fails. The
// blocks wait for their peers by spinning, so the grid (at most kAllReduceMaxBlocks blocks of 512 threads) relies on
// every GPU starting its blocks in ascending order, as GPUs do. Asynchronous on `stream`. count == 0 does nothing.
// Throws cudalab::Error (invalid_argument for a negative or too large count, gpus outside 1..8, a
// rank outside 0..gpus-1, an epoch outside 1..2^31 - 1, a timeout outside (0, 1e9] s, or a null or misaligned pointer;
// cuda when the launch fails).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

#define CUDALAB_ALL_REDUCE_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b)
using AllReduceElements = CUDALAB_ELEMENT_LIST(CUDALAB_ALL_REDUCE_ELEMENTS);

inline constexpr int kAllReduceMaxGpus = 8;
// all_reduce_ipc's kernel runs at most this many blocks.
inline constexpr int kAllReduceMaxBlocks = 128;
// A signal array: one word per GPU for each block.
inline constexpr int kAllReduceSignalWords = kAllReduceMaxBlocks * kAllReduceMaxGpus;

// From this many bytes of x, on three GPUs or more, all_reduce_ipc sums in two shots (above).
inline constexpr std::size_t kAllReduceTwoShotBytes = std::size_t{2} << 20;
constexpr bool all_reduce_ipc_two_shot(int gpus, std::size_t bytes) {
  return gpus >= 3 && bytes >= kAllReduceTwoShotBytes;
}

// The elements of T one all_reduce_ipc call takes with buffers of buffer_bytes: half of them.
template <typename T>
constexpr std::size_t all_reduce_ipc_capacity(std::size_t buffer_bytes) {
  return buffer_bytes / 2 / sizeof(T);
}

// Another process's cudaMalloc'd memory, exported with cudaIpcGetMemHandle, mapped for kernels on
// `device` (this process's GPU) with peer access enabled; close it with cudaIpcCloseMemHandle. It
// must be opened on the GPU whose kernels read it: memory opened on its owner's GPU (as
// torch.multiprocessing shares CUDA tensors) is mapped for that GPU's kernels only, and a kernel
// on another GPU that reads it faults. The current device is left as it was.
// Throws cudalab::Error (cuda when the handle cannot be opened).
void* open_peer_buffer(const cudaIpcMemHandle_t& handle, int device);

template <typename T, typename = RequireElement<T, AllReduceElements>>
void all_reduce_ipc(T* x, std::int64_t count, void* const* buffers, std::size_t buffer_bytes, unsigned* const* signals,
                    int rank, int gpus, unsigned epoch, cudaStream_t stream = nullptr, double timeout_seconds = 600.0);

}  // namespace cudalab
