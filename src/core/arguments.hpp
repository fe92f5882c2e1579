// The argument checks library entries share: a product of sizes that must fit 64 bits, and each
// array of a call as a span (pointer, element count, element size, name); every non-empty one
// non-null and aligned to its element, and every output overlapping no other array of the call.
// The messages name the call and the argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "cudalab/error.hpp"

namespace cudalab {

// True when `pointer` may be moved in 16-byte vectors (the host side's test; kernels have
// is_aligned16 in core/vector.cuh).
inline bool aligned16(const void* pointer) { return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0; }

// The product of `sizes` (each >= 0, checked by the caller), or invalid_argument "<call>: <what>
// overflows 64 bits". A zero size makes it 0 whatever the others are: an empty problem.
inline std::int64_t checked_product(const char* call, const char* what, std::initializer_list<std::int64_t> sizes) {
  for (std::int64_t size : sizes)
    if (size == 0) return 0;
  std::int64_t product = 1;
  for (std::int64_t size : sizes)
    CUDALAB_REQUIRE(!__builtin_mul_overflow(product, size, &product),
                    std::string(call) + ": " + what + " overflows 64 bits");
  return product;
}

struct ArraySpan {
  const void* data;
  std::int64_t count;
  std::size_t element_size;
  const char* name;

  std::uintptr_t begin() const { return reinterpret_cast<std::uintptr_t>(data); }
  std::uintptr_t end() const { return begin() + static_cast<std::uintptr_t>(count) * element_size; }
};

// Throws invalid_argument "<call>: <what>" for the first array that breaks a rule.
inline void require_arrays(const char* call, std::initializer_list<ArraySpan> inputs,
                           std::initializer_list<ArraySpan> outputs) {
  const std::string prefix = std::string(call) + ": ";
  for (const auto* list : {&inputs, &outputs}) {
    for (const ArraySpan& s : *list) {
      if (s.count == 0) continue;
      CUDALAB_REQUIRE(s.data != nullptr, prefix + s.name + " must be a device pointer, got null");
      CUDALAB_REQUIRE(s.begin() % s.element_size == 0, prefix + s.name + " must be aligned to its element size");
    }
  }
  for (const ArraySpan& out : outputs) {
    if (out.count == 0) continue;
    for (const auto* list : {&inputs, &outputs}) {
      for (const ArraySpan& other : *list) {
        if (&other == &out || other.count == 0) continue;
        CUDALAB_REQUIRE(out.end() <= other.begin() || other.end() <= out.begin(),
                        prefix + out.name + " must not overlap " + other.name);
      }
    }
  }
}

}  // namespace cudalab
