#include "cudalab/memory.hpp"

#include <string>

#include "core/format.hpp"
#include "cudalab/error.hpp"

namespace cudalab {

void* device_allocate(std::size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error so later calls are not blamed
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error(ErrorKind::out_of_memory,
                "cannot allocate " + format_bytes(double(bytes)) + " of device memory (" +
                    format_bytes(double(free_bytes)) + " free of " + format_bytes(double(total_bytes)) + ")",
                __FILE__, __LINE__);
  }
  CUDALAB_CUDA_CHECK(status);
  return pointer;
}

void device_free(void* pointer) noexcept {
  if (pointer != nullptr) cudaFree(pointer);
}

void* pinned_allocate(std::size_t bytes, unsigned flags) {
  void* pointer = nullptr;
  const cudaError_t status = cudaHostAlloc(&pointer, bytes, flags);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw Error(ErrorKind::out_of_memory, "cannot allocate " + format_bytes(double(bytes)) + " of pinned host memory",
                __FILE__, __LINE__);
  }
  CUDALAB_CUDA_CHECK(status);
  return pointer;
}

void pinned_free(void* pointer) noexcept {
  if (pointer != nullptr) cudaFreeHost(pointer);
}

Stream::Stream() { CUDALAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void Stream::synchronize() const { CUDALAB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Event::Event(unsigned flags) { CUDALAB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) const { CUDALAB_CUDA_CHECK(cudaEventRecord(event_, stream)); }

void Event::synchronize() const { CUDALAB_CUDA_CHECK(cudaEventSynchronize(event_)); }

float Event::elapsed_ms_since(const Event& start) const {
  float milliseconds = 0.0f;
  CUDALAB_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.event_, event_));
  return milliseconds;
}

}  // namespace cudalab
