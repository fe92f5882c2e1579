// Element types: one enum that names every dtype cudalab's ops and the harness speak of, and the
// compile-time map from a C++ element type to it. Ops register one templated launcher for several
// dtypes; the harness allocates, fills, poisons and compares tensors by DType alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cudalab/elements.hpp"

namespace cudalab {

// e4m3 is fp8 with 4 exponent and 3 mantissa bits (__nv_fp8_e4m3: the FP8 GEMM's inputs; no NaN
// but 0x7f and 0xff, largest finite 448); e5m2 would follow it the same way.
enum class DType { f32, f64, f16, bf16, i32, i64, u8, u16, u32, e4m3 };

// How a result of this dtype is judged: integers exactly; fp32 and fp64 by their own rounding;
// bf16/fp16 as values computed in fp32 and rounded once to 8 or 11 significant bits.
enum class ToleranceClass { exact, fp32, fp64, half_precision };

struct DTypeTraits {
  DType dtype;
  const char* name;  // "f32", "bf16", ...: the CLI's --dtype and the results files use it
  std::size_t size;  // bytes per element
  bool is_integer;
  ToleranceClass tolerance;
  // Half the distance between 1 and the next representable value (0 for integers): one rounding's
  // relative error.
  double unit_roundoff;
};

const DTypeTraits& traits(DType dtype);
inline const char* to_string(DType dtype) { return traits(dtype).name; }
inline std::size_t size_of(DType dtype) { return traits(dtype).size; }
std::vector<DType> all_dtypes();
// Accepts the names above ("f32", "bf16", ...); false for anything else.
bool parse_dtype(const std::string& text, DType* out);

// dtype_of<T>: the DType of a C++ element type, for the types a tensor may hold.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<__half> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<__nv_bfloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::u8;
};
template <>
struct dtype_of<std::uint16_t> {
  static constexpr DType value = DType::u16;
};
template <>
struct dtype_of<std::uint32_t> {
  static constexpr DType value = DType::u32;
};
template <>
struct dtype_of<__nv_fp8_e4m3> {
  static constexpr DType value = DType::e4m3;
};
template <typename T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// The DTypes of an element list, in its order.
template <typename... Ts>
std::vector<DType> dtypes_of(TypeList<Ts...>) {
  return {dtype_of_v<Ts>...};
}

// Host-side conversions through double (the CPU references' precision). Narrowing to a half
// type rounds to nearest even, as the device's __float2half_rn and __float2bfloat16_rn do.
double element_to_double(DType dtype, const void* elements, std::int64_t index);
void element_from_double(DType dtype, double value, void* elements, std::int64_t index);

}  // namespace cudalab
