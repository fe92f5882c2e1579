// A host array of any dtype for the reference tests: raw bytes, written and read through double
// (the dtype's rounding applies on write), and elements set to the harness's poison pattern to
// stand for outputs a kernel never wrote.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "cudalab/dtype.hpp"
#include "harness/random.hpp"

namespace cudalab::test_support {

struct TypedArray {
  DType dtype;
  std::vector<unsigned char> bytes;

  TypedArray(DType type, std::int64_t n) : dtype(type), bytes(static_cast<std::size_t>(n) * size_of(type)) {}
  void set(std::int64_t i, double value) { element_from_double(dtype, value, bytes.data(), i); }
  double get(std::int64_t i) const { return element_to_double(dtype, bytes.data(), i); }
  const void* data() const { return bytes.data(); }
  void poison(std::int64_t i) {
    std::memset(&bytes[static_cast<std::size_t>(i) * size_of(dtype)], harness::kFloatPoisonByte, size_of(dtype));
  }
};

}  // namespace cudalab::test_support
