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

}  // namespace cudalab::test_support
