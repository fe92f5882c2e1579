// The two kernels the transfer experiments launch: a word copy that moves bytes through host-mapped
// (zero-copy) or managed memory, and the pipeline's compute stage.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "ops/transfers/reference.hpp"

namespace cudalab::transfers {

// Copies `bytes` bytes (a multiple of 16, both pointers 16-byte aligned) with 16-byte loads and
// stores; either side may be device, host-mapped or managed memory. Throws invalid_argument on
// misuse.
void copy_words(void* destination, const void* source, std::size_t bytes, cudaStream_t stream);

// out[i] = step^iterations (in[i]) for i in [0, n): `iterations` dependent multiply-adds per
// element, one element per thread, so its time scales with `iterations` while it reads and writes
// only 8 bytes per element. `blocks` > 0 caps the grid (a grid-stride loop covers the rest), which
// lets several small launches run side by side.
void affine_steps(std::uint32_t* out, const std::uint32_t* in, std::int64_t n, AffineMap step, std::int64_t iterations,
                  cudaStream_t stream, int blocks = 0);

}  // namespace cudalab::transfers
