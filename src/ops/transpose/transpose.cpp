#include "cudalab/transpose.hpp"

#include <string>

#include "core/arguments.hpp"
#include "cudalab/error.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab {

// The library entry takes the 64x64 padded tile, the fastest verified variant on an H100
// (commit 3460eb9, results/nvidia-h100-80gb-hbm3/memory.json): 184.2 us at 8192x8192, the same
// as cublasSgeam and as a copy of the matrix; 120.1 us at 8191x4097. The 64x64 swizzled tile
// measured 214 us at 8192x8192 (docs/transpose.md).
void transpose(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  CUDALAB_REQUIRE(rows >= 0 && cols >= 0,
                  "transpose: rows and cols must be >= 0, got " + std::to_string(rows) + "x" + std::to_string(cols));
  if (checked_product("transpose", "rows * cols", {rows, cols}) == 0) return;
  CUDALAB_REQUIRE(in != nullptr && out != nullptr, "transpose: in and out must be device pointers, got a null pointer");
  CUDALAB_REQUIRE(in != out, "transpose: in and out must be distinct arrays (no in-place transpose)");
  transpose_variants::TransposeArgs<float> args;
  args.in = in;
  args.out = out;
  args.rows = rows;
  args.cols = cols;
  transpose_variants::padded_64_tile(args, stream);
}

}  // namespace cudalab
