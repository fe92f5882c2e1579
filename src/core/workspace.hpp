// Device scratch memory for launchers that need some (tile sums, look-back status words, CUB's
// temporary storage). A launcher asks once per launch; where the memory comes from is the
// caller's choice: a buffer a benchmark keeps for the whole workload, the stream-ordered
// allocator, or a library caller's own buffer. Shared by every op whose launchers take scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"

namespace cudalab {

// The workspace of `args` (any op's argument struct with `workspace` and `workspace_bytes`) for a
// launcher that needs `needed` bytes of it; throws invalid_argument naming `launcher` when it
// holds less.
template <typename Args>
void* workspace_of(const Args& args, std::size_t needed, const char* launcher) {
  CUDALAB_REQUIRE(args.workspace_bytes >= needed && (needed == 0 || args.workspace != nullptr),
                  std::string(launcher) + ": the workspace holds " + std::to_string(args.workspace_bytes) +
                      " bytes, the launch needs " + std::to_string(needed));
  return args.workspace;
}

// The pointer reserve() returns stays valid until the launch's work has finished on the stream,
// and is aligned to 256 bytes (16 for a caller's buffer). One reserve per launch: a launcher that
// needs several arrays carves them from one reservation.
class Workspace {
 public:
  virtual ~Workspace() = default;
  virtual void* reserve(std::size_t bytes) = 0;
};

// Scratch from the stream-ordered allocator, handed back on the same stream when the call ends
// (also when it throws), so the memory is reused only by work ordered after the launch.
class StreamOrderedWorkspace final : public Workspace {
 public:
  explicit StreamOrderedWorkspace(cudaStream_t stream) : stream_(stream) {}
  StreamOrderedWorkspace(const StreamOrderedWorkspace&) = delete;
  StreamOrderedWorkspace& operator=(const StreamOrderedWorkspace&) = delete;
  ~StreamOrderedWorkspace() override {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }
  void* reserve(std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    CUDALAB_CUDA_CHECK(cudaMallocAsync(&data_, bytes, stream_));
    return data_;
  }

 private:
  cudaStream_t stream_;
  void* data_ = nullptr;
};

// A buffer someone else owns: a library caller's, or a piece of a larger reservation. Asking for
// more than it holds, or for any bytes of a null one, is the caller's error; the message names the
// call and the function that sizes its workspace.
class CallerWorkspace final : public Workspace {
 public:
  CallerWorkspace(void* data, std::size_t bytes, const char* call, const char* size_function)
      : data_(data), bytes_(bytes), call_(call), size_function_(size_function) {}
  void* reserve(std::size_t bytes) override {
    if (bytes == 0) return data_;  // null is fine where nothing is needed
    CUDALAB_REQUIRE(data_ != nullptr, std::string(call_) +
                                          ": workspace must be a device pointer, got null (the call "
                                          "needs " +
                                          std::to_string(bytes) + " bytes; see " + size_function_ + ")");
    CUDALAB_REQUIRE(bytes <= bytes_, std::string(call_) + ": the workspace holds " + std::to_string(bytes_) +
                                         " bytes, the call needs " + std::to_string(bytes) + " (see " + size_function_ +
                                         ")");
    return data_;
  }

 private:
  void* data_;
  std::size_t bytes_;
  const char* call_;
  const char* size_function_;
};

// Scratch kept for a benchmark's whole workload: it grows to what the hungriest variant asked for
// during its (untimed) check, so the timed launches never allocate.
class GrowingWorkspace final : public Workspace {
 public:
  void* reserve(std::size_t bytes) override {
    if (bytes > buffer_.bytes()) buffer_ = DeviceBuffer<unsigned char>(static_cast<std::int64_t>(bytes));
    return buffer_.data();
  }

 private:
  DeviceBuffer<unsigned char> buffer_;
};

}  // namespace cudalab
