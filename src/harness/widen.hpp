// Rows of a host tensor in double for the checks that read each element in several passes: one
// conversion an element instead of one a pass.
#pragma once

#include <cstdint>
#include <vector>

#include "cudalab/dtype.hpp"

namespace cudalab::harness {

// Elements [first, first + count) of `values` into `out`, resized to count.
inline void widen_into(std::vector<double>& out, DType dtype, const void* values, std::int64_t first,
                       std::int64_t count) {
  out.resize(static_cast<std::size_t>(count));
  for (std::int64_t j = 0; j < count; ++j)
    out[static_cast<std::size_t>(j)] = element_to_double(dtype, values, first + j);
}

inline std::vector<double> widened(DType dtype, const void* values, std::int64_t first, std::int64_t count) {
  std::vector<double> out;
  widen_into(out, dtype, values, first, count);
  return out;
}

}  // namespace cudalab::harness
