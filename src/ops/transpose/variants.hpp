// The transpose ladder (row-major rows x cols in, row-major cols x rows out): one launcher per
// technique, each taking the op's argument struct and enqueuing on `stream`. The tiles' bank
// arithmetic is for 4-byte elements, so the launchers are fp32 only. The library entry
// (transpose.cpp) and the registry (register.cu) fill the same struct.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cudalab::transpose_variants {

// out = inᵀ: `in` is rows x cols, `out` cols x rows, both dense, row-major, distinct device arrays.
template <typename T>
struct TransposeArgs {
  using Element = T;
  const T* in = nullptr;
  T* out = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

// One element per thread, threads walk the input's rows: reads coalesce, each warp's 32 writes
// land in 32 different output rows (32 sectors per store instruction).
void naive_row_read(const TransposeArgs<float>& args, cudaStream_t stream);

// One element per thread, threads walk the output's rows: writes coalesce, reads are strided.
void naive_column_read(const TransposeArgs<float>& args, cudaStream_t stream);

// A 32x32 tile staged through shared memory, so both the global read and the global write run
// along rows. Layouts of the shared tile:
//   tiled:    tile[32][32]; reading a tile column hits one bank 32 times (32-way conflict)
//   padded:   tile[32][33]; the extra column shifts each row by one bank: conflict-free
//   swizzled: tile[32][32] with column c of row r stored at c ^ r: conflict-free, no extra space
// The first three use a 32x32 block (one element per thread); the *_per_thread ones a 32x8 or
// 32x4 block that moves 4 or 8 elements per thread, amortising the index arithmetic and the
// barriers over more loads in flight.
void tiled(const TransposeArgs<float>& args, cudaStream_t stream);
void padded(const TransposeArgs<float>& args, cudaStream_t stream);
void swizzled(const TransposeArgs<float>& args, cudaStream_t stream);
void padded_4_per_thread(const TransposeArgs<float>& args, cudaStream_t stream);
void swizzled_4_per_thread(const TransposeArgs<float>& args, cudaStream_t stream);
void swizzled_8_per_thread(const TransposeArgs<float>& args, cudaStream_t stream);
// A 64x64 tile with a 32x8 block: 16 elements per thread in flight, and each warp reads and
// writes 256 contiguous bytes per row, so a tile touches half as many DRAM rows per byte.
void padded_64_tile(const TransposeArgs<float>& args, cudaStream_t stream);
void swizzled_64_tile(const TransposeArgs<float>& args, cudaStream_t stream);

// Baseline: cublasSgeam with op(A) = Aᵀ, beta = 0 (cuBLAS's out-of-place transpose).
void cublas_geam(const TransposeArgs<float>& args, cudaStream_t stream);

}  // namespace cudalab::transpose_variants
