// For argument-check tests on both sides: which cudalab::Error kind a call throws.
#pragma once

#include <gtest/gtest.h>

#include "cudalab/error.hpp"

namespace cudalab::test_support {

// The ErrorKind `call` throws; a call that throws nothing is a test failure (reported here) and
// returns ErrorKind::cuda, which no argument-check test expects.
template <typename Call>
ErrorKind thrown_kind(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no cudalab::Error thrown";
  return ErrorKind::cuda;
}

// For a call that must pass its argument checks: it may still throw where there is no GPU (the
// work itself needs one), but never invalid_argument.
template <typename Call>
void expect_arguments_accepted(Call&& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_NE(e.kind(), ErrorKind::invalid_argument) << e.what();
  }
}

}  // namespace cudalab::test_support
