// The CPU reference of the matrix multiply, its error bound, and cudalab::gemm's argument checks
// (all raised before any CUDA call, so they run without a GPU).
#include <vector>

#include <gtest/gtest.h>

#include "cudalab/gemm.hpp"
#include "error_kind.hpp"
#include "ops/gemm/reference.hpp"

namespace cudalab {
namespace {

TEST(GemmReference, SmallProductWithStridesAlphaBeta) {
  // A 2x3 in a pitch of 4, B 3x2 in a pitch of 3, C0 2x2 in a pitch of 5.
  const std::vector<float> a = {1, 2, 3, -9, 4, 5, 6, -9};
  const std::vector<float> b = {1, -1, -9, 0, 2, -9, 3, 1, -9};
  const std::vector<float> c0 = {1, 1, -9, -9, -9, 2, -2, -9, -9, -9};
  const auto r = harness::gemm_reference(2, 2, 3, 2.0, a.data(), 4, b.data(), 3, -1.0, c0.data(), 5);
  // A B = [[10, 6], [22, 12]]
  EXPECT_EQ(r.value, (std::vector<double>{19, 11, 42, 26}));
  // |A||B| = [[10, 8], [22, 20]]; bound = 2 |A||B| + |C0|
  EXPECT_EQ(r.bound, (std::vector<double>{21, 17, 46, 42}));
}

TEST(GemmReference, EmptyInnerDimensionGivesBetaC) {
  const std::vector<float> c0 = {3, -4};
  const auto r = harness::gemm_reference(1, 2, 0, 1.0, nullptr, 1, nullptr, 2, 0.5, c0.data(), 2);
  EXPECT_EQ(r.value, (std::vector<double>{1.5, -2}));
}

TEST(GemmReference, BoundGrowsWithK) {
  EXPECT_DOUBLE_EQ(harness::gemm_error_bound(1, 1.0), 4.0 / 16777216.0);
  EXPECT_DOUBLE_EQ(harness::gemm_error_bound(8189, 2.0), 2.0 * 8192.0 / 16777216.0);
  const float out[2] = {1.0f, 2.0f};
  const double value[2] = {1.0, 2.0 + 1e-3};
  const double bound[2] = {1.0, 1.0};
  EXPECT_EQ(harness::compare_gemm(out, 2, value, bound, 100).mismatches, 1);
  EXPECT_EQ(harness::compare_gemm(out, 2, value, bound, 20000).mismatches, 0);
}

TEST(GemmLibrary, RejectsBadArguments) {
  float x[4] = {};
  auto kind = [](auto call) { return test_support::thrown_kind(call); };
  EXPECT_EQ(kind([&] { gemm(-1, 1, 1, 1, x, 1, x, 1, 0, x, 1); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 3, 1, x, 2, x, 2, 0, x, 2); }), ErrorKind::invalid_argument);  // lda < k
  EXPECT_EQ(kind([&] { gemm(2, 3, 2, 1, x, 2, x, 2, 0, x, 3); }), ErrorKind::invalid_argument);  // ldb < n
  EXPECT_EQ(kind([&] { gemm(2, 3, 2, 1, x, 2, x, 3, 0, x, 2); }), ErrorKind::invalid_argument);  // ldc < n
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, nullptr, 2, x, 2, 0, x, 2); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, x, 2, x, 2, 0, nullptr, 2); }), ErrorKind::invalid_argument);
  EXPECT_EQ(kind([&] { gemm(2, 2, 2, 1, x, 2, x, 2, 0, x, 2, nullptr, Layout::column_major); }),
            ErrorKind::invalid_argument);
  // Empty outputs are accepted and do nothing, even with null pointers.
  EXPECT_NO_THROW(gemm(0, 5, 5, 1, nullptr, 5, nullptr, 5, 0, nullptr, 5));
}

}  // namespace
}  // namespace cudalab
