// RAII owners for device memory, pinned host memory, streams and events. Move-only; they free on
// destruction and never throw from a destructor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

namespace cudalab {

// Untyped allocation primitives; they throw cudalab::Error (out_of_memory names the size asked).
void* device_allocate(std::size_t bytes);
void device_free(void* pointer) noexcept;
void* pinned_allocate(std::size_t bytes, unsigned flags = cudaHostAllocDefault);
void pinned_free(void* pointer) noexcept;

template <typename T, void* (*Allocate)(std::size_t), void (*Free)(void*) noexcept>
class OwnedArray {
 public:
  OwnedArray() = default;
  explicit OwnedArray(std::int64_t count)
      : data_(count > 0 ? static_cast<T*>(Allocate(static_cast<std::size_t>(count) * sizeof(T))) : nullptr),
        size_(count > 0 ? count : 0) {}
  OwnedArray(const OwnedArray&) = delete;
  OwnedArray& operator=(const OwnedArray&) = delete;
  OwnedArray(OwnedArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  OwnedArray& operator=(OwnedArray&& other) noexcept {
    if (this != &other) {
      Free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~OwnedArray() { Free(data_); }

  T* data() const noexcept { return data_; }
  std::int64_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return static_cast<std::size_t>(size_) * sizeof(T); }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size_; }

 private:
  T* data_ = nullptr;
  std::int64_t size_ = 0;
};

namespace detail {
inline void* pinned_allocate_default(std::size_t bytes) { return pinned_allocate(bytes); }
}  // namespace detail

template <typename T>
using DeviceBuffer = OwnedArray<T, device_allocate, device_free>;
template <typename T>
using PinnedBuffer = OwnedArray<T, detail::pinned_allocate_default, pinned_free>;

// A non-blocking stream: it does not synchronize with the legacy default stream.
class Stream {
 public:
  Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  ~Stream();
  cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  ~Event();
  cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) const;
  void synchronize() const;
  // Milliseconds from `start` to this event; both must have completed.
  float elapsed_ms_since(const Event& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace cudalab
