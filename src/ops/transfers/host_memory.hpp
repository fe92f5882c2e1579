// The kinds of host memory a transfer can start from or land in, behind one owner.
#pragma once

#include <cstddef>
#include <memory>

namespace cudalab::transfers {

enum class HostKind {
  pageable,        // malloc'd: the driver stages each copy through its own pinned buffer
  pinned,          // cudaHostAlloc: page-locked, the copy engine reads it directly
  write_combined,  // cudaHostAllocWriteCombined: pinned, not cached by the CPU (fast PCIe reads, slow CPU reads)
  mapped,          // cudaHostAllocMapped: pinned and mapped into the GPU's address space; kernels read it over PCIe
};
const char* to_string(HostKind kind);

class HostMemory {
 public:
  HostMemory(HostKind kind, std::size_t bytes);
  HostKind kind() const { return kind_; }
  void* data() const { return data_.get(); }
  // The pointer a kernel uses (mapped memory only; the host pointer itself under UVA).
  void* device_view() const;

 private:
  HostKind kind_;
  std::unique_ptr<void, void (*)(void*)> data_;
};

}  // namespace cudalab::transfers
