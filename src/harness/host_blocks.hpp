// Host memory for the tensors' host copies, kept for reuse from one problem to the next. A bench
// allocates and frees gigabytes of host copies per problem; faulting in fresh pages cost more than
// the checks that read them (2-5 s for the first variant of each 2^28-element problem on an H100
// host, against under 1 s for the next). Blocks are page-locked while that stays within the
// budget, so the copies from the device also run at the link's rate instead of the pageable one.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace cudalab::harness {

class HostBlockCache;

// The machine's physical memory in bytes (sysconf).
double physical_memory_bytes();

// One block of host memory of at least the bytes asked for, returned to its cache when destroyed.
// Move-only; its contents start undefined.
class HostBlock {
 public:
  HostBlock() = default;
  HostBlock(const HostBlock&) = delete;
  HostBlock& operator=(const HostBlock&) = delete;
  HostBlock(HostBlock&& other) noexcept;
  HostBlock& operator=(HostBlock&& other) noexcept;
  ~HostBlock();

  unsigned char* data() const { return data_; }
  std::size_t capacity() const { return capacity_; }
  bool pinned() const { return pinned_; }

 private:
  friend class HostBlockCache;
  void release() noexcept;

  HostBlockCache* cache_ = nullptr;
  unsigned char* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool pinned_ = false;
};

// Hands out blocks and keeps the large ones given back, up to `budget` bytes cached, for later
// requests of between half their size and their size. Requests under kSmallest bytes are plain
// allocations (cheap to fault in, not worth holding). Thread-safe.
class HostBlockCache {
 public:
  static constexpr std::size_t kSmallest = std::size_t{1} << 20;

  // `try_pinned`: page-lock new blocks while pinned ones (in use and cached) stay within the
  // budget (portable: every GPU of the process copies to it at the link's rate); a failed page-lock
  // (no GPU, a locked-memory limit) falls back to pageable memory.
  HostBlockCache(std::size_t budget, bool try_pinned);
  ~HostBlockCache();
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  HostBlock acquire(std::size_t bytes);
  std::size_t cached_bytes() const;

  // The process's cache: a quarter of physical memory, page-locked where it can be. Never
  // destroyed, so no block is freed after the CUDA runtime has shut down.
  static HostBlockCache& process();

 private:
  friend class HostBlock;
  struct Cached {
    unsigned char* data;
    std::size_t capacity;
    bool pinned;
  };
  void give_back(unsigned char* data, std::size_t capacity, bool pinned) noexcept;
  void free_block(const Cached& block) noexcept;
  // Frees the oldest cached blocks until `room` more bytes fit the budget; the caller holds mutex_.
  void trim_for(std::size_t room) noexcept;

  const std::size_t budget_;
  const bool try_pinned_;
  mutable std::mutex mutex_;
  std::vector<Cached> cached_;  // oldest first
  std::size_t cached_bytes_ = 0;
  std::atomic<std::size_t> pinned_bytes_{0};  // pinned blocks in use and cached
};

}  // namespace cudalab::harness
