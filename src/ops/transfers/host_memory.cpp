#include "ops/transfers/host_memory.hpp"

#include <cstdlib>

#include <cuda_runtime_api.h>

#include "cudalab/error.hpp"
#include "cudalab/memory.hpp"

namespace cudalab::transfers {
namespace {

void* allocate(HostKind kind, std::size_t bytes) {
  switch (kind) {
    case HostKind::pageable: {
      // Page-aligned like a typical large malloc, so no kind gains from a luckier alignment.
      void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
      if (p == nullptr)
        throw Error(ErrorKind::out_of_memory, "cannot allocate pageable host memory", __FILE__, __LINE__);
      return p;
    }
    case HostKind::pinned: return pinned_allocate(bytes, cudaHostAllocDefault);
    case HostKind::write_combined: return pinned_allocate(bytes, cudaHostAllocWriteCombined);
    case HostKind::mapped: return pinned_allocate(bytes, cudaHostAllocMapped);
  }
  return nullptr;
}

}  // namespace

const char* to_string(HostKind kind) {
  switch (kind) {
    case HostKind::pageable: return "pageable";
    case HostKind::pinned: return "pinned";
    case HostKind::write_combined: return "write-combined";
    case HostKind::mapped: return "mapped";
  }
  return "unknown";
}

HostMemory::HostMemory(HostKind kind, std::size_t bytes)
    : kind_(kind),
      data_(allocate(kind, bytes), kind == HostKind::pageable ? static_cast<void (*)(void*)>(std::free)
                                                              : static_cast<void (*)(void*)>(pinned_free)) {}

void* HostMemory::device_view() const {
  CUDALAB_REQUIRE(kind_ == HostKind::mapped, "HostMemory: only mapped memory has a device view");
  void* pointer = nullptr;
  CUDALAB_CUDA_CHECK(cudaHostGetDevicePointer(&pointer, data_.get(), 0));
  return pointer;
}

}  // namespace cudalab::transfers
