#include "cudalab/transpose.hpp"

#include <string>

#include "cudalab/error.hpp"
#include "ops/transpose/variants.hpp"

namespace cudalab {

// The library entry takes the swizzled 32x32 tile with 4 elements per thread, chosen by
// measurement (docs/transpose.md, results/.../memory.json).
void transpose(const float* in, float* out, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  CUDALAB_REQUIRE(rows >= 0 && cols >= 0,
                  "transpose: rows and cols must be >= 0, got " + std::to_string(rows) + "x" + std::to_string(cols));
  if (rows == 0 || cols == 0) return;
  CUDALAB_REQUIRE(in != nullptr && out != nullptr, "transpose: in and out must be device pointers, got a null pointer");
  CUDALAB_REQUIRE(in != out, "transpose: in and out must be distinct arrays (no in-place transpose)");
  transpose_variants::swizzled_4_per_thread(in, out, rows, cols, stream);
}

}  // namespace cudalab
