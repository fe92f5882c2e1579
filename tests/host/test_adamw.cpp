// The AdamW library entries refuse bad arguments before anything touches the GPU, with
// invalid_argument: negative counts and sizes, null and misaligned pointers, arrays of one tensor
// that overlap, and hyperparameters out of range; the master-weight entry as the plain one.
#include <cstdint>

#include <gtest/gtest.h>

#include "cudalab/adamw.hpp"
#include "error_kind.hpp"

namespace cudalab {
namespace {

using test_support::thrown_kind;

template <typename T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

TEST(AdamWMasterLibrary, ValidatesBeforeTouchingTheGpu) {
  using B = __nv_bfloat16;
  AdamWMasterTensor<B> t{at<B>(0x10000),     at<B>(0x20000),     at<float>(0x30000),
                         at<float>(0x40000), at<float>(0x50000), 64};
  const AdamWHyperparameters ok;
  EXPECT_EQ(thrown_kind([&] { adamw_master(&t, -1, ok); }), ErrorKind::invalid_argument);
  AdamWHyperparameters bad = ok;
  bad.step = 0;
  EXPECT_EQ(thrown_kind([&] { adamw_master(&t, 1, bad); }), ErrorKind::invalid_argument);
  bad = ok;
  bad.beta2 = 1.0f;
  EXPECT_EQ(thrown_kind([&] { adamw_master(&t, 1, bad); }), ErrorKind::invalid_argument);
  AdamWMasterTensor<B> overlap = t;
  overlap.exp_avg = overlap.master + 8;  // m overlaps the master copy
  EXPECT_EQ(thrown_kind([&] { adamw_master(&overlap, 1, ok); }), ErrorKind::invalid_argument);
  AdamWMasterTensor<B> misaligned = t;
  misaligned.master = at<float>(0x30002);
  EXPECT_EQ(thrown_kind([&] { adamw_master(&misaligned, 1, ok); }), ErrorKind::invalid_argument);
  AdamWMasterTensor<B> missing = t;
  missing.param = nullptr;
  EXPECT_EQ(thrown_kind([&] { adamw_master(&missing, 1, ok); }), ErrorKind::invalid_argument);
  AdamWMasterTensor<B> empty{};
  EXPECT_NO_THROW(adamw_master(&empty, 1, ok));  // n = 0: nothing to step
  EXPECT_NO_THROW(adamw_master<B>(nullptr, 0, ok));
}

}  // namespace
}  // namespace cudalab
