// The sum of one array per GPU, left in every GPU's array, where each GPU is driven by its own
// process (one process per GPU, as torch.distributed runs them) on one host. Every process calls
// all_reduce_ipc on its GPU with the same count and epoch:
//
//   x (count elements, this GPU's) is copied into this GPU's staging buffer, buffers[rank]; a
//   barrier waits until every GPU has done so; x becomes the fp32 sum, in GPU order, of every GPU's
//   buffer, read over NVLink or PCIe peer access and rounded once to T (so every GPU holds the same
//   bits); a second barrier keeps any GPU from refilling its buffer while another still reads it.
//
// buffers[g] and signals[g] are GPU g's staging buffer (at least count * sizeof(T) bytes, 16-byte
// aligned for the vector path) and signal array (kAllReduceSignalWords unsigned words, zeroed
// once when allocated): this process's own for g == rank, the others' opened by open_peer_buffer. The barriers compare
// epochs: `epoch` must be the same on every GPU for one call and larger than the last call's (start at 1); calls must
// follow one another on one stream (the second barrier of one call is what lets the next refill the buffer). A GPU that
// does not arrive at a barrier within 20 s is taken as gone: the kernel traps and this process's next CUDA call fails.
// Asynchronous on `stream`. count == 0 does nothing. Throws cudalab::Error (invalid_argument for a negative count, gpus
// outside 1..8, a rank outside 0..gpus-1, epoch 0, or a null or misaligned pointer; cuda when a launch fails).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "cudalab/elements.hpp"

namespace cudalab {

#define CUDALAB_ALL_REDUCE_ELEMENTS(X, a, b) X(float, a, b) X(__nv_bfloat16, a, b)
using AllReduceElements = CUDALAB_ELEMENT_LIST(CUDALAB_ALL_REDUCE_ELEMENTS);

inline constexpr int kAllReduceMaxGpus = 8;
// A signal array: one word per GPU for each of the two barriers.
inline constexpr int kAllReduceSignalWords = 2 * kAllReduceMaxGpus;

// Another process's cudaMalloc'd memory, exported with cudaIpcGetMemHandle, mapped for kernels on
// `device` (this process's GPU) with peer access enabled; close it with cudaIpcCloseMemHandle. It
// must be opened on the GPU whose kernels read it: memory opened on its owner's GPU (as
// torch.multiprocessing shares CUDA tensors) is mapped for that GPU's kernels only, and a kernel
// on another GPU that reads it faults. The current device is left as it was.
// Throws cudalab::Error (cuda when the handle cannot be opened).
void* open_peer_buffer(const cudaIpcMemHandle_t& handle, int device);

template <typename T, typename = RequireElement<T, AllReduceElements>>
void all_reduce_ipc(T* x, std::int64_t count, void* const* buffers, unsigned* const* signals, int rank, int gpus,
                    unsigned epoch, cudaStream_t stream = nullptr);

}  // namespace cudalab
