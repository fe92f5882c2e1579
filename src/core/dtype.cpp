#include "cudalab/dtype.hpp"

#include <cstring>

namespace cudalab {
namespace {

// 2^-24, 2^-53, 2^-11, 2^-8, 2^-4: half an ulp of 1 in fp32, fp64, fp16 (11 significant bits),
// bf16 (8 significant bits) and e4m3 (4 significant bits).
constexpr DTypeTraits kTraits[] = {
    {DType::f32, "f32", 4, false, ToleranceClass::fp32, 5.9604644775390625e-8},
    {DType::f64, "f64", 8, false, ToleranceClass::fp64, 1.1102230246251565e-16},
    {DType::f16, "f16", 2, false, ToleranceClass::half_precision, 4.8828125e-4},
    {DType::bf16, "bf16", 2, false, ToleranceClass::half_precision, 3.90625e-3},
    {DType::i32, "i32", 4, true, ToleranceClass::exact, 0.0},
    {DType::i64, "i64", 8, true, ToleranceClass::exact, 0.0},
    {DType::u8, "u8", 1, true, ToleranceClass::exact, 0.0},
    {DType::u16, "u16", 2, true, ToleranceClass::exact, 0.0},
    {DType::u32, "u32", 4, true, ToleranceClass::exact, 0.0},
    {DType::e4m3, "e4m3", 1, false, ToleranceClass::half_precision, 0.0625},
};

template <typename T>
T load(const void* elements, std::int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(elements) + index * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return value;
}

template <typename T>
void store(T value, void* elements, std::int64_t index) {
  std::memcpy(static_cast<unsigned char*>(elements) + index * static_cast<std::int64_t>(sizeof(T)), &value, sizeof(T));
}

}  // namespace

const DTypeTraits& traits(DType dtype) {
  for (const DTypeTraits& t : kTraits)
    if (t.dtype == dtype) return t;
  return kTraits[0];  // unreachable for a valid enum value
}

std::vector<DType> all_dtypes() {
  std::vector<DType> dtypes;
  for (const DTypeTraits& t : kTraits) dtypes.push_back(t.dtype);
  return dtypes;
}

bool parse_dtype(const std::string& text, DType* out) {
  for (const DTypeTraits& t : kTraits) {
    if (text == t.name) {
      *out = t.dtype;
      return true;
    }
  }
  return false;
}

double element_to_double(DType dtype, const void* elements, std::int64_t index) {
  switch (dtype) {
    case DType::f32: return load<float>(elements, index);
    case DType::f64: return load<double>(elements, index);
    case DType::f16: return static_cast<double>(__half2float(load<__half>(elements, index)));
    case DType::bf16: return static_cast<double>(__bfloat162float(load<__nv_bfloat16>(elements, index)));
    case DType::i32: return load<std::int32_t>(elements, index);
    case DType::i64: return static_cast<double>(load<std::int64_t>(elements, index));
    case DType::u8: return load<std::uint8_t>(elements, index);
    case DType::u16: return load<std::uint16_t>(elements, index);
    case DType::u32: return load<std::uint32_t>(elements, index);
    case DType::e4m3: return static_cast<double>(static_cast<float>(load<__nv_fp8_e4m3>(elements, index)));
  }
  return 0.0;
}

void element_from_double(DType dtype, double value, void* elements, std::int64_t index) {
  switch (dtype) {
    case DType::f32: store(static_cast<float>(value), elements, index); break;
    case DType::f64: store(value, elements, index); break;
    case DType::f16: store(__double2half(value), elements, index); break;
    case DType::bf16: store(__double2bfloat16(value), elements, index); break;
    case DType::i32: store(static_cast<std::int32_t>(value), elements, index); break;
    case DType::i64: store(static_cast<std::int64_t>(value), elements, index); break;
    case DType::u8: store(static_cast<std::uint8_t>(value), elements, index); break;
    case DType::u16: store(static_cast<std::uint16_t>(value), elements, index); break;
    case DType::u32: store(static_cast<std::uint32_t>(value), elements, index); break;
    case DType::e4m3: store(__nv_fp8_e4m3(value), elements, index); break;  // saturates to +-448
  }
}

}  // namespace cudalab
