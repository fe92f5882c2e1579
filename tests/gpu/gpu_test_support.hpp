// Shared by the GPU suites: skip with a reason when there is no usable GPU.
#pragma once

#include <gtest/gtest.h>

#include "cudalab/device.hpp"
#include "cudalab/error.hpp"
#include "error_kind.hpp"

#define CUDALAB_REQUIRE_GPU_OR_SKIP()                                     \
  do {                                                                    \
    if (::cudalab::device_count() == 0)                                   \
      GTEST_SKIP() << "no CUDA device (" << ::cudalab::no_device_reason() \
                   << "): GPU tests run on a machine with an NVIDIA GPU"; \
    try {                                                                 \
      ::cudalab::require_kernel_image();                                  \
    } catch (const ::cudalab::Error& e) {                                 \
      GTEST_SKIP() << e.what();                                           \
    }                                                                     \
  } while (0)
