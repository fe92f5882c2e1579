#include "cudalab/error.hpp"

namespace cudalab {

Error::Error(ErrorKind kind, const std::string& message, const char* file, int line)
    : std::runtime_error(message), kind_(kind), file_(file), line_(line) {}

ErrorKind classify(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable: return ErrorKind::no_device;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidDeviceFunction: return ErrorKind::unsupported_device;
    case cudaErrorMemoryAllocation: return ErrorKind::out_of_memory;
    default: return ErrorKind::cuda;
  }
}

namespace detail {
void throw_cuda_error(cudaError_t status, const char* expression, const char* file, int line) {
  throw Error(classify(status),
              std::string(expression) + " failed: " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) +
                  ") at " + file + ":" + std::to_string(line),
              file, line);
}
}  // namespace detail

}  // namespace cudalab
