#include "cudalab/transpose.hpp"

#include <string>

#include "cudalab/error.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab {

// The library entry takes the 64x64 swizzled tile. A first H100 run (commit e4ce7d6) had the
// 32-wide tiles at 79-83% of a same-size copy at 8192x8192, cuBLAS at 100%; the 64-wide tile
// was added on the reasoning in variants.hpp and chosen before its own measurement: see
// docs/transpose.md for where it landed.
void transpose(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  CUDALAB_REQUIRE(rows >= 0 && cols >= 0,
                  "transpose: rows and cols must be >= 0, got " + std::to_string(rows) + "x" + std::to_string(cols));
  if (rows == 0 || cols == 0) return;
  CUDALAB_REQUIRE(in != nullptr && out != nullptr, "transpose: in and out must be device pointers, got a null pointer");
  CUDALAB_REQUIRE(in != out, "transpose: in and out must be distinct arrays (no in-place transpose)");
  transpose_variants::swizzled_64_tile(in, out, rows, cols, stream);
}

}  // namespace cudalab
