// cudalab::Error: the one exception type the library throws. It carries what was asked, why it
// failed (the CUDA error string where there is one) and where (file:line), so a caller can print
// one useful line; `kind()` lets a program choose its response (exit code, retry smaller, ...).
#pragma once

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace cudalab {

enum class ErrorKind {
  invalid_argument,    // the caller asked for something impossible (n < 0, null pointer, ...)
  no_device,           // no CUDA device or no usable driver
  unsupported_device,  // the GPU lacks the architecture or feature a call needs
  out_of_memory,       // device or host memory does not hold what was asked
  cuda,                // any other CUDA runtime error
  library,             // a vendor library (cuBLAS, ...) failed
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, const char* file, int line);
  ErrorKind kind() const noexcept { return kind_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  ErrorKind kind_;
  const char* file_;
  int line_;
};

// Maps a CUDA status to the ErrorKind a caller would act on.
ErrorKind classify(cudaError_t status) noexcept;

namespace detail {
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line);
}  // namespace detail

}  // namespace cudalab

// Throws cudalab::Error when a CUDA runtime call fails.
#define CUDALAB_CUDA_CHECK(expression)                                                       \
  do {                                                                                       \
    const cudaError_t cudalab_status_ = (expression);                                        \
    if (cudalab_status_ != cudaSuccess)                                                      \
      ::cudalab::detail::throw_cuda_error(cudalab_status_, #expression, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define CUDALAB_CHECK_LAUNCH() CUDALAB_CUDA_CHECK(cudaGetLastError())

// Argument validation in library calls.
#define CUDALAB_REQUIRE(condition, message)                                                                          \
  do {                                                                                                               \
    if (!(condition)) throw ::cudalab::Error(::cudalab::ErrorKind::invalid_argument, (message), __FILE__, __LINE__); \
  } while (0)
