#include "ops/convert/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "harness/random.hpp"

namespace cudalab::harness {

Comparison check_conversion(DType from, const void* x, DType to, const void* y, std::int64_t n) {
  const std::size_t size = size_of(to);
  const unsigned char poison = poison_byte(to);
  const auto* out_bytes = static_cast<const unsigned char*>(y);
  return compare_elements(n, Tolerance::exact(), [&](std::int64_t begin, std::int64_t end, ComparisonBuilder& b) {
    for (std::int64_t i = begin; i < end; ++i) {
      const double value = element_to_double(from, x, i);
      unsigned char expected[sizeof(double)];
      element_from_double(to, value, expected, 0);
      const unsigned char* got = out_bytes + static_cast<std::size_t>(i) * size;
      const double out = element_to_double(to, y, i);
      const double ref = element_to_double(to, expected, 0);
      const bool unwritten = std::all_of(got, got + size, [&](unsigned char c) { return c == poison; });
      const bool exact = std::isnan(value) ? std::isnan(out) && !unwritten : std::memcmp(got, expected, size) == 0;
      if (exact) {
        const double passed = std::isnan(ref) ? 0.0 : ref;  // NaN == NaN is false; both NaN passes
        b.add(i, passed, passed, false);
      } else {
        // The bits decided; a tolerance nothing meets records the failure, since a zero of the
        // wrong sign passes any numeric one.
        ComparisonBuilder failure(Tolerance{-1.0, -1.0});
        failure.add(i, out, ref, unwritten);
        b.merge(failure);
      }
    }
  });
}

}  // namespace cudalab::harness
