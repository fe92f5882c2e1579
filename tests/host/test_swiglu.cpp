// The gated units' library entries (SwiGLU, GeGLU) refuse bad arguments before anything touches
// the GPU, with invalid_argument: negative sizes, null and misaligned pointers, and outputs that
// overlap.
#include <cstdint>

#include <gtest/gtest.h>

#include "cudalab/swiglu.hpp"
#include "error_kind.hpp"

namespace cudalab {
namespace {

using test_support::thrown_kind;

TEST(SwigluLibrary, ValidatesBeforeTouchingTheGpu) {
  auto* gate = reinterpret_cast<float*>(std::uintptr_t{0x10000});
  auto* up = reinterpret_cast<float*>(std::uintptr_t{0x20000});
  auto* y = reinterpret_cast<float*>(std::uintptr_t{0x30000});
  EXPECT_EQ(thrown_kind([&] { swiglu(gate, up, y, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { swiglu<float>(nullptr, up, y, 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { swiglu(gate, up, static_cast<float*>(nullptr), 4); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { swiglu(gate, up, reinterpret_cast<float*>(std::uintptr_t{0x30002}), 4); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { swiglu(gate, up, gate + 2, 4); }), ErrorKind::invalid_argument);  // y overlaps gate
  EXPECT_NO_THROW(swiglu<float>(nullptr, nullptr, nullptr, 0));

  auto* half = reinterpret_cast<__half*>(std::uintptr_t{0x40000});
  auto* dgate = reinterpret_cast<__half*>(std::uintptr_t{0x50000});
  EXPECT_EQ(thrown_kind([&] { swiglu_backward(half, half, half, dgate, dgate + 1, 4); }),
            ErrorKind::invalid_argument);  // the outputs overlap
  EXPECT_EQ(thrown_kind([&] { swiglu_backward(half, half, half, dgate, static_cast<__half*>(nullptr), 4); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { swiglu_backward(half, half, half, dgate, dgate + 64, -3); }),
            ErrorKind::invalid_argument);
  EXPECT_NO_THROW(swiglu_backward<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, 0));
}

TEST(GegluLibrary, ValidatesBeforeTouchingTheGpu) {
  auto* gate = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x10000});
  auto* up = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x20000});
  auto* y = reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x30000});
  EXPECT_EQ(thrown_kind([&] { geglu(gate, up, y, -1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { geglu(gate, up, reinterpret_cast<__nv_bfloat16*>(std::uintptr_t{0x30001}), 4); }),
            ErrorKind::invalid_argument);
  EXPECT_EQ(thrown_kind([&] { geglu(gate, up, up + 1, 4); }), ErrorKind::invalid_argument);  // y overlaps up
  EXPECT_EQ(thrown_kind([&] { geglu_backward(gate, up, y, y, y + 2, 4); }),
            ErrorKind::invalid_argument);  // dgate overlaps dy and dup
  EXPECT_NO_THROW(geglu_backward<__nv_bfloat16>(nullptr, nullptr, nullptr, nullptr, nullptr, 0));
}

}  // namespace
}  // namespace cudalab
